/* Pages compressed beside the writer (pq_page_queue.h). */
#include "formats/parquet/codec/pq_page_queue.h"

#include <omp.h> /* omp_get_max_threads: the threads -j / OMP_NUM_THREADS allow */
#include <stdlib.h>
#include <string.h>

#include "formats/parquet/codec/pq_codec.h"
#include "formats/parquet/codec/pq_meta.h"

enum { FREE, READY, BUSY, DONE }; /* a slot's state */

static void compress(pq_page_queue *q, pq_page *pg)
{
    pg->failed = pq_compress(q->codec, &pg->zstate, (const uint8_t *)pg->raw.buf, pg->raw.len,
                             &pg->z, &pg->zcap, &pg->zlen, pg->err, sizeof pg->err) != 0;
}

/* Takes page pg (READY) and compresses it, mu released meanwhile. mu held. */
static void take_and_compress(pq_page_queue *q, pq_page *pg)
{
    pg->state = BUSY;
    pthread_mutex_unlock(&q->mu);
    compress(q, pg);
    pthread_mutex_lock(&q->mu);
    pg->state = DONE;
    pthread_cond_broadcast(&q->done);
}

/* The oldest page pushed and not taken, or NULL. mu held. */
static pq_page *first_ready(pq_page_queue *q)
{
    for (unsigned k = 0; k < q->count; k++) {
        pq_page *pg = &q->slots[(q->head + k) % q->depth];
        if (pg->state == READY)
            return pg;
    }
    return NULL;
}

static void *helper_main(void *arg)
{
    pq_page_queue *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        pq_page *pg = first_ready(q);
        if (!pg) {
            if (q->stop)
                break;
            pthread_cond_wait(&q->work, &q->mu);
            continue;
        }
        take_and_compress(q, pg);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int pq_page_queue_init(pq_page_queue *q, int codec)
{
    q->codec = codec;
    q->depth = 1;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->done, NULL);
    q->inited = 1;
    /* SNAPPY (and plain) pages cost less to compress than to hand over: with
     * a helper, a SNAPPY reshard took 1.08-1.12 s against 0.91-0.98 s without */
    int slow = codec == PQ_ZSTD || codec == PQ_GZIP;
    int threads = omp_get_max_threads();
    unsigned want = !slow || threads < 2 ? 0
                    : (unsigned)threads - 1 < PQ_PAGE_SLOTS / 2 ? (unsigned)threads - 1
                                                                : PQ_PAGE_SLOTS / 2 - 1;
    for (unsigned i = 0; i < want; i++) {
        if (pthread_create(&q->helpers[i], NULL, helper_main, q) != 0)
            break; /* fewer helpers: the writer compresses more itself */
        q->n_helpers++;
    }
    /* two slots a thread: one being compressed, one waiting */
    if (q->n_helpers)
        q->depth = 2 * (q->n_helpers + 1);
    return 0;
}

void pq_page_queue_release(pq_page_queue *q)
{
    if (q->inited) {
        pthread_mutex_lock(&q->mu);
        q->stop = 1;
        /* pages still waiting are not needed any more (the writer failed) */
        for (unsigned k = 0; k < q->count; k++) {
            pq_page *pg = &q->slots[(q->head + k) % q->depth];
            if (pg->state == READY)
                pg->state = DONE;
        }
        pthread_cond_broadcast(&q->work);
        pthread_mutex_unlock(&q->mu);
        for (unsigned i = 0; i < q->n_helpers; i++)
            pthread_join(q->helpers[i], NULL);
        pthread_cond_destroy(&q->work);
        pthread_cond_destroy(&q->done);
        pthread_mutex_destroy(&q->mu);
    }
    for (unsigned i = 0; i < PQ_PAGE_SLOTS; i++) {
        es_strbuf_release(&q->slots[i].raw);
        free(q->slots[i].z);
        pq_compress_free(q->slots[i].zstate);
    }
    memset(q, 0, sizeof *q);
}

pq_page *pq_page_queue_next(pq_page_queue *q)
{
    if (q->count == q->depth)
        return NULL;
    pq_page *pg = &q->slots[(q->head + q->count) % q->depth];
    pg->raw.len = 0;
    pg->err[0] = '\0';
    pg->failed = 0;
    return pg;
}

void pq_page_queue_push(pq_page_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->slots[(q->head + q->count) % q->depth].state = READY;
    q->count++;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
}

pq_page *pq_page_queue_oldest(pq_page_queue *q)
{
    if (!q->count)
        return NULL;
    pq_page *pg = &q->slots[q->head];
    pthread_mutex_lock(&q->mu);
    while (pg->state != DONE) {
        /* rather than wait for a helper: a page no helper has taken yet, the
         * oldest first (the writer's own thread is the last compressor) */
        pq_page *mine = first_ready(q);
        if (!mine) {
            pthread_cond_wait(&q->done, &q->mu);
            continue;
        }
        take_and_compress(q, mine);
    }
    pthread_mutex_unlock(&q->mu);
    return pg;
}

void pq_page_queue_pop(pq_page_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->slots[q->head].state = FREE;
    q->head = (q->head + 1) % q->depth;
    q->count--;
    pthread_mutex_unlock(&q->mu);
}
