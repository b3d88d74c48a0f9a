/* Reshard mode: new tar shards of equal cost, members copied byte for byte.
 *
 * Byte fidelity is checked by an independent reader: Python's tarfile
 * (tests/reshard_check.py; .zst through the zstd command-line tool) compares
 * every member's sha256 and each utterance's member order with the sources.
 * Our own reader (es_measure on the new data.list) must see the same keys and
 * samples. Equal cost is checked on a generated corpus by re-measuring the
 * written shards and replaying 20 random loader permutations (CosyVoice's
 * shuffle, then [rank::K] and [worker::W]) with a PRNG of the test's own.
 * Errors: a source that vanished, was truncated or changed after measuring
 * fails with its name, and OUTDIR stays as it was. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_helpers.h"
#include "costs/cost_table.h"
#include "loader/cost_model.h"
#include "plan/plan_internal.h"
#include "plan/plan_reshard.h"

static const char *const ext_of[] = {".tar", ".tar.gz", ".tar.zst"};

/* ---- helpers ------------------------------------------------------------------ */

/* Measures root/input (input alone without root); paths inside resolve against root. */
static es_cost_table *measure(const char *input, const char *root)
{
    es_context *ctx = es_context_new();
    es_measure_settings ms;
    es_measure_defaults(&ms);
    ms.root = root;
    es_cost_table *t = NULL;
    char path[4400];
    snprintf(path, sizeof path, "%s%s%s", root ? root : "", root ? "/" : "", input);
    const char *in = path;
    int rc = es_measure(ctx, &ms, &in, 1, &t);
    ck_assert_msg(rc == ES_OK, "measure %s: %s", input, es_errmsg(ctx));
    es_context_free(ctx);
    return t;
}

static void loose_filter(es_plan_settings *s)
{
    s->model.min_length = 0; /* corpus A has utterances under 1 s: keep them all */
    s->model.token_max_length = 100000;
}

/* Builds and writes a reshard plan; returns the status of the failing call.
 * max_open > 0 forces passes of that many writers. */
static int reshard(es_context *ctx, const es_cost_table *t, const es_plan_settings *s,
                   const char *out, size_t max_open, es_plan_reshard_info *info)
{
    es_plan *p = NULL;
    int rc = es_plan_build(ctx, s, t, &p);
    if (rc != ES_OK)
        return rc;
    p->reshard->max_open = max_open;
    if (info)
        ck_assert_int_eq(es_plan_reshard_info_get(p, info), ES_OK);
    rc = es_plan_write(ctx, p, out, NULL, 0);
    es_plan_free(p);
    return rc;
}

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    unsigned char *x = read_whole_file(a, &la), *y = read_whole_file(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x), free(y);
    return same;
}

/* Whether an output file names its folder (so differs between two OUTDIRs). */
static int names_outdir(const char *name)
{
    return !strcmp(name, "data.list") || !strcmp(name, "shards.tsv") ||
           !strcmp(name, "utt2data.list") || !strcmp(name, "spk2data.list") ||
           !strncmp(name, "utt2parquet_", 12) || !strncmp(name, "spk2parquet_", 12);
}

/* Every file of a except those naming the folder is in b, same bytes. */
static void assert_same_outputs(const char *a, const char *b)
{
    DIR *d = opendir(a);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || names_outdir(e->d_name))
            continue;
        char pa[4400], pb[4400];
        snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
        ck_assert_msg(same_file(pa, pb), "%s differs from %s", pa, pb);
        files++;
    }
    closedir(d);
    ck_assert_int_ge(files, 2);
}

static int python_check(const char *root, const char *sources, const char *new_list)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/reshard_check.py' --root '%s' '%s' '%s'",
             getenv("ES_SOURCE_ROOT"), root, sources, new_list);
    return system(cmd);
}

static int cmp_rows_by_key(const void *a, const void *b)
{
    return strcmp(((const es_cost_row *)a)->key, ((const es_cost_row *)b)->key);
}

/* Our own reader sees the same utterances in the new shards. */
static void assert_same_measure(const es_cost_table *orig, const char *new_list)
{
    es_cost_table *t = measure(new_list, NULL);
    ck_assert_uint_eq(t->n, orig->n);
    es_cost_row *x = malloc(t->n * sizeof *x), *y = malloc(t->n * sizeof *y);
    memcpy(x, orig->rows, t->n * sizeof *x);
    memcpy(y, t->rows, t->n * sizeof *y);
    qsort(x, t->n, sizeof *x, cmp_rows_by_key);
    qsort(y, t->n, sizeof *y, cmp_rows_by_key);
    for (size_t i = 0; i < t->n; i++) {
        ck_assert_str_eq(x[i].key, y[i].key);
        ck_assert_uint_eq(x[i].samples, y[i].samples);
        ck_assert_uint_eq(x[i].sample_rate, y[i].sample_rate);
        ck_assert_uint_eq(x[i].text_len, y[i].text_len);
        ck_assert_str_eq(x[i].spk, y[i].spk);
        ck_assert_uint_eq(x[i].flags, y[i].flags);
        ck_assert_uint_eq(x[i].speech_tokens, y[i].speech_tokens);
        ck_assert_uint_eq(x[i].audio_bytes, y[i].audio_bytes);
        ck_assert_uint_eq(x[i].channels, y[i].channels);
    }
    free(x), free(y);
    es_cost_table_free(t);
}

static void assert_data_list(const char *out, uint32_t n, es_compress c)
{
    char path[4400], want[4400];
    snprintf(path, sizeof path, "%s/data.list", out);
    FILE *fp = fopen(path, "r");
    ck_assert_ptr_nonnull(fp);
    char line[4400];
    uint32_t i = 0;
    while (fgets(line, sizeof line, fp)) {
        snprintf(want, sizeof want, "%s/shards_%09u%s\n", out, i++, ext_of[c]);
        ck_assert_str_eq(line, want);
    }
    fclose(fp);
    ck_assert_uint_eq(i, n);
}

/* ---- corpus A: byte fidelity, both readers, repeat runs ------------------------- */

START_TEST(corpus_a_copies_every_member)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_cost_table *t = measure("shards/shards.list", root);
    ck_assert_uint_eq(t->n, 60);
    char *dir = make_temp_dir();
    es_context *ctx = es_context_new();
    for (es_compress c = ES_COMPRESS_NONE; c <= ES_COMPRESS_ZSTD; c++) {
        char out[2][4200];
        es_plan_reshard_info info;
        for (int run = 0; run < 2; run++) {
            es_plan_settings s;
            es_plan_defaults(&s);
            s.world_size = 2;
            s.workers = 2;
            s.mode = ES_PLAN_RESHARD;
            s.compress = c;
            s.root = root;
            loose_filter(&s);
            snprintf(out[run], sizeof out[run], "%s/out-%d-%d", dir, (int)c, run);
            int rc = reshard(ctx, t, &s, out[run], 0, &info);
            ck_assert_msg(rc == ES_OK, "%s", es_errmsg(ctx));
        }
        ck_assert_uint_eq(info.shards, 4); /* 60 utterances: M = 1 */
        assert_data_list(out[0], 4, c);
        assert_same_outputs(out[0], out[1]);
        char list[4400];
        snprintf(list, sizeof list, "%s/data.list", out[0]);
        char sources[4400];
        snprintf(sources, sizeof sources, "%s/shards/shards.list", root);
        ck_assert_int_eq(python_check(root, sources, list), 0);
        assert_same_measure(t, list);
    }
    es_context_free(ctx);
    es_cost_table_free(t);
    free(dir);
}
END_TEST

/* es_plan_settings.progress: steps counted from the sources the list names
 * (read once per pass) and the new shards, monotonic, ending at total. */
START_TEST(progress_counts_every_pass)
{
    char root[4096], list[4400];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    snprintf(list, sizeof list, "%s/shards/shards.list", root);
    size_t sources = 0, len;
    unsigned char *text = read_whole_file(list, &len);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < len; i++)
        sources += text[i] == '\n';
    free(text);
    es_cost_table *t = measure("shards/shards.list", root);
    char *dir = make_temp_dir();
    es_context *ctx = es_context_new();
    /* all 4 new shards open at once: one pass; one writer at a time: 4 passes */
    const size_t max_open[] = {0, 1}, passes[] = {1, 4};
    for (int k = 0; k < 2; k++) {
        es_plan_settings s;
        es_plan_defaults(&s);
        s.world_size = 2;
        s.workers = 2;
        s.mode = ES_PLAN_RESHARD;
        s.root = root;
        loose_filter(&s);
        progress_seen seen = {0};
        s.progress = progress_record;
        s.progress_user = &seen;
        char out[4200];
        snprintf(out, sizeof out, "%s/progress-%d", dir, k);
        es_plan_reshard_info info;
        ck_assert_msg(reshard(ctx, t, &s, out, max_open[k], &info) == ES_OK, "%s", es_errmsg(ctx));
        ck_assert_uint_eq(info.shards, 4);
        size_t total = passes[k] * sources + 4;
        ck_assert_uint_eq(seen.last_total, total);
        ck_assert_uint_eq(seen.last_done, total);
        ck_assert_uint_eq(seen.calls, passes[k] * sources + passes[k]);
        ck_assert_uint_eq(seen.backwards, 0);
        ck_assert_uint_eq(seen.total_changed, 0);
    }
    es_context_free(ctx);
    es_cost_table_free(t);
    free(dir);
}
END_TEST

/* Filtered utterances are not copied; filtered.tsv names them. */
START_TEST(filtered_rows_are_listed)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_cost_table *t = measure("shards-gz/shards.list", root);
    char *dir = make_temp_dir();
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s); /* CosyVoice's filter: min_length 100 drops those under 1 s */
    s.world_size = 2;
    s.mode = ES_PLAN_RESHARD;
    s.root = root;
    char out[4200], path[4400];
    snprintf(out, sizeof out, "%s/out", dir);
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_OK);
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    ck_assert_uint_gt(m.filtered, 0);
    snprintf(path, sizeof path, "%s/filtered.tsv", out);
    size_t len;
    char *text = (char *)read_whole_file(path, &len);
    ck_assert_ptr_nonnull(text);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    ck_assert_uint_eq(lines, m.filtered + 1);
    ck_assert_ptr_nonnull(strstr(text, "too_short"));
    snprintf(path, sizeof path, "%s/data.list", out);
    es_cost_table *back = measure(path, NULL);
    ck_assert_uint_eq(back->n, m.kept);
    free(text);
    es_cost_table_free(back);
    es_plan_free(p);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(dir);
}
END_TEST

/* ---- a generated corpus: equal cost under 20 permutations, passes ---------------- */

static void add_member(struct archive *a, const char *name, const void *data, size_t n)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_size(e, (la_int64_t)n);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0600);
    archive_entry_set_mtime(e, 1700000000, 0);
    archive_entry_set_uid(e, 1000);
    archive_entry_set_uname(e, "someone");
    /* WARN: a non-ASCII name in the C locale, written as raw bytes */
    ck_assert_int_ge(archive_write_header(a, e), ARCHIVE_WARN);
    ck_assert_int_eq(archive_write_data(a, data, n), (la_ssize_t)n);
    archive_entry_free(e);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A 200 Hz mono PCM16 WAV of `samples` samples (cheap: frames are what count). */
static unsigned char *wav(uint32_t samples, size_t *n)
{
    *n = 44 + 2 * (size_t)samples;
    unsigned char *w = calloc(1, *n);
    memcpy(w, "RIFF", 4);
    put32(w + 4, (uint32_t)*n - 8);
    memcpy(w + 8, "WAVEfmt ", 8);
    put32(w + 16, 16);
    w[20] = 1, w[22] = 1;
    put32(w + 24, 200);
    put32(w + 28, 400);
    w[32] = 2, w[34] = 16;
    memcpy(w + 36, "data", 4);
    put32(w + 40, 2 * samples);
    for (uint32_t i = 0; i < samples; i++)
        w[44 + 2 * i] = (unsigned char)(i * 37);
    return w;
}

/* n_shards shards of `per` utterances (the last one shorter), speakers sorted
 * into shards as make_parquet_list.py does, log-normal durations like LibriTTS.
 * Every 5th utterance also has .spk and .json members; shard 1 has non-ASCII
 * keys; shard 2 is gzip-compressed. A last shard written by Python's tarfile
 * (pax headers with UTF-8 names, as WeNet's make_shard_list.py writes them)
 * follows. Writes DIR/src/list. */
static size_t generate_corpus(const char *dir, int n_shards, int per)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/src", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/src/list", dir);
    FILE *list = fopen(path, "w");
    unsigned seed = 2024;
    size_t total = 0;
    for (int s = 0; s < n_shards; s++) {
        int n = s == n_shards - 1 ? per / 3 : per;
        snprintf(path, sizeof path, "%s/src/shards_%09d.tar%s", dir, s, s == 2 ? ".gz" : "");
        fprintf(list, "src/shards_%09d.tar%s\n", s, s == 2 ? ".gz" : "");
        struct archive *a = archive_write_new();
        archive_write_set_format_pax_restricted(a);
        if (s == 2)
            archive_write_add_filter_gzip(a);
        ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
        for (int u = 0; u < n; u++, total++) {
            double u1 = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
            double u2 = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
            double sec = exp(log(4.8) + 0.55 * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
            sec = sec < 1.2 ? 1.2 : sec > 20 ? 20 : sec;
            char key[64], name[96], text[64];
            snprintf(key, sizeof key, s == 1 ? "spk\xc3\xbc%02d_%05d" : "spk%02d_%05d", s, u);
            size_t wn;
            unsigned char *w = wav((uint32_t)(sec * 200), &wn);
            int tn = snprintf(text, sizeof text, "utterance %d of speaker %d", u, s);
            snprintf(name, sizeof name, "%s.txt", key);
            add_member(a, name, text, (size_t)tn);
            snprintf(name, sizeof name, "%s.wav", key);
            add_member(a, name, w, wn);
            if (u % 5 == 0) {
                snprintf(name, sizeof name, "%s.spk", key);
                add_member(a, name, "speaker", 7);
                snprintf(name, sizeof name, "%s.json", key);
                add_member(a, name, "{\"emotion\": \"calm\"}", 19);
            }
            free(w);
        }
        ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
        archive_write_free(a);
    }
    fprintf(list, "src/python.tar\n");
    fclose(list);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "python3 -c '%s' '%s/src/python.tar'",
             "import io, sys, tarfile, struct\n"
             "with tarfile.open(sys.argv[1], \"w\") as tf:\n"
             "  for u in range(40):\n"
             "    n = 300 + 37 * u\n"
             "    wav = b\"RIFF\" + struct.pack(\"<I\", 36 + 2 * n) + b\"WAVEfmt \" + struct.pack("
             "\"<IHHIIHH\", 16, 1, 1, 200, 400, 2, 16) + b\"data\" + struct.pack(\"<I\", 2 * n)"
             " + bytes(2 * n)\n"
             "    for name, data in ((\"\u00e9t\u00e9_%03d.txt\" % u, \"\u00e9t\u00e9\".encode()),"
             " (\"\u00e9t\u00e9_%03d.wav\" % u, wav)):\n"
             "      ti = tarfile.TarInfo(name); ti.size = len(data)\n"
             "      tf.addfile(ti, io.BytesIO(data))\n", dir);
    ck_assert_int_eq(system(cmd), 0);
    return total + 40;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Costs of the written shards as our reader measures them, in data.list order. */
static double *shard_costs(const char *list, uint32_t n_shards, const es_cost_model *model)
{
    es_cost_table *t = measure(list, NULL);
    double *cost = calloc(n_shards, sizeof *cost);
    uint32_t s = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (i > 0 && strcmp(t->rows[i].shard, t->rows[i - 1].shard) != 0)
            s++;
        ck_assert_uint_lt(s, n_shards);
        cost[s] += es_row_cost(model, &t->rows[i]);
    }
    ck_assert_uint_eq(s + 1, n_shards);
    es_cost_table_free(t);
    return cost;
}

/* Worst |load/mean - 1| of any rank or worker over 20 random permutations of
 * the list, split as CosyVoice does: [rank::K], then [worker::W]. */
static double worst_under_permutations(const double *cost, uint32_t n, uint32_t K, uint32_t W)
{
    uint32_t *perm = malloc(n * sizeof *perm);
    double *rank = malloc(K * sizeof *rank), *worker = malloc((size_t)K * W * sizeof *worker);
    double total = 0, worst = 0;
    for (uint32_t i = 0; i < n; i++)
        total += cost[i];
    uint64_t state = 12345;
    for (int trial = 0; trial < 20; trial++) {
        for (uint32_t i = 0; i < n; i++)
            perm[i] = i;
        for (uint32_t i = n - 1; i > 0; i--) {
            uint32_t j = (uint32_t)(splitmix64(&state) % (i + 1));
            uint32_t tmp = perm[i];
            perm[i] = perm[j], perm[j] = tmp;
        }
        memset(rank, 0, K * sizeof *rank);
        memset(worker, 0, (size_t)K * W * sizeof *worker);
        for (uint32_t q = 0; q < n; q++) {
            rank[q % K] += cost[perm[q]];
            worker[(q % K) * W + (q / K) % W] += cost[perm[q]];
        }
        for (uint32_t r = 0; r < K; r++)
            worst = fmax(worst, fabs(rank[r] / (total / K) - 1));
        for (uint32_t w = 0; w < K * W; w++)
            worst = fmax(worst, fabs(worker[w] / (total / (K * W)) - 1));
    }
    free(perm), free(rank), free(worker);
    return worst;
}

START_TEST(generated_corpus_equal_cost)
{
    char *dir = make_temp_dir();
    size_t n = generate_corpus(dir, 12, 250);
    es_cost_table *t = measure("src/list", dir);
    ck_assert_uint_eq(t->n, n);
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 4;
    s.workers = 2;
    s.shards_per_worker = 2;
    s.mode = ES_PLAN_RESHARD;
    s.compress = ES_COMPRESS_ZSTD;
    s.root = dir;
    loose_filter(&s);
    char out[4200], passes[4200], list[4400], src[4400];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(passes, sizeof passes, "%s/passes", dir);
    es_plan_reshard_info info;
    ck_assert_msg(reshard(ctx, t, &s, out, 0, &info) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert_uint_eq(info.shards, 16);
    ck_assert_uint_eq(info.permutations, 20);
    ck_assert_msg(info.shard_max_deviation < 0.005, "shard deviation %g", info.shard_max_deviation);
    ck_assert(info.permutation_max_deviation <= info.shard_max_deviation + 1e-12);

    snprintf(list, sizeof list, "%s/data.list", out);
    snprintf(src, sizeof src, "%s/src/list", dir);
    ck_assert_int_eq(python_check(dir, src, list), 0);
    double *cost = shard_costs(list, 16, &s.model);
    double worst = worst_under_permutations(cost, 16, 4, 2);
    fprintf(stderr, "reshard: %zu utterances into 16 shards: shard deviation %.5f%%, worst "
            "rank/worker deviation over 20 permutations %.5f%% (plan: %.5f%%)\n", n,
            100 * info.shard_max_deviation, 100 * worst, 100 * info.permutation_max_deviation);
    ck_assert_msg(worst <= 0.005, "worst deviation %g", worst);

    /* 3 writers at a time: 6 passes over the sources, the same bytes */
    ck_assert_msg(reshard(ctx, t, &s, passes, 3, NULL) == ES_OK, "%s", es_errmsg(ctx));
    assert_same_outputs(out, passes);
    free(cost);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(dir);
}
END_TEST

/* Quality at scale from a table alone (no files): the plan's own numbers. */
START_TEST(large_table_quality)
{
    size_t n = 200000;
    es_cost_table *t = es_cost_table_new();
    unsigned seed = 5;
    for (size_t i = 0; i < n; i++) {
        char key[32], shard[32];
        snprintf(key, sizeof key, "u%07zu", i);
        snprintf(shard, sizeof shard, "s%05zu.tar", i / 1000);
        double u1 = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
        double u2 = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
        double sec = exp(log(4.8) + 0.55 * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
        sec = sec < 1.2 ? 1.2 : sec > 20 ? 20 : sec;
        es_cost_row r = {key, shard, i % 1000, 16000, 1, (uint64_t)(sec * 16000), 0, 20, 0, "",
                         ES_FLAG_AUDIO | ES_FLAG_TEXT, 0, 0};
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 32;
    s.workers = 4;
    s.mode = ES_PLAN_RESHARD;
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
    es_plan_reshard_info info;
    ck_assert_int_eq(es_plan_reshard_info_get(p, &info), ES_OK);
    ck_assert_uint_eq(info.shards_per_worker, 2); /* round(200000 / (128 × 1000)) */
    ck_assert_uint_eq(info.shards, 256);
    ck_assert_msg(info.permutation_max_deviation <= 0.005, "%g", info.permutation_max_deviation);
    double worst = worst_under_permutations(p->reshard->shard_cost, 256, 32, 4);
    fprintf(stderr, "reshard: 200000 utterances into 256 shards: shard deviation %.5f%%, "
            "worst rank/worker deviation over 20 permutations %.5f%%\n",
            100 * info.shard_max_deviation, 100 * worst);
    ck_assert_msg(worst <= 0.005, "%g", worst);
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    ck_assert_uint_eq(m.kept, n);
    ck_assert_msg(m.imbalance <= 0.005, "%g", m.imbalance);
    /* every kept row in exactly one shard */
    ck_assert_uint_eq(p->reshard->start[256], n);
    es_plan_free(p);
    es_context_free(ctx);
    es_cost_table_free(t);
}
END_TEST

/* ---- errors ----------------------------------------------------------------------- */

static void copy_file(const char *from, const char *to)
{
    size_t n;
    unsigned char *b = read_whole_file(from, &n);
    ck_assert_ptr_nonnull(b);
    FILE *fp = fopen(to, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(b, 1, n, fp), n);
    fclose(fp);
    free(b);
}

/* Offset of the tar header of utterance `ordinal`'s first member (plain tar). */
static long utterance_offset(const char *path, int ordinal)
{
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    ck_assert_int_eq(archive_read_open_filename(a, path, 10240), ARCHIVE_OK);
    struct archive_entry *e;
    int member = 0;
    long at = -1;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        if (member++ == 2 * ordinal) { /* corpus A: .txt then .wav per key */
            at = (long)archive_read_header_position(a);
            break;
        }
    }
    archive_read_free(a);
    return at;
}

static int no_temp_folders(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int none = 1;
    while ((e = readdir(d)))
        none = none && !strstr(e->d_name, ".tmp.");
    closedir(d);
    return none;
}

START_TEST(changed_sources_fail_and_keep_outdir)
{
    char *dir = make_temp_dir();
    char path[4400], shard1[4400], saved[4400], out[4200], keep_plan[4400], plan[4400];
    snprintf(path, sizeof path, "%s/shards", dir);
    mkdir(path, 0755);
    for (int i = 0; i < 4; i++) {
        char from[4400];
        snprintf(from, sizeof from, "%s", fixture_path(""));
        snprintf(from + strlen(from), sizeof from - strlen(from),
                 "corpus_a/shards/shards_%09d.tar", i);
        snprintf(path, sizeof path, "%s/shards/shards_%09d.tar", dir, i);
        copy_file(from, path);
    }
    snprintf(path, sizeof path, "%s/shards/shards.list", dir);
    copy_file(fixture_path("corpus_a/shards/shards.list"), path);
    es_cost_table *t = measure("shards/shards.list", dir);
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    s.mode = ES_PLAN_RESHARD;
    s.root = dir;
    loose_filter(&s);
    snprintf(out, sizeof out, "%s/out", dir);
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_OK);
    snprintf(plan, sizeof plan, "%s/plan.json", out);
    snprintf(keep_plan, sizeof keep_plan, "%s/plan.keep", dir);
    copy_file(plan, keep_plan);
    s.compress = ES_COMPRESS_GZIP; /* a successful run would change OUTDIR */

    snprintf(shard1, sizeof shard1, "%s/shards/shards_000000001.tar", dir);
    snprintf(saved, sizeof saved, "%s/saved.tar", dir);
    copy_file(shard1, saved);

    /* the same bytes written again: measure recorded its size and mtime (#5) */
    copy_file(saved, shard1);
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_FORMAT);
    ck_assert_msg(strstr(es_errmsg(ctx), "shards_000000001.tar: modified at"), "%s", es_errmsg(ctx));
    ck_assert(same_file(plan, keep_plan));
    /* what follows checks the content, as for a table written before the stats */
    es_strmap_release(&t->shard_stats);

    /* vanished */
    unlink(shard1);
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_IO);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "shards_000000001.tar"));
    ck_assert(same_file(plan, keep_plan));

    /* truncated inside a member */
    copy_file(saved, shard1);
    ck_assert_int_eq(truncate(shard1, 300000), 0);
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "shards_000000001.tar"));
    ck_assert(same_file(plan, keep_plan));

    /* truncated at a member boundary: fewer utterances than measured */
    copy_file(saved, shard1);
    long at = utterance_offset(shard1, 10);
    ck_assert_int_gt(at, 0);
    ck_assert_int_eq(truncate(shard1, at), 0);
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "shards_000000001.tar: ends after 10"));
    ck_assert(same_file(plan, keep_plan));

    /* replaced by another shard: the keys disagree */
    snprintf(path, sizeof path, "%s/shards/shards_000000000.tar", dir);
    copy_file(path, shard1);
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "the cost table says"));
    ck_assert(same_file(plan, keep_plan));
    ck_assert(no_temp_folders(dir));

    /* restored: it works again */
    copy_file(saved, shard1);
    ck_assert_msg(reshard(ctx, t, &s, out, 0, NULL) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert(!same_file(plan, keep_plan));
    es_context_free(ctx);
    es_cost_table_free(t);
    free(dir);
}
END_TEST

/* A new shard whose bytes on disk are not what was copied into it fails the
 * run at the read-back, with one line naming it, and leaves no OUTDIR. The
 * test hook swaps the chosen shards, as each is created, for an empty tar at
 * the same path (the writer goes on into the unlinked file). The shards are
 * read back on two threads as they are closed: the error named is the first
 * shard in order that differs, whichever thread read it. */
typedef struct swap_shards {
    const char *dir; /* OUTDIR's parent, where its temporary folder is */
    unsigned mask;   /* the new shards to swap, by index */
    unsigned done;
} swap_shards;

static void swap_on_create(void *user, const char *point)
{
    swap_shards *w = user;
    if (strcmp(point, "file-made") != 0)
        return;
    DIR *d = opendir(w->dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "out.tmp.", 8) != 0)
            continue;
        for (unsigned i = 0; i < 32; i++) {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s/shards_%09u.tar", w->dir, e->d_name, i);
            if (!(w->mask & (1u << i)) || (w->done & (1u << i)) || access(path, F_OK) != 0)
                continue;
            ck_assert_int_eq(unlink(path), 0);
            FILE *fp = fopen(path, "wb");
            ck_assert_ptr_nonnull(fp);
            static const char zeros[1024];
            ck_assert_uint_eq(fwrite(zeros, 1, sizeof zeros, fp), sizeof zeros);
            fclose(fp);
            w->done |= 1u << i;
        }
    }
    closedir(d);
}

START_TEST(read_back_mismatch_fails_without_outdir)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_cost_table *t = measure("shards/shards.list", root);
    char *dir = make_temp_dir();
    char out[4200];
    snprintf(out, sizeof out, "%s/out", dir);
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    s.workers = 2;
    s.mode = ES_PLAN_RESHARD;
    s.root = root;
    loose_filter(&s);
    /* 4 new shards; one swapped, two, the first or the last */
    static const struct {
        unsigned mask;
        const char *named;
    } cases[] = {{1u << 3, "shards_000000003.tar: read back differs"},
                 {1u << 0, "shards_000000000.tar: read back differs"},
                 {(1u << 1) | (1u << 2), "shards_000000001.tar: read back differs"},
                 {(1u << 2) | (1u << 3), "shards_000000002.tar: read back differs"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        swap_shards w = {dir, cases[c].mask, 0};
        es_context_set_test_hook(ctx, swap_on_create, &w);
        ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_IO);
        ck_assert_uint_eq(w.done, cases[c].mask);
        ck_assert_msg(strstr(es_errmsg(ctx), cases[c].named), "%s", es_errmsg(ctx));
        ck_assert_ptr_null(strchr(es_errmsg(ctx), '\n'));
        ck_assert_int_ne(access(out, F_OK), 0);
        ck_assert(no_temp_folders(dir));
    }
    /* passes of one writer: no helper thread, the same verdict */
    swap_shards w = {dir, 1u << 2, 0};
    es_context_set_test_hook(ctx, swap_on_create, &w);
    ck_assert_int_eq(reshard(ctx, t, &s, out, 1, NULL), ES_ERR_IO);
    ck_assert_msg(strstr(es_errmsg(ctx), "shards_000000002.tar: read back differs"), "%s",
                  es_errmsg(ctx));
    ck_assert_int_ne(access(out, F_OK), 0);
    es_context_set_test_hook(ctx, NULL, NULL);
    ck_assert_msg(reshard(ctx, t, &s, out, 0, NULL) == ES_OK, "%s", es_errmsg(ctx));
    es_context_free(ctx);
    es_cost_table_free(t);
    free(dir);
}
END_TEST

/* ---- parquet: CosyVoice files in, CosyVoice files out ---------------------------- */

/* Corpus A's four arrow-rs-written parquet files (tests/fixtures/corpus_a/parquet):
 * resharded with each codec, the new files read back through our reader equal
 * the sources row for row (hyparquet checks them in tests/cli too); passes of
 * one writer give the same bytes; the codec is the one asked for. */
START_TEST(parquet_corpus_a_round_trip)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_cost_table *t = measure("parquet/data.list", root);
    ck_assert_uint_eq(t->n, 60);
    char *dir = make_temp_dir();
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    s.workers = 2;
    s.mode = ES_PLAN_RESHARD;
    s.root = root;
    loose_filter(&s);
    static const es_compress codecs[] = {ES_COMPRESS_AUTO, ES_COMPRESS_NONE, ES_COMPRESS_ZSTD,
                                         ES_COMPRESS_GZIP};
    static const char *const codec_json[] = {"snappy", "none", "zstd", "gzip"};
    for (int c = 0; c < 4; c++) {
        char out[4200], again[4200], list[4400], plan[4400];
        snprintf(out, sizeof out, "%s/out-%d", dir, c);
        snprintf(again, sizeof again, "%s/again-%d", dir, c);
        s.compress = codecs[c];
        es_plan_reshard_info info;
        ck_assert_msg(reshard(ctx, t, &s, out, 0, &info) == ES_OK, "%s", es_errmsg(ctx));
        ck_assert_uint_eq(info.shards, 4);
        snprintf(list, sizeof list, "%s/data.list", out);
        assert_same_measure(t, list);
        /* one writer at a time: each source re-read per pass, same files */
        ck_assert_msg(reshard(ctx, t, &s, again, 1, NULL) == ES_OK, "%s", es_errmsg(ctx));
        assert_same_outputs(out, again);
        if (codecs[c] == ES_COMPRESS_ZSTD || codecs[c] == ES_COMPRESS_GZIP) {
            /* their pages are compressed a thread each (pq_write.c): the same
             * bytes with one thread and with three */
            int threads = omp_get_max_threads();
            for (int k = 1; k <= 3; k += 2) {
                omp_set_num_threads(k);
                snprintf(again, sizeof again, "%s/threads-%d-%d", dir, c, k);
                ck_assert_msg(reshard(ctx, t, &s, again, 0, NULL) == ES_OK, "%s", es_errmsg(ctx));
                assert_same_outputs(out, again);
            }
            omp_set_num_threads(threads);
        }
        snprintf(plan, sizeof plan, "%s/plan.json", out);
        size_t n;
        char *json = (char *)read_whole_file(plan, &n);
        char want[64];
        snprintf(want, sizeof want, "\"compress\": \"%s\"", codec_json[c]);
        ck_assert_msg(json && strstr(json, want), "plan.json lacks %s", want);
        ck_assert_ptr_nonnull(strstr(json, "\"format\": \"parquet\""));
        free(json);
        /* the files beside the shards */
        for (int i = 0; i < 4; i++) {
            char f[4400];
            snprintf(f, sizeof f, "%s/utt2parquet_%09d.json", out, i);
            ck_assert_int_eq(access(f, F_OK), 0);
            snprintf(f, sizeof f, "%s/spk2parquet_%09d.json", out, i);
            ck_assert_int_eq(access(f, F_OK), 0);
        }
    }
    /* snappy is parquet's codec, not a tar filter */
    es_cost_table *tar = measure("shards/shards.list", root);
    char out[4200];
    snprintf(out, sizeof out, "%s/tar-snappy", dir);
    s.compress = ES_COMPRESS_SNAPPY;
    ck_assert_int_eq(reshard(ctx, tar, &s, out, 0, NULL), ES_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "snappy is for parquet"));
    es_cost_table_free(tar);
    es_cost_table_free(t);
    es_context_free(ctx);
    free(dir);
}
END_TEST

/* Parquet written without a spool (every new file open at once, column by
 * column, their pages through one shared queue compressed beside the writer)
 * and through the spool (one file at a time): the same bytes. With one new
 * file (over 3 MiB) its audio chunk is several pages, cut at 1 MiB of values;
 * with two, pages of the two files interleave in the queue. ZSTD with 1, 2 and
 * 4 threads (0, 1 and 3 helpers), SNAPPY (none). test_parquet_write fills the
 * queue with helpers running. */
START_TEST(parquet_direct_equals_spooled)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_cost_table *t = measure("parquet/data.list", root);
    char *dir = make_temp_dir();
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.workers = 1;
    s.mode = ES_PLAN_RESHARD;
    s.root = root;
    loose_filter(&s);
    int threads = omp_get_max_threads();
    static const es_compress codecs[] = {ES_COMPRESS_ZSTD, ES_COMPRESS_SNAPPY};
    for (uint32_t shards = 1; shards <= 2; shards++)
        for (int c = 0; c < 2; c++)
            for (int k = 1; k <= 4; k *= 2) {
                char direct[4200], spooled[4200], list[4400], first[4400];
                snprintf(direct, sizeof direct, "%s/direct-%u-%d-%d", dir, shards, c, k);
                snprintf(spooled, sizeof spooled, "%s/spooled-%u-%d-%d", dir, shards, c, k);
                s.world_size = shards;
                s.compress = codecs[c];
                omp_set_num_threads(k);
                ck_assert_msg(reshard(ctx, t, &s, direct, 0, NULL) == ES_OK, "%s", es_errmsg(ctx));
                es_plan *p = NULL;
                ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
                p->reshard->spool = 1;
                ck_assert_msg(es_plan_write(ctx, p, spooled, NULL, 0) == ES_OK, "%s",
                              es_errmsg(ctx));
                es_plan_free(p);
                assert_same_outputs(direct, spooled);
                snprintf(list, sizeof list, "%s/data.list", direct);
                assert_same_measure(t, list);
                snprintf(first, sizeof first, "%s/parquet_000000000.tar", direct);
                size_t n;
                free(read_whole_file(first, &n));
                ck_assert_uint_gt(n, (shards == 1 ? 3u : 1u) << 20);
            }
    omp_set_num_threads(threads);
    es_cost_table_free(t);
    es_context_free(ctx);
    free(dir);
}
END_TEST

START_TEST(unsupported_sources)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    char *dir = make_temp_dir();
    char out[4200];
    snprintf(out, sizeof out, "%s/out", dir);
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    s.mode = ES_PLAN_RESHARD;
    s.root = root;
    loose_filter(&s);
    /* a raw list: rows are list entries of their own */
    es_cost_table *raw = measure("raw.list", root);
    ck_assert_int_eq(reshard(ctx, raw, &s, out, 0, NULL), ES_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "this row is a raw-list or Kaldi entry"));
    es_cost_table_free(raw);
    /* tar and parquet sources in one table */
    es_cost_table *t = es_cost_table_new();
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        es_cost_row r = {key, i < 2 ? "parquet/parquet_000000000.tar" : "shards/shards_000000000.tar",
                         (uint64_t)i, 16000, 1, 32000, 0, 10, 0, "", ES_FLAG_AUDIO | ES_FLAG_TEXT, 0, 0};
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "must all be tar or all parquet"));
    es_cost_table_free(t);
    /* parquet rows whose keys are not the file's: changed since measured */
    t = es_cost_table_new();
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        es_cost_row r = {key, "parquet/parquet_000000000.tar", (uint64_t)i, 16000, 1, 32000, 0,
                         10, 0, "", ES_FLAG_AUDIO | ES_FLAG_TEXT, 0, 0};
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "the file changed since it was measured"));
    ck_assert_int_ne(access(out, F_OK), 0);
    /* more shards than utterances */
    s.shards_per_worker = 3;
    ck_assert_int_eq(reshard(ctx, t, &s, out, 0, NULL), ES_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "cannot fill 6 shards"));
    es_cost_table_free(t);
    es_context_free(ctx);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reshard");
    TCase *tc = tcase_create("reshard");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, corpus_a_copies_every_member);
    tcase_add_test(tc, filtered_rows_are_listed);
    tcase_add_test(tc, progress_counts_every_pass);
    tcase_add_test(tc, generated_corpus_equal_cost);
    tcase_add_test(tc, large_table_quality);
    tcase_add_test(tc, changed_sources_fail_and_keep_outdir);
    tcase_add_test(tc, read_back_mismatch_fails_without_outdir);
    tcase_add_test(tc, parquet_corpus_a_round_trip);
    tcase_add_test(tc, parquet_direct_equals_spooled);
    tcase_add_test(tc, unsupported_sources);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
