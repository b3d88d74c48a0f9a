/* Reshard mode, the parquet copy: CosyVoice parquet sources streamed row by row
 * into new parquet files that CosyVoice's unchanged loader reads.
 *
 * A parquet file stores each column contiguously, while rows arrive from the
 * sources one at a time and scattered over all N new files. So each new file
 * first gets a spool: for every row routed to it, one segment per leaf column
 * (the row's level entries and value bytes, pq_column's view), appended in
 * source order. After a pass over the sources, each spool is turned into the
 * file column by column (pq_write.c: the first source's schema, one row group,
 * PLAIN pages) and deleted. Nothing is held whole but one row of one source.
 *
 * Each source is read once per pass with one cursor per leaf, the cursors
 * advanced together row by row (a row of a leaf ends where the next entry with
 * repetition level 0 begins). The row's `utt` must equal the cost table's key:
 * a file that changed since it was measured is an error, not a silent mix-up.
 *
 * Check: while spooling, a hash chain per new file and leaf runs over the
 * segments; every written file is read back through the parquet reader and
 * its segments, rebuilt from what the reader returns, must give the same chain
 * and row count. Passes: as the tar copy, as many spools open at once as the
 * open-file limit allows.
 *
 * Beside the files, as make_parquet_list.py writes them: utt2parquet_N.json
 * (utt → file) and spk2parquet_N.json (spk → file, first-appearance order;
 * rows without a speaker have no entry),
 * listed by utt2data.list and spk2data.list. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/grow.h"
#include "core/strbuf.h"
#include "core/utf8.h"
#include "costs/cost_table.h"
#include "write/reshard_job.h"
#include "parquet/pq_column.h"
#include "parquet/pq_file.h"
#include "parquet/pq_meta.h"
#include "parquet/pq_write.h"

#define SPOOL_BUFFER (1u << 20)

typedef struct pq_target {
    FILE *spool;
    char *spool_buffer; /* the spool's stdio buffer (glibc ignores setvbuf's size without one) */
    char spool_path[4200];
    uint64_t rows;
} pq_target;

typedef struct pq_run {
    const es_plan *p;
    reshard_job *job;
    pq_write_schema schema;   /* every source's, the first one's copied */
    const char *schema_from;  /* that first source */
    uint32_t L;               /* leaves */
    uint32_t utt_leaf;
    uint32_t audio_leaf, text_leaf; /* UINT32_MAX when absent (checked against the table) */
    pq_target *targets;       /* N */
    uint64_t *digest;         /* N × L hash chains */
    uint32_t t0, t1;          /* the pass: spools [t0, t1) are open */
    pq_column *cols;          /* L source cursors */
    pq_entry *look;           /* L: each cursor's first entry of the next row */
    uint8_t *has_look;
    es_strbuf *seg;           /* L: the current row's segments */
    uint8_t *buf;             /* a segment read back from a spool */
    size_t buf_cap;
    uint64_t *index;          /* a spool's (offset, length) per row and leaf */
    size_t index_cap;
    pq_writer w;
} pq_run;

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
static int seg_next(const uint8_t **at, const uint8_t *end, uint8_t max_def, pq_entry *e)
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

static uint64_t chain(uint64_t h, const es_strbuf *seg)
{
    return XXH3_64bits_withSeed(seg->buf ? seg->buf : "", seg->len, h);
}

/* ---- reading a source row by row --------------------------------------------- */

static int column_error(es_context *ctx, const char *path, uint32_t rg, const pq_leaf *leaf,
                        const pq_column *c)
{
    return es_fail(ctx, c->status ? c->status : ES_ERR_FORMAT, "%s: row group %u, column %s: %s",
                   path, rg, leaf->name, c->err);
}

/* Reads row `row` of leaf l (cursor already in row group rg): into run->seg[l]
 * when `keep`, else only past it (a row no new file of this pass takes: its
 * values are not copied). */
static int read_leaf_row(es_context *ctx, pq_run *run, const es_pq_file *f, uint32_t rg,
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
            return column_error(ctx, f->path, rg, leaf, c);
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
            return column_error(ctx, f->path, rg, leaf, c);
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

/* The row's value of flat leaf l from its segment; 0 when null. */
static int row_value(const pq_run *run, const es_pq_file *f, uint32_t l, const char **v,
                     uint32_t *len)
{
    const es_strbuf *seg = &run->seg[l];
    const uint8_t *at = (const uint8_t *)seg->buf;
    pq_entry e;
    *v = "";
    *len = 0;
    if (!seg_next(&at, at + seg->len, f->leaves[l].max_def, &e) || !e.ptr)
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

/* The row against what was measured (issue 12 #5): audio_data of another size
 * or a text of another length means the file changed since. */
static int check_measured(es_context *ctx, const pq_run *run, const es_pq_file *f,
                          uint64_t ordinal, const es_cost_row *row)
{
    const char *v;
    uint32_t len;
    if (run->audio_leaf != UINT32_MAX && (row->flags & (ES_FLAG_AUDIO | ES_FLAG_UNSUPPORTED)) &&
        row_value(run, f, run->audio_leaf, &v, &len) && len != row->audio_bytes)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu (%s): audio_data of %u bytes, %llu when "
                       "measured: the file changed since it was measured (measure it again)",
                       f->path, (unsigned long long)ordinal, row->key, len,
                       (unsigned long long)row->audio_bytes);
    if (run->text_leaf != UINT32_MAX && (row->flags & ES_FLAG_TEXT) &&
        row_value(run, f, run->text_leaf, &v, &len) && es_utf8_length(v, len) != row->text_len)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu (%s): a text of %zu characters, %u when "
                       "measured: the file changed since it was measured (measure it again)",
                       f->path, (unsigned long long)ordinal, row->key, es_utf8_length(v, len),
                       row->text_len);
    return ES_OK;
}

static int in_pass(const pq_run *run, const copy_item *it)
{
    return it->target >= run->t0 && it->target < run->t1;
}

/* Appends the row's segments to the spools of items [a, b) in the pass. */
static int spool_row(es_context *ctx, pq_run *run, const es_pq_file *f, uint64_t ordinal,
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
    if (a < b) {
        int rc = check_measured(ctx, run, f, ordinal, &run->p->table->rows[run->job->items[a].row]);
        if (rc != ES_OK)
            return rc;
    }
    for (size_t i = a; i < b; i++) {
        const copy_item *it = &run->job->items[i];
        if (!in_pass(run, it))
            continue;
        pq_target *tg = &run->targets[it->target];
        for (uint32_t l = 0; l < run->L; l++) {
            const es_strbuf *seg = &run->seg[l];
            uint64_t n = seg->len;
            if (fwrite(&n, sizeof n, 1, tg->spool) != 1 ||
                (n && fwrite(seg->buf, 1, n, tg->spool) != n))
                return es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", tg->spool_path,
                               strerror(errno));
            uint64_t *h = &run->digest[(size_t)it->target * run->L + l];
            *h = chain(*h, seg);
        }
        tg->rows++;
    }
    return ES_OK;
}

static int codec_of(es_compress c)
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
static int check_schema(es_context *ctx, pq_run *run, const es_pq_file *f)
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
        if (!run->cols || !run->look || !run->has_look || !run->seg || !run->digest ||
            pq_writer_init(&run->w, &run->schema, codec_of(run->job->compress)) != 0)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        return ES_OK;
    }
    return same_schema(ctx, f, &run->schema, run->schema_from);
}

static int stream_rows(es_context *ctx, pq_run *run, const es_pq_file *f, const copy_source *s)
{
    size_t at = s->begin;
    uint64_t ordinal = 0;
    for (uint32_t rg = 0; rg < f->meta.n_row_groups; rg++) {
        int64_t rows = f->meta.row_groups[rg].num_rows;
        for (uint32_t l = 0; l < run->L; l++) {
            run->has_look[l] = 0;
            if (pq_column_open(&run->cols[l], f, rg, &f->leaves[l], 1) != ES_OK)
                return column_error(ctx, f->path, rg, &f->leaves[l], &run->cols[l]);
        }
        for (int64_t r = 0; r < rows; r++, ordinal++) {
            size_t a = at;
            while (at < s->end && run->job->items[at].pos == ordinal)
                at++;
            int wanted = 0;
            for (size_t i = a; i < at; i++)
                wanted |= in_pass(run, &run->job->items[i]);
            for (uint32_t l = 0; l < run->L; l++) {
                int rc = read_leaf_row(ctx, run, f, rg, l, (uint64_t)r, wanted);
                if (rc != ES_OK)
                    return rc;
            }
            if (wanted) {
                int rc = spool_row(ctx, run, f, ordinal, a, at);
                if (rc != ES_OK)
                    return rc;
            }
        }
        for (uint32_t l = 0; l < run->L; l++)
            if (run->has_look[l])
                return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: more rows "
                               "than the row group's %lld", f->path, rg, f->leaves[l].name,
                               (long long)rows);
    }
    if (at < s->end)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: ends after %llu rows, but the cost table has "
                       "row %llu (%s) in it: the file changed since it was measured", f->path,
                       (unsigned long long)ordinal, (unsigned long long)run->job->items[at].pos,
                       run->p->table->rows[run->job->items[at].row].key);
    return ES_OK;
}

static int copy_source_file(es_context *ctx, pq_run *run, const copy_source *s)
{
    int wanted = 0;
    for (size_t i = s->begin; i < s->end && !wanted; i++)
        wanted = in_pass(run, &run->job->items[i]);
    if (!wanted)
        return ES_OK;
    es_pq_file *f;
    int rc = es_pq_file_open(ctx, s->path, &f);
    if (rc != ES_OK)
        return rc;
    rc = check_schema(ctx, run, f);
    if (rc == ES_OK)
        rc = stream_rows(ctx, run, f, s);
    es_pq_file_close(f);
    return rc;
}

/* ---- spool → parquet file --------------------------------------------------- */

/* (offset, length) of every segment in the spool, row-major. The length
 * headers are found by reading the spool front to back in large blocks
 * (fseeko past each segment cost a system call a segment). */
static int index_spool(es_context *ctx, pq_run *run, pq_target *tg)
{
    size_t need = (size_t)tg->rows * run->L * 2;
    if (need > run->index_cap) {
        void *ix = run->index;
        if (es_grow(&ix, &run->index_cap, need, sizeof *run->index, 1024))
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        run->index = ix;
    }
    if (fflush(tg->spool) != 0)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", tg->spool_path, strerror(errno));
    if (es_grow((void **)&run->buf, &run->buf_cap, SPOOL_BUFFER, 1, 1 << 16) != 0)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    int fd = fileno(tg->spool);
    uint64_t off = 0;           /* of the next header */
    uint64_t block_at = 0, block_len = 0;
    for (size_t k = 0; k < need; k += 2) {
        uint64_t n;
        if (off < block_at || off + sizeof n > block_at + block_len) {
            ssize_t got = pread(fd, run->buf, SPOOL_BUFFER, (off_t)off);
            if (got < (ssize_t)sizeof n)
                return es_fail(ctx, ES_ERR_IO, "%s: cannot be read back", tg->spool_path);
            block_at = off, block_len = (uint64_t)got;
        }
        memcpy(&n, run->buf + (off - block_at), sizeof n);
        run->index[k] = off + sizeof n;
        run->index[k + 1] = n;
        off += sizeof n + n;
    }
    return ES_OK;
}

static int write_column(es_context *ctx, pq_run *run, pq_target *tg, uint32_t l,
                        const char *name)
{
    int fd = fileno(tg->spool);
    uint8_t max_def = run->schema.leaves[l].max_def;
    if (pq_writer_chunk_begin(&run->w, l) != 0)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", name, run->w.err);
    for (uint64_t r = 0; r < tg->rows; r++) {
        const uint64_t *ix = &run->index[(r * run->L + l) * 2];
        if (es_grow((void **)&run->buf, &run->buf_cap, ix[1] ? ix[1] : 1, 1, 1 << 16) != 0)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        if (ix[1] && pread(fd, run->buf, ix[1], (off_t)ix[0]) != (ssize_t)ix[1])
            return es_fail(ctx, ES_ERR_IO, "%s: cannot be read back", tg->spool_path);
        const uint8_t *at = run->buf, *end = run->buf + ix[1];
        pq_entry e;
        while (seg_next(&at, end, max_def, &e))
            if (pq_writer_put(&run->w, e.def, e.rep, e.ptr, e.len) != 0)
                return es_fail(ctx, ES_ERR_FORMAT, "%s: %s", name, run->w.err);
    }
    if (pq_writer_chunk_end(&run->w) != 0)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", name, run->w.err);
    return ES_OK;
}

static int write_file(es_context *ctx, pq_run *run, uint32_t t)
{
    pq_target *tg = &run->targets[t];
    char name[64];
    es_reshard_shard_name(run->p, t, name, sizeof name);
    int rc = index_spool(ctx, run, tg);
    FILE *fp = rc == ES_OK ? es_outdir_create(ctx, run->job->d, name) : NULL;
    if (rc == ES_OK && !fp)
        return ES_ERR_IO;
    if (rc == ES_OK && pq_writer_begin(&run->w, fp) != 0)
        rc = es_fail(ctx, ES_ERR_IO, "%s: %s", name, run->w.err);
    for (uint32_t l = 0; rc == ES_OK && l < run->L; l++)
        rc = write_column(ctx, run, tg, l, name);
    if (rc == ES_OK && pq_writer_end(&run->w, (int64_t)tg->rows) != 0)
        rc = es_fail(ctx, ES_ERR_IO, "%s: %s", name, run->w.err);
    if (fp) {
        int crc = es_outdir_close(ctx, run->job->d, fp, name);
        rc = rc == ES_OK ? crc : rc;
    }
    return rc;
}

/* Reads file t back through the parquet reader: one row group, the rows
 * spooled, and per leaf the same chain of segments. */
static int verify_file(es_context *ctx, pq_run *run, uint32_t t)
{
    char name[64], path[4200];
    es_reshard_shard_name(run->p, t, name, sizeof name);
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
            rc = column_error(ctx, path, 0, leaf, &c);
            break;
        }
        while ((r = pq_column_next(&c, &e)) > 0) {
            if (e.rep == 0 && started) {
                h = chain(h, &seg);
                n++;
                seg.len = 0;
            }
            started = 1;
            seg_add(&seg, &e, leaf->max_def);
        }
        if (r < 0) {
            rc = column_error(ctx, path, 0, leaf, &c);
            break;
        }
        if (started) {
            h = chain(h, &seg);
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

/* ---- passes -------------------------------------------------------------------- */

static int open_spools(es_context *ctx, pq_run *run)
{
    for (uint32_t t = run->t0; t < run->t1; t++) {
        pq_target *tg = &run->targets[t];
        snprintf(tg->spool_path, sizeof tg->spool_path, "%s/.spool_%09u", run->job->d->temp_path,
                 t);
        tg->spool = fopen(tg->spool_path, "w+b");
        if (!tg->spool)
            return es_fail(ctx, ES_ERR_IO, "%s: %s", tg->spool_path, strerror(errno));
        /* rows arrive as small segments: without a real buffer each was a
         * write(2) or two (strace: 8 500 writes, 16 000 lseeks for 370 MB) */
        if ((tg->spool_buffer = malloc(SPOOL_BUFFER)))
            setvbuf(tg->spool, tg->spool_buffer, _IOFBF, SPOOL_BUFFER);
        tg->rows = 0;
    }
    return ES_OK;
}

static void close_spool(pq_target *tg)
{
    if (tg->spool) {
        fclose(tg->spool);
        unlink(tg->spool_path);
    }
    free(tg->spool_buffer);
    tg->spool = NULL;
    tg->spool_buffer = NULL;
}

static size_t pq_target_memory(const reshard_job *job)
{
    (void)job;
    return SPOOL_BUFFER;
}

static int pq_begin_pass(es_context *ctx, void *r, uint32_t t0, uint32_t t1)
{
    pq_run *run = r;
    run->t0 = t0;
    run->t1 = t1;
    return open_spools(ctx, run);
}

static int pq_copy_source(es_context *ctx, void *r, const copy_source *s)
{
    return copy_source_file(ctx, r, s);
}

/* Each spool into its file, read back; every spool of the pass closed. */
static int pq_end_pass(es_context *ctx, void *r, int rc)
{
    pq_run *run = r;
    for (uint32_t t = run->t0; rc == ES_OK && t < run->t1; t++) {
        rc = write_file(ctx, run, t);
        close_spool(&run->targets[t]); /* disk back before the next file */
        if (rc == ES_OK)
            rc = verify_file(ctx, run, t);
    }
    for (uint32_t t = run->t0; t < run->t1; t++)
        close_spool(&run->targets[t]);
    return rc;
}

static const reshard_ops parquet_ops = {
    .name = "parquet",
    .target_memory = pq_target_memory,
    .begin_pass = pq_begin_pass,
    .copy_source = pq_copy_source,
    .end_pass = pq_end_pass,
};

/* ---- utt2parquet / spk2parquet ---------------------------------------------------- */

/* A JSON object as Python's json.dump(obj, f, ensure_ascii=False, indent=2) writes it. */
static int write_json(es_context *ctx, es_outdir *d, const char *name, json_t *obj)
{
    char *text = obj ? json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    if (!text)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: cannot be written (out of memory, or a key "
                       "that is not UTF-8)", name);
    es_strbuf sb = {text, strlen(text), strlen(text) + 1, 0};
    int rc = es_outdir_write_text(ctx, d, name, &sb);
    free(text);
    return rc;
}

int reshard_parquet_maps(es_context *ctx, const reshard_job *job)
{
    const es_plan *p = job->p;
    uint32_t N = p->reshard->n_shards;
    json_t **utt = calloc(N, sizeof *utt), **spk = calloc(N, sizeof *spk);
    int rc = utt && spk ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    es_strbuf path = {0}, utt_list = {0}, spk_list = {0};
    for (uint32_t t = 0; rc == ES_OK && t < N; t++) {
        utt[t] = json_object();
        spk[t] = json_object();
        if (!utt[t] || !spk[t])
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    /* items are in source order: the order of the rows in each new file */
    for (size_t i = 0; rc == ES_OK && i < job->n_items; i++) {
        const copy_item *it = &job->items[i];
        const es_cost_row *row = &p->table->rows[it->row];
        char name[64];
        es_reshard_shard_name(p, it->target, name, sizeof name);
        path.len = 0;
        es_strbuf_printf(&path, "%s/%s", job->d->final_path, name);
        json_t *value = path.oom ? NULL : json_string(path.buf);
        if (!value || json_object_set_new(utt[it->target], row->key, value) != 0)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: utt %s: not UTF-8, so not a JSON key", row->shard,
                         row->key);
        else if (row->spk[0] && /* a null speaker has no entry */
                 !json_object_get(spk[it->target], row->spk) &&
                 json_object_set_new(spk[it->target], row->spk, json_string(path.buf)) != 0)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: spk %s: not UTF-8, so not a JSON key", row->shard,
                         row->spk);
    }
    for (uint32_t t = 0; rc == ES_OK && t < N; t++) {
        char u[64], s[64];
        snprintf(u, sizeof u, "utt2parquet_%09u.json", t);
        snprintf(s, sizeof s, "spk2parquet_%09u.json", t);
        es_strbuf_printf(&utt_list, "%s/%s\n", job->d->final_path, u);
        es_strbuf_printf(&spk_list, "%s/%s\n", job->d->final_path, s);
        rc = write_json(ctx, job->d, u, utt[t]);
        if (rc == ES_OK)
            rc = write_json(ctx, job->d, s, spk[t]);
    }
    if (rc == ES_OK)
        rc = es_outdir_write_text(ctx, job->d, "utt2data.list", &utt_list);
    if (rc == ES_OK)
        rc = es_outdir_write_text(ctx, job->d, "spk2data.list", &spk_list);
    for (uint32_t t = 0; t < N && utt && spk; t++) {
        json_decref(utt[t]);
        json_decref(spk[t]);
    }
    free(utt);
    free(spk);
    es_strbuf_release(&path);
    es_strbuf_release(&utt_list);
    es_strbuf_release(&spk_list);
    return rc;
}

int reshard_copy_parquet(es_context *ctx, reshard_job *job, uint32_t t0, uint32_t t1)
{
    pq_run run = {.p = job->p, .job = job};
    run.targets = calloc(job->p->reshard->n_shards, sizeof *run.targets);
    int rc = run.targets ? reshard_run_passes(ctx, job, &parquet_ops, &run, t0, t1)
                         : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (uint32_t l = 0; run.cols && l < run.L; l++) {
        pq_column_release(&run.cols[l]);
        es_strbuf_release(&run.seg[l]);
    }
    free(run.cols);
    free(run.look);
    free(run.has_look);
    free(run.seg);
    free(run.digest);
    free(run.buf);
    free(run.index);
    free(run.targets);
    pq_writer_release(&run.w);
    pq_write_schema_release(&run.schema);
    return rc;
}
