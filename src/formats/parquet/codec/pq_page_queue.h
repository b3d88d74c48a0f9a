/* The parquet writer's pages between being made and being written: each page
 * is compressed by a helper thread while the writer goes on making the next
 * ones, then written in the order the pages were made.
 *
 * ZSTD at level 3 (and deflate) is most of a parquet reshard's CPU. Compressing
 * a burst of pages at once and waiting for all of them (what the writer did
 * before) left the second core idle while the writer read and decoded the
 * sources for the next burst: 0.94 CPUs used on 2 cores. Here the writer hands
 * a page over and only waits when every slot is taken, and then for the
 * oldest page only, compressing it itself when no helper has taken it yet.
 *
 * Each page is compressed alone (pq_compress), so the bytes depend neither on
 * the thread that compressed it nor on how many pages were in flight. Helpers
 * sleep on a condition variable while there is nothing to do (OpenMP's
 * waiting threads spin: that took a core from the thread making the pages).
 *
 * One queue may serve many writers (reshard writing many new files column by
 * column): a page knows its owner, and the compressors' state and the threads
 * are the queue's. One thread (the writers') pushes and retires pages. */
#ifndef ES_PQ_PAGE_QUEUE_H
#define ES_PQ_PAGE_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

/* Pages in flight, at most. */
#define PQ_PAGE_SLOTS 8

typedef struct pq_page {
    void *owner;        /* the writer whose file it goes to */
    uint32_t leaf;      /* the owner's chunk when it was made */
    uint32_t n;         /* its level entries */
    es_strbuf raw;      /* levels and values */
    uint8_t *z;         /* compressed */
    size_t zcap, zlen;
    int failed;         /* pq_compress failed: err says why */
    char err[256];
    /* the queue's */
    void *zstate;       /* the compressor's, kept across pages (pq_compress) */
    int state;
} pq_page;

typedef struct pq_page_queue {
    int codec;
    unsigned depth;             /* slots used: 1 when no helper */
    pq_page slots[PQ_PAGE_SLOTS];
    unsigned head, count;       /* the oldest page and how many are in flight */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t helpers[PQ_PAGE_SLOTS];
    unsigned n_helpers;
    int stop, inited;
} pq_page_queue;

/* A queue for pages of `codec` (PQ_SNAPPY, …): for ZSTD and GZIP, one helper
 * thread less than -j / OMP_NUM_THREADS allow and two slots a thread; for the
 * fast codecs none (the writer compresses each page itself). Zero-initialise,
 * then init. Returns 0, or -1 when out of memory. */
int pq_page_queue_init(pq_page_queue *q, int codec);
/* Waits for the helpers (a page being compressed is finished) and frees all. */
void pq_page_queue_release(pq_page_queue *q);

/* The slot for the next page, when one is free (NULL when every slot is in
 * flight: retire the oldest first). Fill raw, n, owner and leaf, then push. */
pq_page *pq_page_queue_next(pq_page_queue *q);
void pq_page_queue_push(pq_page_queue *q);

/* The oldest page, compressed (waiting for its helper, or compressing it here
 * when none has taken it); NULL when none is in flight. Write it, then pop. */
pq_page *pq_page_queue_oldest(pq_page_queue *q);
void pq_page_queue_pop(pq_page_queue *q);

#endif
