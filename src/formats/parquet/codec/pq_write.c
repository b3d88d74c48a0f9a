/* The parquet writer (pq_write.h): data pages v1, PLAIN values, RLE levels,
 * one row group, the footer in Thrift compact protocol. */
#include "formats/parquet/codec/pq_write.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "config.h"
#include "core/grow.h"
#include "formats/parquet/codec/pq_codec.h"
#include "formats/parquet/codec/pq_thrift_write.h"
#include "formats/parquet/codec/pq_values.h"

/* A page is cut at the next row start once it holds this much. */
#define PAGE_VALUE_BYTES (1u << 20)
#define PAGE_ENTRIES (1u << 20)

/* ---- schema ------------------------------------------------------------------ */

void pq_write_schema_release(pq_write_schema *s)
{
    for (uint32_t i = 0; s->raw && i < s->n_elems; i++)
        free(s->raw[i]);
    for (uint32_t i = 0; s->leaves && i < s->n_leaves; i++) {
        for (uint32_t k = 0; s->leaves[i].path && k < s->leaves[i].n_path; k++)
            free(s->leaves[i].path[k]);
        free(s->leaves[i].path);
    }
    free(s->raw);
    free(s->raw_len);
    free(s->leaves);
    memset(s, 0, sizeof *s);
}

int pq_write_schema_copy(const es_pq_file *f, pq_write_schema *out)
{
    memset(out, 0, sizeof *out);
    const pq_file_meta *m = &f->meta;
    out->raw = calloc(m->n_schema, sizeof *out->raw);
    out->raw_len = calloc(m->n_schema, sizeof *out->raw_len);
    out->leaves = calloc(f->n_leaves ? f->n_leaves : 1, sizeof *out->leaves);
    if (!out->raw || !out->raw_len || !out->leaves)
        goto oom;
    out->n_elems = m->n_schema;
    for (uint32_t i = 0; i < m->n_schema; i++) {
        out->raw[i] = malloc(m->schema[i].raw_len);
        if (!out->raw[i])
            goto oom;
        memcpy(out->raw[i], m->schema[i].raw, m->schema[i].raw_len);
        out->raw_len[i] = m->schema[i].raw_len;
    }
    out->n_leaves = f->n_leaves;
    for (uint32_t i = 0; i < f->n_leaves; i++) {
        const pq_leaf *l = &f->leaves[i];
        pq_write_leaf *w = &out->leaves[i];
        *w = (pq_write_leaf){l->type, l->type_length, l->max_def, l->max_rep, 0, NULL};
        w->path = calloc(l->depth ? l->depth : 1, sizeof *w->path);
        if (!w->path)
            goto oom;
        w->n_path = l->depth;
        for (uint32_t k = 0; k < l->depth; k++)
            if (!(w->path[k] = strdup(m->schema[l->path[k]].name)))
                goto oom;
    }
    return 0;
oom:
    pq_write_schema_release(out);
    return -1;
}

int pq_write_schema_same(const es_pq_file *f, const pq_write_schema *s, char *why, size_t n)
{
    const pq_file_meta *m = &f->meta;
    if (m->n_schema != s->n_elems) {
        snprintf(why, n, "%u schema elements, not %u", m->n_schema, s->n_elems);
        return 0;
    }
    for (uint32_t i = 0; i < s->n_elems; i++)
        if (m->schema[i].raw_len != s->raw_len[i] ||
            memcmp(m->schema[i].raw, s->raw[i], s->raw_len[i]) != 0) {
            snprintf(why, n, "schema element %u (%s) differs", i, m->schema[i].name);
            return 0;
        }
    return 1;
}

/* ---- the writer --------------------------------------------------------------- */

static int failf(pq_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(pq_writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
    return -1;
}

static int oom(pq_writer *w)
{
    snprintf(w->err, sizeof w->err, "out of memory");
    return -1;
}

int pq_writer_init_shared(pq_writer *w, const pq_write_schema *schema, pq_page_queue *q)
{
    w->schema = schema;
    w->codec = q->codec;
    w->q = q;
    w->chunks = calloc(schema->n_leaves ? schema->n_leaves : 1, sizeof *w->chunks);
    return w->chunks ? 0 : oom(w);
}

int pq_writer_init(pq_writer *w, const pq_write_schema *schema, int codec)
{
    return pq_page_queue_init(&w->own, codec) == 0 ? pq_writer_init_shared(w, schema, &w->own)
                                                   : oom(w);
}

void pq_writer_release(pq_writer *w)
{
    pq_page_queue_release(&w->own);
    free(w->chunks);
    free(w->def);
    free(w->rep);
    es_strbuf_release(&w->values);
    es_strbuf_release(&w->header);
    memset(w, 0, sizeof *w);
}

static int emit(pq_writer *w, const void *data, size_t n)
{
    if (n && fwrite(data, 1, n, w->fp) != n) {
        snprintf(w->err, sizeof w->err, "write failed: %s", strerror(errno));
        return -1;
    }
    w->pos += n;
    return 0;
}

int pq_writer_begin(pq_writer *w, FILE *fp)
{
    w->fp = fp;
    w->pos = 0;
    memset(w->chunks, 0, w->schema->n_leaves * sizeof *w->chunks);
    return emit(w, "PAR1", 4);
}

static const char *leaf_name(const pq_writer *w)
{
    const pq_write_leaf *l = &w->schema->leaves[w->leaf];
    return l->n_path ? l->path[0] : "?";
}

int pq_writer_chunk_begin(pq_writer *w, uint32_t leaf)
{
    w->leaf = leaf;
    w->chunks[leaf] = (pq_chunk_info){.start = w->pos};
    w->chunk_pages = 0;
    w->n = 0;
    w->values.len = 0;
    w->n_bool_bits = 0;
    w->bool_bits = 0;
    return 0;
}

/* Levels as RLE runs of the hybrid encoding, behind their 4-byte length (v1).
 * A run is varint(count << 1) and the level in ceil(bit width / 8) bytes: one
 * byte, since levels here are below 256 (and above 0: no levels are written
 * for a maximum of 0). */
static void put_levels(es_strbuf *out, const uint8_t *lv, size_t n)
{
    size_t len_at = out->len;
    es_strbuf_append(out, "\0\0\0\0", 4);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && lv[j] == lv[i])
            j++;
        uint8_t b[12];
        size_t k = 0;
        uint64_t header = (uint64_t)(j - i) << 1;
        while (header >= 0x80) {
            b[k++] = (uint8_t)(header | 0x80);
            header >>= 7;
        }
        b[k++] = (uint8_t)header;
        b[k++] = lv[i];
        es_strbuf_append(out, (const char *)b, k);
        i = j;
    }
    if (!out->oom) {
        uint32_t len = (uint32_t)(out->len - len_at - 4);
        for (int i = 0; i < 4; i++)
            out->buf[len_at + i] = (char)(len >> (8 * i));
    }
}

/* Page pg (compressed) behind its header, to its owner's file. */
static int write_page(pq_page *pg)
{
    pq_writer *w = pg->owner;
    es_strbuf *h = &w->header;
    h->len = 0;
    pq_tw t;
    pq_tw_init(&t, h);
    pq_tw_i32(&t, 1, PQ_PAGE_DATA);
    pq_tw_i32(&t, 2, (int32_t)pg->raw.len);
    pq_tw_i32(&t, 3, (int32_t)pg->zlen);
    pq_tw_struct_begin(&t, 5); /* DataPageHeader */
    pq_tw_i32(&t, 1, (int32_t)pg->n);
    pq_tw_i32(&t, 2, PQ_ENC_PLAIN);
    pq_tw_i32(&t, 3, PQ_ENC_RLE);
    pq_tw_i32(&t, 4, PQ_ENC_RLE);
    pq_tw_struct_end(&t);
    pq_tw_finish(&t);
    if (h->oom)
        return oom(w);
    if (emit(w, h->buf, h->len) != 0 || emit(w, pg->z, pg->zlen) != 0)
        return -1;
    pq_chunk_info *c = &w->chunks[pg->leaf];
    c->uncompressed += (int64_t)(h->len + pg->raw.len);
    c->compressed += (int64_t)(h->len + pg->zlen);
    return 0;
}

/* The oldest page in flight written (after its compression). A failure is
 * reported in w, the writer asking (whichever writer's page failed). */
static int write_oldest(pq_writer *w)
{
    pq_page *pg = pq_page_queue_oldest(w->q);
    int rc = 0;
    if (pg->failed)
        rc = failf(w, "%s", pg->err);
    else if (write_page(pg) != 0) {
        if (pg->owner != w)
            snprintf(w->err, sizeof w->err, "%s", ((pq_writer *)pg->owner)->err);
        rc = -1;
    }
    pq_page_queue_pop(w->q);
    return rc;
}

/* Every page in flight written, in order. */
static int drain(pq_writer *w)
{
    while (w->q->count)
        if (write_oldest(w) != 0)
            return -1;
    return 0;
}

/* The page filled so far handed to the queue (compressed beside the writer,
 * written when a slot is needed or the chunk ends). */
static int flush_page(pq_writer *w)
{
    const pq_write_leaf *l = &w->schema->leaves[w->leaf];
    pq_page *pg;
    while (!(pg = pq_page_queue_next(w->q)))
        if (write_oldest(w) != 0)
            return -1;
    es_strbuf *page = &pg->raw;
    pg->owner = w;
    pg->leaf = w->leaf;
    if (l->max_rep)
        put_levels(page, w->rep, w->n);
    if (l->max_def)
        put_levels(page, w->def, w->n);
    es_strbuf_append(page, w->values.buf, w->values.len);
    if (w->n_bool_bits)
        es_strbuf_putc(page, (char)w->bool_bits);
    if (page->oom)
        return oom(w);
    if (page->len > INT32_MAX)
        return failf(w, "column %s: a page of %zu bytes is more than parquet allows",
                     leaf_name(w), page->len);
    pg->n = (uint32_t)w->n;
    w->chunks[w->leaf].values += (int64_t)w->n;
    w->chunk_pages++;
    pq_page_queue_push(w->q);
    w->n = 0;
    w->values.len = 0;
    w->n_bool_bits = 0;
    w->bool_bits = 0;
    return 0;
}

int pq_writer_put(pq_writer *w, uint8_t def, uint8_t rep, const uint8_t *ptr, uint32_t len)
{
    const pq_write_leaf *l = &w->schema->leaves[w->leaf];
    if (rep == 0 && w->n && (w->values.len >= PAGE_VALUE_BYTES || w->n >= PAGE_ENTRIES) &&
        flush_page(w) != 0)
        return -1;
    if (def > l->max_def || rep > l->max_rep)
        return failf(w, "column %s: level %u above the column's maximum", leaf_name(w),
                     def > l->max_def ? def : rep);
    if (es_grow((void **)&w->def, &w->def_cap, w->n + 1, 1, 4096) != 0 ||
        es_grow((void **)&w->rep, &w->rep_cap, w->n + 1, 1, 4096) != 0)
        return oom(w);
    w->def[w->n] = def;
    w->rep[w->n] = rep;
    w->n++;
    if (def < l->max_def)
        return 0;
    if (!ptr && len)
        return failf(w, "column %s: a value without bytes", leaf_name(w));
    uint32_t width = pq_type_width(l->type, l->type_length);
    if (l->type == PQ_BOOLEAN) {
        if (len != 1)
            return failf(w, "column %s: a boolean of %u bytes", leaf_name(w), len);
        w->bool_bits |= (uint8_t)((ptr[0] & 1) << w->n_bool_bits);
        if (++w->n_bool_bits == 8) {
            es_strbuf_putc(&w->values, (char)w->bool_bits);
            w->n_bool_bits = 0;
            w->bool_bits = 0;
        }
    } else if (width) {
        if (len != width)
            return failf(w, "column %s: a value of %u bytes in a column of %u-byte values",
                         leaf_name(w), len, width);
        es_strbuf_append(&w->values, (const char *)ptr, len);
    } else {
        uint8_t n4[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                         (uint8_t)(len >> 24)};
        es_strbuf_append(&w->values, (const char *)n4, 4);
        es_strbuf_append(&w->values, (const char *)ptr, len);
    }
    return w->values.oom ? oom(w) : 0;
}

int pq_writer_chunk_end(pq_writer *w)
{
    /* an empty chunk still gets one (empty) page: readers expect a first page */
    if ((w->n || w->chunk_pages == 0) && flush_page(w) != 0)
        return -1;
    return drain(w);
}

/* FileMetaData with one RowGroup of every leaf's ColumnChunk. */
static void footer(pq_writer *w, es_strbuf *out, int64_t num_rows)
{
    const pq_write_schema *s = w->schema;
    int64_t total_uncompressed = 0, total_compressed = 0;
    for (uint32_t i = 0; i < s->n_leaves; i++) {
        total_uncompressed += w->chunks[i].uncompressed;
        total_compressed += w->chunks[i].compressed;
    }
    pq_tw t;
    pq_tw_init(&t, out);
    pq_tw_i32(&t, 1, 1); /* version */
    pq_tw_list(&t, 2, PQ_T_STRUCT, s->n_elems);
    for (uint32_t i = 0; i < s->n_elems; i++)
        pq_tw_elem_raw(&t, s->raw[i], s->raw_len[i]);
    pq_tw_i64(&t, 3, num_rows);
    pq_tw_list(&t, 4, PQ_T_STRUCT, 1);
    pq_tw_elem_struct_begin(&t); /* RowGroup */
    pq_tw_list(&t, 1, PQ_T_STRUCT, s->n_leaves);
    for (uint32_t i = 0; i < s->n_leaves; i++) {
        const pq_write_leaf *l = &s->leaves[i];
        const pq_chunk_info *c = &w->chunks[i];
        pq_tw_elem_struct_begin(&t); /* ColumnChunk */
        pq_tw_i64(&t, 2, (int64_t)c->start);
        pq_tw_struct_begin(&t, 3); /* ColumnMetaData */
        pq_tw_i32(&t, 1, l->type);
        pq_tw_list(&t, 2, PQ_T_I32, 2);
        pq_tw_elem_i32(&t, PQ_ENC_PLAIN);
        pq_tw_elem_i32(&t, PQ_ENC_RLE);
        pq_tw_list(&t, 3, PQ_T_BINARY, l->n_path);
        for (uint32_t k = 0; k < l->n_path; k++)
            pq_tw_elem_binary(&t, l->path[k], strlen(l->path[k]));
        pq_tw_i32(&t, 4, w->codec);
        pq_tw_i64(&t, 5, c->values);
        pq_tw_i64(&t, 6, c->uncompressed);
        pq_tw_i64(&t, 7, c->compressed);
        pq_tw_i64(&t, 9, (int64_t)c->start);
        pq_tw_struct_end(&t);
        pq_tw_struct_end(&t);
    }
    pq_tw_i64(&t, 2, total_uncompressed);
    pq_tw_i64(&t, 3, num_rows);
    pq_tw_i64(&t, 5, s->n_leaves ? (int64_t)w->chunks[0].start : 4);
    pq_tw_i64(&t, 6, total_compressed);
    pq_tw_struct_end(&t);
    static const char created_by[] = "equishard version " ES_VERSION;
    pq_tw_binary(&t, 6, created_by, sizeof created_by - 1);
    pq_tw_finish(&t);
}

int pq_writer_end(pq_writer *w, int64_t num_rows)
{
    es_strbuf *out = &w->header;
    out->len = 0;
    footer(w, out, num_rows);
    if (out->oom)
        return oom(w);
    uint32_t n = (uint32_t)out->len;
    uint8_t tail[8] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24),
                       'P', 'A', 'R', '1'};
    if (emit(w, out->buf, out->len) != 0 || emit(w, tail, sizeof tail) != 0)
        return -1;
    return fflush(w->fp) == 0 ? 0 : failf(w, "write failed: %s", strerror(errno));
}
