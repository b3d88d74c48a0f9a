/* Large arrays and how their fresh pages are paid for: the one memory-policy
 * seam the planners and the cost table use, so their loops read as
 * algorithms.
 *
 * An array of millions of elements written once costs, on this project's
 * paravirtualised machine, more in first-touch page faults than in the work
 * that fills it (core/prefault.h, core/prefault_ahead.h say how much and
 * why). What is done about it is a fill policy, chosen where the array is
 * made: map the pages in one call, map them a window at a time, or have a
 * helper thread map and touch them ahead of the writer. The writer's loop
 * sees one call per element written, es_bigarray_reach:
 *
 *     es_bigarray_writer w;
 *     es_bigarray_begin(&w, ES_FILL_AHEAD | ES_FILL_MAP, cols, 2, n);
 *     for (size_t i = 0; i < n; i++) {
 *         es_bigarray_reach(&w, i);
 *         a[i] = ...; b[i] = ...;
 *     }
 *     es_bigarray_end(&w);
 *
 * Every policy is only advice: contents never depend on it, and where a
 * system call or the helper thread cannot be had, pages are faulted in as
 * they are written. */
#ifndef ES_BIGARRAY_H
#define ES_BIGARRAY_H

#include <stddef.h>
#include <stdint.h>

/* How an array's fresh pages are prepared. One of the first three, optionally
 * with ES_FILL_AHEAD and ES_FILL_NO_HUGE. */
typedef enum es_fill {
    ES_FILL_FAULT = 0,   /* nothing: each page faulted in at its first write */
    ES_FILL_MAP = 1,     /* every page mapped in one call per array, up front */
    ES_FILL_WINDOWS = 2, /* mapped a window (4 MiB of the widest array) at a time, as the
                            writer reaches it: memory in use stays what is written */
    /* A helper thread maps and touches the pages ahead of the writer (on
     * another core), for arrays of 8 MiB or more; the policy above is what
     * is done when the arrays are smaller or the helper cannot be had.
     * Callers ask for it only where their context allows
     * (es_ctx_pages_ahead, the pages_ahead setting). */
    ES_FILL_AHEAD = 4,
    /* No transparent huge pages asked for (the context's huge_pages setting
     * off, es_ctx_huge_pages): by default every policy that maps asks. */
    ES_FILL_NO_HUGE = 8,
} es_fill;

/* malloc of n elements of `size` bytes (room for one when n is 0; NULL when
 * n × size overflows or memory is short), its pages prepared by `fill`
 * (ES_FILL_MAP; ES_FILL_FAULT does nothing; the others need a writer and are
 * taken as ES_FILL_FAULT here). Freed with free(). */
void *es_bigarray_alloc(size_t n, size_t size, es_fill fill);

/* One array written through a writer: base[0 .. n × elem_size). */
typedef struct es_bigarray_col {
    void *base;
    size_t elem_size;
} es_bigarray_col;

enum { ES_BIGARRAY_MAX_COLS = 4 };

/* The writer's side of up to ES_BIGARRAY_MAX_COLS arrays of n elements filled
 * in step (element i of each at about the same time). Fields are the
 * implementation's. */
typedef struct es_bigarray_writer {
    struct es_prefault_ahead *helper; /* the helper thread, or NULL */
    es_bigarray_col cols[ES_BIGARRAY_MAX_COLS];
    size_t k, n;
    size_t window;  /* elements a window holds (ES_FILL_WINDOWS) */
    size_t ready;   /* elements [0, ready) are prepared */
    int active;     /* between es_bigarray_begin and es_bigarray_end */
    int huge;       /* huge pages asked for (not ES_FILL_NO_HUGE) */
} es_bigarray_writer;

/* Starts writing elements [0, n) of the k arrays with `fill` (ES_FILL_MAP
 * maps them here). k is at most ES_BIGARRAY_MAX_COLS; a column whose base is
 * NULL is left out. */
void es_bigarray_begin(es_bigarray_writer *w, es_fill fill, const es_bigarray_col *cols,
                       size_t k, size_t n);

/* For es_bigarray_reach: prepares elements up to at least `upto` and returns
 * the count now prepared. */
size_t es_bigarray_prepare(es_bigarray_writer *w, size_t upto);

/* The writer is about to write element i of the arrays (any order: reaching
 * i prepares every element before it too). One comparison when it is ready. */
static inline void es_bigarray_reach(es_bigarray_writer *w, size_t i)
{
    if (i >= w->ready)
        w->ready = es_bigarray_prepare(w, i + 1);
}

/* Stops the helper, if any (it must stop before an array is moved or freed);
 * a writer that is not active, or zeroed, is ignored. */
void es_bigarray_end(es_bigarray_writer *w);

#endif
