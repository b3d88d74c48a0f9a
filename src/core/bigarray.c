/* Large arrays' fill policies (core/bigarray.h) on the two mechanisms:
 * mapping in one call (core/prefault.h) and the helper thread
 * (core/prefault_ahead.h). */
#include "core/bigarray.h"

#include <stdlib.h>

#include "core/prefault.h"
#include "core/prefault_ahead.h"

/* What ES_FILL_WINDOWS maps at a time: 4 MiB, large enough that the call is
 * nothing against writing the window, small enough that memory in use stays
 * close to what has been written. */
enum { WINDOW_BYTES = 4u << 20 };

void *es_bigarray_alloc(size_t n, size_t size, es_fill fill)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = (n ? n : 1) * size;
    void *p = malloc(bytes ? bytes : 1);
    if (p && (fill & 3) == ES_FILL_MAP)
        es_prefault_write(p, n * size, !(fill & ES_FILL_NO_HUGE));
    return p;
}

void es_bigarray_begin(es_bigarray_writer *w, es_fill fill, const es_bigarray_col *cols,
                       size_t k, size_t n)
{
    *w = (es_bigarray_writer){0};
    size_t widest = 0;
    for (size_t j = 0; j < k && w->k < ES_BIGARRAY_MAX_COLS; j++) {
        if (!cols[j].base)
            continue;
        w->cols[w->k++] = cols[j];
        if (cols[j].elem_size > widest)
            widest = cols[j].elem_size;
    }
    w->n = n;
    w->active = 1;
    w->huge = !(fill & ES_FILL_NO_HUGE);
    w->ready = SIZE_MAX; /* nothing to do as the writer goes, unless set below */
    if (fill & ES_FILL_AHEAD) {
        es_ahead_array arrays[ES_BIGARRAY_MAX_COLS];
        for (size_t j = 0; j < w->k; j++)
            arrays[j] = (es_ahead_array){w->cols[j].base, w->cols[j].elem_size};
        w->helper = es_prefault_ahead_start(arrays, w->k, n, ES_AHEAD_LEAD, ES_AHEAD_MIN,
                                            w->huge);
        if (w->helper) {
            w->ready = 0;
            return;
        }
    }
    switch ((int)(fill & 3)) {
    case ES_FILL_MAP:
        for (size_t j = 0; j < w->k; j++)
            es_prefault_write(w->cols[j].base, n * w->cols[j].elem_size, w->huge);
        break;
    case ES_FILL_WINDOWS:
        w->window = widest && WINDOW_BYTES / widest ? WINDOW_BYTES / widest : 1;
        w->ready = 0;
        break;
    default:
        break;
    }
}

size_t es_bigarray_prepare(es_bigarray_writer *w, size_t upto)
{
    if (w->helper)
        return es_prefault_ahead_need(w->helper, upto);
    if (!w->window || upto > w->n)
        return SIZE_MAX; /* past the arrays: nothing of ours to prepare */
    /* the window from the element about to be written */
    size_t from = upto - 1, end = w->n - from > w->window ? from + w->window : w->n;
    for (size_t j = 0; j < w->k; j++)
        es_prefault_write((char *)w->cols[j].base + from * w->cols[j].elem_size,
                          (end - from) * w->cols[j].elem_size, w->huge);
    return end;
}

void es_bigarray_end(es_bigarray_writer *w)
{
    if (!w->active)
        return;
    es_prefault_ahead_stop(w->helper);
    *w = (es_bigarray_writer){0};
}
