#include "formats/parquet/rows_pq_span.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "formats/parquet/codec/pq_rle.h"

#define MAX_PAGE (1u << 30) /* pq_column.c's limit: larger pages go there to be refused */

int rows_pq_pages_build(pq_column *c, const es_pq_file *f, uint32_t rg, const pq_leaf *leaf,
                        rows_pq_pages *t)
{
    size_t cap = 0;
    uint64_t first = 0, body;
    pq_page_header h;
    int got, rc = pq_column_open(c, f, rg, leaf, 0);
    while (rc == ES_OK && (got = pq_column_walk(c, &h, &body)) != 0) {
        if (got < 0)
            rc = got;
        else if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
            continue;
        else if (es_grow((void **)&t->pages, &cap, t->n + 1, sizeof *t->pages, 16))
            rc = ES_ERR_NOMEM;
        else {
            t->pages[t->n++] = (rows_pq_page){body, first, h};
            first += (uint64_t)h.num_values;
        }
    }
    t->built = 1;
    if (rc != ES_OK) { /* an empty list: every row goes through the cursor, which says what is wrong */
        free(t->pages);
        t->pages = NULL;
        t->n = 0;
    }
    return rc;
}

void rows_pq_pages_release(rows_pq_pages *t)
{
    free(t->pages);
    memset(t, 0, sizeof *t);
}

int rows_pq_spannable(const pq_leaf *leaf, int codec, const rows_pq_page *g, uint32_t min)
{
    const pq_page_header *h = &g->h;
    if (leaf->type != PQ_BYTE_ARRAY || leaf->max_rep != 0 || leaf->max_def > 1 ||
        h->encoding != PQ_ENC_PLAIN || (codec != PQ_SNAPPY && codec != PQ_UNCOMPRESSED))
        return 0;
    if (h->num_values <= 0 || h->compressed_size < 0 || h->uncompressed_size < 0 ||
        (uint32_t)h->uncompressed_size > MAX_PAGE)
        return 0;
    uint32_t u = (uint32_t)h->uncompressed_size;
    if (u < min || u / (uint32_t)h->num_values < min / 64)
        return 0;
    if (h->type == PQ_PAGE_DATA)
        return leaf->max_def == 0 || h->def_encoding == PQ_ENC_RLE;
    return h->type == PQ_PAGE_DATA_V2 && h->rep_length == 0 && h->def_length >= 0 &&
           h->def_length <= h->compressed_size && h->def_length <= h->uncompressed_size;
}

static int failf(rows_pq_spanned *s, const rows_pq_page *g, int status, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(s->err, sizeof s->err, "page at byte %llu: %s", (unsigned long long)g->body, msg);
    return status;
}

static int span_failed(rows_pq_spanned *s, const rows_pq_page *g, int rc)
{
    return failf(s, g, rc, "%s", s->span.err);
}

static int le32(const uint8_t *p)
{
    return (int)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* Definition levels: v1 keeps them (RLE, a 4-byte length first) at the start of
 * the compressed content, v2 uncompressed before it. Sets values_at. */
static int levels(rows_pq_spanned *s, const es_pq_file *f, const pq_leaf *leaf, int codec,
                  const rows_pq_page *g)
{
    const pq_page_header *h = &g->h;
    uint32_t n = (uint32_t)h->num_values, z = (uint32_t)h->compressed_size,
             u = (uint32_t)h->uncompressed_size, len = 0, at = 0;
    const uint8_t *p = NULL;
    int rc = ES_OK, v1 = h->type == PQ_PAGE_DATA;
    if (v1) {
        rc = pq_span_open(&s->span, f->fd, g->body, z, u, codec == PQ_SNAPPY);
        if (rc == ES_OK && leaf->max_def > 0) {
            if (u < 4)
                return failf(s, g, ES_ERR_FORMAT, "definition levels: length runs past the page");
            if ((rc = pq_span_get(&s->span, 0, 4, &p)) == ES_OK) {
                len = (uint32_t)le32(p);
                if (len > u - 4)
                    return failf(s, g, ES_ERR_FORMAT, "definition levels: %u bytes run past the page", len);
                rc = pq_span_get(&s->span, 4, len, &p);
            }
            at = 4 + len;
        }
    } else {
        len = (uint32_t)h->def_length;
        rc = pq_span_open(&s->span, f->fd, g->body, len, len, 0);
        if (rc == ES_OK)
            rc = pq_span_get(&s->span, 0, len, &p);
    }
    if (rc != ES_OK)
        return span_failed(s, g, rc);
    char err[200];
    if (leaf->max_def == 0)
        memset(s->def, 0, n);
    else if (pq_levels_decode(PQ_ENC_RLE, p, len, leaf->max_def, s->def, n, "definition", err, sizeof err) < 0)
        return failf(s, g, ES_ERR_FORMAT, "%s", err);
    s->values_at = at;
    if (!v1) { /* the values: the rest of the body, compressed or not */
        int compressed = codec != PQ_UNCOMPRESSED && h->is_compressed;
        if (!compressed && z != u)
            return failf(s, g, ES_ERR_FORMAT, "uncompressed page of %u bytes declares %u", z, u);
        rc = pq_span_open(&s->span, f->fd, g->body + len, z - len, u - len, compressed);
        if (rc != ES_OK)
            return span_failed(s, g, rc);
    }
    return ES_OK;
}

static int open_page(rows_pq_spanned *s, const es_pq_file *f, const pq_leaf *leaf, int codec,
                     const rows_pq_page *g)
{
    uint32_t n = (uint32_t)g->h.num_values;
    s->page = NULL;
    s->n_voff = 0;
    if (es_grow((void **)&s->def, &s->def_cap, n + 1, 1, 64) ||
        es_grow((void **)&s->voff, &s->voff_cap, n + 2, sizeof *s->voff, 64))
        return failf(s, g, ES_ERR_NOMEM, "out of memory");
    int rc = levels(s, f, leaf, codec, g);
    if (rc != ES_OK)
        return rc;
    s->n_vals = 0;
    for (uint32_t i = 0; i < n; i++)
        s->n_vals += s->def[i] == leaf->max_def;
    if (g->h.type == PQ_PAGE_DATA_V2 && s->n_vals != n - (uint32_t)g->h.num_nulls)
        return failf(s, g, ES_ERR_FORMAT, "levels give %u values, the header %d values and %d nulls",
                     s->n_vals, g->h.num_values, g->h.num_nulls);
    s->voff[0] = s->values_at;
    s->n_voff = 1;
    s->page = g;
    s->pages_opened++;
    return ES_OK;
}

/* Finds where value k + 1 starts (voff[k + 1]): value k's length says. */
static int next_offset(rows_pq_spanned *s, const rows_pq_page *g, size_t k)
{
    uint32_t o = s->voff[k], u = s->span.u;
    const uint8_t *p;
    if (u < 4 || o > u - 4)
        return failf(s, g, ES_ERR_FORMAT, "value %zu: its length runs past the page", k);
    int rc = pq_span_get(&s->span, o, 4, &p);
    if (rc != ES_OK)
        return span_failed(s, g, rc);
    uint32_t len = (uint32_t)le32(p);
    if (len > u - o - 4)
        return failf(s, g, ES_ERR_FORMAT, "value %zu: %u bytes run past the page", k, len);
    s->voff[k + 1] = o + 4 + len;
    s->n_voff = k + 2;
    return ES_OK;
}

int rows_pq_span_value(rows_pq_spanned *s, const es_pq_file *f, const pq_leaf *leaf, int codec,
                       const rows_pq_page *g, uint32_t i, const uint8_t **ptr, uint32_t *len, int *null)
{
    int rc = s->page == g ? ES_OK : open_page(s, f, leaf, codec, g);
    if (rc != ES_OK)
        return rc;
    *ptr = NULL;
    *len = 0;
    *null = s->def[i] != leaf->max_def;
    if (*null)
        return ES_OK;
    size_t k = 0;
    for (uint32_t j = 0; j < i; j++)
        k += s->def[j] == leaf->max_def;
    while (rc == ES_OK && s->n_voff < k + 2)
        rc = next_offset(s, g, s->n_voff - 1);
    if (rc != ES_OK)
        return rc;
    *len = s->voff[k + 1] - s->voff[k] - 4;
    static const uint8_t none[1];
    *ptr = none;
    rc = *len ? pq_span_get(&s->span, s->voff[k] + 4, *len, ptr) : ES_OK;
    return rc == ES_OK ? ES_OK : span_failed(s, g, rc);
}

void rows_pq_spanned_release(rows_pq_spanned *s)
{
    pq_span_release(&s->span);
    free(s->def);
    free(s->voff);
    memset(s, 0, sizeof *s);
}
