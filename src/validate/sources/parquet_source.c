/* Embeddings from CosyVoice parquet shards: the `utt_embedding` column (keys
 * from `utt`, speakers from `spk`) or the `spk_embedding` column (one vector
 * per speaker: the first row of each speaker; every row repeats it). `path` is
 * one parquet file or a list of them, one per line (CosyVoice's data.list),
 * relative paths resolved against the current directory as its loader does.
 * Rows whose list is null or empty are recorded as absent. Reading itself is
 * the parquet reader's (src/formats/parquet/codec/). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_stream.h"
#include "core/file_stream.h"
#include "core/grow.h"
#include "core/line_reader.h"
#include "core/utf8.h"
#include "readers/manifest.h"
#include "formats/parquet/codec/parquet_embeddings.h"
#include "validate/sources/emb_source.h"

typedef struct pq_load {
    es_emb_set *out;
    int speakers;
    const char **spk;  /* utt mode: speaker of each entry */
    size_t spk_cap;
    es_strmap absent;  /* spk mode: speakers seen without a vector */
} pq_load;

static int nomem(es_context *ctx, const char *path)
{
    return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
}

static int add_vector(es_context *ctx, pq_load *l, const char *key, const es_embedding_row *row)
{
    es_emb_set *o = l->out;
    size_t off = o->n_vals;
    if (es_emb_set_reserve(o, row->dim) != ES_OK)
        return nomem(ctx, o->name);
    memcpy(o->vals + o->n_vals, row->vec, row->dim * sizeof *row->vec);
    o->n_vals += row->dim;
    o->has_floats = 1;
    return es_emb_set_add(ctx, o, key, strlen(key), off, row->dim);
}

static int utt_row(es_context *ctx, pq_load *l, const es_embedding_row *row)
{
    if (!row->present)
        return es_emb_set_add_absent(l->out, row->key) ? nomem(ctx, l->out->name) : ES_OK;
    if (l->out->n == l->spk_cap) {
        void *p = l->spk;
        if (es_grow(&p, &l->spk_cap, l->spk_cap + 1, sizeof *l->spk, 256))
            return nomem(ctx, l->out->name);
        l->spk = p;
    }
    const char *spk = es_arena_strndup(&l->out->strings, row->spk, strlen(row->spk));
    if (!spk)
        return nomem(ctx, l->out->name);
    l->spk[l->out->n] = spk;
    return add_vector(ctx, l, row->key, row);
}

static int spk_row(es_context *ctx, pq_load *l, const es_embedding_row *row)
{
    size_t n = strlen(row->spk);
    if (!n || es_strmap_get(&l->out->index, row->spk, n))
        return ES_OK; /* unknown speaker, or its vector came with an earlier row */
    if (row->present)
        return add_vector(ctx, l, row->spk, row);
    if (es_strmap_get(&l->absent, row->spk, n))
        return ES_OK;
    if (es_strmap_put(&l->absent, row->spk, n, "") || es_emb_set_add_absent(l->out, row->spk))
        return nomem(ctx, l->out->name);
    return ES_OK;
}

static int load_file(es_context *ctx, pq_load *l, const char *file)
{
    const char *column = l->speakers ? "spk_embedding" : "utt_embedding";
    es_embedding_rows rows = {0};
    int rc = es_parquet_read_embeddings(ctx, file, column, &rows);
    if (rc == ES_OK && !rows.column_found)
        rc = es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: no %s column", file, column);
    for (size_t i = 0; rc == ES_OK && i < rows.n; i++)
        rc = l->speakers ? spk_row(ctx, l, &rows.rows[i]) : utt_row(ctx, l, &rows.rows[i]);
    es_embedding_rows_release(&rows);
    return rc;
}

static int is_parquet(const char *path)
{
    char magic[4];
    FILE *fp = NULL;
    es_fopen_regular(path, &fp); /* a FIFO would block: not a parquet file */
    int yes = fp && fread(magic, 1, 4, fp) == 4 && !memcmp(magic, "PAR1", 4);
    if (fp)
        fclose(fp);
    return yes;
}

static int load_list(es_context *ctx, pq_load *l, const char *path, const char *root)
{
    es_line_reader lr;
    int e = es_line_reader_open(&lr, path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(e));
    int rc = ES_OK, got, files = 0;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) > 0) {
        const char *p = lr.line;
        size_t n = es_strip(&p, lr.len);
        if (!n)
            continue;
        char *name = strndup(p, n), buf[4096];
        const char *file = name ? es_resolve_path(root, name, buf, sizeof buf) : NULL;
        if (!file)
            rc = nomem(ctx, path);
        else if (!is_parquet(file)) {
            char shown[256];
            rc = es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: line %lu: %s: not a parquet file (an embedding "
                         "source is a .pt, .npy, parquet file or a list of parquet files)",
                         path, lr.lineno, es_printable(shown, sizeof shown, file, SIZE_MAX));
        }
        else
            rc = load_file(ctx, l, file);
        files++;
        free(name);
    }
    if (rc == ES_OK && got < 0)
        rc = es_line_reader_fail(ctx, &lr, path);
    if (rc == ES_OK && files == 0)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: empty list: no embedding source", path);
    es_line_reader_close(&lr);
    return rc;
}

int es_parquet_emb_load(es_context *ctx, const char *path, const char *root, int speakers,
                        es_emb_set *out)
{
    pq_load l = {out, speakers, NULL, 0, {0}};
    int rc = is_parquet(path) ? load_file(ctx, &l, path) : load_list(ctx, &l, path, root);
    /* A speaker first seen without a vector may have one in a later row. */
    size_t kept = 0;
    for (size_t i = 0; speakers && i < out->n_absent; i++)
        if (es_emb_set_find(out, out->absent[i]) < 0)
            out->absent[kept++] = out->absent[i];
    if (speakers)
        out->n_absent = kept;
    if (rc == ES_OK && !speakers)
        out->spk = l.spk;
    else
        free(l.spk);
    es_strmap_release(&l.absent);
    return rc;
}

/* A parquet file by its magic; any other text (no NUL byte in the head) is
 * taken for a list of them, bidding least. */
static int parquet_bid(const uint8_t *b, size_t n)
{
    if (n >= 4 && !memcmp(b, "PAR1", 4))
        return 10;
    return n && !memchr(b, 0, n) ? 1 : 0;
}

static int parquet_source_load(es_context *ctx, const char *path, const es_emb_load_args *a,
                               es_emb_set *out)
{
    return es_parquet_emb_load(ctx, path, a->root, a->speakers, out);
}

const es_emb_source_ops es_emb_source_parquet = {"parquet", parquet_bid, parquet_source_load};
