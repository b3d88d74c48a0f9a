/* Paying for arrays' fresh pages on another core, ahead of the thread that
 * fills them.
 *
 * On this project's paravirtualised machine the first write to each new page
 * costs a trip to the host (~5 µs a page, 1.2-2 s per GB) even after
 * MADV_POPULATE_WRITE (core/prefault.h) has mapped it: the guest's mapping is
 * cheap (0.13 s for 800 MiB), the host's is paid at the first real access
 * (tools/bench/bench_page_touch). A thread that maps a page and then touches it
 * takes that cost away from the writer entirely. So while a cost table is read,
 * or the planner fills its per-row arrays, a helper thread maps and touches the
 * arrays a few MiB ahead of the writer, which then runs at the speed of its own
 * work on the other core.
 *
 * Arrays filled in step (element i of each at about the same time: the
 * planner's frames, cost and kept) share one helper. Elements are cut into
 * windows; each window of each array is prepared by exactly one thread before
 * the writer writes to it: the helper takes free windows in order, a couple of
 * windows beyond the writer and at most `lead` bytes of the largest array
 * ahead of it; the writer, reaching a window, finds it done, waits for the
 * helper to finish it (at most one window), or takes it itself when it is
 * still free (then it only maps it, as es_prefault_write does). When pages
 * cost more than the writer's work, the writer catches up, finds free windows
 * and the helper skips ahead, so the two share the pages rather than the
 * writer waiting window by window. So the helper never touches a byte the
 * writer has written or is writing: no data race, and nothing's contents change
 * (the touch adds 0 atomically to bytes nobody has written yet).
 *
 * Only advice, like es_prefault_write: where the thread cannot be started the
 * writer maps its windows itself, and pages are faulted in as written. */
#ifndef ES_PREFAULT_AHEAD_H
#define ES_PREFAULT_AHEAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct es_prefault_ahead es_prefault_ahead;

/* What the planner and the table reader use: 64 MiB of lead absorbs the
 * writer's bursts and keeps memory touched but unused small; arrays under
 * 8 MiB (a few ms of pages) are not worth a thread. */
enum { ES_AHEAD_LEAD = 64u << 20, ES_AHEAD_MIN = 8u << 20 };

/* One array of n elements: base[0 .. n × elem_size). */
typedef struct es_ahead_array {
    void *base;
    size_t elem_size;
} es_ahead_array;

/* Starts a helper preparing elements [0, n) of the k arrays (k ≤ 4), at most
 * `lead` bytes of the largest ahead of the writer; huge pages asked for when
 * `huge` (es_prefault_write). Returns NULL (nothing
 * started; es_prefault_ahead_need then does nothing) when the largest array is
 * under `min_bytes`, or the thread or memory cannot be had. (Whether to
 * start one at all is the caller's: the context's pages_ahead setting,
 * core/bigarray.h.) */
es_prefault_ahead *es_prefault_ahead_start(const es_ahead_array *arrays, size_t k, size_t n,
                                           size_t lead, size_t min_bytes, int huge);

/* The writer is about to write elements [0, upto) of the arrays: returns once
 * they are prepared (by the helper, or here), with the element count up to
 * which they now are (≥ upto; SIZE_MAX for NULL). */
size_t es_prefault_ahead_need(es_prefault_ahead *a, size_t upto);

/* Windows prepared so far by the helper and taken by the writer, and their
 * total, for tests and benchmarks. */
void es_prefault_ahead_counts(es_prefault_ahead *a, size_t *by_helper, size_t *by_writer,
                              size_t *windows);

/* Stops and joins the helper (it finishes the window in hand) and frees it;
 * NULL is ignored. Must be called before an array is freed or moved. */
void es_prefault_ahead_stop(es_prefault_ahead *a);

/* The writer's side in a loop: one comparison per element. */
typedef struct es_ahead_cursor {
    es_prefault_ahead *a;
    size_t ready; /* elements [0, ready) are prepared */
} es_ahead_cursor;

static inline void es_ahead_reach(es_ahead_cursor *c, size_t upto)
{
    if (upto > c->ready)
        c->ready = es_prefault_ahead_need(c->a, upto);
}

#endif
