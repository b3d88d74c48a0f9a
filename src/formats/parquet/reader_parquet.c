/* CosyVoice parquet shards (tools/make_parquet_list.py: pandas → pyarrow; named
 * parquet_000000000.tar although they are parquet): one row per utterance.
 *
 * Columns are found by name: `utt` (key) and `audio_data` (the audio file's
 * bytes) are required; `text`, `spk`, `speech_token`, `utt_embedding`,
 * `spk_embedding` are read when present; others (`wav`, `instruct`, …) are never
 * touched. For each row group the small columns are decoded first (row group's
 * rows of them in memory), then audio_data is streamed one page at a time and
 * each value is probed while its page is in memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "readers/audio_object.h"
#include "formats/parquet/codec/pq_column.h"
#include "formats/parquet/codec/pq_file.h"
#include "formats/parquet/codec/pq_rows.h"
#include "readers/reader.h"
#include "formats/parquet/parquet.h"

enum { COL_UTT, COL_TEXT, COL_SPK, COL_TOKENS, COL_UTT_EMB, COL_SPK_EMB, N_SMALL };

static const struct {
    const char *name;
    pq_rows_mode mode;
} small_columns[N_SMALL] = {
    [COL_UTT] = {"utt", PQ_ROWS_STRINGS},
    [COL_TEXT] = {"text", PQ_ROWS_TEXT_LEN},
    [COL_SPK] = {"spk", PQ_ROWS_STRINGS},
    [COL_TOKENS] = {"speech_token", PQ_ROWS_COUNT},
    [COL_UTT_EMB] = {"utt_embedding", PQ_ROWS_COUNT},
    [COL_SPK_EMB] = {"spk_embedding", PQ_ROWS_COUNT},
};

struct es_shard_reader {
    es_pq_file *f;
    const char *path, *shard;
    es_reader_opts opts;
    const pq_leaf *audio;
    const pq_leaf *leaf[N_SMALL]; /* NULL: the file has no such column */
    pq_rows rows[N_SMALL];
    uint32_t rg;          /* current row group */
    int loaded;           /* rows[] and audio_col hold row group rg */
    size_t row, n_rows;   /* next row in the row group; its row count */
    uint64_t pos;         /* rows delivered so far in the file */
    pq_column small_col;  /* one cursor for every small column: buffers allocated once */
    pq_column audio_col;
};

int bid_parquet(const uint8_t *h, size_t n)
{
    return es_pq_magic(h, n) ? 100 : 0;
}

/* Column i's decoding mode: the text itself is kept, to check it is UTF-8
 * (bad_text) and count its tokens. */
static pq_rows_mode mode_of(const es_shard_reader *r, int i)
{
    (void)r;
    return i == COL_TEXT ? PQ_ROWS_STRINGS : small_columns[i].mode;
}

static int find_columns(es_context *ctx, es_shard_reader *r)
{
    char names[512];
    r->audio = es_pq_file_column(r->f, "audio_data");
    for (int i = 0; i < N_SMALL; i++)
        r->leaf[i] = es_pq_file_column(r->f, small_columns[i].name);
    if (!r->leaf[COL_UTT] || !r->audio) {
        es_pq_file_column_names(r->f, names, sizeof names);
        return es_fail(ctx, ES_ERR_FORMAT, "%s: no %s column: not a CosyVoice shard (columns: %s)",
                       r->path, r->leaf[COL_UTT] ? "audio_data" : "utt", names);
    }
    int rc = pq_rows_check(ctx, r->f, r->audio, PQ_ROWS_STRINGS);
    for (int i = 0; rc == ES_OK && i < N_SMALL; i++)
        if (r->leaf[i])
            rc = pq_rows_check(ctx, r->f, r->leaf[i], mode_of(r, i));
    return rc;
}

void parquet_close(es_shard_reader *r)
{
    if (!r)
        return;
    for (int i = 0; i < N_SMALL; i++)
        pq_rows_release(&r->rows[i]);
    pq_column_release(&r->small_col);
    pq_column_release(&r->audio_col);
    es_pq_file_close(r->f);
    free(r);
}

int parquet_open(es_context *ctx, const char *path, const char *shard,
                        const es_reader_opts *opts, es_shard_reader **out)
{
    *out = NULL;
    es_shard_reader *r = calloc(1, sizeof *r);
    if (!r)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    r->path = path;
    r->shard = shard;
    r->opts = *opts;
    int rc = es_pq_file_open(ctx, path, &r->f);
    if (rc == ES_OK)
        rc = find_columns(ctx, r);
    if (rc != ES_OK) {
        parquet_close(r);
        return rc;
    }
    *out = r;
    return ES_OK;
}

/* Decodes the small columns of row group r->rg and opens its audio_data chunk. */
static int load_row_group(es_context *ctx, es_shard_reader *r)
{
    for (int i = 0; i < N_SMALL; i++) {
        if (!r->leaf[i])
            continue;
        int rc = pq_rows_read(ctx, r->f, r->rg, r->leaf[i], mode_of(r, i), &r->rows[i],
                              &r->small_col);
        if (rc != ES_OK)
            return rc;
    }
    r->n_rows = r->rows[COL_UTT].n;
    r->row = 0;
    int rc = pq_column_open(&r->audio_col, r->f, r->rg, r->audio, 1);
    if (rc != ES_OK)
        return es_fail(ctx, rc, "%s: row group %u, column audio_data: %s", r->path, r->rg,
                       r->audio_col.err);
    r->loaded = 1;
    return ES_OK;
}

/* After the last row of a row group: audio_data must be finished too. */
static int finish_row_group(es_context *ctx, es_shard_reader *r)
{
    pq_entry e;
    int rc = pq_column_next(&r->audio_col, &e);
    if (rc < 0)
        return es_fail(ctx, rc, "%s: row group %u, column audio_data: %s", r->path, r->rg,
                       r->audio_col.err);
    if (rc > 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column audio_data: more values than the %zu rows",
                       r->path, r->rg, r->n_rows);
    r->loaded = 0;
    r->rg++;
    return ES_OK;
}

static const char *string_at(const pq_rows *p, size_t i)
{
    return p->present[i] ? p->bytes + p->off[i] : "";
}

/* Fills the row's fields that come from the small columns. */
static void fill_small(es_shard_reader *r, es_cost_row *row)
{
    size_t i = r->row;
    memset(row, 0, sizeof *row);
    row->key = string_at(&r->rows[COL_UTT], i);
    row->shard = r->shard;
    row->pos = r->pos;
    row->spk = r->leaf[COL_SPK] ? string_at(&r->rows[COL_SPK], i) : "";
    if (r->leaf[COL_TEXT] && r->rows[COL_TEXT].present[i])
        es_reader_text(&r->opts, string_at(&r->rows[COL_TEXT], i), r->rows[COL_TEXT].count[i], row);
    if (r->leaf[COL_TOKENS] && r->rows[COL_TOKENS].present[i])
        row->speech_tokens = r->rows[COL_TOKENS].count[i];
    if (r->leaf[COL_UTT_EMB] && r->rows[COL_UTT_EMB].present[i] && r->rows[COL_UTT_EMB].count[i])
        row->flags |= ES_FLAG_UTT_EMB;
    if (r->leaf[COL_SPK_EMB] && r->rows[COL_SPK_EMB].present[i] && r->rows[COL_SPK_EMB].count[i])
        row->flags |= ES_FLAG_SPK_EMB;
}

int parquet_next(es_context *ctx, es_shard_reader *r, es_cost_row *row)
{
    while (!r->loaded || r->row == r->n_rows) {
        int rc;
        if (r->loaded)
            rc = finish_row_group(ctx, r);
        else if (r->rg < r->f->meta.n_row_groups)
            rc = load_row_group(ctx, r);
        else
            return ES_NEXT_END;
        if (rc != ES_OK)
            return rc;
    }
    pq_entry e;
    int rc = pq_column_next(&r->audio_col, &e);
    if (rc < 0)
        return es_fail(ctx, rc, "%s: row group %u, column audio_data: %s", r->path, r->rg,
                       r->audio_col.err);
    if (rc == 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column audio_data: %zu values, the row group has %zu rows",
                       r->path, r->rg, r->row, r->n_rows);
    fill_small(r, row);
    size_t i = r->row++;
    r->pos++;
    if (!r->rows[COL_UTT].present[i]) {
        es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu: utt is null", r->path, (unsigned long long)row->pos);
        return ES_NEXT_BAD;
    }
    if (!e.ptr) {
        es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu (%s): audio_data is null", r->path,
                (unsigned long long)row->pos, row->key);
        return ES_NEXT_BAD;
    }
    es_mem_stream m;
    es_byte_stream s;
    es_byte_stream_from_memory(&s, &m, e.ptr, e.len);
    char err[256];
    /* not strict: like a tar member with an unknown suffix, audio no probe knows
     * is flagged `unsupported`, not an error (the bytes carry no file name) */
    rc = es_audio_object_measure(&s, &r->opts, 0, row, err, sizeof err);
    if (rc != ES_AUDIO_OBJ_OK) {
        es_fail(ctx, ES_ERR_FORMAT, "%s: row %llu (%s): audio_data: %s", r->path,
                (unsigned long long)row->pos, row->key, rc == ES_AUDIO_OBJ_IO ? "read error" : err);
        return ES_NEXT_BAD;
    }
    return ES_NEXT_RECORD;
}
