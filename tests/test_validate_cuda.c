/* The CUDA path against the CPU path on the same inputs: per-row results
 * (NaN/Inf counts and checksums bit for bit, sums of squares and cosines to
 * float precision), speaker means bit for bit, and the same findings, for
 * float32/float16/bfloat16, odd dimensions, host and device pointers.
 *
 * Without a CUDA device (or a build without CUDA) the suite skips: exit 77. It
 * runs without fork, since a CUDA context does not survive fork(). */
#include "check_helpers.h"
#include "validate/validate_findings.h"
#include "validate_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct grouped {
    uint32_t *order;
    size_t *seg;
} grouped;

static grouped group(const vgen *g)
{
    grouped gr;
    gr.order = malloc(g->n * sizeof *gr.order);
    gr.seg = calloc(g->n_spk + 2, sizeof *gr.seg);
    for (size_t i = 0; i < g->n; i++)
        gr.seg[(g->speaker[i] < 0 ? g->n_spk : (size_t)g->speaker[i]) + 1]++;
    for (size_t s = 0; s <= g->n_spk; s++)
        gr.seg[s + 1] += gr.seg[s];
    size_t *fill = malloc((g->n_spk + 1) * sizeof *fill);
    memcpy(fill, gr.seg, (g->n_spk + 1) * sizeof *fill);
    for (size_t i = 0; i < g->n; i++)
        gr.order[fill[g->speaker[i] < 0 ? g->n_spk : (size_t)g->speaker[i]]++] = (uint32_t)i;
    free(fill);
    return gr;
}

/* Runs both backends on one job and compares everything they report. */
static void compare_backends(const vgen *g, const void *rows, es_dtype dtype)
{
    grouped gr = group(g);
    size_t n = g->n, d = g->d, S = g->n_spk;
    es_row_result *rc = malloc(n * sizeof *rc), *rg = malloc(n * sizeof *rg);
    double *mc = malloc(S * d * sizeof *mc), *mg = malloc(S * d * sizeof *mg);
    uint32_t *fc = malloc(S * sizeof *fc), *fg = malloc(S * sizeof *fg);
    es_vjob cpu = {rows, dtype, n, d, gr.order, gr.seg, NULL, S, 0, rc, mc, fc, NULL};
    es_vjob gpu = cpu;
    gpu.res = rg, gpu.mean = mg, gpu.n_finite = fg;
    es_context *ctx = es_context_new();
    ck_assert_msg(es_vjob_run_cpu(ctx, &cpu) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert_msg(es_vjob_run_cuda(ctx, &gpu, 0) == ES_OK, "%s", es_errmsg(ctx));
    size_t cosines = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(rc[i].nan == rg[i].nan && rc[i].inf == rg[i].inf, "row %zu counts", i);
        ck_assert_msg(rc[i].hash == rg[i].hash, "row %zu checksum", i);
        if (rc[i].nan || rc[i].inf)
            continue;
        ck_assert_msg(fabs(rc[i].sumsq - rg[i].sumsq) <= 1e-5 * rc[i].sumsq, "row %zu: sumsq %.9g vs %.9g",
                      i, rc[i].sumsq, rg[i].sumsq);
        ck_assert_msg((rc[i].cosine == ES_K_NO_COSINE) == (rg[i].cosine == ES_K_NO_COSINE), "row %zu", i);
        ck_assert_msg(fabs(rc[i].cosine - rg[i].cosine) <= 1e-5, "row %zu: cosine %.9g vs %.9g", i,
                      rc[i].cosine, rg[i].cosine);
        cosines += rc[i].cosine != ES_K_NO_COSINE;
    }
    ck_assert_uint_gt(cosines, n / 2);
    ck_assert(memcmp(mc, mg, S * d * sizeof *mc) == 0);
    ck_assert(memcmp(fc, fg, S * sizeof *fc) == 0);
    es_context_free(ctx);
    free(rc), free(rg), free(mc), free(mg), free(fc), free(fg);
    free(gr.order), free(gr.seg);
}

START_TEST(test_backends_f32)
{
    size_t dims[] = {192, 100, 513, 7};
    vgen g;
    vg_make(&g, 5000, dims[_i], 40, 77 + (uint64_t)_i);
    compare_backends(&g, g.rows, ES_DTYPE_F32);
    vg_free(&g);
}
END_TEST

START_TEST(test_backends_half)
{
    vgen g;
    vg_make(&g, 3000, 192, 20, 5);
    size_t n = g.n * g.d;
    uint16_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) { /* bfloat16 by truncation; as float16 bits it is just data */
        uint32_t u;
        memcpy(&u, &g.rows[i], 4);
        h[i] = (uint16_t)(u >> 16);
    }
    compare_backends(&g, h, ES_DTYPE_BF16);
    for (size_t i = 0; i < n; i++) /* float16 in [1, 2); the planted NaN/Inf stay */
        h[i] = isnan(g.rows[i]) ? 0x7e00 : isinf(g.rows[i]) ? 0x7c00
             : (uint16_t)(0x3c00 + ((int)(g.rows[i] * 64) & 0x3ff));
    compare_backends(&g, h, ES_DTYPE_F16);
    free(h);
    vg_free(&g);
}
END_TEST

static es_validate_result *validate(const vgen *g, es_device dev, int on_device)
{
    es_validate_settings s;
    es_validate_defaults(&s);
    s.device = dev;
    s.dim = g->d;
    size_t ub = g->n * g->d * sizeof(float), sb = g->n_spk * g->d * sizeof(float);
    void *du = NULL, *ds = NULL;
    es_context *ctx = es_context_new();
    if (on_device) {
        ck_assert_int_eq(es_cuda_alloc(ctx, &du, g->rows, ub), ES_OK);
        ck_assert_int_eq(es_cuda_alloc(ctx, &ds, g->spk_rows, sb), ES_OK);
    }
    es_emb_matrix utt = {on_device ? du : g->rows, ES_DTYPE_F32, g->n, g->d, (const char *const *)g->keys};
    es_emb_matrix spk = {on_device ? ds : g->spk_rows, ES_DTYPE_F32, g->n_spk, g->d,
                         (const char *const *)g->spk_keys};
    es_emb_speakers sp = {g->speaker, g->n_spk};
    es_validate_result *r = NULL;
    int rc = es_validate_matrices(ctx, &s, &utt, &spk, &sp, on_device, &r);
    ck_assert_msg(rc == ES_OK, "%s", es_errmsg(ctx));
    es_validate_info info;
    es_validate_result_info(r, &info);
    ck_assert_int_eq(info.device, dev == ES_DEVICE_CPU ? ES_DEVICE_CPU : ES_DEVICE_CUDA);
    es_cuda_free(du);
    es_cuda_free(ds);
    es_context_free(ctx);
    return r;
}

START_TEST(test_findings_equal)
{
    vgen g;
    vg_make(&g, 4000, 192, 30, 2024);
    es_validate_result *want = validate(&g, ES_DEVICE_CPU, 0);
    ck_assert_uint_eq(es_validate_count(want, -1), g.n_planted);
    for (int on_device = 0; on_device <= 1; on_device++) {
        es_validate_result *r = validate(&g, ES_DEVICE_CUDA, on_device);
        ck_assert_uint_eq(es_validate_count(r, -1), es_validate_count(want, -1));
        for (size_t i = 0; i < es_validate_count(r, -1); i++) {
            es_finding a, b;
            es_validate_finding(want, i, &a);
            es_validate_finding(r, i, &b);
            ck_assert(a.check == b.check && a.row == b.row && a.kind == b.kind);
            ck_assert(a.other_row == b.other_row);
            ck_assert_msg(fabs(a.value - b.value) <= 1e-5 * fabs(a.value) + 1e-6, "%s row %zu: %g vs %g",
                          es_enum_name(ES_ENUM_CHECK, a.check), a.row, a.value, b.value);
        }
        es_validate_result_free(r);
    }
    es_validate_result_free(want);
    vg_free(&g);
}
END_TEST

START_TEST(test_device_pointer_checked)
{
    float rows[192] = {1};
    es_emb_matrix utt = {rows, ES_DTYPE_F32, 1, 192, NULL};
    es_context *ctx = es_context_new();
    es_validate_result *r = NULL;
    ck_assert_int_eq(es_validate_matrices(ctx, NULL, &utt, NULL, NULL, 1, &r), ES_ERR_USAGE);
    ck_assert_msg(strstr(es_errmsg(ctx), "not in CUDA device memory"), "%s", es_errmsg(ctx));
    es_context_free(ctx);
}
END_TEST

int main(void)
{
    es_context *ctx = es_context_new();
    if (es_cuda_probe(ctx) != ES_OK) {
        printf("SKIP: %s\n", es_errmsg(ctx));
        es_context_free(ctx);
        return 77;
    }
    es_context_free(ctx);
    Suite *s = suite_create("validate_cuda");
    TCase *c = tcase_create("cuda");
    tcase_set_timeout(c, 300);
    tcase_add_loop_test(c, test_backends_f32, 0, 4);
    tcase_add_test(c, test_backends_half);
    tcase_add_test(c, test_findings_equal);
    tcase_add_test(c, test_device_pointer_checked);
    suite_add_tcase(s, c);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
