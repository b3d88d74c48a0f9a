/* The validator's kernel and CPU path: the per-row functions (conversions,
 * SIMD schedules equal to the scalar reference bit for bit), the median, and
 * the CPU path against a plain double-precision reference on random data with
 * planted defects: every defect found by key and nothing else, and identical
 * results for 1, 2 and 4 threads, both row orders and every compilation of the
 * CPU backend (cpu_isa.h) the machine runs. */
#include "check_helpers.h"
#include "validate/emb_kernel.h"
#include "validate/validate_findings.h"
#include "validate_gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- element conversions (values from the IEEE 754 / bfloat16 definitions) --------- */

START_TEST(test_f16_conversion)
{
    static const struct { uint16_t h; float f; } cases[] = {
        {0x3c00, 1.0f}, {0xbc00, -1.0f}, {0x4000, 2.0f}, {0x3555, 0.333251953125f},
        {0x7bff, 65504.0f}, {0x0400, 6.103515625e-05f}, {0x0001, 5.960464477539063e-08f},
        {0x03ff, 6.097555160522461e-05f}, {0x0000, 0.0f}, {0x7c00, INFINITY}, {0xfc00, -INFINITY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(es_k_f16_to_f32(cases[i].h) == cases[i].f, "f16 %04x", cases[i].h);
    ck_assert(signbit(es_k_f16_to_f32(0x8000)) && es_k_f16_to_f32(0x8000) == 0.0f);
    ck_assert(isnan(es_k_f16_to_f32(0x7e00)) && isnan(es_k_f16_to_f32(0xfc01)));
    /* conversion is monotonic over the positive halves and exact (2^-24 steps) */
    for (uint32_t h = 1; h < 0x7c00; h++)
        ck_assert_msg(es_k_f16_to_f32((uint16_t)h) > es_k_f16_to_f32((uint16_t)(h - 1)), "half %04x", h);
    for (uint32_t h = 0; h < 0x0400; h++)
        ck_assert(es_k_f16_to_f32((uint16_t)h) == (float)h / 16777216.0f);
    ck_assert(es_k_bf16_to_f32(0x3f80) == 1.0f);
    ck_assert(es_k_bf16_to_f32(0xc040) == -3.0f);
    ck_assert(es_k_bf16_to_f32(0x7f80) == INFINITY);
    ck_assert(isnan(es_k_bf16_to_f32(0x7fc0)));
}
END_TEST

START_TEST(test_classification)
{
    ck_assert(es_k_is_nan(es_k_f32_bits(NAN)) && !es_k_is_inf(es_k_f32_bits(NAN)));
    ck_assert(es_k_is_inf(es_k_f32_bits(-INFINITY)) && !es_k_is_nan(es_k_f32_bits(INFINITY)));
    ck_assert(!es_k_is_nan(es_k_f32_bits(3.4e38f)) && !es_k_is_inf(es_k_f32_bits(3.4e38f)));
    ck_assert(!es_k_is_nan(es_k_f32_bits(-0.0f)));
}
END_TEST

/* ---- SIMD schedules = scalar reference, bit for bit ----------------------------------- */

static void random_row(float *x, size_t d, int specials)
{
    for (size_t j = 0; j < d; j++) {
        uint64_t r = vg_next();
        x[j] = (float)vg_gauss();
        if (specials && r % 23 == 0)
            x[j] = r % 2 ? NAN : -INFINITY;
        if (specials && r % 29 == 0)
            x[j] = 0.0f;
        if (specials && r % 31 == 0) /* finite, but its square overflows: Σ x² = Inf, no NaN/Inf */
            x[j] = 3e30f;
    }
}

START_TEST(test_simd_equals_reference)
{
    vg_state = 42;
    float x[300], c[300];
    for (uint32_t d = 1; d <= 300; d += (d < 40 ? 1 : 17)) {
        for (int specials = 0; specials <= 1; specials++) {
            random_row(x, d, specials);
            random_row(c, d, 0);
            es_row_result a, b;
            es_k_row_stats(x, d, &a);
            es_k_row_stats_simd(x, d, &b);
            ck_assert_msg(a.nan == b.nan && a.inf == b.inf && a.hash == b.hash, "d=%u", d);
            ck_assert_msg(memcmp(&a.sumsq, &b.sumsq, sizeof a.sumsq) == 0 || (isnan(a.sumsq) && isnan(b.sumsq)),
                          "sumsq d=%u: %.17g vs %.17g", d, a.sumsq, b.sumsq);
            double p = es_k_dot(x, c, d), q = es_k_dot_simd(x, c, d);
            ck_assert_msg(memcmp(&p, &q, sizeof p) == 0 || (isnan(p) && isnan(q)), "dot d=%u", d);
        }
    }
}
END_TEST

START_TEST(test_chunk_sum_simd)
{
    vg_state = 7;
    for (uint32_t d = 1; d <= 200; d += 13) {
        float *m = malloc(80 * d * sizeof *m);
        double a[200] = {0}, b[200] = {0};
        uint32_t rows[64];
        for (size_t i = 0; i < 80 * d; i++)
            m[i] = (float)vg_gauss();
        for (uint32_t k = 0; k < 64; k++)
            rows[k] = (k * 37) % 80;
        es_k_chunk_sum(a, m, d, rows, 64, 0, d);
        es_k_chunk_sum_simd(b, m, d, rows, 64);
        ck_assert_msg(memcmp(a, b, d * sizeof *a) == 0, "d=%u", d);
        free(m);
    }
}
END_TEST

/* The checksum: identical rows agree, and moving or changing one element changes it. */
START_TEST(test_row_hash)
{
    vg_state = 3;
    float x[192], y[192];
    random_row(x, 192, 0);
    memcpy(y, x, sizeof x);
    es_row_result a, b;
    es_k_row_stats_simd(x, 192, &a);
    es_k_row_stats_simd(y, 192, &b);
    ck_assert(a.hash == b.hash);
    float t = y[3];
    y[3] = y[4];
    y[4] = t;
    es_k_row_stats_simd(y, 192, &b);
    ck_assert(a.hash != b.hash);
    memcpy(y, x, sizeof x);
    y[100] = nextafterf(y[100], 10.0f);
    es_k_row_stats_simd(y, 192, &b);
    ck_assert(a.hash != b.hash);
    memcpy(y, x, sizeof x);
    y[0] = x[16], y[16] = x[0]; /* same lane, other positions */
    es_k_row_stats_simd(y, 192, &b);
    ck_assert(x[0] == x[16] || a.hash != b.hash);
}
END_TEST

START_TEST(test_median)
{
    vg_state = 11;
    for (size_t n = 1; n < 200; n += 7) {
        double *v = malloc(n * sizeof *v), *s = malloc(n * sizeof *s);
        for (size_t i = 0; i < n; i++)
            v[i] = s[i] = (double)(vg_next() % 50); /* many ties */
        qsort(s, n, sizeof *s, vg_dcmp);
        double want = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        ck_assert_msg(es_vmedian(v, n) == want, "n=%zu", n);
        free(v);
        free(s);
    }
    ck_assert(es_vmedian(NULL, 0) == 0);
}
END_TEST

/* ---- the CPU path against the reference --------------------------------------------- */

static es_validate_result *validate(const vgen *g, int threads)
{
    es_validate_settings s;
    es_validate_defaults(&s);
    s.device = ES_DEVICE_CPU;
    s.threads = threads;
    s.dim = g->d;
    es_emb_matrix utt = {g->rows, ES_DTYPE_F32, g->n, g->d, (const char *const *)g->keys};
    es_emb_matrix spk = {g->spk_rows, ES_DTYPE_F32, g->n_spk, g->d, (const char *const *)g->spk_keys};
    es_emb_speakers sp = {g->speaker, g->n_spk};
    es_context *ctx = es_context_new();
    es_validate_result *r = NULL;
    int rc = es_validate_matrices(ctx, &s, &utt, &spk, &sp, 0, &r);
    ck_assert_msg(rc == ES_OK, "validate: %s", es_errmsg(ctx));
    es_context_free(ctx);
    return r;
}

static const char *name_of(int check) { return es_enum_name(ES_ENUM_CHECK, check); }

/* The same findings (check, kind, row, other row) in the same order, values close. */
static void assert_matches(const es_validate_result *r, const vg_finding *want, size_t n, const vgen *g,
                           const char *what)
{
    size_t got = es_validate_count(r, -1);
    for (size_t i = 0; i < got && i < n; i++) {
        es_finding f;
        ck_assert_int_eq(es_validate_finding(r, i, &f), ES_OK);
        ck_assert_msg((int)f.check == want[i].check && (int)f.kind == want[i].is_speaker &&
                      f.row == want[i].row, "%s: finding %zu is %s %s row %zu, expected %s %s row %zu",
                      what, i, name_of(f.check), f.kind == ES_KIND_SPK ? "spk" : "utt", f.row,
                      name_of(want[i].check), want[i].is_speaker ? "spk" : "utt", want[i].row);
        const char *key = f.kind == ES_KIND_SPK ? g->spk_keys[f.row] : g->keys[f.row];
        ck_assert_str_eq(f.key, key);
        if (f.check == ES_CHECK_DUPLICATE_VECTOR) {
            ck_assert_uint_eq(f.other_row, want[i].other);
            ck_assert_str_eq(f.other, g->keys[want[i].other]);
        }
    }
    ck_assert_msg(got == n, "%s: %zu findings, expected %zu", what, got, n);
}

START_TEST(test_cpu_finds_planted_defects)
{
    vgen g;
    vg_make(&g, 3000, (size_t)_i == 0 ? 192 : 100, 30, 1234 + (uint64_t)_i);
    /* the reference finds exactly what was planted … */
    vg_ref ref = vg_reference(&g);
    qsort(g.planted, g.n_planted, sizeof *g.planted, vg_cmp);
    ck_assert_uint_eq(g.n_planted, 21);
    ck_assert_uint_eq(ref.n, g.n_planted);
    for (size_t i = 0; i < ref.n; i++)
        ck_assert_msg(ref.f[i].check == g.planted[i].check && ref.f[i].row == g.planted[i].row &&
                      ref.f[i].is_speaker == g.planted[i].is_speaker,
                      "reference finding %zu: %s row %zu", i, name_of(ref.f[i].check), ref.f[i].row);
    /* … and so does the CPU path, with the reference's values */
    es_validate_result *r = validate(&g, 2);
    assert_matches(r, ref.f, ref.n, &g, "cpu vs reference");
    for (size_t i = 0; i < ref.n; i++) {
        es_finding f;
        es_validate_finding(r, i, &f);
        if (f.check == ES_CHECK_DUPLICATE_VECTOR || f.check == ES_CHECK_ZERO_NORM)
            continue;
        double tol = f.check == ES_CHECK_NAN || f.check == ES_CHECK_INF ? 0 : 1e-5 * fabs(ref.f[i].value) + 1e-6;
        ck_assert_msg(fabs(f.value - ref.f[i].value) <= tol, "%s row %zu: %.9g vs reference %.9g",
                      name_of(f.check), f.row, f.value, ref.f[i].value);
    }
    for (int c = 0; c < ES_CHECK_COUNT; c++) {
        size_t k = 0;
        for (size_t i = 0; i < ref.n; i++)
            k += ref.f[i].check == c;
        ck_assert_uint_eq(es_validate_count(r, c), k);
    }
    es_validate_result_free(r);
    free(ref.f);
    vg_free(&g);
}
END_TEST

/* Rows by speaker, stable, rows without a speaker last (vjob.h's order and
 * seg; seg has n_spk + 2 entries). */
static void group_rows(const int32_t *speaker, size_t n, size_t n_spk, uint32_t *order, size_t *seg)
{
    memset(seg, 0, (n_spk + 2) * sizeof *seg);
    for (size_t i = 0; i < n; i++)
        seg[(speaker[i] < 0 ? n_spk : (size_t)speaker[i]) + 1]++;
    for (size_t s = 0; s < n_spk; s++)
        seg[s + 1] += seg[s];
    size_t *fill = malloc((n_spk + 1) * sizeof *fill);
    memcpy(fill, seg, (n_spk + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        order[fill[speaker[i] < 0 ? n_spk : (size_t)speaker[i]]++] = (uint32_t)i;
    free(fill);
}

/* Findings, values included, and every per-row number are the same bits for
 * 1, 2 and 4 threads. */
START_TEST(test_cpu_thread_counts_identical)
{
    vgen g;
    vg_make(&g, 2000, 192, 17, 99);
    es_validate_result *base = validate(&g, 1);
    for (int t = 2; t <= 4; t += 2) {
        es_validate_result *r = validate(&g, t);
        ck_assert_uint_eq(es_validate_count(r, -1), es_validate_count(base, -1));
        for (size_t i = 0; i < es_validate_count(r, -1); i++) {
            es_finding a, b;
            es_validate_finding(base, i, &a);
            es_validate_finding(r, i, &b);
            ck_assert(a.check == b.check && a.row == b.row && a.kind == b.kind);
            ck_assert(memcmp(&a.value, &b.value, sizeof a.value) == 0);
        }
        es_validate_result_free(r);
    }
    es_validate_result_free(base);

    /* the backend itself: per-row results and means */
    size_t n = g.n, d = g.d;
    uint32_t *order = malloc(n * sizeof *order);
    size_t seg[19]; /* n_spk + 2 */
    group_rows(g.speaker, n, 17, order, seg);
    es_row_result *res[3];
    double *mean[3];
    uint32_t nf[3][17];
    es_context *ctx = es_context_new();
    for (int k = 0; k < 3; k++) {
        res[k] = malloc(n * sizeof *res[k]);
        mean[k] = malloc(17 * d * sizeof *mean[k]);
        es_vjob job = {g.rows, ES_DTYPE_F32, n, d, order, seg, k == 2 ? g.speaker : NULL, 17, k == 0 ? 1 : 2 * k,
                       res[k], mean[k], nf[k], NULL};
        ck_assert_int_eq(es_vjob_run_cpu(ctx, &job), ES_OK);
    }
    for (int k = 1; k < 3; k++) {
        ck_assert(memcmp(res[0], res[k], n * sizeof *res[0]) == 0);
        ck_assert(memcmp(mean[0], mean[k], 17 * d * sizeof *mean[0]) == 0);
        ck_assert(memcmp(nf[0], nf[k], sizeof nf[0]) == 0);
    }
    for (int k = 0; k < 3; k++) {
        free(res[k]);
        free(mean[k]);
    }
    es_context_free(ctx);
    free(order);
    vg_free(&g);
}
END_TEST

/* A finding by key, for comparing results over differently ordered rows. */
typedef struct keyed {
    int check, kind;
    const char *key, *other; /* duplicate_vector: the pair, key < other */
    double value;
} keyed;

static int keyed_cmp(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->check != b->check)
        return a->check - b->check;
    if (a->kind != b->kind)
        return a->kind - b->kind;
    int c = strcmp(a->key, b->key);
    return c ? c : strcmp(a->other, b->other);
}

static keyed *by_key(const es_validate_result *r, size_t *n)
{
    *n = es_validate_count(r, -1);
    keyed *k = calloc(*n + 1, sizeof *k);
    for (size_t i = 0; i < *n; i++) {
        es_finding f;
        es_validate_finding(r, i, &f);
        const char *other = f.check == ES_CHECK_DUPLICATE_VECTOR && f.other ? f.other : "";
        int swap = other[0] && strcmp(other, f.key) < 0; /* which is "earlier" depends on order */
        k[i] = (keyed){(int)f.check, (int)f.kind, swap ? other : f.key, swap ? f.key : other, f.value};
    }
    qsort(k, *n, sizeof *k, keyed_cmp);
    return k;
}

/* CosyVoice's utt2embedding.pt lists utterances in no speaker order (vg_make's
 * rows are speaker-shuffled too). The same rows grouped by speaker, each
 * speaker's rows kept in their order, give the same findings with values equal
 * to the bit, and the backend the same per-row results and means: a speaker's
 * rows are added in row order either way. */
START_TEST(test_cpu_row_order_identical)
{
    vgen g, h;
    vg_make(&g, 3000, 192, 30, 777);
    size_t n = g.n, d = g.d, S = g.n_spk, seg[32];
    uint32_t *perm = malloc(n * sizeof *perm); /* grouped row i = shuffled row perm[i] */
    es_row_result *first_res = malloc(n * sizeof *first_res);
    double *first_mean = malloc(S * d * sizeof *first_mean);
    group_rows(g.speaker, n, S, perm, seg);
    h = g;
    h.rows = malloc(n * d * sizeof *h.rows);
    h.speaker = malloc(n * sizeof *h.speaker);
    h.keys = malloc(n * sizeof *h.keys);
    for (size_t i = 0; i < n; i++) {
        memcpy(h.rows + i * d, g.rows + (size_t)perm[i] * d, d * sizeof *h.rows);
        h.speaker[i] = g.speaker[perm[i]];
        h.keys[i] = g.keys[perm[i]];
    }
    for (int threads = 1; threads <= 2; threads++) {
        es_validate_result *rg = validate(&g, threads), *rh = validate(&h, threads);
        size_t ng, nh;
        keyed *kg = by_key(rg, &ng), *kh = by_key(rh, &nh);
        ck_assert_uint_ge(ng, 21); /* the planted defects, at least */
        ck_assert_uint_eq(ng, nh);
        for (size_t i = 0; i < ng; i++) {
            ck_assert_msg(kg[i].check == kh[i].check && kg[i].kind == kh[i].kind &&
                          !strcmp(kg[i].key, kh[i].key) && !strcmp(kg[i].other, kh[i].other),
                          "finding %zu: %s %s vs %s %s", i, name_of(kg[i].check), kg[i].key,
                          name_of(kh[i].check), kh[i].key);
            ck_assert_msg(memcmp(&kg[i].value, &kh[i].value, sizeof kg[i].value) == 0,
                          "%s %s: %.17g vs %.17g", name_of(kg[i].check), kg[i].key, kg[i].value,
                          kh[i].value);
        }
        free(kg);
        free(kh);
        es_validate_result_free(rg);
        es_validate_result_free(rh);
    }
    /* the backend: per-row results follow their rows, means are the same bits,
     * in every compilation of it this machine runs (shuffled rows take the
     * streaming backend, grouped ones the speaker-by-speaker one) */
    es_context *ctx = es_context_new();
    uint32_t *order = malloc(n * sizeof *order);
    es_row_result *res[2];
    double *mean[2];
    uint32_t nf[2][30];
    for (int k = 0; k < 2; k++) {
        res[k] = malloc(n * sizeof *res[k]);
        mean[k] = malloc(S * d * sizeof *mean[k]);
    }
    for (es_cpu_isa isa = ES_CPU_GENERIC; isa < ES_CPU_ISA_COUNT; isa++) {
        if (!es_cpu_isa_usable(isa))
            continue;
        for (int k = 0; k < 2; k++) {
            const vgen *v = k ? &h : &g;
            group_rows(v->speaker, n, S, order, seg);
            es_vjob job = {v->rows, ES_DTYPE_F32, n, d, order, seg, v->speaker, S, 2, res[k], mean[k],
                           nf[k], NULL};
            ck_assert_int_eq(es_vjob_run_cpu_isa(ctx, &job, isa), ES_OK);
        }
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(memcmp(&res[1][i], &res[0][perm[i]], sizeof res[0][0]) == 0, "%s: row %zu",
                          es_cpu_isa_name(isa), i);
        ck_assert(memcmp(mean[0], mean[1], S * d * sizeof *mean[0]) == 0);
        ck_assert(memcmp(nf[0], nf[1], sizeof nf[0]) == 0);
        if (isa == ES_CPU_GENERIC) { /* the reference for the others */
            memcpy(first_res, res[0], n * sizeof *res[0]);
            memcpy(first_mean, mean[0], S * d * sizeof *mean[0]);
        }
        ck_assert_msg(memcmp(first_res, res[0], n * sizeof *res[0]) == 0, "%s vs generic",
                      es_cpu_isa_name(isa));
        ck_assert(memcmp(first_mean, mean[0], S * d * sizeof *mean[0]) == 0);
    }
    for (int k = 0; k < 2; k++) {
        free(res[k]);
        free(mean[k]);
    }
    free(first_res);
    free(first_mean);
    free(order);
    es_context_free(ctx);
    free(h.rows);
    free(h.speaker);
    free(h.keys);
    free(perm);
    vg_free(&g);
}
END_TEST

/* Half precision: the same data rounded to float16 / bfloat16 gives the same
 * findings as its float32 conversion. */
static uint16_t to_f16(float f)
{
    /* round-to-nearest-even through the bits (finite, in range; NaN/Inf kept) */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, man = u & 0x7fffff;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e), half = 1u << (shift - 1);
        uint32_t v = man >> shift, rest = man & ((1u << shift) - 1);
        if (rest > half || (rest == half && (v & 1)))
            v++;
        return (uint16_t)(sign | v);
    }
    uint32_t v = (uint32_t)e << 10 | man >> 13, rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (v & 1)))
        v++;
    return (uint16_t)(sign | v);
}

/* The CPU backend's cap is the context's setting (es_context_set's "cpu_isa"),
 * by the names es_cpu_isa_name gives; the library reads no EQUISHARD_CPU_ISA
 * itself (the CLI maps it). The best is the highest es_cpu_isa_usable. */
START_TEST(test_cpu_isa_cap_is_the_contexts)
{
    es_cpu_isa best = ES_CPU_GENERIC;
    for (es_cpu_isa isa = ES_CPU_GENERIC; isa < ES_CPU_ISA_COUNT; isa++)
        if (es_cpu_isa_usable(isa))
            best = isa;
    es_context *ctx = es_context_new();
    setenv("EQUISHARD_CPU_ISA", "generic", 1);
    ck_assert_int_eq(es_cpu_isa_default(ctx), best);
    ck_assert_int_eq(es_cpu_isa_default(NULL), best);
    unsetenv("EQUISHARD_CPU_ISA");
    ck_assert_int_eq(es_context_set(ctx, "cpu_isa", "generic"), ES_OK);
    ck_assert_int_eq(es_cpu_isa_default(ctx), ES_CPU_GENERIC);
    ck_assert_int_eq(es_context_set(ctx, "cpu_isa", "avx2"), ES_OK);
    ck_assert_int_eq(es_cpu_isa_default(ctx), best < ES_CPU_AVX2 ? best : ES_CPU_AVX2);
    ck_assert_int_eq(es_context_set(ctx, "cpu_isa", "no-such-isa"), ES_OK); /* the best */
    ck_assert_int_eq(es_cpu_isa_default(ctx), best);
    ck_assert_int_eq(es_context_set(ctx, "cpu_isa", "sixteen-bytes-xx"), ES_ERR_USAGE);
    ck_assert_int_eq(es_context_set(ctx, "cpu_isa", NULL), ES_OK);
    ck_assert_int_eq(es_cpu_isa_default(ctx), best);
    es_context_free(ctx);
}
END_TEST

START_TEST(test_half_precision)
{
    vgen g;
    vg_make(&g, 600, 192, 8, 5);
    size_t n = g.n * g.d, m = g.n_spk * g.d;
    uint16_t *h = malloc(n * 2), *hs = malloc(m * 2);
    for (int bf = 0; bf <= 1; bf++) {
        for (size_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &g.rows[i], 4);
            h[i] = bf ? (uint16_t)(u >> 16) : to_f16(g.rows[i]);
        }
        for (size_t i = 0; i < m; i++) {
            uint32_t u;
            memcpy(&u, &g.spk_rows[i], 4);
            hs[i] = bf ? (uint16_t)(u >> 16) : to_f16(g.spk_rows[i]);
        }
        /* the float32 version of the same halves */
        vgen f = g;
        f.rows = malloc(n * 4);
        f.spk_rows = malloc(m * 4);
        for (size_t i = 0; i < n; i++)
            f.rows[i] = bf ? es_k_bf16_to_f32(h[i]) : es_k_f16_to_f32(h[i]);
        for (size_t i = 0; i < m; i++)
            f.spk_rows[i] = bf ? es_k_bf16_to_f32(hs[i]) : es_k_f16_to_f32(hs[i]);
        es_validate_result *want = validate(&f, 2);
        es_validate_settings s;
        es_validate_defaults(&s);
        s.device = ES_DEVICE_CPU;
        es_dtype t = bf ? ES_DTYPE_BF16 : ES_DTYPE_F16;
        es_emb_matrix utt = {h, t, g.n, g.d, (const char *const *)g.keys};
        es_emb_matrix spk = {hs, t, g.n_spk, g.d, (const char *const *)g.spk_keys};
        es_emb_speakers sp = {g.speaker, g.n_spk};
        es_context *ctx = es_context_new();
        es_validate_result *r = NULL;
        ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, &spk, &sp, 0, &r), ES_OK);
        ck_assert_uint_eq(es_validate_count(r, -1), es_validate_count(want, -1));
        for (size_t i = 0; i < es_validate_count(r, -1); i++) {
            es_finding a, b;
            es_validate_finding(want, i, &a);
            es_validate_finding(r, i, &b);
            ck_assert(a.check == b.check && a.row == b.row && a.kind == b.kind);
            ck_assert(memcmp(&a.value, &b.value, sizeof a.value) == 0);
        }
        es_validate_result_free(r);
        es_validate_result_free(want);
        es_context_free(ctx);
        free(f.rows);
        free(f.spk_rows);
    }
    free(h);
    free(hs);
    vg_free(&g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("validate_kernel");
    TCase *k = tcase_create("kernel");
    tcase_add_test(k, test_f16_conversion);
    tcase_add_test(k, test_classification);
    tcase_add_test(k, test_simd_equals_reference);
    tcase_add_test(k, test_chunk_sum_simd);
    tcase_add_test(k, test_row_hash);
    tcase_add_test(k, test_median);
    suite_add_tcase(s, k);
    TCase *c = tcase_create("cpu");
    tcase_add_loop_test(c, test_cpu_finds_planted_defects, 0, 2);
    tcase_add_test(c, test_cpu_thread_counts_identical);
    tcase_add_test(c, test_cpu_row_order_identical);
    tcase_add_test(c, test_half_precision);
    tcase_add_test(c, test_cpu_isa_cap_is_the_contexts);
    suite_add_tcase(s, c);
    return run_suite(s);
}
