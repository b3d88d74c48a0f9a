/* Reshard's parquet copy, what both ways of writing share
 * (reshard_parquet_run.h): segments, a source read row by row, the checks
 * against what was measured, the schema every source must have, and the
 * read-back of a written file. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/strbuf.h"
#include "core/utf8.h"
#include "costs/cost_table.h"
#include "formats/parquet/codec/pq_meta.h"
#include "formats/parquet/reshard_parquet_run.h"

/* ---- segments: one row of one leaf ------------------------------------------- */

/* Appends entry e: def, rep, and when it carries a value its length (u32 LE)
 * and bytes. */
static void seg_add(es_strbuf *seg, const pq_entry *e, uint8_t max_def)
{
    char lv[2] = {(char)e->def, (char)e->rep};
    es_strbuf_append(seg, lv, 2);
    if (e->def != max_def)
        return;
    uint8_t n4[4] = {(uint8_t)e->len, (uint8_t)(e->len >> 8), (uint8_t)(e->len >> 16),
                     (uint8_t)(e->len >> 24)};
    es_strbuf_append(seg, (const char *)n4, 4);
    es_strbuf_append(seg, (const char *)e->ptr, e->len);
}

/* The next entry of a segment; 1, or 0 at its end (spools are ours: trusted). */
int rp_segment_next(const uint8_t **at, const uint8_t *end, uint8_t max_def, pq_entry *e)
{
    const uint8_t *q = *at;
    if (q >= end)
        return 0;
    e->def = q[0];
    e->rep = q[1];
    q += 2;
    e->ptr = NULL;
    e->len = 0;
    if (e->def == max_def) {
        e->len = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                 (uint32_t)q[3] << 24;
        e->ptr = q + 4;
        q += 4 + e->len;
    }
    *at = q;
    return 1;
}

uint64_t rp_chain(uint64_t h, const es_strbuf *seg)
{
    return XXH3_64bits_withSeed(seg->buf ? seg->buf : "", seg->len, h);
}

/* ---- reading a source row by row --------------------------------------------- */

int rp_column_error(es_context *ctx, const char *path, uint32_t rg, const pq_leaf *leaf,
                        const pq_column *c)
{
    return es_fail(ctx, c->status ? c->status : ES_ERR_FORMAT, "%s: row group %u, column %s: %s",
                   path, rg, leaf->name, c->err);
}

/* Reads row `row` of leaf l (cursor already in row group rg): into run->seg[l]
 * when `keep`, else only past it (a row no new file of this pass takes: its
 * values are not copied). */
int rp_read_leaf_row(es_context *ctx, pq_run *run, const es_pq_file *f, uint32_t rg,
                         uint32_t l, uint64_t row, int keep)
{
    const pq_leaf *leaf = &f->leaves[l];
    pq_column *c = &run->cols[l];
    es_strbuf *seg = &run->seg[l];
    seg->len = 0;
    pq_entry e;
    if (run->has_look[l]) {
        e = run->look[l];
    } else {
        int rc = pq_column_next(c, &e);
        if (rc < 0)
            return rp_column_error(ctx, f->path, rg, leaf, c);
        if (rc == 0)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: ends at row %llu, "
                           "before the row group's %lld rows", f->path, rg, leaf->name,
                           (unsigned long long)row, (long long)f->meta.row_groups[rg].num_rows);
    }
    if (e.rep != 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: row %llu starts with "
                       "repetition level %u", f->path, rg, leaf->name, (unsigned long long)row,
                       e.rep);
    if (keep)
        seg_add(seg, &e, leaf->max_def);
    for (;;) {
        int rc = pq_column_next(c, &e);
        if (rc < 0)
            return rp_column_error(ctx, f->path, rg, leaf, c);
        if (rc == 0) {
            run->has_look[l] = 0;
            break;
        }
        if (e.rep == 0) {
            /* the next row's first entry: its bytes stay valid until the next call */
            run->look[l] = e;
            run->has_look[l] = 1;
            break;
        }
        if (keep)
            seg_add(seg, &e, leaf->max_def);
    }
    return seg->oom ? es_fail(ctx, ES_ERR_NOMEM, "out of memory") : ES_OK;
}

int rp_more_rows(es_context *ctx, const es_pq_file *f, uint32_t rg, uint32_t l)
{
    return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: more rows than the row "
                   "group's %lld", f->path, rg, f->leaves[l].name,
                   (long long)f->meta.row_groups[rg].num_rows);
}

int rp_ends_early(es_context *ctx, const pq_run *run, const es_pq_file *f, size_t at,
                  uint64_t ordinal)
{
    return es_fail(ctx, ES_ERR_FORMAT, "%s: ends after %llu rows, but the cost table has row "
                   "%llu (%s) in it: the file changed since it was measured", f->path,
                   (unsigned long long)ordinal, (unsigned long long)run->job->items[at].pos,
                   run->p->table->rows[run->job->items[at].row].key);
}

/* The row's value of flat leaf l from its segment; 0 when null. */
static int row_value(const pq_run *run, const es_pq_file *f, uint32_t l, const char **v,
                     uint32_t *len)
{
    const es_strbuf *seg = &run->seg[l];
    const uint8_t *at = (const uint8_t *)seg->buf;
    pq_entry e;
    *v = "";
    *len = 0;
    if (!rp_segment_next(&at, at + seg->len, f->leaves[l].max_def, &e) || !e.ptr)
        return 0;
    *v = (const char *)e.ptr;
    *len = e.len;
    return 1;
}

/* The row's key from its utt segment ("" when null). */
static void row_key(const pq_run *run, const es_pq_file *f, const char **key, uint32_t *len)
{
    row_value(run, f, run->utt_leaf, key, len);
}

/* The row against what was measured: audio_data of another size
 * or a text of another length means the file changed since. */
int rp_check_measured(es_context *ctx, const pq_run *run, const es_pq_file *f,
                          uint64_t ordinal, const es_cost_row *row, int audio, int text)
{
    const char *v;
    uint32_t len;
    if (audio && run->audio_leaf != UINT32_MAX && (row->flags & (ES_FLAG_AUDIO | ES_FLAG_UNSUPPORTED)) &&
        row_value(run, f, run->audio_leaf, &v, &len) && len != row->audio_bytes)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu (%s): audio_data of %u bytes, %llu when "
                       "measured: the file changed since it was measured (measure it again)",
                       f->path, (unsigned long long)ordinal, row->key, len,
                       (unsigned long long)row->audio_bytes);
    if (text && run->text_leaf != UINT32_MAX && (row->flags & ES_FLAG_TEXT) &&
        row_value(run, f, run->text_leaf, &v, &len) && es_utf8_length(v, len) != row->text_len)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu (%s): a text of %zu characters, %u when "
                       "measured: the file changed since it was measured (measure it again)",
                       f->path, (unsigned long long)ordinal, row->key, es_utf8_length(v, len),
                       row->text_len);
    return ES_OK;
}

int rp_in_pass(const pq_run *run, const copy_item *it)
{
    return it->target >= run->t0 && it->target < run->t1;
}

int rp_source_wanted(const pq_run *run, const copy_source *s)
{
    for (size_t i = s->begin; i < s->end; i++)
        if (rp_in_pass(run, &run->job->items[i]))
            return 1;
    return 0;
}


/* The row's utt (its segment read) against the key of items [a, b). */
int rp_check_keys(es_context *ctx, const pq_run *run, const es_pq_file *f, uint64_t ordinal,
                      size_t a, size_t b)
{
    const char *key;
    uint32_t key_len;
    row_key(run, f, &key, &key_len);
    for (size_t i = a; i < b; i++) {
        const char *want = run->p->table->rows[run->job->items[i].row].key;
        if (strlen(want) != key_len || memcmp(want, key, key_len) != 0)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu is %.*s, the cost table says %s: "
                           "the file changed since it was measured", f->path,
                           (unsigned long long)ordinal, (int)key_len, key, want);
    }
    return ES_OK;
}

int rp_codec(es_compress c)
{
    return c == ES_COMPRESS_SNAPPY ? PQ_SNAPPY
           : c == ES_COMPRESS_ZSTD ? PQ_ZSTD
           : c == ES_COMPRESS_GZIP ? PQ_GZIP
                                   : PQ_UNCOMPRESSED;
}

/* A CosyVoice parquet file has a flat utt column: the key. */
static const pq_leaf *utt_leaf(es_context *ctx, const es_pq_file *f)
{
    const pq_leaf *utt = es_pq_file_column(f, "utt");
    if (!utt || utt->max_rep != 0) {
        es_fail(ctx, ES_ERR_FORMAT, "%s: no flat utt column: not a CosyVoice parquet file",
                f->path);
        return NULL;
    }
    return utt;
}

/* f must have `schema`, the one every new file holds (from file `from`). */
static int same_schema(es_context *ctx, const es_pq_file *f, const pq_write_schema *schema,
                       const char *from)
{
    char why[200];
    if (!pq_write_schema_same(f, schema, why, sizeof why))
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: its columns differ from %s's (%s): the "
                       "new files hold one schema, so every source must have the same columns "
                       "and types", f->path, from, why);
    return ES_OK;
}

int reshard_parquet_check_schemas(es_context *ctx, const reshard_job *job)
{
    pq_write_schema schema = {0};
    const char *from = NULL;
    int rc = ES_OK;
    for (size_t i = 0; rc == ES_OK && i < job->n_sources; i++) {
        es_pq_file *f;
        rc = es_pq_file_open(ctx, job->sources[i].path, &f);
        if (rc != ES_OK)
            break;
        if (from)
            rc = same_schema(ctx, f, &schema, from);
        else if (!utt_leaf(ctx, f))
            rc = ES_ERR_FORMAT;
        else if (pq_write_schema_copy(f, &schema) != 0)
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        else
            from = job->sources[i].path;
        es_pq_file_close(f);
    }
    pq_write_schema_release(&schema);
    return rc;
}

/* The first source read gives the run its schema (every source has it:
 * reshard_parquet_check_schemas; checked again as each is opened). */
int rp_check_schema(es_context *ctx, pq_run *run, const es_pq_file *f)
{
    if (!run->schema_from) {
        const pq_leaf *utt = utt_leaf(ctx, f);
        if (!utt)
            return ES_ERR_FORMAT;
        if (pq_write_schema_copy(f, &run->schema) != 0)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        run->schema_from = f->path;
        run->L = f->n_leaves;
        run->utt_leaf = utt->index;
        const pq_leaf *audio = es_pq_file_column(f, "audio_data"), *text = es_pq_file_column(f, "text");
        run->audio_leaf = audio && audio->max_rep == 0 ? audio->index : UINT32_MAX;
        run->text_leaf = text && text->max_rep == 0 ? text->index : UINT32_MAX;
        run->cols = calloc(run->L ? run->L : 1, sizeof *run->cols);
        run->look = calloc(run->L ? run->L : 1, sizeof *run->look);
        run->has_look = calloc(run->L ? run->L : 1, 1);
        run->seg = calloc(run->L ? run->L : 1, sizeof *run->seg);
        run->digest = calloc((size_t)run->p->reshard->n_shards * (run->L ? run->L : 1),
                             sizeof *run->digest);
        if (!run->cols || !run->look || !run->has_look || !run->seg || !run->digest)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        return ES_OK;
    }
    return same_schema(ctx, f, &run->schema, run->schema_from);
}

/* A segment's entries into w's open chunk; 0, or -1 with w->err set. */
int rp_put_segment(pq_writer *w, const uint8_t *seg, size_t len, uint8_t max_def)
{
    const uint8_t *at = seg, *end = seg + len;
    pq_entry e;
    while (rp_segment_next(&at, end, max_def, &e))
        if (pq_writer_put(w, e.def, e.rep, e.ptr, e.len) != 0)
            return -1;
    return 0;
}

/* Reads file t back through the parquet reader: one row group, the rows
 * spooled, and per leaf the same chain of segments. */
int rp_verify_file(es_context *ctx, pq_run *run, uint32_t t)
{
    char name[64], path[4200];
    reshard_job_shard_name(run->job, t, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", run->job->d->temp_path, name);
    es_pq_file *f;
    int rc = es_pq_file_open(ctx, path, &f);
    if (rc != ES_OK)
        return rc;
    char why[200];
    uint64_t rows = run->targets[t].rows;
    if (!pq_write_schema_same(f, &run->schema, why, sizeof why) || f->meta.n_row_groups != 1 ||
        f->meta.num_rows != (int64_t)rows)
        rc = es_fail(ctx, ES_ERR_INTERNAL, "%s: written file does not read back as written "
                     "(schema, row groups or %llu rows)", name, (unsigned long long)rows);
    pq_column c = {0};
    es_strbuf seg = {0};
    for (uint32_t l = 0; rc == ES_OK && l < run->L; l++) {
        const pq_leaf *leaf = &f->leaves[l];
        uint64_t h = 0, n = 0;
        int started = 0, r;
        pq_entry e;
        if (pq_column_open(&c, f, 0, leaf, 1) != ES_OK) {
            rc = rp_column_error(ctx, path, 0, leaf, &c);
            break;
        }
        while ((r = pq_column_next(&c, &e)) > 0) {
            if (e.rep == 0 && started) {
                h = rp_chain(h, &seg);
                n++;
                seg.len = 0;
            }
            started = 1;
            seg_add(&seg, &e, leaf->max_def);
        }
        if (r < 0) {
            rc = rp_column_error(ctx, path, 0, leaf, &c);
            break;
        }
        if (started) {
            h = rp_chain(h, &seg);
            n++;
            seg.len = 0;
        }
        if (seg.oom)
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        else if (n != rows || h != run->digest[(size_t)t * run->L + l])
            rc = es_fail(ctx, ES_ERR_INTERNAL, "%s: column %s does not read back as written "
                         "(%llu rows of %llu)", name, leaf->name, (unsigned long long)n,
                         (unsigned long long)rows);
    }
    es_strbuf_release(&seg);
    pq_column_release(&c);
    es_pq_file_close(f);
    return rc;
}

