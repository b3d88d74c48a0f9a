/* es_row_reader_*: the format chosen by content (the formats' bids) and
 * reached through its table, positions sorted and de-duplicated so each
 * format makes one forward pass, and the caller's order restored on the way
 * out. */
#include "rows/row_reader.h"

#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "readers/reader.h"

int es_row_reader_open(es_context *ctx, const char *path, es_row_reader **out)
{
    es_clear_error(ctx);
    if (!out || !path)
        return es_fail(ctx, ES_ERR_USAGE, "es_row_reader_open: NULL argument");
    *out = NULL;
    uint8_t head[ES_SNIFF_BYTES];
    long n = es_sniff_file(ctx, path, head);
    if (n < 0)
        return ES_ERR_IO;
    const es_format_ops *ops = es_format_for(head, (size_t)n);
    if (!ops || !ops->rows_open)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: neither parquet nor a tar shard", path);
    es_row_reader *r = calloc(1, sizeof *r);
    if (r)
        r->path = strdup(path);
    if (!r || !r->path) {
        free(r);
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    }
    r->format = ops;
    int rc = ops->rows_open(ctx, r->path, &r->state);
    if (rc != ES_OK) {
        es_row_reader_free(r);
        return rc;
    }
    *out = r;
    return ES_OK;
}

void es_row_reader_free(es_row_reader *r)
{
    if (!r)
        return;
    if (r->format)
        r->format->rows_free(r->state);
    es_arena_release(&r->arena);
    free(r->rows);
    free(r->path);
    free(r);
}

const char *es_row_reader_format(const es_row_reader *r)
{
    return r ? r->format->name : "";
}

int es_row_reader_count(es_context *ctx, es_row_reader *r, uint64_t *n)
{
    es_clear_error(ctx);
    if (!r || !n)
        return es_fail(ctx, ES_ERR_USAGE, "es_row_reader_count: NULL argument");
    return r->format->rows_count(ctx, r->state, n);
}

const char *es_row_reader_column_name(const es_row_reader *r, size_t i)
{
    return r && i < r->format->rows_column_count(r->state) ? r->format->rows_column_name(r->state, i)
                                                            : NULL;
}

typedef struct slot {
    uint64_t pos;
    size_t i; /* index into the caller's positions */
} slot;

static int by_pos(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Sorts the positions; uniq gets them once each, which[i] the unique index of
 * positions[i]. Returns the number of unique positions. */
static size_t unique_positions(const uint64_t *positions, size_t n, slot *s, uint64_t *uniq,
                               size_t *which)
{
    for (size_t i = 0; i < n; i++)
        s[i] = (slot){positions[i], i};
    qsort(s, n, sizeof *s, by_pos);
    size_t u = 0;
    for (size_t k = 0; k < n; k++) {
        if (k == 0 || s[k].pos != s[k - 1].pos)
            uniq[u++] = s[k].pos;
        which[s[k].i] = u - 1;
    }
    return u;
}

static int fetch(es_context *ctx, es_row_reader *r, const uint64_t *positions, size_t n,
                 const char *const *columns, size_t n_columns)
{
    slot *s = malloc((n ? n : 1) * sizeof *s);
    uint64_t *uniq = malloc((n ? n : 1) * sizeof *uniq);
    size_t *which = malloc((n ? n : 1) * sizeof *which);
    es_row *urows = calloc(n ? n : 1, sizeof *urows);
    int rc = ES_OK;
    if (!s || !uniq || !which || !urows ||
        es_grow((void **)&r->rows, &r->rows_cap, n ? n : 1, sizeof *r->rows, 16))
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", r->path);
    if (rc == ES_OK) {
        rows_request req = {uniq, unique_positions(positions, n, s, uniq, which), columns,
                            n_columns, urows, &r->arena};
        rc = r->format->rows_read(ctx, r->state, &req);
    }
    for (size_t i = 0; rc == ES_OK && i < n; i++)
        r->rows[i] = urows[which[i]];
    free(s);
    free(uniq);
    free(which);
    free(urows);
    return rc;
}

int es_row_reader_read(es_context *ctx, es_row_reader *r, const uint64_t *positions, size_t n,
                       const char *const *columns, size_t n_columns, const es_row **rows)
{
    es_clear_error(ctx);
    if (rows)
        *rows = NULL;
    if (!r || !rows || (!positions && n))
        return es_fail(ctx, ES_ERR_USAGE, "es_row_reader_read: NULL argument");
    for (size_t k = 0; columns && k < n_columns; k++)
        if (!columns[k])
            return es_fail(ctx, ES_ERR_USAGE, "%s: column name %zu is NULL", r->path, k);
    es_arena_release(&r->arena); /* the previous fetch's rows are gone now */
    int rc = fetch(ctx, r, positions, n, columns, n_columns);
    if (rc == ES_OK)
        *rows = r->rows;
    return rc;
}
