/* A helper thread preparing arrays' pages ahead of their writer:
 * core/prefault_ahead.h says why and what is promised. */
#include "core/prefault_ahead.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/prefault.h"

/* A window is 4 MiB of the largest array: large enough that a window's system
 * calls (none when the helper did it) are nothing against writing it, small
 * enough that waiting for the helper to finish the one in hand is a few
 * milliseconds at most. */
enum { WINDOW_BYTES = 4u << 20, PAGE = 4096, MAX_ARRAYS = 4 };

/* A window's state: free, in the helper's hands, done by the helper, or
 * taken by the writer. */
enum { FREE, HELPER, HELPER_DONE, WRITER };

struct es_prefault_ahead {
    es_ahead_array arrays[MAX_ARRAYS];
    size_t k, n;
    int huge;                /* es_prefault_write's */
    size_t per_window;       /* elements in a window */
    size_t windows;          /* ceil(n / per_window) */
    size_t lead;             /* windows the helper may be ahead of the writer */
    _Atomic unsigned char *state; /* per window */
    atomic_size_t writer_at; /* first window the writer has not yet needed */
    pthread_mutex_t lock;    /* with `wake`: the helper sleeps when far ahead */
    pthread_cond_t wake;
    int stop;                /* under lock */
    pthread_t thread;
};

/* Window w of array j as bytes [*from, *to). */
static void window_bytes(const es_prefault_ahead *a, size_t j, size_t w, char **from, char **to)
{
    size_t first = w * a->per_window, end = first + a->per_window < a->n ? first + a->per_window
                                                                         : a->n;
    *from = (char *)a->arrays[j].base + first * a->arrays[j].elem_size;
    *to = (char *)a->arrays[j].base + end * a->arrays[j].elem_size;
}

/* Maps window w and writes to each of its pages, so the host's cost of the
 * page is paid here. Nobody else accesses the window until its state marks
 * it done; the atomic add of 0 keeps the access from being dropped and changes
 * nothing. */
static void prepare(es_prefault_ahead *a, size_t w)
{
    for (size_t j = 0; j < a->k; j++) {
        char *from, *to;
        window_bytes(a, j, w, &from, &to);
        if (from == to)
            continue;
        es_prefault_write(from, (size_t)(to - from), a->huge);
        for (char *p = from; p < to; p += PAGE)
            atomic_fetch_add_explicit((_Atomic unsigned char *)p, 0, memory_order_relaxed);
        atomic_fetch_add_explicit((_Atomic unsigned char *)(to - 1), 0, memory_order_relaxed);
    }
}

/* The helper keeps GAP windows between itself and the writer: when it is the
 * slower of the two (pages cost more than the writer's work), the writer
 * catching up finds free windows in front of it and maps them itself, and the
 * helper jumps ahead, so the two share the pages instead of the writer waiting
 * for the helper window by window. */
enum { GAP = 2 };

static void *helper(void *arg)
{
    es_prefault_ahead *a = arg;
    size_t w = GAP;
    for (;;) {
        pthread_mutex_lock(&a->lock);
        size_t at = atomic_load(&a->writer_at);
        while (!a->stop && w < a->windows && w >= at + a->lead) {
            pthread_cond_wait(&a->wake, &a->lock);
            at = atomic_load(&a->writer_at);
        }
        int stop = a->stop || w >= a->windows;
        pthread_mutex_unlock(&a->lock);
        if (stop)
            return NULL;
        if (w < at + GAP) { /* the writer caught up: leave it the next ones */
            w = at + GAP;
            continue;
        }
        unsigned char expect = FREE;
        if (atomic_compare_exchange_strong(&a->state[w], &expect, HELPER)) {
            prepare(a, w);
            atomic_store_explicit(&a->state[w], HELPER_DONE, memory_order_release);
        }
        w++;
    }
}

es_prefault_ahead *es_prefault_ahead_start(const es_ahead_array *arrays, size_t k, size_t n,
                                           size_t lead, size_t min_bytes, int huge)
{
    size_t widest = 0;
    for (size_t j = 0; j < k && j < MAX_ARRAYS; j++)
        if (arrays[j].elem_size > widest)
            widest = arrays[j].elem_size;
    if (k == 0 || k > MAX_ARRAYS || widest == 0 || n > SIZE_MAX / widest ||
        n * widest < min_bytes || n == 0)
        return NULL;
    es_prefault_ahead *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    for (size_t j = 0; j < k; j++) {
        a->arrays[j] = arrays[j];
        /* the whole array at once: windows need not fall on 2 MiB bounds */
        if (huge)
            es_advise_huge(arrays[j].base, n * arrays[j].elem_size);
    }
    a->k = k;
    a->n = n;
    a->huge = huge;
    a->per_window = WINDOW_BYTES / widest ? WINDOW_BYTES / widest : 1;
    a->windows = (n + a->per_window - 1) / a->per_window;
    /* the helper works in [writer + GAP, writer + lead): leave it room */
    a->lead = lead / WINDOW_BYTES > GAP + 2 ? lead / WINDOW_BYTES : GAP + 2;
    atomic_init(&a->writer_at, 0);
    a->state = calloc(a->windows, sizeof *a->state); /* all FREE */
    if (!a->state || pthread_mutex_init(&a->lock, NULL) != 0) {
        free(a->state);
        free(a);
        return NULL;
    }
    if (pthread_cond_init(&a->wake, NULL) != 0) {
        pthread_mutex_destroy(&a->lock);
        free(a->state);
        free(a);
        return NULL;
    }
    if (pthread_create(&a->thread, NULL, helper, a) != 0) {
        pthread_cond_destroy(&a->wake);
        pthread_mutex_destroy(&a->lock);
        free(a->state);
        free(a);
        return NULL;
    }
    return a;
}

size_t es_prefault_ahead_need(es_prefault_ahead *a, size_t upto)
{
    if (!a)
        return SIZE_MAX;
    size_t last = upto ? (upto - 1) / a->per_window + 1 : 0; /* windows [0, last) needed */
    if (last > a->windows)
        last = a->windows;
    size_t w = atomic_load(&a->writer_at);
    for (; w < last; w++) {
        unsigned char expect = FREE;
        /* Free: take it, and only map it (the writes that follow are the
         * touch). The helper's: wait until it is done (at most one window). */
        if (atomic_compare_exchange_strong(&a->state[w], &expect, WRITER)) {
            for (size_t j = 0; j < a->k; j++) {
                char *from, *to;
                window_bytes(a, j, w, &from, &to);
                es_prefault_write(from, (size_t)(to - from), a->huge);
            }
            continue;
        }
        while (atomic_load_explicit(&a->state[w], memory_order_acquire) == HELPER)
            sched_yield();
    }
    if (w > atomic_load(&a->writer_at)) {
        pthread_mutex_lock(&a->lock);
        atomic_store(&a->writer_at, w);
        pthread_cond_signal(&a->wake);
        pthread_mutex_unlock(&a->lock);
    }
    size_t ready = w * a->per_window;
    return ready < a->n ? ready : a->n;
}

void es_prefault_ahead_counts(es_prefault_ahead *a, size_t *by_helper, size_t *by_writer,
                              size_t *windows)
{
    *by_helper = *by_writer = 0;
    *windows = a ? a->windows : 0;
    for (size_t w = 0; a && w < a->windows; w++) {
        unsigned char st = atomic_load(&a->state[w]);
        *by_helper += st == HELPER_DONE;
        *by_writer += st == WRITER;
    }
}

void es_prefault_ahead_stop(es_prefault_ahead *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    pthread_cond_destroy(&a->wake);
    pthread_mutex_destroy(&a->lock);
    free(a->state);
    free(a);
}
