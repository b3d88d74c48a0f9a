/* es_plan_dir_open, the one reader of a plan OUTDIR, on OUTDIRs of every mode
 * written by the `equishard plan` command on data-samples/: every value it
 * gives against Python's json module reading the same plan.json (the
 * independent reader; python3 runs the script below and prints one value a
 * line). Then its refusals, one line naming the file: a newer schema version,
 * a truncated plan.json, none at all, a key of the wrong type, a rank file
 * missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_helpers.h"
#include "equishard/equishard.h"

/* plan.json through Python's json: "s TEXT" for a string, "i N" for a whole
 * number, "f R" (repr, exact) for a real, in the order plan_dir_matches reads. */
static const char oracle[] =
    "import json, sys\n"
    "d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
    "p, m = d['parameters'], d['metrics']\n"
    "def s(v): print('s', v)\n"
    "def i(v): assert isinstance(v, int); print('i', v % 2**64)\n"
    "def f(v): print('f', repr(float(v)))\n"
    "s(p['mode']); i(d['format']); s(d['equishard'])\n"
    "i(p['world_size']); i(p['workers']); i(p['seed']); i(p['epoch'])\n"
    "i(len(d['inputs']))\n"
    "for x in d['inputs']: s(x['path']); i(int(x['xxh3'], 16))\n"
    "for k in ('imbalance', 'lower_bound', 'lower_bound_gap', 'step_straggler', 'retention'): f(m[k])\n"
    "for k in ('batch_spread', 'total_batches', 'steps', 'kept'): i(m[k])\n"
    "s(m['method'])\n"
    "i(m['remainder']['batches']); i(m['remainder']['utterances'])\n"
    "i(m['unreadable']['shards']); i(m['unreadable']['utterances'])\n"
    "i(len(m['filtered']))\n"
    "for k, v in m['filtered'].items(): s(k); i(v)\n"
    "i(m.get('left_out', 0))\n"
    "c = p['cost_model']\n"
    "for k in ('frame_rate', 'w_frames', 'w_text', 'w_speech_tokens', 'w_frames_sq',\n"
    "          'w_missing_emb', 'w_overhead', 'w_batch'): f(c[k])\n"
    "q = p['filter']\n"
    "f(q['min_length']); f(q['max_length']); i(q['token_min_length']); i(q['token_max_length'])\n"
    "f(q['min_output_input_ratio']); f(q['max_output_input_ratio'])\n"
    "i(int(q['require_speech_token']))\n"
    "i(p['max_frames_in_batch']); i(p['batch_size']); i(p['sort_size']); s(p['remainder'])\n"
    "r = m.get('reshard')\n"
    "i(r is not None)\n"
    "if r:\n"
    "    i(r['shards']); i(r['shards_per_worker']); i(r['permutations'])\n"
    "    f(r['permutation_max_deviation'])\n"
    "    for k in ('min', 'max', 'mean', 'max_deviation'): f(r['shard_cost'][k])\n"
    "    i(p['shards_per_worker']); s(p['compress'])\n"
    "i(len(d['ranks']))\n"
    "for x in d['ranks']:\n"
    "    for y in [x] + x['workers']:\n"
    "        f(y['cost']); i(y['utterances']); i(y['frames']); i(y['batches'])\n";

typedef struct lines {
    FILE *fp;
    char buf[8192];
} lines;

static const char *next(lines *l, char kind)
{
    ck_assert_msg(fgets(l->buf, sizeof l->buf, l->fp) != NULL, "the oracle ended early");
    l->buf[strcspn(l->buf, "\n")] = 0;
    ck_assert_msg(l->buf[0] == kind && l->buf[1] == ' ', "oracle line '%s', expected %c", l->buf,
                  kind);
    return l->buf + 2;
}

static void want_s(lines *l, const char *got) { ck_assert_str_eq(got, next(l, 's')); }
static void want_i(lines *l, uint64_t got)
{
    ck_assert_uint_eq(got, strtoull(next(l, 'i'), NULL, 10));
}
static void want_f(lines *l, double got)
{
    const char *v = next(l, 'f');
    ck_assert_msg(got == strtod(v, NULL), "%.17g, json says %s", got, v);
}

static void want_load(lines *l, const es_plan_load *x)
{
    want_f(l, x->cost), want_i(l, x->utterances), want_i(l, x->frames), want_i(l, x->batches);
}

static const char *cli(void)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/tools/equishard/equishard", getenv("ES_BUILD_ROOT"));
    return path;
}

/* `equishard plan ARGS -o test_path(out)` in data-samples/. */
static const char *plan_cli(const char *out, const char *args)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", test_path(out));
    char cmd[12000];
    snprintf(cmd, sizeof cmd, "cd '%s/data-samples' && '%s' plan -q --min-length 10 --seed 5 %s "
             "-o '%s' >/dev/null", getenv("ES_SOURCE_ROOT"), cli(), args, dir);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
    return dir;
}

static void plan_dir_matches(const char *outdir)
{
    char cmd[8192], script[4096];
    snprintf(script, sizeof script, "%s", test_path("oracle.py"));
    FILE *sf = fopen(script, "w");
    ck_assert_ptr_nonnull(sf);
    fputs(oracle, sf);
    fclose(sf);
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s/plan.json'", script, outdir);
    lines l = {popen(cmd, "r"), {0}};
    ck_assert_ptr_nonnull(l.fp);

    es_context *ctx = es_context_new();
    es_plan_dir *d = NULL;
    ck_assert_msg(es_plan_dir_open(ctx, outdir, &d) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert_msg(es_plan_dir_check_files(ctx, d) == ES_OK, "%s", es_errmsg(ctx));
    es_plan_dir_info in;
    es_plan_settings s;
    es_plan_metrics m;
    ck_assert_int_eq(es_plan_dir_get_info(d, &in), ES_OK);
    ck_assert_int_eq(es_plan_dir_settings(d, &s), ES_OK);
    ck_assert_int_eq(es_plan_dir_metrics(d, &m), ES_OK);

    want_s(&l, es_enum_name(ES_ENUM_PLAN_MODE, (int)in.mode));
    want_i(&l, in.format), want_s(&l, in.equishard);
    want_i(&l, in.world_size), want_i(&l, in.workers), want_i(&l, in.seed);
    want_i(&l, (uint64_t)in.epoch);
    ck_assert(s.world_size == in.world_size && s.workers == in.workers && s.mode == in.mode);
    want_i(&l, in.n_inputs);
    for (size_t i = 0; i < in.n_inputs; i++) {
        uint64_t digest;
        want_s(&l, es_plan_dir_input(d, i, &digest));
        want_i(&l, digest);
    }
    ck_assert_ptr_null(es_plan_dir_input(d, in.n_inputs, NULL));
    want_f(&l, m.imbalance), want_f(&l, m.lower_bound), want_f(&l, m.lower_bound_gap);
    want_f(&l, m.step_straggler), want_f(&l, m.retention);
    want_i(&l, m.batch_spread), want_i(&l, m.total_batches), want_i(&l, m.steps);
    want_i(&l, m.kept), want_s(&l, m.method);
    want_i(&l, m.remainder_batches), want_i(&l, m.remainder_utterances);
    want_i(&l, in.unreadable_shards), want_i(&l, in.unreadable_utterances);
    want_i(&l, es_enum_size(ES_ENUM_FILTER_REASON) - 1);
    uint64_t sum = 0;
    for (size_t r = 1; r < es_enum_size(ES_ENUM_FILTER_REASON); r++) {
        want_s(&l, es_enum_name(ES_ENUM_FILTER_REASON, (int)r));
        want_i(&l, m.filtered_by_reason[r]);
        sum += m.filtered_by_reason[r];
    }
    ck_assert_uint_eq(m.filtered, sum);
    want_i(&l, in.left_out);
    const es_cost_model *c = &s.model;
    want_f(&l, c->frame_rate), want_f(&l, c->w_frames), want_f(&l, c->w_text);
    want_f(&l, c->w_speech_tokens), want_f(&l, c->w_frames_sq), want_f(&l, c->w_missing_emb);
    want_f(&l, c->w_overhead), want_f(&l, c->w_batch);
    want_f(&l, c->min_length), want_f(&l, c->max_length);
    want_i(&l, c->token_min_length), want_i(&l, c->token_max_length);
    want_f(&l, c->min_output_input_ratio), want_f(&l, c->max_output_input_ratio);
    want_i(&l, (uint64_t)c->require_speech_token);
    want_i(&l, s.max_frames_in_batch), want_i(&l, s.batch_size), want_i(&l, s.sort_size);
    want_s(&l, es_enum_name(ES_ENUM_REMAINDER, (int)s.remainder));
    want_i(&l, (uint64_t)in.has_reshard);
    es_plan_reshard_info ri;
    ck_assert_int_eq(es_plan_dir_reshard_info(d, &ri), in.has_reshard ? ES_OK : ES_ERR_USAGE);
    if (in.has_reshard) {
        want_i(&l, ri.shards), want_i(&l, ri.shards_per_worker), want_i(&l, ri.permutations);
        want_f(&l, ri.permutation_max_deviation);
        want_f(&l, ri.shard_cost_min), want_f(&l, ri.shard_cost_max);
        want_f(&l, ri.shard_cost_mean), want_f(&l, ri.shard_max_deviation);
        want_i(&l, s.shards_per_worker);
        want_s(&l, es_enum_name(ES_ENUM_COMPRESS, (int)s.compress));
    }
    want_i(&l, in.n_ranks);
    for (uint32_t r = 0; r < in.n_ranks; r++) {
        es_plan_load x;
        ck_assert_int_eq(es_plan_dir_rank_load(d, r, -1, &x), ES_OK);
        want_load(&l, &x);
        for (uint32_t w = 0; w < in.workers; w++) {
            ck_assert_int_eq(es_plan_dir_rank_load(d, r, (int32_t)w, &x), ES_OK);
            want_load(&l, &x);
        }
        ck_assert_int_eq(es_plan_dir_rank_load(d, r, (int32_t)in.workers, &x), ES_ERR_USAGE);
    }
    es_plan_load x;
    ck_assert_int_eq(es_plan_dir_rank_load(d, (uint32_t)in.n_ranks, -1, &x), ES_ERR_USAGE);
    ck_assert_msg(fgets(l.buf, sizeof l.buf, l.fp) == NULL, "the oracle has more: %s", l.buf);
    ck_assert_int_eq(pclose(l.fp), 0);

    /* the rank files, by the names docs/PLAN.md gives each mode */
    char want[4400];
    for (uint32_t r = 0; r < in.world_size; r++) {
        const char *got = es_plan_dir_rank_file(d, r, -1);
        if (in.mode == ES_PLAN_RESHARD) {
            ck_assert_ptr_null(got);
            continue;
        }
        snprintf(want, sizeof want, in.mode == ES_PLAN_SHARD ? "%s/rank-%05u.list"
                 : "%s/rank-%05u.batches.jsonl", outdir, r);
        ck_assert_str_eq(got, want);
        for (uint32_t w = 0; w < in.workers; w++) {
            got = es_plan_dir_rank_file(d, r, (int32_t)w);
            snprintf(want, sizeof want, "%s/rank-%05u.worker-%u.list", outdir, r, w);
            if (in.mode == ES_PLAN_SHARD)
                ck_assert_str_eq(got, want);
            else
                ck_assert_ptr_null(got);
        }
        ck_assert_ptr_null(es_plan_dir_rank_file(d, r, (int32_t)in.workers));
    }
    ck_assert_ptr_null(es_plan_dir_rank_file(d, in.world_size, -1));
    ck_assert_str_eq(in.outdir, outdir);
    es_plan_dir_free(d);
    es_context_free(ctx);
}

START_TEST(shard_mode)
{
    plan_dir_matches(plan_cli("s", "-k 2 shards/data.list"));
    plan_dir_matches(plan_cli("r", "-k 1 -w 2 raw.list"));
    plan_dir_matches(plan_cli("k", "-k 3 kaldi"));
}
END_TEST

START_TEST(batch_mode)
{
    plan_dir_matches(plan_cli("b", "--mode batch -k 2 -w 1 --epoch 3 shards/data.list"));
    plan_dir_matches(plan_cli("c", "--mode batch -k 1 -w 2 --remainder carry raw.list"));
}
END_TEST

START_TEST(reshard_mode)
{
    plan_dir_matches(plan_cli("t", "--mode reshard -k 2 --compress gzip shards/data.list"));
    plan_dir_matches(plan_cli("p", "--mode reshard -k 2 parquet/data.list"));
}
END_TEST

static char *slurp(const char *path, size_t *len)
{
    char *text = (char *)read_whole_file(path, len);
    ck_assert_ptr_nonnull(text);
    return text;
}

static void spit(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(text, 1, len, fp), len);
    fclose(fp);
}

/* es_plan_dir_open's error: its status and one line that begins with want. */
static void refused(const char *outdir, int status, const char *want)
{
    es_context *ctx = es_context_new();
    es_plan_dir *d = (es_plan_dir *)&d;
    ck_assert_int_eq(es_plan_dir_open(ctx, outdir, &d), status);
    ck_assert_ptr_null(d);
    ck_assert_msg(strncmp(es_errmsg(ctx), want, strlen(want)) == 0, "'%s', want '%s…'",
                  es_errmsg(ctx), want);
    ck_assert_ptr_null(strchr(es_errmsg(ctx), '\n'));
    es_context_free(ctx);
}

/* plan.json with the first `from` replaced by `to`. */
static void edit(const char *outdir, const char *from, const char *to)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/plan.json", outdir);
    size_t len;
    char *text = slurp(path, &len);
    char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "no '%s' in %s", from, path);
    size_t head = (size_t)(at - text), fl = strlen(from), tl = strlen(to);
    char *out = malloc(len - fl + tl);
    memcpy(out, text, head);
    memcpy(out + head, to, tl);
    memcpy(out + head + tl, at + fl, len - head - fl);
    spit(path, out, len - fl + tl);
    free(out), free(text);
}

START_TEST(newer_schema_refused)
{
    const char *dir = plan_cli("n", "-k 2 shards/data.list");
    char want[4400];
    edit(dir, "\"format\": 1,", "\"format\": 2,");
    snprintf(want, sizeof want, "%s/plan.json: schema version 2 is newer than this equishard "
             "(1); upgrade", dir);
    refused(dir, ES_ERR_FORMAT, want);
    es_context *ctx = es_context_new();
    es_plan_dir *d = NULL;
    es_plan_dir_open(ctx, dir, &d);
    ck_assert_str_eq(es_errmsg(ctx), want); /* the whole line, nothing after */
    edit(dir, "\"format\": 2,", "\"format\": 1,"); /* the version this one writes is read */
    ck_assert_int_eq(es_plan_dir_open(ctx, dir, &d), ES_OK);
    es_plan_dir_free(d);
    es_context_free(ctx);
}
END_TEST

START_TEST(broken_plan_json_refused)
{
    const char *dir = plan_cli("x", "--mode batch -k 2 shards/data.list");
    char path[4400], want[4500];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    size_t len;
    char *text = slurp(path, &len);
    spit(path, text, len / 2); /* truncated */
    snprintf(want, sizeof want, "%s: line ", path);
    refused(dir, ES_ERR_FORMAT, want);
    spit(path, "[1, 2]\n", 7); /* JSON, no plan */
    snprintf(want, sizeof want, "%s: not a JSON object", path);
    refused(dir, ES_ERR_FORMAT, want);
    spit(path, text, len);
    edit(dir, "\"world_size\": 2", "\"world_size\": \"2\"");
    snprintf(want, sizeof want, "%s: parameters.world_size is not a whole number", path);
    refused(dir, ES_ERR_FORMAT, want);
    spit(path, text, len);
    edit(dir, "\"mode\": \"batch\"", "\"mode\": \"bunch\"");
    snprintf(want, sizeof want, "%s: parameters.mode is not shard, batch or reshard", path);
    refused(dir, ES_ERR_FORMAT, want);
    free(text);
    ck_assert_int_eq(unlink(path), 0);
    refused(dir, ES_ERR_IO, path);
}
END_TEST

START_TEST(missing_rank_file_refused)
{
    const char *names[] = {"s", "b"}, *files[] = {"rank-00001.worker-0.list",
                                                  "rank-00001.batches.jsonl"};
    const char *args[] = {"-k 2 shards/data.list", "--mode batch -k 2 shards/data.list"};
    for (size_t i = 0; i < 2; i++) {
        const char *dir = plan_cli(names[i], args[i]);
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        ck_assert_int_eq(unlink(path), 0);
        es_context *ctx = es_context_new();
        es_plan_dir *d = NULL;
        ck_assert_int_eq(es_plan_dir_open(ctx, dir, &d), ES_OK); /* plan.json is whole */
        ck_assert_int_eq(es_plan_dir_check_files(ctx, d), ES_ERR_FORMAT);
        char want[4500];
        snprintf(want, sizeof want, "%s: missing (%s/plan.json plans 2 rank(s) x 1 worker(s) of "
                 "%s mode; write the plan again)", path, dir, i ? "batch" : "shard");
        ck_assert_str_eq(es_errmsg(ctx), want);
        es_plan_dir_free(d);
        es_context_free(ctx);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan_dir");
    TCase *tc = tcase_create("plan_dir");
    tcase_set_timeout(tc, 120);
    tcase_add_temp_dir(tc);
    tcase_add_test(tc, shard_mode);
    tcase_add_test(tc, batch_mode);
    tcase_add_test(tc, reshard_mode);
    tcase_add_test(tc, newer_schema_refused);
    tcase_add_test(tc, broken_plan_json_refused);
    tcase_add_test(tc, missing_rank_file_refused);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
