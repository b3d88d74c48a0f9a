/* Parquet rows by position. A fetch reads only the row groups that hold
 * requested rows. In them, flat columns go through one pq_column cursor that
 * passes over whole data pages holding no requested row (pq_column_skip): a
 * few rows of audio_data cost their own pages, not the chunk. List columns
 * (embeddings, speech tokens) are decoded per row group and cached in the
 * reader, up to CACHE_BUDGET bytes, since a page of them covers many rows and
 * a loader fetches from the same file again and again. */
#include <stdlib.h>
#include <string.h>

#include "formats/parquet/codec/pq_column.h"
#include "formats/parquet/codec/pq_file.h"
#include "formats/parquet/parquet.h"
#include "formats/parquet/rows_pq_list.h"
#include "formats/parquet/rows_pq_span.h"
#include "formats/parquet/rows_pq_value.h"

#define CACHE_BUDGET (256u << 20)
#define SPAN_MIN (256u << 10) /* pages read in part: at least this, and a 64th of it a row */

typedef struct column {
    const pq_leaf *leaf; /* the field's (only) leaf */
    rows_pq_kind kind;
} column;

struct rows_parquet {
    es_pq_file *f;
    column *cols;
    size_t n_cols;
    uint64_t *rg_start;   /* first row of each row group; [n_row_groups] = rows */
    pq_column flat;       /* one cursor for flat columns: page buffers reused */
    pq_column list;       /* the same for list chunks */
    rows_pq_pages *pages; /* [rg * n_cols + col]: a flat chunk's data pages, listed on first use */
    rows_pq_spanned spanned; /* the page last read in part */
    uint32_t span_min;
    rows_pq_list **cache; /* [rg * n_cols + col], NULL until decoded */
    size_t cache_bytes;
    uint64_t list_chunks_decoded;
};

static int build_columns(es_context *ctx, rows_parquet *p)
{
    const es_pq_file *f = p->f;
    p->cols = calloc(f->n_leaves ? f->n_leaves : 1, sizeof *p->cols);
    size_t n_rg = f->meta.n_row_groups;
    p->rg_start = calloc(n_rg + 1, sizeof *p->rg_start);
    if (!p->cols || !p->rg_start)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", f->path);
    for (uint32_t i = 0; i < f->n_leaves; i++) {
        const pq_leaf *l = &f->leaves[i];
        if (i > 0 && l->name == f->leaves[i - 1].name)
            continue; /* another leaf of the same field (a struct) */
        column *c = &p->cols[p->n_cols++];
        c->leaf = l;
        rows_pq_kind_of(f, l, &c->kind);
    }
    for (size_t g = 0; g < n_rg; g++) {
        int64_t n = f->meta.row_groups[g].num_rows;
        if (n < 0 || (uint64_t)n > UINT64_MAX / 2 - p->rg_start[g])
            return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %zu: %lld rows", f->path, g, (long long)n);
        p->rg_start[g + 1] = p->rg_start[g] + (uint64_t)n;
    }
    p->cache = calloc(n_rg * p->n_cols + 1, sizeof *p->cache);
    p->pages = calloc(n_rg * p->n_cols + 1, sizeof *p->pages);
    p->span_min = SPAN_MIN;
    return p->cache && p->pages ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", f->path);
}

int rows_parquet_open(es_context *ctx, const char *path, rows_parquet **out)
{
    *out = NULL;
    rows_parquet *p = calloc(1, sizeof *p);
    if (!p)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    int rc = es_pq_file_open(ctx, path, &p->f);
    if (rc == ES_OK)
        rc = build_columns(ctx, p);
    if (rc != ES_OK) {
        rows_parquet_free(p);
        return rc;
    }
    *out = p;
    return ES_OK;
}

static void drop_cache(rows_parquet *p)
{
    size_t n = p->f ? p->f->meta.n_row_groups * p->n_cols : 0;
    for (size_t i = 0; p->cache && i < n; i++) {
        if (p->cache[i])
            rows_pq_list_release(p->cache[i]);
        free(p->cache[i]);
        p->cache[i] = NULL;
    }
    p->cache_bytes = 0;
}

void rows_parquet_free(rows_parquet *p)
{
    if (!p)
        return;
    drop_cache(p);
    free(p->cache);
    for (size_t i = 0; p->pages && p->f && i < p->f->meta.n_row_groups * p->n_cols; i++)
        rows_pq_pages_release(&p->pages[i]);
    free(p->pages);
    rows_pq_spanned_release(&p->spanned);
    pq_column_release(&p->flat);
    pq_column_release(&p->list);
    free(p->cols);
    free(p->rg_start);
    es_pq_file_close(p->f);
    free(p);
}

uint64_t rows_parquet_count(const rows_parquet *p)
{
    return p->rg_start[p->f->meta.n_row_groups];
}

size_t rows_parquet_column_count(const rows_parquet *p)
{
    return p->n_cols;
}

const char *rows_parquet_column_name(const rows_parquet *p, size_t i)
{
    return i < p->n_cols ? p->cols[i].leaf->name : NULL;
}

void rows_parquet_get_stats(const rows_parquet *p, rows_parquet_stats *s)
{
    s->pages_decoded = p->flat.pages_decoded;
    s->pages_skipped = p->flat.pages_skipped;
    s->list_chunks_decoded = p->list_chunks_decoded;
    s->pages_spanned = p->spanned.pages_opened;
}

void rows_parquet_set_span_min(rows_parquet *p, uint32_t min)
{
    p->span_min = min;
}

/* The columns a request names, as indices into p->cols (sel has room for all
 * of them, or for n_columns). */
static int select_columns(es_context *ctx, rows_parquet *p, const rows_request *req, size_t *sel,
                          size_t *n_sel)
{
    *n_sel = req->columns ? req->n_columns : p->n_cols;
    for (size_t k = 0; k < *n_sel; k++) {
        size_t c = k;
        if (req->columns) {
            for (c = 0; c < p->n_cols && strcmp(p->cols[c].leaf->name, req->columns[k]) != 0; c++)
                ;
            if (c == p->n_cols) {
                char names[512];
                es_pq_file_column_names(p->f, names, sizeof names);
                return es_fail(ctx, ES_ERR_USAGE, "%s: no column %s (columns: %s)", p->f->path,
                               req->columns[k], names);
            }
        }
        if (p->cols[c].kind.unsupported)
            return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: column %s: %s, which the row reader does not read",
                           p->f->path, p->cols[c].leaf->name, p->cols[c].kind.unsupported);
        sel[k] = c;
    }
    return ES_OK;
}

static int out_of_memory(es_context *ctx, const rows_parquet *p)
{
    return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", p->f->path);
}

/* The list chunk of column c in row group rg, from the cache or decoded. */
static int list_chunk(es_context *ctx, rows_parquet *p, uint32_t rg, size_t c, rows_pq_list **out)
{
    rows_pq_list **slot = &p->cache[(size_t)rg * p->n_cols + c];
    if (!*slot) {
        rows_pq_list *l = malloc(sizeof *l);
        if (!l)
            return out_of_memory(ctx, p);
        int rc = rows_pq_list_decode(ctx, p->f, rg, p->cols[c].leaf, p->cols[c].kind.type, &p->list, l);
        if (rc != ES_OK) {
            free(l);
            return rc;
        }
        size_t mem = rows_pq_list_memory(l);
        if (p->cache_bytes + mem > CACHE_BUDGET)
            drop_cache(p); /* values already fetched were copied out; nothing points here */
        *slot = l;
        p->cache_bytes += mem;
        p->list_chunks_decoded++;
    }
    *out = *slot;
    return ES_OK;
}

/* Rows out[0..n) (positions pos[0..n), all in row group rg) get field j from
 * list column c. */
static int fetch_list(es_context *ctx, rows_parquet *p, uint32_t rg, size_t c, const rows_request *req,
                      size_t k0, size_t k1, size_t j)
{
    rows_pq_list *l = NULL;
    int rc = list_chunk(ctx, p, rg, c, &l);
    for (size_t k = k0; rc == ES_OK && k < k1; k++) {
        es_value *v = (es_value *)&req->out[k].fields[j].value;
        if (rows_pq_list_value(l, (size_t)(req->pos[k] - p->rg_start[rg]), req->arena, v) < 0)
            rc = out_of_memory(ctx, p);
    }
    return rc;
}

/* The page list of flat column c in row group rg, made on first use. A chunk
 * whose headers do not list cleanly gets an empty list: its rows then go
 * through the cursor, which reports what is wrong when a row needs it. */
static rows_pq_pages *page_list(rows_parquet *p, uint32_t rg, size_t c)
{
    rows_pq_pages *t = &p->pages[(size_t)rg * p->n_cols + c];
    if (!t->built)
        rows_pq_pages_build(&p->flat, p->f, rg, p->cols[c].leaf, t);
    return t;
}

/* Row r (of the row group) of flat column c from the cursor, which passes
 * over the pages between *at (the cursor's next row; UINT64_MAX: not open)
 * and r. */
static int cursor_value(es_context *ctx, rows_parquet *p, uint32_t rg, size_t c, uint64_t r,
                        uint64_t *at, pq_entry *e)
{
    pq_column *cur = &p->flat;
    const pq_leaf *leaf = p->cols[c].leaf;
    if (*at == UINT64_MAX || *at > r) {
        int rc = pq_column_open(cur, p->f, rg, leaf, 1);
        if (rc != ES_OK)
            return es_fail(ctx, rc, "%s: row group %u, column %s: %s", p->f->path, rg, leaf->name, cur->err);
        *at = 0;
    }
    uint64_t row = p->rg_start[rg] + r;
    int got = 0, rc = pq_column_skip(cur, r - *at);
    if (rc == ES_OK && (got = pq_column_next(cur, e)) < 0)
        rc = got;
    if (rc != ES_OK)
        return es_fail(ctx, rc, "%s: row %llu, column %s: %s", p->f->path, (unsigned long long)row,
                       leaf->name, cur->err);
    if (got == 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu, column %s: the column chunk ends before it",
                       p->f->path, (unsigned long long)row, leaf->name);
    *at = r + 1;
    return ES_OK;
}

/* The same from flat column c: a row in a big PLAIN page is read alone out of
 * it (rows_pq_span.h); other rows come from the cursor, skipping the pages
 * between requested rows. */
static int fetch_flat(es_context *ctx, rows_parquet *p, uint32_t rg, size_t c, const rows_request *req,
                      size_t k0, size_t k1, size_t j)
{
    const pq_leaf *leaf = p->cols[c].leaf;
    int codec = p->f->meta.row_groups[rg].columns[leaf->index].codec;
    const rows_pq_pages *t = page_list(p, rg, c);
    uint64_t at = UINT64_MAX;
    size_t g = 0;
    for (size_t k = k0; k < k1; k++) {
        uint64_t r = req->pos[k] - p->rg_start[rg];
        while (g + 1 < t->n && t->pages[g + 1].first <= r)
            g++;
        pq_entry e = {0};
        const rows_pq_page *page = t->n ? &t->pages[g] : NULL;
        if (page && r - page->first < (uint64_t)page->h.num_values &&
            rows_pq_spannable(leaf, codec, page, p->span_min)) {
            int null, rc = rows_pq_span_value(&p->spanned, p->f, leaf, codec, page,
                                              (uint32_t)(r - page->first), &e.ptr, &e.len, &null);
            if (rc != ES_OK)
                return es_fail(ctx, rc, "%s: row %llu, column %s: %s", p->f->path,
                               (unsigned long long)req->pos[k], leaf->name, p->spanned.err);
            e.def = null ? 0 : leaf->max_def;
        } else {
            int rc = cursor_value(ctx, p, rg, c, r, &at, &e);
            if (rc != ES_OK)
                return rc;
        }
        es_value *v = (es_value *)&req->out[k].fields[j].value;
        memset(v, 0, sizeof *v);
        if (e.def == leaf->max_def && rows_pq_scalar(p->cols[c].kind.type, e.ptr, e.len, req->arena, v) < 0)
            return out_of_memory(ctx, p);
    }
    return ES_OK;
}

/* Every out row gets its fields array, names filled in, values null. */
static int make_rows(es_context *ctx, rows_parquet *p, const rows_request *req, const size_t *sel,
                     size_t n_sel)
{
    for (size_t k = 0; k < req->n; k++) {
        es_field *fields = es_arena_alloc(req->arena, (n_sel ? n_sel : 1) * sizeof *fields);
        if (!fields)
            return out_of_memory(ctx, p);
        memset(fields, 0, (n_sel ? n_sel : 1) * sizeof *fields);
        for (size_t j = 0; j < n_sel; j++)
            fields[j].name = p->cols[sel[j]].leaf->name;
        req->out[k] = (es_row){fields, n_sel};
    }
    return ES_OK;
}

int rows_parquet_read(es_context *ctx, rows_parquet *p, const rows_request *req)
{
    size_t n_sel, *sel = malloc((req->columns ? req->n_columns : p->n_cols) * sizeof *sel + 1);
    if (!sel)
        return out_of_memory(ctx, p);
    int rc = select_columns(ctx, p, req, sel, &n_sel);
    uint64_t rows = rows_parquet_count(p);
    if (rc == ES_OK && req->n && req->pos[req->n - 1] >= rows) {
        size_t k = 0;
        while (req->pos[k] < rows)
            k++;
        rc = rows_out_of_range(ctx, p->f->path, req->pos[k], rows, "rows");
    }
    if (rc == ES_OK)
        rc = make_rows(ctx, p, req, sel, n_sel);
    uint32_t rg = 0;
    for (size_t k0 = 0, k1; rc == ES_OK && n_sel && k0 < req->n; k0 = k1) {
        while (p->rg_start[rg + 1] <= req->pos[k0])
            rg++;
        for (k1 = k0; k1 < req->n && req->pos[k1] < p->rg_start[rg + 1]; k1++)
            ;
        for (size_t j = 0; rc == ES_OK && j < n_sel; j++)
            rc = p->cols[sel[j]].kind.is_list ? fetch_list(ctx, p, rg, sel[j], req, k0, k1, j)
                                              : fetch_flat(ctx, p, rg, sel[j], req, k0, k1, j);
    }
    free(sel);
    return rc;
}
