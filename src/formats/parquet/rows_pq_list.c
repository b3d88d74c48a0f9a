#include "formats/parquet/rows_pq_list.h"

#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "formats/parquet/rows_pq_value.h"

/* A list chunk larger than this is not an embedding or a token list; refusing
 * it bounds what a lying footer can make the cache allocate. */
#define MAX_ELEMS (1u << 27)
#define MAX_BYTES (1u << 30)

static int new_row(rows_pq_list *l, int present)
{
    if (es_grow((void **)&l->present, &l->rows_cap, l->n_rows + 1, 1, 256) ||
        es_grow((void **)&l->first, &l->first_cap, l->n_rows + 1, sizeof *l->first, 256))
        return -1;
    l->present[l->n_rows] = (uint8_t)present;
    l->first[l->n_rows++] = l->n_elems;
    return 0;
}

static int add_bytes(rows_pq_list *l, const pq_entry *e)
{
    if (es_grow((void **)&l->boff, &l->boff_cap, l->n_elems + 2, sizeof *l->boff, 256) ||
        es_grow((void **)&l->bytes, &l->bytes_cap, l->bytes_len + e->len + 1, 1, 4096))
        return -1;
    if (e->ptr && e->len)
        memcpy(l->bytes + l->bytes_len, e->ptr, e->len);
    l->boff[l->n_elems] = l->bytes_len;
    l->bytes_len += e->ptr ? e->len : 0;
    l->boff[l->n_elems + 1] = l->bytes_len;
    return 0;
}

static int add_element(rows_pq_list *l, const pq_entry *e)
{
    size_t w = rows_pq_width(l->type);
    if (es_grow((void **)&l->valid, &l->valid_cap, l->n_elems + 1, 1, 256))
        return -1;
    l->valid[l->n_elems] = e->ptr != NULL;
    if (l->type == ES_VALUE_BYTES || l->type == ES_VALUE_STRING) {
        if (add_bytes(l, e) < 0)
            return -1;
    } else {
        if (es_grow((void **)&l->elems, &l->elems_cap, l->n_elems + 1, w, 256))
            return -1;
        uint8_t *dst = l->elems + l->n_elems * w;
        if (e->ptr)
            rows_pq_pack(l->type, e->ptr, dst);
        else
            memset(dst, 0, w);
    }
    l->n_elems++;
    return 0;
}

/* One level entry (pq_rows.h says how levels become rows). 1: taken, 0: out
 * of memory, negative: malformed (message in why). */
static int take(rows_pq_list *l, const pq_leaf *leaf, const pq_entry *e, int64_t want,
                const char **why)
{
    if (e->rep == 0) {
        if ((int64_t)l->n_rows >= want) {
            *why = "more rows than the row group declares";
            return -1;
        }
        if (new_row(l, e->def >= leaf->def_field) < 0)
            return 0;
    } else if (l->n_rows == 0) {
        *why = "the first value continues a row";
        return -1;
    }
    if (e->def < leaf->def_list)
        return 1; /* a null or empty list */
    if (l->n_elems >= MAX_ELEMS || l->bytes_len + e->len > MAX_BYTES) {
        *why = "too many list elements to keep";
        return -1;
    }
    /* an entry carries a value only at max_def; below it the element is null */
    pq_entry el = *e;
    if (e->def != leaf->max_def)
        el.ptr = NULL;
    return add_element(l, &el) < 0 ? 0 : 1;
}

int rows_pq_list_decode(es_context *ctx, const es_pq_file *f, uint32_t rg, const pq_leaf *leaf,
                        es_value_type type, pq_column *c, rows_pq_list *l)
{
    memset(l, 0, sizeof *l);
    l->type = type;
    int64_t want = f->meta.row_groups[rg].num_rows;
    int rc = pq_column_open(c, f, rg, leaf, 1);
    if (rc != ES_OK) {
        rows_pq_list_release(l);
        return es_fail(ctx, rc, "%s: row group %u, column %s: %s", f->path, rg, leaf->name, c->err);
    }
    pq_entry e;
    const char *why = NULL;
    int got, t = 1;
    while ((got = pq_column_next(c, &e)) == 1 && (t = take(l, leaf, &e, want, &why)) == 1)
        ;
    if (got < 0)
        rc = es_fail(ctx, got, "%s: row group %u, column %s: %s", f->path, rg, leaf->name, c->err);
    else if (t == 0)
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: row group %u, column %s: out of memory", f->path, rg,
                     leaf->name);
    else if (t < 0)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: %s", f->path, rg, leaf->name, why);
    else if ((int64_t)l->n_rows != want)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: %zu rows, the row group declares %lld",
                     f->path, rg, leaf->name, l->n_rows, (long long)want);
    else if (new_row(l, 0) < 0) /* first[n_rows] = n_elems closes the last row */
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", f->path);
    if (rc != ES_OK) {
        rows_pq_list_release(l);
        return rc;
    }
    l->n_rows--;
    return ES_OK;
}

size_t rows_pq_list_memory(const rows_pq_list *l)
{
    return l->rows_cap + l->first_cap * sizeof *l->first + l->elems_cap * rows_pq_width(l->type) +
           l->valid_cap + l->boff_cap * sizeof *l->boff + l->bytes_cap;
}

static int byte_elements(const rows_pq_list *l, size_t e0, size_t n, es_arena *a, es_value *out)
{
    for (size_t k = 0; k < n; k++) {
        size_t e = e0 + k;
        memset(&out[k], 0, sizeof out[k]);
        if (!l->valid[e])
            continue; /* ES_VALUE_NULL */
        size_t len = l->boff[e + 1] - l->boff[e];
        char *s = es_arena_strndup(a, len ? l->bytes + l->boff[e] : "", len);
        if (!s)
            return -1;
        out[k] = (es_value){.type = l->type, .len = len, .data = s};
    }
    return 0;
}

int rows_pq_list_value(const rows_pq_list *l, size_t r, es_arena *a, es_value *v)
{
    memset(v, 0, sizeof *v);
    if (!l->present[r])
        return 0;
    size_t e0 = l->first[r], n = l->first[r + 1] - e0, w = rows_pq_width(l->type);
    *v = (es_value){.type = ES_VALUE_LIST, .elem_type = l->type, .len = n};
    if (n == 0)
        return 0;
    void *data = es_arena_alloc(a, n * w);
    if (!data)
        return -1;
    if (l->type == ES_VALUE_BYTES || l->type == ES_VALUE_STRING) {
        if (byte_elements(l, e0, n, a, data) < 0)
            return -1;
    } else {
        memcpy(data, l->elems + e0 * w, n * w);
    }
    v->data = data;
    if (memchr(l->valid + e0, 0, n)) {
        uint8_t *valid = es_arena_alloc(a, n);
        if (!valid)
            return -1;
        memcpy(valid, l->valid + e0, n);
        v->valid = valid;
    }
    return 0;
}

void rows_pq_list_release(rows_pq_list *l)
{
    free(l->present);
    free(l->first);
    free(l->elems);
    free(l->valid);
    free(l->boff);
    free(l->bytes);
    memset(l, 0, sizeof *l);
}
