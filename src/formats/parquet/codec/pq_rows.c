#include "formats/parquet/codec/pq_rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"

#include "core/utf8.h"
#include "formats/parquet/codec/pq_column.h"

int pq_rows_check(es_context *ctx, const es_pq_file *f, const pq_leaf *l, pq_rows_mode mode)
{
    if (l->field_leaves != 1)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: column %s: a struct of %u fields, expected %s",
                       f->path, l->name, l->field_leaves,
                       mode <= PQ_ROWS_TEXT_LEN ? "a string" : "a list");
    int is_list = l->def_list > 0;
    switch (mode) {
    case PQ_ROWS_STRINGS:
    case PQ_ROWS_TEXT_LEN:
        if (is_list || l->type != PQ_BYTE_ARRAY)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: column %s: expected a string (BYTE_ARRAY), found %s%s",
                           f->path, l->name, is_list ? "a list of " : "", pq_type_name(l->type));
        return ES_OK;
    case PQ_ROWS_COUNT:
        if (!is_list)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: column %s: expected a list, found a flat %s column",
                           f->path, l->name, pq_type_name(l->type));
        return ES_OK;
    case PQ_ROWS_FLOATS:
        if (!is_list || l->max_rep != 1 ||
            (l->type != PQ_FLOAT && l->type != PQ_DOUBLE && l->type != PQ_INT32 && l->type != PQ_INT64))
            return es_fail(ctx, ES_ERR_FORMAT, "%s: column %s: expected a list of numbers, found %s%s",
                           f->path, l->name,
                           !is_list ? "a flat " : l->max_rep != 1 ? "a nested list of " : "a list of ",
                           pq_type_name(l->type));
        return ES_OK;
    }
    return ES_ERR_INTERNAL;
}

static int new_row(pq_rows *r, pq_rows_mode mode)
{
    if (r->n == r->cap) {
        /* three arrays of one capacity: each grows from r->cap, which moves last */
        size_t cp = r->cap, cc = r->cap, co = r->cap;
        void *p = r->present, *c = r->count, *o = r->off;
        if (es_grow(&p, &cp, r->n + 1, sizeof *r->present, 256))
            return -1;
        r->present = p;
        if (es_grow(&c, &cc, r->n + 1, sizeof *r->count, 256))
            return -1;
        r->count = c;
        if (es_grow(&o, &co, r->n + 1, sizeof *r->off, 256))
            return -1;
        r->off = o;
        r->cap = cp;
    }
    r->present[r->n] = 0;
    r->count[r->n] = 0;
    r->off[r->n] = mode == PQ_ROWS_FLOATS ? r->n_floats : r->bytes_len;
    r->n++;
    return 0;
}

static int add_string(pq_rows *r, const pq_entry *e)
{
    if (es_grow((void **)&r->bytes, &r->bytes_cap, r->bytes_len + e->len + 1, 1, 256))
        return -1;
    if (e->len)
        memcpy(r->bytes + r->bytes_len, e->ptr, e->len);
    r->bytes_len += e->len;
    r->bytes[r->bytes_len++] = '\0';
    return 0;
}

static int add_float(pq_rows *r, const pq_leaf *l, const pq_entry *e)
{
    if (es_grow((void **)&r->floats, &r->floats_cap, r->n_floats + 1, sizeof *r->floats, 256))
        return -1;
    float v = NAN; /* pandas writes a NaN inside a list as a null element */
    if (e->ptr) {
        pq_value pv = {e->ptr, e->len};
        v = (float)pq_value_as_double(l->type, &pv);
    }
    r->floats[r->n_floats++] = v;
    return 0;
}

/* Adds one level entry to the rows. Returns 0, -1 out of memory. */
static int add_entry(pq_rows *r, const pq_leaf *l, pq_rows_mode mode, const pq_entry *e)
{
    size_t i = r->n - 1;
    if (mode == PQ_ROWS_STRINGS || mode == PQ_ROWS_TEXT_LEN) {
        if (e->def == l->max_def) {
            r->present[i] = 1;
            r->count[i] = mode == PQ_ROWS_STRINGS
                              ? e->len
                              : (uint32_t)es_utf8_length((const char *)e->ptr, e->len);
        }
        return mode == PQ_ROWS_STRINGS ? add_string(r, e->def == l->max_def ? e : &(pq_entry){0}) : 0;
    }
    if (e->rep == 0)
        r->present[i] = e->def >= l->def_field;
    if (e->rep <= 1 && e->def >= l->def_list) {
        r->count[i]++;
        if (mode == PQ_ROWS_FLOATS)
            return add_float(r, l, e);
    }
    return 0;
}

int pq_rows_read(es_context *ctx, const es_pq_file *f, uint32_t rg, const pq_leaf *leaf,
                 pq_rows_mode mode, pq_rows *out, pq_column *c)
{
    out->n = out->bytes_len = out->n_floats = 0;
    int rc = pq_column_open(c, f, rg, leaf, mode != PQ_ROWS_COUNT);
    if (rc != ES_OK)
        return es_fail(ctx, rc, "%s: row group %u, column %s: %s", f->path, rg, leaf->name, c->err);
    pq_entry e;
    int got = 0;
    while (rc == ES_OK && (got = pq_column_next(c, &e)) == 1) {
        if (e.rep == 0 && new_row(out, mode) < 0)
            rc = ES_ERR_NOMEM;
        else if (out->n == 0)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: page %u: the first value "
                         "continues a row (repetition level %u)", f->path, rg, leaf->name,
                         c->page_no ? c->page_no - 1 : 0, e.rep);
        else if (add_entry(out, leaf, mode, &e) < 0)
            rc = ES_ERR_NOMEM;
    }
    if (rc == ES_OK && got < 0)
        rc = es_fail(ctx, got, "%s: row group %u, column %s: %s", f->path, rg, leaf->name, c->err);
    else if (rc == ES_ERR_NOMEM)
        es_fail(ctx, rc, "%s: row group %u, column %s: out of memory", f->path, rg, leaf->name);
    int64_t want = f->meta.row_groups[rg].num_rows;
    if (rc == ES_OK && (int64_t)out->n != want)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: %zu rows, the row group declares %lld",
                     f->path, rg, leaf->name, out->n, (long long)want);
    return rc;
}

void pq_rows_release(pq_rows *r)
{
    free(r->present);
    free(r->count);
    free(r->off);
    free(r->bytes);
    free(r->floats);
    memset(r, 0, sizeof *r);
}
