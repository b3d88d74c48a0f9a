/* The parquet reader (src/formats/parquet/codec/) against files written by other
 * implementations, never by ours:
 *   - corpus A's CosyVoice shards (arrow-rs via parquet-wasm; snappy, dictionary,
 *     3-level lists): every row equals truth.tsv (soxi) and the audio hashes equal
 *     the xxh3 of the source files; text lengths, token counts and embedding
 *     values equal what hyparquet reads (tests/data/parquet/fixtures.tsv, dump.mjs);
 *   - InspireMusic's real pyarrow file: columns, keys, row count and nested list
 *     lengths equal hyparquet's; measuring it is a clear error (no audio_data);
 *   - the .parquet files of tests/data/parquet (make.mjs: arrow-rs, hyparquet-writer,
 *     parquetjs; every codec, page v1/v2, dictionary on/off, delta encodings,
 *     BYTE_STREAM_SPLIT, legacy 2-level lists, row groups, small pages, nulls,
 *     NaN): every row equals the generator's truth;
 *   - malformed input: truncation, footer lies, page header bit flips, page size
 *     lies, corrupt compressed data: one clear error line naming file, row group
 *     and column, never a crash;
 *   - the decoders on hand-made bytes (thrift, RLE, delta encodings). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <omp.h>
#include <xxhash.h>
#include <zstd.h>

#include "check_helpers.h"
#include "formats/parquet/codec/parquet_embeddings.h"
#include "formats/parquet/codec/pq_delta.h"
#include "formats/parquet/codec/pq_file.h"
#include "formats/parquet/codec/pq_meta.h"
#include "formats/parquet/codec/pq_page_queue.h"
#include "formats/parquet/codec/pq_rle.h"
#include "formats/parquet/codec/pq_rows.h"
#include "formats/parquet/codec/pq_thrift.h"
#include "formats/parquet/codec/pq_values.h"
#include "formats/format.h"
#include "readers/reader.h"
#include "validate/sources/emb_set.h"

#define INSPIRE "real/FunAudioLLM__InspireMusic/examples/music_generation/data/samples/parquet/parquet_000000000.tar"

/* ---- reading a whole file through the reader interface ------------------------------ */

typedef struct got_row {
    es_cost_row r;
    char key[128], spk[64];
    int kind; /* ES_NEXT_RECORD or ES_NEXT_BAD */
    char msg[1100];
} got_row;

typedef struct got {
    got_row rows[64];
    size_t n;
    int open_rc, end_rc; /* end_rc: ES_NEXT_END or a negative status */
    char msg[1100];
} got;

static void read_file(const char *path, int hash, got *g)
{
    memset(g, 0, sizeof *g);
    es_context ctx = {0};
    uint8_t head[ES_SNIFF_BYTES];
    long n = es_sniff_file(&ctx, path, head);
    ck_assert_int_ge(n, 0);
    const es_format_ops *ops = es_format_for(head, (size_t)n);
    if (n >= 4 && memcmp(head, "PAR1", 4) == 0)
        ck_assert_ptr_eq(ops, es_format_named("parquet"));
    else
        ops = es_format_named("parquet"); /* damaged copies: open them anyway */
    es_reader_opts opts = {.hash = hash, .probe_buffer = 1 << 20};
    es_shard_reader *r;
    g->open_rc = ops->open(&ctx, path, "shard.parquet", &opts, &r);
    if (g->open_rc != ES_OK) {
        snprintf(g->msg, sizeof g->msg, "%s", ctx.msg);
        return;
    }
    es_cost_row row;
    int rc;
    while ((rc = ops->next(&ctx, r, &row)) > 0) {
        ck_assert_uint_lt(g->n, 64);
        got_row *gr = &g->rows[g->n++];
        gr->kind = rc;
        gr->r = row;
        snprintf(gr->key, sizeof gr->key, "%s", row.key ? row.key : "");
        snprintf(gr->spk, sizeof gr->spk, "%s", row.spk ? row.spk : "");
        if (rc == ES_NEXT_BAD)
            snprintf(gr->msg, sizeof gr->msg, "%s", ctx.msg);
    }
    g->end_rc = rc;
    if (rc < 0)
        snprintf(g->msg, sizeof g->msg, "%s", ctx.msg);
    ops->close(r);
}

static uint64_t file_xxh3(const char *path)
{
    size_t len;
    unsigned char *b = read_whole_file(path, &len);
    ck_assert_ptr_nonnull(b);
    uint64_t h = XXH3_64bits(b, len);
    free(b);
    return h;
}

/* Splits a TSV line in place into at most n fields; returns the count. */
static int split_tabs(char *line, char **f, int n)
{
    int k = 0;
    line[strcspn(line, "\n")] = '\0';
    for (char *p = line; k < n; k++) {
        f[k] = p;
        char *t = strchr(p, '\t');
        if (!t)
            return k + 1;
        *t = '\0';
        p = t + 1;
    }
    return k;
}

/* ---- corpus A: truth.tsv, the source files' hashes, hyparquet's reading ----------------- */

typedef struct truth_row {
    char key[32], spk[16], wav[64];
    unsigned rate, channels, text_chars, tokens;
    unsigned long long samples;
} truth_row;

static truth_row truth[60];

static void load_corpus_truth(void)
{
    FILE *fp = fopen(fixture_path("corpus_a/truth.tsv"), "r");
    ck_assert_ptr_nonnull(fp);
    char line[2048], *f[10];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
    for (int i = 0; i < 60; i++) {
        ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
        ck_assert_int_eq(split_tabs(line, f, 10), 10);
        truth_row *t = &truth[i];
        snprintf(t->key, sizeof t->key, "%.31s", f[0]);
        snprintf(t->spk, sizeof t->spk, "%.15s", f[1]);
        t->rate = (unsigned)atoi(f[2]);
        t->channels = (unsigned)atoi(f[3]);
        t->samples = strtoull(f[4], NULL, 10);
        t->text_chars = (unsigned)atoi(f[6]);
        t->tokens = (unsigned)atoi(f[7]);
        snprintf(t->wav, sizeof t->wav, "%.63s", f[8]);
    }
    fclose(fp);
}

START_TEST(corpus_a_rows_equal_truth)
{
    load_corpus_truth();
    size_t t = 0;
    for (int s = 0; s < 4; s++) {
        char rel[64];
        snprintf(rel, sizeof rel, "corpus_a/parquet/parquet_%09d.tar", s);
        static got g;
        read_file(fixture_path(rel), 1, &g);
        ck_assert_msg(g.open_rc == ES_OK && g.end_rc == ES_NEXT_END, "%s: %s", rel, g.msg);
        ck_assert_uint_eq(g.n, s == 3 ? 12 : 16);
        for (size_t i = 0; i < g.n; i++, t++) {
            const got_row *r = &g.rows[i];
            const truth_row *w = &truth[t];
            ck_assert_int_eq(r->kind, ES_NEXT_RECORD);
            ck_assert_str_eq(r->key, w->key);
            ck_assert_str_eq(r->spk, w->spk);
            ck_assert_str_eq(r->r.shard, "shard.parquet");
            ck_assert_uint_eq(r->r.pos, i);
            ck_assert_uint_eq(r->r.sample_rate, w->rate);
            ck_assert_uint_eq(r->r.channels, w->channels);
            ck_assert_uint_eq(r->r.samples, w->samples);
            ck_assert_uint_eq(r->r.text_len, w->text_chars);
            ck_assert_uint_eq(r->r.speech_tokens, w->tokens);
            ck_assert_uint_eq(r->r.flags, ES_FLAG_AUDIO | ES_FLAG_TEXT | ES_FLAG_UTT_EMB |
                                              ES_FLAG_SPK_EMB | ES_FLAG_HASHED);
            char wav[128];
            snprintf(wav, sizeof wav, "corpus_a/%s", w->wav);
            ck_assert_uint_eq(r->r.hash, file_xxh3(fixture_path(wav)));
            size_t len;
            free(read_whole_file(fixture_path(wav), &len));
            ck_assert_uint_eq(r->r.audio_bytes, len);
        }
    }
    ck_assert_uint_eq(t, 60);
}
END_TEST

/* Lines of fixtures.tsv (hyparquet's reading) for file `rel`. */
typedef struct dump_row {
    char key[32], spk[32];
    int text_len, tokens, utt_dim, spk_dim;
    char utt_pick[128], spk_pick[128], utt_sum[40], spk_sum[40];
} dump_row;

static size_t load_dump(const char *rel, dump_row *out, size_t max, char *columns, size_t clen)
{
    FILE *fp = fopen(testdata_path("parquet/fixtures.tsv"), "r");
    ck_assert_ptr_nonnull(fp);
    char line[4096], *f[12];
    size_t n = 0;
    while (fgets(line, sizeof line, fp)) {
        int k = split_tabs(line, f, 12);
        if (k == 3 && strcmp(f[0], "#columns") == 0 && strcmp(f[1], rel) == 0)
            snprintf(columns, clen, "%s", f[2]);
        if (k != 12 || strcmp(f[0], rel) != 0)
            continue;
        ck_assert_uint_lt(n, max);
        dump_row *d = &out[n++];
        ck_assert_uint_eq((size_t)atoi(f[1]), n - 1);
        snprintf(d->key, sizeof d->key, "%s", f[2]);
        snprintf(d->spk, sizeof d->spk, "%s", strcmp(f[3], "\\N") ? f[3] : "");
        d->text_len = atoi(f[4]);
        d->tokens = atoi(f[5]);
        d->utt_dim = atoi(f[6]);
        d->spk_dim = atoi(f[7]);
        snprintf(d->utt_pick, sizeof d->utt_pick, "%s", f[8]);
        snprintf(d->spk_pick, sizeof d->spk_pick, "%s", f[9]);
        snprintf(d->utt_sum, sizeof d->utt_sum, "%s", f[10]);
        snprintf(d->spk_sum, sizeof d->spk_sum, "%s", f[11]);
    }
    fclose(fp);
    return n;
}

/* "v0,v1,v95,v191" and the double sum, as dump.mjs prints them. */
static void describe_vector(const es_embedding_row *e, char *pick, size_t plen, char *sum, size_t slen)
{
    if (!e->present) {
        snprintf(pick, plen, "-");
        snprintf(sum, slen, "-");
        return;
    }
    static const unsigned idx[] = {0, 1, 95, 191};
    size_t used = 0;
    for (int k = 0; k < 4; k++) {
        char v[32];
        if (idx[k] >= e->dim)
            snprintf(v, sizeof v, "-");
        else if (isnan(e->vec[idx[k]]))
            snprintf(v, sizeof v, "nan");
        else
            snprintf(v, sizeof v, "%.9g", (double)e->vec[idx[k]]);
        used += (size_t)snprintf(pick + used, plen - used, "%s%s", k ? "," : "", v);
    }
    double s = 0;
    for (uint32_t i = 0; i < e->dim; i++)
        s += isnan(e->vec[i]) ? 0.0 : (double)e->vec[i];
    snprintf(sum, slen, "%.17g", s);
}

/* JS toPrecision(9) keeps trailing zeros ("1.97861910"); %.9g drops them. */
static void normalize_numbers(char *s)
{
    char out[256];
    size_t o = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        char v[64];
        if (strcmp(tok, "nan") && strcmp(tok, "-"))
            snprintf(v, sizeof v, "%.9g", strtod(tok, NULL));
        else
            snprintf(v, sizeof v, "%s", tok);
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%s", o ? "," : "", v);
    }
    strcpy(s, out);
}

START_TEST(corpus_a_matches_hyparquet)
{
    for (int s = 0; s < 4; s++) {
        char rel[64], columns[512] = "";
        snprintf(rel, sizeof rel, "corpus_a/parquet/parquet_%09d.tar", s);
        static dump_row want[32];
        size_t n = load_dump(rel, want, 32, columns, sizeof columns);
        ck_assert_uint_eq(n, s == 3 ? 12 : 16);
        ck_assert_str_eq(columns, "utt,audio_data,wav,text,spk,utt_embedding,spk_embedding,speech_token");
        static got g;
        read_file(fixture_path(rel), 0, &g);
        ck_assert_uint_eq(g.n, n);
        es_context ctx = {0};
        es_embedding_rows ue, se;
        ck_assert_msg(es_parquet_read_embeddings(&ctx, fixture_path(rel), "utt_embedding", &ue) == ES_OK, "%s", ctx.msg);
        ck_assert_msg(es_parquet_read_embeddings(&ctx, fixture_path(rel), "spk_embedding", &se) == ES_OK, "%s", ctx.msg);
        ck_assert_uint_eq(ue.n, n);
        ck_assert_int_eq(ue.column_found, 1);
        for (size_t i = 0; i < n; i++) {
            ck_assert_str_eq(g.rows[i].key, want[i].key);
            ck_assert_str_eq(g.rows[i].spk, want[i].spk);
            ck_assert_int_eq((int)g.rows[i].r.text_len, want[i].text_len);
            ck_assert_int_eq((int)g.rows[i].r.speech_tokens, want[i].tokens);
            ck_assert_str_eq(ue.rows[i].key, want[i].key);
            ck_assert_str_eq(se.rows[i].spk, want[i].spk);
            ck_assert_int_eq((int)ue.rows[i].dim, want[i].utt_dim);
            ck_assert_int_eq((int)se.rows[i].dim, want[i].spk_dim);
            char pick[256], sum[64];
            describe_vector(&ue.rows[i], pick, sizeof pick, sum, sizeof sum);
            normalize_numbers(want[i].utt_pick);
            ck_assert_str_eq(pick, want[i].utt_pick);
            ck_assert(strtod(sum, NULL) == strtod(want[i].utt_sum, NULL));
            describe_vector(&se.rows[i], pick, sizeof pick, sum, sizeof sum);
            normalize_numbers(want[i].spk_pick);
            ck_assert_str_eq(pick, want[i].spk_pick);
            ck_assert(strtod(sum, NULL) == strtod(want[i].spk_sum, NULL));
        }
        es_embedding_rows_release(&ue);
        es_embedding_rows_release(&se);
    }
}
END_TEST

/* Corpus A's embeddings against their source, the .pt files the parquet shards were
 * made from (read by the validator's torch reader, src/validate/sources): every
 * value of every row, bit for bit as float32 (NaN for NaN). */
START_TEST(corpus_a_embeddings_equal_pt_source)
{
    es_context ctx = {0};
    es_emb_set *utt, *spk;
    ck_assert_msg(es_emb_set_load(&ctx, fixture_path("corpus_a/kaldi/utt2embedding.pt"), NULL, 0, &utt) == ES_OK,
                  "%s", ctx.msg);
    ck_assert_msg(es_emb_set_load(&ctx, fixture_path("corpus_a/kaldi/spk2embedding.pt"), NULL, 1, &spk) == ES_OK,
                  "%s", ctx.msg);
    size_t compared = 0;
    for (int s = 0; s < 4; s++) {
        char rel[64];
        snprintf(rel, sizeof rel, "corpus_a/parquet/parquet_%09d.tar", s);
        es_embedding_rows e[2];
        ck_assert_int_eq(es_parquet_read_embeddings(&ctx, fixture_path(rel), "utt_embedding", &e[0]), ES_OK);
        ck_assert_int_eq(es_parquet_read_embeddings(&ctx, fixture_path(rel), "spk_embedding", &e[1]), ES_OK);
        for (int c = 0; c < 2; c++)
            for (size_t i = 0; i < e[c].n; i++) {
                const es_embedding_row *row = &e[c].rows[i];
                const es_emb_set *src = c ? spk : utt;
                ptrdiff_t k = es_emb_set_find(src, c ? row->spk : row->key);
                ck_assert_msg(k >= 0, "%s not in the .pt", c ? row->spk : row->key);
                ck_assert_uint_eq(row->dim, src->len[k]);
                for (uint32_t d = 0; d < row->dim; d++) {
                    float want = src->vals[src->off[k] + d];
                    ck_assert_msg(isnan(want) ? isnan(row->vec[d]) : memcmp(&want, &row->vec[d], 4) == 0,
                                  "%s row %zu %s[%u]: %.9g, .pt %.9g", rel, i, c ? "spk" : "utt", d,
                                  (double)row->vec[d], (double)want);
                    compared++;
                }
            }
        es_embedding_rows_release(&e[0]);
        es_embedding_rows_release(&e[1]);
    }
    ck_assert_uint_eq(compared, 2 * 60 * 192);
    es_emb_set_free(utt);
    es_emb_set_free(spk);
}
END_TEST

/* ---- the real pyarrow file (InspireMusic) ------------------------------------------------- */

START_TEST(inspiremusic_real_file)
{
    static dump_row want[8];
    char columns[512] = "", names[512];
    size_t n = load_dump(INSPIRE, want, 8, columns, sizeof columns);
    ck_assert_uint_eq(n, 4);
    es_context ctx = {0};
    es_pq_file *f;
    ck_assert_msg(es_pq_file_open(&ctx, fixture_path(INSPIRE), &f) == ES_OK, "%s", ctx.msg);
    ck_assert_str_eq(f->meta.created_by, "parquet-cpp-arrow version 17.0.0");
    es_pq_file_column_names(f, names, sizeof names);
    for (char *p = names; (p = strstr(p, ", ")); )
        memmove(p + 1, p + 2, strlen(p + 2) + 1); /* "a, b" → "a,b" */
    ck_assert_str_eq(names, columns);
    ck_assert_uint_eq(f->meta.n_row_groups, 1);
    /* nested lists: semantic_token is list<list<int64>>: 5 definition levels */
    const pq_leaf *sem = es_pq_file_column(f, "semantic_token");
    ck_assert_ptr_nonnull(sem);
    ck_assert_uint_eq(sem->max_def, 5);
    ck_assert_uint_eq(sem->max_rep, 2);
    pq_rows keys = {0}, text = {0}, st = {0}, at = {0};
    pq_column cur = {0};
    ck_assert_int_eq(pq_rows_read(&ctx, f, 0, es_pq_file_column(f, "utt"), PQ_ROWS_STRINGS, &keys, &cur), ES_OK);
    ck_assert_int_eq(pq_rows_read(&ctx, f, 0, es_pq_file_column(f, "text"), PQ_ROWS_TEXT_LEN, &text, &cur), ES_OK);
    ck_assert_int_eq(pq_rows_read(&ctx, f, 0, sem, PQ_ROWS_COUNT, &st, &cur), ES_OK);
    ck_assert_int_eq(pq_rows_read(&ctx, f, 0, es_pq_file_column(f, "acoustic_token"), PQ_ROWS_COUNT, &at, &cur), ES_OK);
    pq_column_release(&cur);
    ck_assert_uint_eq(keys.n, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(keys.bytes + keys.off[i], want[i].key);
        ck_assert_int_eq((int)text.count[i], want[i].text_len);
        ck_assert_int_eq((int)st.count[i], want[i].tokens);
        ck_assert_int_eq((int)at.count[i], want[i].utt_dim);
    }
    pq_rows_release(&keys);
    pq_rows_release(&text);
    pq_rows_release(&st);
    pq_rows_release(&at);
    es_pq_file_close(f);

    /* it has no audio: measuring it is one clear error listing its columns */
    static got g;
    read_file(fixture_path(INSPIRE), 0, &g);
    ck_assert_int_eq(g.open_rc, ES_ERR_FORMAT);
    ck_assert_msg(strstr(g.msg, "parquet_000000000.tar: no audio_data column") &&
                  strstr(g.msg, "semantic_token, acoustic_token"), "%s", g.msg);
}
END_TEST

/* ---- files from third-party writers (tests/data/parquet, make.mjs) ------------------------- */

static void check_embeddings_file(const char *name)
{
    es_context ctx = {0};
    es_embedding_rows e[2];
    const char *cols[2] = {"utt_embedding", "spk_embedding"};
    char path[512];
    snprintf(path, sizeof path, "%s", testdata_path("parquet/"));
    strncat(path, name, sizeof path - strlen(path) - 1);
    for (int c = 0; c < 2; c++)
        ck_assert_msg(es_parquet_read_embeddings(&ctx, path, cols[c], &e[c]) == ES_OK, "%s", ctx.msg);
    FILE *fp = fopen(testdata_path("parquet/embeddings.tsv"), "r");
    ck_assert_ptr_nonnull(fp);
    static char line[65536];
    char *f[4];
    int seen = 0;
    while (fgets(line, sizeof line, fp)) {
        if (split_tabs(line, f, 4) != 4 || strcmp(f[0], name) != 0)
            continue;
        int c = strcmp(f[2], "utt_embedding") == 0 ? 0 : 1;
        size_t i = 0;
        while (i < e[c].n && strcmp(e[c].rows[i].key, f[1]) != 0)
            i++;
        ck_assert_msg(i < e[c].n, "%s: %s missing", name, f[1]);
        const es_embedding_row *row = &e[c].rows[i];
        ck_assert(row->present);
        uint32_t k = 0;
        for (char *tok = strtok(f[3], ","); tok; tok = strtok(NULL, ","), k++) {
            ck_assert_uint_lt(k, row->dim);
            if (strcmp(tok, "nan") == 0)
                ck_assert_msg(isnan(row->vec[k]), "%s %s %s[%u]", name, f[1], f[2], k);
            else
                ck_assert_msg(row->vec[k] == (float)strtod(tok, NULL), "%s %s %s[%u]: %.9g != %s",
                              name, f[1], f[2], k, (double)row->vec[k], tok);
        }
        ck_assert_uint_eq(k, row->dim);
        seen++;
    }
    fclose(fp);
    ck_assert_int_ge(seen, 8);
    es_embedding_rows_release(&e[0]);
    es_embedding_rows_release(&e[1]);
}

START_TEST(third_party_writers)
{
    FILE *fp = fopen(testdata_path("parquet/truth.tsv"), "r");
    ck_assert_ptr_nonnull(fp);
    char line[2048], *f[11], current[128] = "";
    static got g;
    size_t row = 0;
    int files = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        ck_assert_int_eq(split_tabs(line, f, 11), 11);
        if (strcmp(f[0], current) != 0) {
            snprintf(current, sizeof current, "%.127s", f[0]);
            char path[512];
            snprintf(path, sizeof path, "%s", testdata_path("parquet/"));
            strncat(path, f[0], sizeof path - strlen(path) - 1);
            read_file(path, 1, &g);
            ck_assert_msg(g.open_rc == ES_OK && g.end_rc == ES_NEXT_END, "%s: %s", f[0], g.msg);
            ck_assert_uint_eq(g.n, 6);
            check_embeddings_file(f[0]);
            row = 0;
            files++;
        }
        const got_row *r = &g.rows[row];
        ck_assert_msg(r->kind == ES_NEXT_RECORD, "%s: %s", f[0], r->msg);
        ck_assert_str_eq(r->key, f[1]);
        ck_assert_str_eq(r->spk, strcmp(f[2], "\\N") ? f[2] : "");
        ck_assert_uint_eq(r->r.pos, row);
        ck_assert_uint_eq(r->r.sample_rate, (unsigned)atoi(f[4]));
        ck_assert_uint_eq(r->r.channels, (unsigned)atoi(f[5]));
        ck_assert_uint_eq(r->r.samples, strtoull(f[6], NULL, 10));
        int text = atoi(f[7]), tokens = atoi(f[8]), ue = atoi(f[9]), se = atoi(f[10]);
        ck_assert_uint_eq(r->r.text_len, text < 0 ? 0 : (unsigned)text);
        ck_assert_uint_eq(r->r.speech_tokens, tokens < 0 ? 0 : (unsigned)tokens);
        uint32_t flags = ES_FLAG_AUDIO | ES_FLAG_HASHED | (text >= 0 ? ES_FLAG_TEXT : 0) |
                         (ue > 0 ? ES_FLAG_UTT_EMB : 0) | (se > 0 ? ES_FLAG_SPK_EMB : 0);
        ck_assert_msg(r->r.flags == flags, "%s row %zu: flags %x, expected %x", f[0], row, r->r.flags, flags);
        char wav[128];
        snprintf(wav, sizeof wav, "corpus_a/%s", f[3]);
        ck_assert_uint_eq(r->r.hash, file_xxh3(fixture_path(wav)));
        row++;
    }
    fclose(fp);
    ck_assert_int_ge(files, 9);
}
END_TEST

START_TEST(null_audio_minimal_and_no_utt)
{
    static got g;
    read_file(testdata_path("parquet/null_audio.parquet"), 0, &g);
    ck_assert_int_eq(g.open_rc, ES_OK);
    ck_assert_int_eq(g.end_rc, ES_NEXT_END);
    ck_assert_uint_eq(g.n, 3);
    ck_assert_int_eq(g.rows[0].kind, ES_NEXT_RECORD);
    ck_assert_int_eq(g.rows[1].kind, ES_NEXT_BAD);
    ck_assert_msg(strstr(g.rows[1].msg, "null_audio.parquet: row 1 (A01_0001): audio_data is null"), "%s",
                  g.rows[1].msg);
    ck_assert_int_eq(g.rows[2].kind, ES_NEXT_RECORD);
    ck_assert_uint_eq(g.rows[2].r.pos, 2);

    read_file(testdata_path("parquet/minimal.parquet"), 0, &g);
    ck_assert_int_eq(g.end_rc, ES_NEXT_END);
    ck_assert_uint_eq(g.n, 1);
    ck_assert_uint_eq(g.rows[0].r.flags, ES_FLAG_AUDIO);
    ck_assert_uint_eq(g.rows[0].r.speech_tokens, 0);
    ck_assert_str_eq(g.rows[0].spk, "");

    /* a page header of 4 KiB (whole min/max statistics): read past the first guess */
    read_file(testdata_path("parquet/big_page_header.parquet"), 0, &g);
    ck_assert_msg(g.end_rc == ES_NEXT_END, "%s", g.msg);
    ck_assert_uint_eq(g.n, 1);
    ck_assert_uint_eq(g.rows[0].r.samples, 500);
    ck_assert_uint_eq(g.rows[0].r.sample_rate, 16000);

    read_file(testdata_path("parquet/no_utt.parquet"), 0, &g);
    ck_assert_int_eq(g.open_rc, ES_ERR_FORMAT);
    ck_assert_msg(strstr(g.msg, "no_utt.parquet: no utt column: not a CosyVoice shard (columns: audio_data, text)"),
                  "%s", g.msg);

    /* the embeddings API on a file without the column: rows, none present */
    es_context ctx = {0};
    es_embedding_rows e;
    ck_assert_int_eq(es_parquet_read_embeddings(&ctx, testdata_path("parquet/minimal.parquet"), "utt_embedding", &e), ES_OK);
    ck_assert_int_eq(e.column_found, 0);
    ck_assert_uint_eq(e.n, 1);
    ck_assert_int_eq(e.rows[0].present, 0);
    ck_assert_ptr_null(e.rows[0].vec);
    es_embedding_rows_release(&e);
    es_embedding_rows_release(&e); /* twice is fine */
}
END_TEST

START_TEST(measure_data_list)
{
    es_context *ctx = es_context_new();
    es_measure_settings s;
    es_measure_defaults(&s);
    char root[512], list[512];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    s.root = root;
    snprintf(list, sizeof list, "%s", fixture_path("corpus_a/parquet/data.list"));
    const char *inputs[] = {list};
    es_cost_table *t[2];
    for (int j = 0; j < 2; j++) {
        s.threads = j ? 4 : 1;
        ck_assert_msg(es_measure(ctx, &s, inputs, 1, &t[j]) == ES_OK, "%s", es_errmsg(ctx));
        ck_assert_uint_eq(es_cost_table_size(t[j]), 60);
    }
    load_corpus_truth();
    for (size_t i = 0; i < 60; i++) {
        es_cost_row a, b;
        es_cost_table_row(t[0], i, &a);
        es_cost_table_row(t[1], i, &b);
        ck_assert_str_eq(a.key, truth[i].key);
        ck_assert_str_eq(b.key, truth[i].key);
        ck_assert_uint_eq(a.samples, truth[i].samples);
        ck_assert_uint_eq(b.samples, truth[i].samples);
        ck_assert(strncmp(a.shard, "parquet/parquet_00000000", 24) == 0);
    }
    es_cost_table_free(t[0]);
    es_cost_table_free(t[1]);
    es_context_free(ctx);
}
END_TEST

/* ---- malformed input ------------------------------------------------------------------------ */

static char *tmp_dir;

static const char *write_temp(const char *name, const unsigned char *b, size_t n)
{
    static char path[4096];
    if (!tmp_dir)
        tmp_dir = make_temp_dir();
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(b, 1, n, fp), n);
    fclose(fp);
    return path;
}

/* Every failure is one line naming the file; a shard-level failure after open
 * names the row group and column as well. Returns 1 if anything failed. */
static int check_failure_messages(const got *g, const char *path)
{
    int failed = 0;
    if (g->open_rc != ES_OK) {
        ck_assert_msg(strncmp(g->msg, path, strlen(path)) == 0 && !strchr(g->msg, '\n'), "%s", g->msg);
        return 1;
    }
    if (g->end_rc < 0) {
        ck_assert_msg(strncmp(g->msg, path, strlen(path)) == 0 && strstr(g->msg, ": row group ") &&
                      strstr(g->msg, ", column ") && !strchr(g->msg, '\n'), "%s", g->msg);
        failed = 1;
    }
    for (size_t i = 0; i < g->n; i++)
        if (g->rows[i].kind == ES_NEXT_BAD) {
            ck_assert_msg(strncmp(g->rows[i].msg, path, strlen(path)) == 0 && strstr(g->rows[i].msg, ": row "),
                          "%s", g->rows[i].msg);
            failed = 1;
        }
    return failed;
}

START_TEST(truncated_at_many_offsets)
{
    size_t len;
    unsigned char *b = read_whole_file(testdata_path("parquet/arrow_snappy_rowgroups_pages.parquet"), &len);
    ck_assert_ptr_nonnull(b);
    static got g;
    for (size_t cut = 0; cut < len; cut += cut < 64 ? 1 : cut > len - 64 ? 1 : 331) {
        const char *path = write_temp("cut.parquet", b, cut);
        read_file(path, cut & 1, &g);
        ck_assert_int_eq(g.open_rc, ES_ERR_FORMAT);
        check_failure_messages(&g, path);
    }
    free(b);
}
END_TEST

START_TEST(damaged_data_keeps_footer)
{
    size_t len;
    unsigned char *b = read_whole_file(testdata_path("parquet/arrow_gzip_dict.parquet"), &len);
    unsigned char *copy = malloc(len);
    static got g;
    int failures = 0;
    uint32_t footer = (uint32_t)b[len - 8] | (uint32_t)b[len - 7] << 8 | (uint32_t)b[len - 6] << 16 |
                      (uint32_t)b[len - 5] << 24;
    for (size_t at = 4; at < len - 8 - footer; at += 97) {
        memcpy(copy, b, len);
        memset(copy + at, at & 1 ? 0xff : 0, at + 64 < len - 8 - footer ? 64 : len - 8 - footer - at);
        const char *path = write_temp("hole.parquet", copy, len);
        read_file(path, 0, &g);
        failures += check_failure_messages(&g, path);
    }
    ck_assert_int_gt(failures, 100);
    free(copy);
    free(b);
}
END_TEST

START_TEST(footer_length_lies)
{
    size_t len;
    unsigned char *b = read_whole_file(testdata_path("parquet/minimal.parquet"), &len);
    static got g;
    uint32_t lies[] = {(uint32_t)len, (uint32_t)len - 11, 0xffffffffu, 0, 5};
    const char *want[] = {"past the file", "past the file", "past the file", "footer:", "footer:"};
    for (int i = 0; i < 5; i++) {
        unsigned char *c = malloc(len);
        memcpy(c, b, len);
        for (int k = 0; k < 4; k++)
            c[len - 8 + k] = (unsigned char)(lies[i] >> (8 * k));
        const char *path = write_temp("footer.parquet", c, len);
        read_file(path, 0, &g);
        ck_assert_int_eq(g.open_rc, ES_ERR_FORMAT);
        ck_assert_msg(strstr(g.msg, want[i]), "%s", g.msg);
        check_failure_messages(&g, path);
        free(c);
    }
    /* bad magic at either end */
    unsigned char *c = malloc(len);
    memcpy(c, b, len);
    c[0] = 'X';
    read_file(write_temp("magic.parquet", c, len), 0, &g);
    ck_assert_msg(strstr(g.msg, "no PAR1 magic at the start"), "%s", g.msg);
    memcpy(c, b, len);
    memcpy(c + len - 4, "PARE", 4);
    read_file(write_temp("magic.parquet", c, len), 0, &g);
    ck_assert_msg(strstr(g.msg, "encrypted"), "%s", g.msg);
    free(c);
    free(b);
}
END_TEST

/* First page offset of every column chunk in row group 0 (dictionary page first). */
static size_t page_offsets(const char *path, uint64_t *off, const char **names, size_t max)
{
    es_context ctx = {0};
    es_pq_file *f;
    ck_assert_int_eq(es_pq_file_open(&ctx, path, &f), ES_OK);
    size_t n = 0;
    for (uint32_t c = 0; c < f->n_leaves && n < max; c++) {
        const pq_column_meta *m = &f->meta.row_groups[0].columns[c];
        off[n] = (uint64_t)(m->dictionary_page_offset > 0 ? m->dictionary_page_offset : m->data_page_offset);
        static char name_store[16][64];
        snprintf(name_store[n], 64, "%s", f->leaves[c].name);
        names[n] = name_store[n];
        n++;
    }
    es_pq_file_close(f);
    return n;
}

START_TEST(page_header_bit_flips)
{
    const char *src = testdata_path("parquet/arrow_gzip_dict.parquet");
    char srcpath[4096];
    snprintf(srcpath, sizeof srcpath, "%s", src);
    size_t len;
    unsigned char *b = read_whole_file(srcpath, &len);
    uint64_t off[16];
    const char *names[16];
    size_t n = page_offsets(srcpath, off, names, 16);
    ck_assert_uint_eq(n, 8);
    static got g;
    int failures = 0;
    const char *path = write_temp("flip.parquet", b, len);
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (size_t c = 0; c < n; c++) {
        for (size_t byte = 0; byte < 12; byte++) {
            for (int bit = 0; bit < 8; bit++) {
                b[off[c] + byte] ^= (unsigned char)(1u << bit);
                write_temp("flip.parquet", b, len);
                read_file(p, 0, &g);
                failures += check_failure_messages(&g, p);
                b[off[c] + byte] ^= (unsigned char)(1u << bit);
            }
        }
    }
    ck_assert_int_gt(failures, 200);
    free(b);
}
END_TEST

/* Reads the varint at b[*at]; returns its value, advances *at, sets its length. */
static uint64_t varint_at(const unsigned char *b, size_t *at, size_t *vlen)
{
    uint64_t v = 0;
    size_t start = *at;
    for (int s = 0;; s += 7) {
        unsigned char x = b[(*at)++];
        v |= (uint64_t)(x & 0x7f) << s;
        if (!(x & 0x80))
            break;
    }
    *vlen = *at - start;
    return v;
}

/* Rewrites the zigzag varint at `at` (length vlen) with `value`, same length. */
static void put_varint(unsigned char *b, size_t at, size_t vlen, uint64_t zz)
{
    for (size_t k = 0; k < vlen; k++) {
        b[at + k] = (unsigned char)(zz & 0x7f) | (k + 1 < vlen ? 0x80 : 0);
        zz >>= 7;
    }
}

/* Page header of audio_data: field 1 (type), 2 (uncompressed), 3 (compressed),
 * each `0x15 varint` as every writer here emits them. Sets the value offsets. */
static void locate_sizes(const unsigned char *b, size_t at, size_t *u_at, size_t *u_len, size_t *c_at,
                         size_t *c_len)
{
    size_t l;
    ck_assert_uint_eq(b[at], 0x15);
    at++;
    varint_at(b, &at, &l);
    ck_assert_uint_eq(b[at], 0x15);
    *u_at = ++at;
    varint_at(b, &at, u_len);
    ck_assert_uint_eq(b[at], 0x15);
    *c_at = ++at;
    varint_at(b, &at, c_len);
}

START_TEST(page_size_lies_and_corrupt_snappy)
{
    char src[4096];
    snprintf(src, sizeof src, "%s", testdata_path("parquet/arrow_snappy_v2_nodict.parquet"));
    size_t len;
    unsigned char *b = read_whole_file(src, &len);
    uint64_t off[16];
    const char *names[16];
    page_offsets(src, off, names, 16);
    ck_assert_str_eq(names[1], "audio_data");
    size_t u_at, u_len, c_at, c_len;
    locate_sizes(b, off[1], &u_at, &u_len, &c_at, &c_len);
    static got g;
    unsigned char *c = malloc(len);
    /* compressed size runs past the chunk */
    memcpy(c, b, len);
    put_varint(c, c_at, c_len, (1ull << (7 * c_len)) - 2);
    read_file(write_temp("lie.parquet", c, len), 0, &g);
    ck_assert_msg(g.end_rc == ES_ERR_FORMAT && strstr(g.msg, "row group 0, column audio_data: page 0: compressed size") &&
                  strstr(g.msg, "runs past the column chunk"), "%s", g.msg);
    /* uncompressed size lies: snappy's own length disagrees */
    memcpy(c, b, len);
    size_t at = u_at, l;
    uint64_t u = varint_at(c, &at, &l);
    put_varint(c, u_at, u_len, u - 2);
    read_file(write_temp("lie.parquet", c, len), 0, &g);
    ck_assert_msg(g.end_rc == ES_ERR_FORMAT && strstr(g.msg, "column audio_data: page 0: snappy:"), "%s", g.msg);
    /* corrupt the page body: v2 keeps levels first, then the snappy stream */
    memcpy(c, b, len);
    pq_page_header ph;
    size_t used;
    char err[200];
    ck_assert_int_eq(pq_page_header_decode(c + off[1], len - off[1], &ph, &used, err, sizeof err), 0);
    ck_assert_int_eq(ph.type, PQ_PAGE_DATA_V2);
    size_t body = off[1] + used + (size_t)ph.def_length + (size_t)ph.rep_length;
    int saw_snappy = 0;
    for (size_t k = 0; k < 16; k++) {
        memcpy(c, b, len);
        c[body + k] ^= 0xff;
        const char *path = write_temp("corrupt.parquet", c, len);
        read_file(path, 0, &g);
        check_failure_messages(&g, path);
        saw_snappy |= g.end_rc < 0 && strstr(g.msg, "column audio_data: page 0: snappy:") != NULL;
    }
    ck_assert(saw_snappy);
    free(c);
    free(b);
}
END_TEST

/* ---- decoders on hand-made bytes ---------------------------------------------------------- */

START_TEST(thrift_skips_every_type_and_limits_depth)
{
    /* PageHeader{1: type 0, 2: 10, 3: 10, unknown fields 20..31 of every type,
     *            5: DataPageHeader{1: 3, 2: PLAIN, 3: RLE, 4: RLE}} */
    static const uint8_t buf[] = {
        0x15, 0x00, 0x15, 0x14, 0x15, 0x14,
        0x05, 0x28, 0x02,                            /* 20: i32, long-form id (zigzag 40) */
        0x11,                                        /* 21: bool true (value in the type) */
        0x13, 0x7f,                                  /* 22: byte */
        0x14, 0x02,                                  /* 23: i16 */
        0x16, 0x80, 0x01,                            /* 24: i64 */
        0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,          /* 25: double */
        0x18, 0x03, 'a', 'b', 'c',                   /* 26: binary */
        0x19, 0x25, 0x02, 0x04,                      /* 27: list<i32> [1, 2] */
        0x1a, 0x21, 0x01, 0x02,                      /* 28: set<bool> {true, false} */
        0x1b, 0x01, 0x85, 0x01, 'k', 0x02,           /* 29: map<binary,i32> {k: 1} */
        0x1c, 0x15, 0x02, 0x1c, 0x00, 0x00,          /* 30: struct {1: 1, 2: struct {}} */
        0x19, 0xf5, 0x03, 0x02, 0x04, 0x06,          /* 31: list<i32>, long-form count 3 */
        0x0c, 0x0a,                                  /* 5: DataPageHeader (long form: id < 31) */
        0x15, 0x06, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00,
        0x00,
    };
    size_t n = sizeof buf;
    pq_page_header ph;
    size_t used;
    char err[200];
    ck_assert_msg(pq_page_header_decode(buf, n, &ph, &used, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(used, n);
    ck_assert_int_eq(ph.uncompressed_size, 10);
    ck_assert_int_eq(ph.num_values, 3);
    ck_assert_int_eq(ph.def_encoding, 3);
    /* every prefix is "read more", never an error or an over-read */
    for (size_t k = 0; k < n; k++) {
        uint8_t *p = malloc(k + 1);
        memcpy(p, buf, k);
        ck_assert_int_eq(pq_page_header_decode(p, k, &ph, &used, err, sizeof err), 1);
        free(p);
    }
    /* nesting deeper than the limit */
    uint8_t deep[200];
    size_t d = 0;
    deep[d++] = 0x15; deep[d++] = 0; deep[d++] = 0x15; deep[d++] = 0; deep[d++] = 0x15; deep[d++] = 0;
    deep[d++] = 0x0c; deep[d++] = 40; /* field 20: struct */
    for (int i = 0; i < 40; i++)
        deep[d++] = 0x1c; /* field +1: struct, nested */
    for (int i = 0; i < 45; i++)
        deep[d++] = 0;
    ck_assert_int_eq(pq_page_header_decode(deep, d, &ph, &used, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "nested deeper"), "%s", err);
    /* an enum out of range and a wrong field type */
    static const uint8_t bad_enc[] = {0x15, 0, 0x15, 0, 0x15, 0, 0x2c, 0x15, 0x02, 0x15, 0x62, 0, 0};
    ck_assert_int_eq(pq_page_header_decode(bad_enc, sizeof bad_enc, &ph, &used, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "DataPageHeader.encoding 49 is not a parquet encoding"), "%s", err);
    static const uint8_t bad_type[] = {0x18, 0x01, 'x', 0};
    ck_assert_int_eq(pq_page_header_decode(bad_type, sizeof bad_type, &ph, &used, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "PageHeader.type has type 8, expected an integer"), "%s", err);
    /* a list count larger than the bytes left */
    pq_file_meta m;
    static const uint8_t lie[] = {0x29, 0xfc, 0xff, 0xff, 0x07, 0};
    ck_assert_int_eq(pq_file_meta_decode(lie, sizeof lie, &m, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "FileMetaData.schema ends past the end"), "%s", err);
}
END_TEST

START_TEST(rle_hybrid_and_levels)
{
    /* width 3: an RLE run of 8 fives, then one bit-packed group 0..7 (the spec's example) */
    static const uint8_t d[] = {16, 5, 3, 0x88, 0xc6, 0xfa};
    pq_rle r;
    uint32_t v[16];
    char err[200];
    pq_rle_init(&r, d, sizeof d, 3);
    ck_assert_int_eq(pq_rle_get(&r, v, 16, err, sizeof err), 0);
    for (int i = 0; i < 8; i++) {
        ck_assert_uint_eq(v[i], 5);
        ck_assert_uint_eq(v[8 + i], (uint32_t)i);
    }
    ck_assert_int_eq(pq_rle_get(&r, v, 1, err, sizeof err), -1);
    /* the same as levels: max 4 is fine, max 3 is exceeded */
    uint8_t lv[16];
    ck_assert_int_eq(pq_levels_decode(PQ_ENC_RLE, d, sizeof d, 7, lv, 16, "definition", err, sizeof err), 0);
    ck_assert_int_eq(pq_levels_decode(PQ_ENC_RLE, d, sizeof d, 4, lv, 16, "definition", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "definition level 5 > maximum 4"), "%s", err);
    /* a bit-packed run cut short */
    ck_assert_int_eq(pq_levels_decode(PQ_ENC_RLE, d, 5, 7, lv, 16, "repetition", err, sizeof err), -1);
    /* deprecated BIT_PACKED levels: MSB first, width 3: 0..7 */
    static const uint8_t bp[] = {0x05, 0x39, 0x77};
    ck_assert_int_eq(pq_levels_decode(PQ_ENC_BIT_PACKED, bp, 3, 7, lv, 8, "definition", err, sizeof err), 0);
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(lv[i], (unsigned)i);
}
END_TEST

START_TEST(delta_encodings)
{
    /* 1 2 3 4 5: one block, all deltas equal the minimum (the spec's example) */
    static const uint8_t a[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0, 0, 0, 0};
    int64_t v[8];
    size_t used;
    char err[200];
    ck_assert_int_eq(pq_delta_binary_decode(a, sizeof a, 5, v, &used, err, sizeof err), 0);
    ck_assert_uint_eq(used, sizeof a);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(v[i], i + 1);
    /* 7 5 3 1 2 3 4 5: min delta -2, relative deltas 0 0 0 3 3 3 3 in 2 bits */
    static const uint8_t b[] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 2, 0, 0, 0, 0xc0, 0x3f, 0, 0, 0, 0, 0, 0};
    ck_assert_int_eq(pq_delta_binary_decode(b, sizeof b, 8, v, &used, err, sizeof err), 0);
    ck_assert_uint_eq(used, sizeof b);
    static const int64_t want[] = {7, 5, 3, 1, 2, 3, 4, 5};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(v[i], want[i]);
    ck_assert_int_eq(pq_delta_binary_decode(b, sizeof b - 1, 8, v, &used, err, sizeof err), -1);
    ck_assert_int_eq(pq_delta_binary_decode(b, sizeof b, 7, v, &used, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "8 values, the page levels say 7"), "%s", err);

    /* DELTA_BYTE_ARRAY "ab" "abc" "b": prefixes 0 2 0, suffixes "ab" "c" "b" */
    static const uint8_t dba[] = {
        0x80, 0x01, 0x04, 0x03, 0x00, 0x03, 3, 0, 0, 0, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0x80, 0x01, 0x04, 0x03, 0x04, 0x01, 1, 0, 0, 0, 0x02, 0, 0, 0,
        'a', 'b', 'c', 'b'};
    pq_value_buf out = {0};
    ck_assert_msg(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_DELTA_BYTE_ARRAY, dba, sizeof dba, 3, NULL, 0,
                                   1 << 20, &out, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(out.vals[0].len, 2);
    ck_assert_int_eq(memcmp(out.vals[0].ptr, "ab", 2), 0);
    ck_assert_uint_eq(out.vals[1].len, 3);
    ck_assert_int_eq(memcmp(out.vals[1].ptr, "abc", 3), 0);
    ck_assert_uint_eq(out.vals[2].len, 1);
    ck_assert_int_eq(memcmp(out.vals[2].ptr, "b", 1), 0);
    /* DELTA_LENGTH_BYTE_ARRAY is the second half alone */
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY, dba + 22, sizeof dba - 22,
                                      3, NULL, 0, 0, &out, err, sizeof err), 0);
    ck_assert_int_eq(memcmp(out.vals[1].ptr, "c", 1), 0);
    /* a prefix longer than the previous value */
    uint8_t bad[sizeof dba];
    memcpy(bad, dba, sizeof dba);
    bad[10] = 0x07; /* relative delta 7: prefix of value 1 = 0 + (-2) + 7 = 5 > 2 */
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_DELTA_BYTE_ARRAY, bad, sizeof bad, 3, NULL, 0,
                                      1 << 20, &out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "shares 5 bytes with a 2-byte predecessor"), "%s", err);
    /* a reconstruction past its limit */
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_DELTA_BYTE_ARRAY, dba, sizeof dba, 3, NULL, 0,
                                      4, &out, err, sizeof err), -1);
    pq_value_buf_release(&out);
}
END_TEST

START_TEST(dictionary_and_plain_errors)
{
    static const uint8_t dict_bytes[] = {1, 0, 0, 0, 'x', 2, 0, 0, 0, 'y', 'z'};
    pq_value_buf dict = {0}, out = {0};
    char err[200];
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_PLAIN, dict_bytes, sizeof dict_bytes, 2, NULL, 0, 0,
                                      &dict, err, sizeof err), 0);
    /* bit width 3, RLE run of 2 × index 1, then a run of 1 × index 5 */
    static const uint8_t idx[] = {3, 4, 1, 2, 5};
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_RLE_DICTIONARY, idx, sizeof idx, 2, dict.vals, 2, 0,
                                      &out, err, sizeof err), 0);
    ck_assert_uint_eq(out.vals[1].len, 2);
    ck_assert_int_eq(memcmp(out.vals[1].ptr, "yz", 2), 0);
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_RLE_DICTIONARY, idx, sizeof idx, 3, dict.vals, 2, 0,
                                      &out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "dictionary index 5 out of range (dictionary has 2 values)"), "%s", err);
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_RLE_DICTIONARY, idx, sizeof idx, 2, NULL, 0, 0,
                                      &out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "without a dictionary page"), "%s", err);
    /* PLAIN: fewer values than the levels say; a length past the page */
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_PLAIN, dict_bytes, sizeof dict_bytes, 3, NULL, 0, 0,
                                      &out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "PLAIN: data ends after 2 of 3 values"), "%s", err);
    ck_assert_int_eq(pq_values_decode(PQ_BYTE_ARRAY, 0, PQ_ENC_PLAIN, dict_bytes, sizeof dict_bytes - 1, 2, NULL, 0, 0,
                                      &out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "runs past the page"), "%s", err);
    ck_assert_int_eq(pq_values_decode(PQ_DOUBLE, 0, PQ_ENC_PLAIN, dict_bytes, sizeof dict_bytes, 2, NULL, 0, 0,
                                      &out, err, sizeof err), -1);
    /* BYTE_STREAM_SPLIT of two floats 1.0f and -2.0f */
    static const uint8_t bss[] = {0, 0, 0, 0, 0x80, 0, 0x3f, 0xc0};
    ck_assert_int_eq(pq_values_decode(PQ_FLOAT, 0, PQ_ENC_BYTE_STREAM_SPLIT, bss, sizeof bss, 2, NULL, 0, 0,
                                      &out, err, sizeof err), 0);
    ck_assert(pq_value_as_double(PQ_FLOAT, &out.vals[0]) == 1.0);
    ck_assert(pq_value_as_double(PQ_FLOAT, &out.vals[1]) == -2.0);
    pq_value_buf_release(&dict);
    pq_value_buf_release(&out);
}
END_TEST

static void cleanup(void)
{
    if (!tmp_dir)
        return;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    free(tmp_dir);
    tmp_dir = NULL;
}

/* ---- the writer's page queue ------------------------------------------------- */

/* Page i's bytes: a length and content from i alone, compressible in parts;
 * page 0 is empty (a page of only nulls compresses too). */
static size_t fill_page(es_strbuf *b, unsigned i)
{
    size_t n = (size_t)(i * 7919u % 300001u) + (i % 5 == 0 ? 0 : 17);
    uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1);
    for (size_t k = 0; k < n; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        char c = k % 4096 < 2048 ? (char)('a' + k % 7) : (char)x;
        es_strbuf_append(b, &c, 1);
    }
    return n;
}

/* Every page pushed comes back once, in push order, compressed: libzstd's own
 * decoder gives back its bytes. With 1 to 4 threads (0 to 3 helpers), 300
 * pages through a queue of 1 to 8 slots, so the queue fills over and over and
 * the writer both waits for helpers and compresses pages itself. A queue
 * released with pages in flight (a writer that failed) neither hangs nor leaks. */
START_TEST(page_queue_returns_every_page_in_order)
{
    int threads = omp_get_max_threads();
    es_strbuf want = {0};
    uint8_t *out = malloc(400000);
    for (int k = 1; k <= 4; k++) {
        omp_set_num_threads(k);
        pq_page_queue q = {0};
        ck_assert_int_eq(pq_page_queue_init(&q, PQ_ZSTD), 0);
        ck_assert_uint_eq(q.depth, k == 1 ? 1 : 2 * (unsigned)k);
        unsigned pushed = 0, popped = 0;
        while (popped < 300) {
            pq_page *pg = pushed < 300 ? pq_page_queue_next(&q) : NULL;
            if (pg) {
                fill_page(&pg->raw, pushed);
                pg->n = pushed++;
                pq_page_queue_push(&q);
                continue;
            }
            pg = pq_page_queue_oldest(&q);
            ck_assert_ptr_nonnull(pg);
            ck_assert_uint_eq(pg->n, popped);
            ck_assert_int_eq(pg->failed, 0);
            want.len = 0;
            size_t n = fill_page(&want, popped);
            size_t got = ZSTD_decompress(out, 400000, pg->z, pg->zlen);
            ck_assert_msg(!ZSTD_isError(got) && got == n && (n == 0 || memcmp(out, want.buf, n) == 0),
                          "page %u: not its bytes after compression", popped);
            pq_page_queue_pop(&q);
            popped++;
        }
        ck_assert_ptr_null(pq_page_queue_oldest(&q));
        for (unsigned i = 0; i < 3 && (q.depth > 1 || i == 0); i++) {
            pq_page *pg = pq_page_queue_next(&q);
            fill_page(&pg->raw, i);
            pq_page_queue_push(&q);
        }
        pq_page_queue_release(&q);
    }
    omp_set_num_threads(threads);
    es_strbuf_release(&want);
    free(out);
}
END_TEST

static Suite *parquet_suite(void)
{
    Suite *s = suite_create("parquet");
    TCase *tc = tcase_create("reader");
    tcase_add_unchecked_fixture(tc, NULL, cleanup);
    tcase_add_test(tc, corpus_a_rows_equal_truth);
    tcase_add_test(tc, corpus_a_matches_hyparquet);
    tcase_add_test(tc, corpus_a_embeddings_equal_pt_source);
    tcase_add_test(tc, inspiremusic_real_file);
    tcase_add_test(tc, third_party_writers);
    tcase_add_test(tc, null_audio_minimal_and_no_utt);
    tcase_add_test(tc, measure_data_list);
    tcase_add_test(tc, truncated_at_many_offsets);
    tcase_add_test(tc, damaged_data_keeps_footer);
    tcase_add_test(tc, footer_length_lies);
    tcase_add_test(tc, page_header_bit_flips);
    tcase_add_test(tc, page_size_lies_and_corrupt_snappy);
    tcase_add_test(tc, thrift_skips_every_type_and_limits_depth);
    tcase_add_test(tc, rle_hybrid_and_levels);
    tcase_add_test(tc, delta_encodings);
    tcase_add_test(tc, dictionary_and_plain_errors);
    tcase_add_test(tc, page_queue_returns_every_page_in_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(parquet_suite());
}
