/* Calibration (docs/COST_MODEL.md): NNLS against hand-solved systems, a batch's padded
 * terms against the loader's padding by hand, es_calibrate recovering known
 * weights from exact synthetic step times, its refusals (one line naming file
 * and line), model.json's round trip, and the plan charging the padded terms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check_helpers.h"
#include "costs/cost_table.h"
#include "equishard/equishard_experimental.h"

/* ---- NNLS ---------------------------------------------------------------- */

START_TEST(nnls_exact)
{
    /* b = A (2, 3): both positive, the unconstrained answer */
    const double a[] = {1, 0, 0, 1, 1, 1, 2, 1};
    double b[4], x[2];
    for (int i = 0; i < 4; i++)
        b[i] = 2 * a[2 * i] + 3 * a[2 * i + 1];
    ck_assert_int_eq(es_nnls(NULL, a, 4, 2, b, x), ES_OK);
    ck_assert_double_eq_tol(x[0], 2, 1e-12);
    ck_assert_double_eq_tol(x[1], 3, 1e-12);
}
END_TEST

START_TEST(nnls_bound)
{
    /* intercept + slope over b = 3, 2, 1: least squares says slope -1; the
     * non-negative answer is slope 0 and the mean, 2 */
    const double a[] = {1, 1, 1, 2, 1, 3}, b[] = {3, 2, 1};
    double x[2];
    ck_assert_int_eq(es_nnls(NULL, a, 3, 2, b, x), ES_OK);
    ck_assert_double_eq_tol(x[0], 2, 1e-12);
    ck_assert_double_eq(x[1], 0);
    /* b = (1, -1) on the identity: (1, 0) */
    const double id[] = {1, 0, 0, 1}, b2[] = {1, -1};
    ck_assert_int_eq(es_nnls(NULL, id, 2, 2, b2, x), ES_OK);
    ck_assert_double_eq_tol(x[0], 1, 1e-12);
    ck_assert_double_eq(x[1], 0);
}
END_TEST

START_TEST(nnls_zero_column_and_usage)
{
    const double a[] = {1, 0, 2, 0, 3, 0}, b[] = {2, 4, 6};
    double x[2];
    ck_assert_int_eq(es_nnls(NULL, a, 3, 2, b, x), ES_OK);
    ck_assert_double_eq_tol(x[0], 2, 1e-12);
    ck_assert_double_eq(x[1], 0);
    es_context *ctx = es_context_new();
    ck_assert_int_eq(es_nnls(ctx, a, 3, 0, b, x), ES_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "nnls"));
    es_context_free(ctx);
}
END_TEST

/* ---- a batch's padded terms -------------------------------------------------- */

/* rows: 16 kHz, frames = seconds × 50 at the default frame rate */
static es_cost_table *table_of(const double *seconds, const uint32_t *text, const uint32_t *speech,
                               const uint32_t *flags, size_t n)
{
    es_cost_table *t = es_cost_table_new();
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "u%03zu", i);
        es_cost_row r = {key, "s.tar", i, 16000, 1, (uint64_t)(seconds[i] * 16000), 100,
                         text[i], speech[i], "spk", ES_FLAG_AUDIO | ES_FLAG_TEXT | flags[i], 0, 0};
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    return t;
}

START_TEST(batch_terms_pad_to_longest)
{
    const double secs[] = {2, 4, 3};          /* 100, 200, 150 frames */
    const uint32_t text[] = {10, 7, 30}, speech[] = {50, 100, 0};
    const uint32_t both = ES_FLAG_UTT_EMB | ES_FLAG_SPK_EMB;
    const uint32_t flags[] = {both, ES_FLAG_UTT_EMB, 0};  /* rows 1 and 2 lack one */
    es_cost_table *t = table_of(secs, text, speech, flags, 3);
    es_cost_model m;
    es_cost_model_defaults(&m);
    const size_t rows[] = {0, 1, 2};
    double x[ES_TERM_COUNT];
    ck_assert_int_eq(es_cost_batch_terms(&m, t, rows, 3, x), ES_OK);
    ck_assert_double_eq(x[ES_TERM_FRAMES], 3 * 200);
    ck_assert_double_eq(x[ES_TERM_FRAMES_SQ], 3 * 200.0 * 200);
    ck_assert_double_eq(x[ES_TERM_TEXT], 3 * 30);
    ck_assert_double_eq(x[ES_TERM_SPEECH_TOKENS], 3 * 100);
    ck_assert_double_eq(x[ES_TERM_MISSING_EMB], 200 + 150);
    ck_assert_double_eq(x[ES_TERM_OVERHEAD], 3);
    ck_assert_double_eq(x[ES_TERM_BATCH], 1);
    m.w_frames = 0.5, m.w_frames_sq = 1e-3, m.w_batch = 7;
    ck_assert_double_eq_tol(es_cost_batch(&m, x), 300 + 120 + 7, 1e-9);
    const size_t bad[] = {3};
    ck_assert_int_eq(es_cost_batch_terms(&m, t, bad, 1, x), ES_ERR_USAGE);
    ck_assert_str_eq(es_enum_name(ES_ENUM_COST_TERM, ES_TERM_BATCH), "w_batch");
    ck_assert_ptr_null(es_enum_name(ES_ENUM_COST_TERM, ES_TERM_COUNT));
    es_cost_table_free(t);
}
END_TEST

/* ---- es_calibrate ----------------------------------------------------------- */

#define N_UTTS 40

static es_cost_table *utterances(void)
{
    double secs[N_UTTS];
    uint32_t text[N_UTTS], speech[N_UTTS], flags[N_UTTS];
    for (int i = 0; i < N_UTTS; i++) {
        secs[i] = 1 + (i * 37 % 41) * 0.2; /* 1 .. 9 s, scattered */
        text[i] = (uint32_t)(5 + i * 13 % 29);
        speech[i] = 0, flags[i] = 0;
    }
    return table_of(secs, text, speech, flags, N_UTTS);
}

/* The time of a batch by hand: a·n·L + b·n·L² + c, L the longest in frames. */
static double true_time(int first, int n)
{
    double longest = 0;
    for (int k = 0; k < n; k++) {
        int i = (first + k * 7) % N_UTTS;
        double f = floor((1 + (i * 37 % 41) * 0.2) * 16000 * 50 / 16000);
        longest = f > longest ? f : longest;
    }
    return 2e-4 * n * longest + 3e-7 * n * longest * longest + 0.05;
}

/* steps per rank of exact times, over 2 ranks */
static void write_log(const char *path, int steps)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int r = 0; r < 2; r++)
        for (int s = 0; s < steps; s++) {
            int first = (s * 11 + r * 5) % N_UTTS, n = 1 + (s * 3 + r) % 8;
            fprintf(f, "{\"rank\": %d, \"step\": %d, \"extra\": [1, 2], \"keys\": [", r, s);
            for (int k = 0; k < n; k++)
                fprintf(f, "%s\"u%03d\"", k ? ", " : "", (first + k * 7) % N_UTTS);
            fprintf(f, "], \"seconds\": %.17g}\n", true_time(first, n));
        }
    fclose(f);
}

START_TEST(calibrate_recovers_exact_weights)
{
    es_cost_table *t = utterances();
    char *log = strdup(test_path("steps.jsonl"));
    write_log(log, 60);
    es_calibrate_settings s;
    es_calibrate_defaults(&s);
    es_context *ctx = es_context_new();
    es_calibration *c = NULL;
    const char *logs[] = {log};
    ck_assert_msg(es_calibrate(ctx, &s, t, logs, 1, &c) == ES_OK, "%s", es_errmsg(ctx));
    es_calibration_info in;
    ck_assert_int_eq(es_calibration_get_info(c, &in), ES_OK);
    ck_assert_double_eq_tol(in.model.w_frames / 2e-4, 1, 1e-6);
    ck_assert_double_eq_tol(in.model.w_frames_sq / 3e-7, 1, 1e-6);
    ck_assert_double_eq_tol(in.model.w_batch / 0.05, 1, 1e-6);
    ck_assert_double_eq_tol(in.model.w_text, 0, 1e-9);
    ck_assert_uint_eq(in.steps_read, 120);
    ck_assert_uint_eq(in.warmup_dropped, 6);
    /* 114 usable: every 5th held out */
    ck_assert_uint_eq(in.held_out_steps, 22);
    ck_assert_uint_eq(in.fit_steps + in.outliers_dropped, 92);
    ck_assert(in.median_error < 1e-6 && in.p95_error < 1e-6 && in.r2_held_out > 0.999999);
    /* no speech tokens, no embeddings known: those terms are left out */
    ck_assert(!(in.terms_fitted >> ES_TERM_SPEECH_TOKENS & 1));
    ck_assert(!(in.terms_fitted >> ES_TERM_MISSING_EMB & 1));
    es_calibration_term term;
    ck_assert_int_eq(es_calibration_term_info(c, ES_TERM_FRAMES_SQ, &term), ES_OK);
    ck_assert(term.fitted && term.share > 0.05 && term.median_error_without > 0.01);
    ck_assert_int_eq(es_calibration_term_info(c, ES_TERM_COUNT, &term), ES_ERR_USAGE);

    /* model.json: the weights come back exactly, with path and digest */
    char *json = strdup(test_path("model.json"));
    ck_assert_int_eq(es_calibration_write_json(ctx, c, json, NULL, 0), ES_OK);
    es_cost_model m;
    es_cost_model_defaults(&m);
    m.min_length = 7; /* filter fields are left alone */
    ck_assert_msg(es_cost_model_read(ctx, json, &m) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert(m.w_frames == in.model.w_frames && m.w_frames_sq == in.model.w_frames_sq &&
              m.w_batch == in.model.w_batch && m.w_text == in.model.w_text);
    ck_assert_double_eq(m.min_length, 7);
    ck_assert_str_eq(m.source, json);
    ck_assert(m.source_digest != 0);
    es_calibration_free(c);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(log), free(json);
}
END_TEST

/* es_calibrate_settings.progress: bytes of the step logs (their sizes from
 * stat), rising, reported inside the log past 4 MiB, ending at the total. */
START_TEST(calibrate_progress_in_bytes)
{
    es_cost_table *t = utterances();
    char *big = strdup(test_path("big.jsonl")), *small = strdup(test_path("small.jsonl"));
    write_log(big, 30000);
    write_log(small, 60);
    struct stat a, b;
    ck_assert_int_eq(stat(big, &a), 0);
    ck_assert_int_eq(stat(small, &b), 0);
    ck_assert_int_gt(a.st_size, 4 << 20);
    es_calibrate_settings s;
    es_calibrate_defaults(&s);
    progress_seen seen = {0};
    s.progress = progress_record;
    s.progress_user = &seen;
    es_context *ctx = es_context_new();
    es_calibration *c = NULL;
    const char *logs[] = {big, small};
    ck_assert_msg(es_calibrate(ctx, &s, t, logs, 2, &c) == ES_OK, "%s", es_errmsg(ctx));
    size_t total = (size_t)(a.st_size + b.st_size);
    ck_assert_uint_eq(seen.last_total, total);
    ck_assert_uint_eq(seen.last_done, total);
    ck_assert_uint_eq(seen.backwards, 0);
    ck_assert_uint_eq(seen.total_changed, 0);
    ck_assert_uint_ge(seen.before_end, 2); /* inside the big log, and after it */
    es_calibration_free(c);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(big), free(small);
}
END_TEST

/* es_calibrate on one log of `text`; the status and message */
static int calibrate_text(const char *text, const char *want)
{
    es_cost_table *t = utterances();
    char *log = strdup(test_path("bad.jsonl"));
    FILE *f = fopen(log, "w");
    fputs(text, f);
    fclose(f);
    es_calibrate_settings s;
    es_calibrate_defaults(&s);
    es_context *ctx = es_context_new();
    es_calibration *c = (es_calibration *)1;
    const char *logs[] = {log};
    int rc = es_calibrate(ctx, &s, t, logs, 1, &c);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(es_errmsg(ctx), want), "'%s' lacks '%s'", es_errmsg(ctx), want);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(log);
    return rc;
}

START_TEST(calibrate_refuses)
{
    ck_assert_int_eq(calibrate_text("{\"rank\": 0, \"step\": 0, \"keys\": [\"u001\"], \"seconds\": 1}\n"
                                    "{\"rank\": 0, \"step\": 1, \"seconds\": 1}\n",
                                    "bad.jsonl:2: missing \"keys\""), ES_ERR_FORMAT);
    ck_assert_int_eq(calibrate_text("\n{\"rank\": 0, \"step\": 0, \"keys\": [\"nope\"], \"seconds\": 1}\n",
                                    "bad.jsonl:2: key 'nope' is not in the cost table"), ES_ERR_FORMAT);
    ck_assert_int_eq(calibrate_text("{\"rank\": 0, \"step\": 0, \"keys\": [\"u001\"], \"seconds\": 0}\n",
                                    "bad.jsonl:1: \"seconds\" is 0"), ES_ERR_FORMAT);
    ck_assert_int_eq(calibrate_text("{\"rank\": 0, \"keys\": [\"u001\"], \"seconds\": 1}\n",
                                    "bad.jsonl:1: missing \"step\""), ES_ERR_FORMAT);
    ck_assert_int_eq(calibrate_text("[1, 2]\n", "bad.jsonl:1: not a JSON object"), ES_ERR_FORMAT);
    /* \udcXX stands for a byte only as an escape: an escaped backslash before
     * "udce9" is the six characters; a \u0000 in a key is no table key's end;
     * a lone surrogate below \udc80 is no surrogateescape byte */
    ck_assert_int_eq(calibrate_text("{\"rank\": 0, \"step\": 0, \"keys\": [\"a\\\\udce9\"], "
                                    "\"seconds\": 1}\n", "bad.jsonl:1: key 'a\\udce9' is not in"),
                     ES_ERR_FORMAT);
    ck_assert_int_eq(calibrate_text("{\"rank\": 0, \"step\": 0, \"keys\": [\"u001\\u0000\"], "
                                    "\"seconds\": 1}\n", "bad.jsonl:1: key 'u001' is not in"),
                     ES_ERR_FORMAT);
    ck_assert_int_eq(calibrate_text("{\"rank\": 0, \"step\": 0, \"keys\": [\"u\\udc30\"], "
                                    "\"seconds\": 1}\n", "bad.jsonl:1: not a JSON object: invalid "
                                    "Unicode"), ES_ERR_FORMAT);
    ck_assert_int_eq(calibrate_text("{\"rank\": 0, \"step\": 0, \"keys\": [\"u001\"], \"seconds\": 1}\n",
                                    "too few steps"), ES_ERR_FORMAT);
    /* enough steps, every one 1 s */
    char *text = malloc(64 * 100);
    size_t at = 0;
    for (int s = 0; s < 64; s++)
        at += (size_t)sprintf(text + at, "{\"rank\": 0, \"step\": %d, \"keys\": [\"u%03d\"], "
                              "\"seconds\": 1}\n", s, s % N_UTTS);
    ck_assert_int_eq(calibrate_text(text, "every step took 1 s"), ES_ERR_FORMAT);
    free(text);
}
END_TEST

START_TEST(model_read_refuses)
{
    es_context *ctx = es_context_new();
    es_cost_model m;
    es_cost_model_defaults(&m);
    const char *p = test_path("m.json");
    FILE *f = fopen(p, "w");
    fputs("{\"format\": \"equishard-cost-model v1\", \"frame_rate\": 50, \"weights\": "
          "{\"w_frames\": 1}}\n", f);
    fclose(f);
    ck_assert_int_eq(es_cost_model_read(ctx, p, &m), ES_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "weights.w_frames_sq is missing"));
    ck_assert_double_eq(m.w_frames, 1); /* unchanged */
    ck_assert_ptr_null(m.source);
    ck_assert_int_eq(es_cost_model_read(ctx, test_path("absent.json"), &m), ES_ERR_IO);
    /* a model that is none: every weight 0; a weight whose costs overflow */
    static const char *const bad[][2] = {
        {"0, \"w_frames_sq\": 0", "every weight is 0"},
        {"1e308, \"w_frames_sq\": 0", "weights.w_frames is 1e+308, above 1e+30"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fopen(p, "w");
        fprintf(f, "{\"format\": \"equishard-cost-model v1\", \"frame_rate\": 50, \"weights\": "
                   "{\"w_frames\": %s, \"w_text\": 0, \"w_speech_tokens\": 0, \"w_missing_emb\": "
                   "0, \"w_overhead\": 0, \"w_batch\": 0}}\n", bad[i][0]);
        fclose(f);
        ck_assert_int_eq(es_cost_model_read(ctx, p, &m), ES_ERR_FORMAT);
        ck_assert_msg(strstr(es_errmsg(ctx), bad[i][1]), "%s", es_errmsg(ctx));
        ck_assert_double_eq(m.w_frames, 1); /* unchanged */
    }
    es_context_free(ctx);
}
END_TEST

/* ---- the plan charges the padded terms -------------------------------------- */

START_TEST(plan_batches_cost_padded_terms)
{
    es_cost_table *t = utterances();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2, s.mode = ES_PLAN_BATCH, s.max_frames_in_batch = 1200;
    s.model.w_frames = 2e-4, s.model.w_frames_sq = 3e-7, s.model.w_batch = 0.05;
    s.model.min_length = 0;
    es_context *ctx = es_context_new();
    es_plan *p = NULL;
    ck_assert_msg(es_plan_build(ctx, &s, t, &p) == ES_OK, "%s", es_errmsg(ctx));
    size_t checked = 0;
    for (uint32_t r = 0; r < 2; r++)
        for (size_t i = 0; i < es_plan_batch_count(p, r); i++) {
            es_plan_batch b;
            ck_assert_int_eq(es_plan_batch_info(p, r, i, &b), ES_OK);
            double n = (double)b.n_rows, L = b.longest;
            ck_assert_double_eq_tol(b.cost, 2e-4 * n * L + 3e-7 * n * L * L + 0.05, 1e-12);
            checked++;
        }
    ck_assert_uint_gt(checked, 4);
    es_plan_free(p);
    es_context_free(ctx);
    es_cost_table_free(t);
}
END_TEST

static Suite *calibrate_suite(void)
{
    Suite *s = suite_create("calibrate");
    TCase *nnls = tcase_create("nnls");
    tcase_add_test(nnls, nnls_exact);
    tcase_add_test(nnls, nnls_bound);
    tcase_add_test(nnls, nnls_zero_column_and_usage);
    suite_add_tcase(s, nnls);
    TCase *fit = tcase_create("fit");
    tcase_add_temp_dir(fit);
    tcase_add_test(fit, batch_terms_pad_to_longest);
    tcase_add_test(fit, calibrate_recovers_exact_weights);
    tcase_add_test(fit, calibrate_progress_in_bytes);
    tcase_add_test(fit, calibrate_refuses);
    tcase_add_test(fit, model_read_refuses);
    tcase_add_test(fit, plan_batches_cost_padded_terms);
    suite_add_tcase(s, fit);
    return s;
}

int main(void) { return run_suite(calibrate_suite()); }
