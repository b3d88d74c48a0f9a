/* Test data for the validator: random speaker-structured embeddings with
 * planted defects, and a plain scalar double-precision reference that finds
 * defects on its own (shared by test_validate_kernel.c and
 * test_validate_cuda.c; header-only).
 *
 * Speakers are random unit directions × 10; an utterance is its speaker's
 * direction plus N(0, 0.35²) noise per element (cosine ≈ 0.9 to the centroid),
 * so clean rows pass every default threshold by a wide margin, and each planted
 * defect fails exactly one check (zero rows also repeat each other). */
#ifndef ES_VALIDATE_GEN_H
#define ES_VALIDATE_GEN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "equishard/equishard.h"

typedef struct vg_finding {
    int check, is_speaker;
    size_t row, other;  /* other: duplicate's earlier row, else ES_NO_ROW */
    double value;
} vg_finding;

typedef struct vgen {
    size_t n, d, n_spk;
    float *rows, *spk_rows;
    int32_t *speaker;
    char **keys, **spk_keys;
    vg_finding *planted;
    size_t n_planted;
} vgen;

static uint64_t vg_state;
static inline uint64_t vg_next(void)
{
    uint64_t z = (vg_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double vg_uniform(void) { return ((vg_next() >> 11) + 0.5) / 9007199254740992.0; }
static inline double vg_gauss(void)
{
    return sqrt(-2 * log(vg_uniform())) * cos(6.283185307179586 * vg_uniform());
}

static inline void vg_plant(vgen *g, int check, int is_speaker, size_t row, size_t other, double value)
{
    g->planted = realloc(g->planted, (g->n_planted + 1) * sizeof *g->planted);
    g->planted[g->n_planted++] = (vg_finding){check, is_speaker, row, other, value};
}

static inline char *vg_name(const char *prefix, size_t i)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%s%05zu", prefix, i);
    return strdup(buf);
}

/* Rows: speakers random (about 2 % without one). Planted rows are picked from
 * fixed positions spread over the matrix. */
static inline void vg_make(vgen *g, size_t n, size_t d, size_t n_spk, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    vg_state = seed;
    g->n = n, g->d = d, g->n_spk = n_spk;
    g->rows = malloc(n * d * sizeof *g->rows);
    g->spk_rows = malloc(n_spk * d * sizeof *g->spk_rows);
    g->speaker = malloc(n * sizeof *g->speaker);
    g->keys = malloc(n * sizeof *g->keys);
    g->spk_keys = malloc(n_spk * sizeof *g->spk_keys);
    double *dir = malloc(n_spk * d * sizeof *dir);
    for (size_t s = 0; s < n_spk; s++) {
        double norm = 0;
        for (size_t j = 0; j < d; j++) {
            dir[s * d + j] = vg_gauss();
            norm += dir[s * d + j] * dir[s * d + j];
        }
        for (size_t j = 0; j < d; j++)
            dir[s * d + j] *= 10 / sqrt(norm);
        g->spk_keys[s] = vg_name("spk", s);
    }
    for (size_t i = 0; i < n; i++) {
        g->keys[i] = vg_name("utt", i);
        int none = vg_next() % 50 == 0;
        size_t s = vg_next() % n_spk;
        g->speaker[i] = none ? -1 : (int32_t)s;
        for (size_t j = 0; j < d; j++)
            g->rows[i * d + j] = (float)((none ? 0.6 * vg_gauss() : dir[s * d + j]) + 0.35 * vg_gauss());
    }
    /* Planted defects, at rows p(k) = 7 + 13 k: distinct and spread out. Rows
     * without a speaker are not used for centroid defects. */
#define P(k) ((size_t)(7 + 13 * (k)))
    float *x;
    x = g->rows + P(0) * d; x[5] = NAN; vg_plant(g, ES_CHECK_NAN, 0, P(0), ES_NO_ROW, 1);
    x = g->rows + P(1) * d; x[0] = x[d - 1] = NAN; vg_plant(g, ES_CHECK_NAN, 0, P(1), ES_NO_ROW, 2);
    x = g->rows + P(2) * d; x[1] = x[2] = -NAN; x[d / 2] = NAN; vg_plant(g, ES_CHECK_NAN, 0, P(2), ES_NO_ROW, 3);
    x = g->rows + P(3) * d; x[3] = INFINITY; vg_plant(g, ES_CHECK_INF, 0, P(3), ES_NO_ROW, 1);
    x = g->rows + P(4) * d; x[4] = x[9] = -INFINITY; vg_plant(g, ES_CHECK_INF, 0, P(4), ES_NO_ROW, 2);
    x = g->rows + P(5) * d; x[6] = NAN; x[7] = INFINITY;
    vg_plant(g, ES_CHECK_NAN, 0, P(5), ES_NO_ROW, 1);
    vg_plant(g, ES_CHECK_INF, 0, P(5), ES_NO_ROW, 1);
    memset(g->rows + P(6) * d, 0, d * sizeof *x);
    memset(g->rows + P(7) * d, 0, d * sizeof *x);
    vg_plant(g, ES_CHECK_ZERO_NORM, 0, P(6), ES_NO_ROW, 0);
    vg_plant(g, ES_CHECK_ZERO_NORM, 0, P(7), ES_NO_ROW, 0);
    vg_plant(g, ES_CHECK_DUPLICATE_VECTOR, 0, P(7), P(6), 0);
    for (int k = 8; k <= 10; k++) { /* ×10, ×10, ×0.1 */
        x = g->rows + P(k) * d;
        double norm = 0;
        for (size_t j = 0; j < d; j++) {
            x[j] *= k == 10 ? 0.1f : 10.0f;
            norm += (double)x[j] * x[j];
        }
        vg_plant(g, ES_CHECK_ABNORMAL_NORM, 0, P(k), ES_NO_ROW, sqrt(norm));
    }
    for (int k = 11; k <= 13; k++) { /* labelled with one speaker, the voice of another */
        size_t i = P(k), s = (size_t)(k % (int)n_spk), other = (s + 1) % n_spk;
        g->speaker[i] = (int32_t)s;
        for (size_t j = 0; j < d; j++)
            g->rows[i * d + j] = (float)(dir[other * d + j] + 0.35 * vg_gauss());
        vg_plant(g, ES_CHECK_FAR_FROM_CENTROID, 0, i, ES_NO_ROW, 0);
    }
    for (int k = 14; k <= 15; k++) { /* the same vector under a later key */
        size_t from = P(k), to = P(k) + n / 2;
        memcpy(g->rows + to * d, g->rows + from * d, d * sizeof *x);
        g->speaker[to] = g->speaker[from];
        vg_plant(g, ES_CHECK_DUPLICATE_VECTOR, 0, to, from, 0);
    }
    for (size_t k = 0; k <= 15; k++) /* centroid defects need a speaker */
        if (g->speaker[P(k)] < 0)
            g->speaker[P(k)] = (int32_t)(k % n_spk);
#undef P
    /* Speaker rows: the float mean of the speaker's finite rows; then plant
     * two that differ from it and one with a NaN. */
    double *sum = calloc(n_spk * d, sizeof *sum);
    size_t *count = calloc(n_spk, sizeof *count);
    for (size_t i = 0; i < n; i++) {
        int finite = 1;
        for (size_t j = 0; j < d; j++)
            finite &= isfinite(g->rows[i * d + j]) != 0;
        if (g->speaker[i] < 0 || !finite)
            continue;
        count[g->speaker[i]]++;
        for (size_t j = 0; j < d; j++)
            sum[g->speaker[i] * d + j] += g->rows[i * d + j];
    }
    for (size_t s = 0; s < n_spk; s++)
        for (size_t j = 0; j < d; j++)
            g->spk_rows[s * d + j] = (float)(count[s] ? sum[s * d + j] / count[s] : 0);
    for (size_t s = 1; s <= 2; s++) {
        for (size_t j = 0; j < d; j++)
            g->spk_rows[s * d + j] += (float)(0.5 * vg_gauss());
        vg_plant(g, ES_CHECK_SPK_MEAN_MISMATCH, 1, s, ES_NO_ROW, 0);
    }
    g->spk_rows[3 * d + 1] = NAN;
    vg_plant(g, ES_CHECK_NAN, 1, 3, ES_NO_ROW, 1);
    free(sum);
    free(count);
    free(dir);
}

static inline void vg_free(vgen *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->keys[i]);
    for (size_t s = 0; s < g->n_spk; s++)
        free(g->spk_keys[s]);
    free(g->keys);
    free(g->spk_keys);
    free(g->rows);
    free(g->spk_rows);
    free(g->speaker);
    free(g->planted);
}

static inline int vg_cmp(const void *pa, const void *pb)
{
    const vg_finding *a = pa, *b = pb;
    if (a->check != b->check)
        return a->check < b->check ? -1 : 1;
    if (a->is_speaker != b->is_speaker)
        return a->is_speaker < b->is_speaker ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

static inline int vg_dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- the reference: plain loops in double, defaults thresholds --------------------- */

typedef struct vg_ref {
    vg_finding *f;
    size_t n;
} vg_ref;

static inline void vg_add(vg_ref *r, int check, int is_speaker, size_t row, size_t other, double value)
{
    r->f = realloc(r->f, (r->n + 1) * sizeof *r->f);
    r->f[r->n++] = (vg_finding){check, is_speaker, row, other, value};
}

static inline int vg_finite(const float *x, size_t d)
{
    for (size_t j = 0; j < d; j++)
        if (!isfinite(x[j]))
            return 0;
    return 1;
}

static inline double vg_norm(const float *x, size_t d)
{
    double s = 0;
    for (size_t j = 0; j < d; j++)
        s += (double)x[j] * x[j];
    return sqrt(s);
}

/* NaN/Inf/zero/abnormal/duplicates of one matrix, as the defaults say. */
static inline void vg_ref_rows(vg_ref *r, const float *rows, size_t n, size_t d, int is_speaker)
{
    double *norms = malloc((n + 1) * sizeof *norms);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const float *x = rows + i * d;
        size_t nan = 0, inf = 0;
        for (size_t j = 0; j < d; j++) {
            nan += isnan(x[j]) != 0;
            inf += isinf(x[j]) != 0;
        }
        if (nan)
            vg_add(r, ES_CHECK_NAN, is_speaker, i, ES_NO_ROW, (double)nan);
        if (inf)
            vg_add(r, ES_CHECK_INF, is_speaker, i, ES_NO_ROW, (double)inf);
        if (!nan && !inf && vg_norm(x, d) > 1e-6)
            norms[k++] = vg_norm(x, d);
    }
    qsort(norms, k, sizeof *norms, vg_dcmp);
    double median = k == 0 ? 0 : k % 2 ? norms[k / 2] : (norms[k / 2 - 1] + norms[k / 2]) / 2;
    for (size_t i = 0; i < n; i++) {
        const float *x = rows + i * d;
        if (!vg_finite(x, d))
            continue;
        double norm = vg_norm(x, d);
        if (norm <= 1e-6)
            vg_add(r, ES_CHECK_ZERO_NORM, is_speaker, i, ES_NO_ROW, norm);
        else if (norm > 3 * median || norm * 3 < median)
            vg_add(r, ES_CHECK_ABNORMAL_NORM, is_speaker, i, ES_NO_ROW, norm);
    }
    for (size_t i = 1; i < n; i++)
        for (size_t e = 0; e < i; e++)
            if (!memcmp(rows + e * d, rows + i * d, d * sizeof *rows)) {
                vg_add(r, ES_CHECK_DUPLICATE_VECTOR, is_speaker, i, e, 0);
                break;
            }
    free(norms);
}

/* Everything es_validate_matrices reports for g with default settings. */
static inline vg_ref vg_reference(const vgen *g)
{
    vg_ref r = {NULL, 0};
    size_t n = g->n, d = g->d;
    vg_ref_rows(&r, g->rows, n, d, 0);
    vg_ref_rows(&r, g->spk_rows, g->n_spk, d, 1);
    double *mean = calloc(g->n_spk * d, sizeof *mean);
    size_t *count = calloc(g->n_spk, sizeof *count);
    for (size_t i = 0; i < n; i++)
        if (g->speaker[i] >= 0 && vg_finite(g->rows + i * d, d)) {
            count[g->speaker[i]]++;
            for (size_t j = 0; j < d; j++)
                mean[g->speaker[i] * d + j] += g->rows[i * d + j];
        }
    for (size_t s = 0; s < g->n_spk; s++)
        for (size_t j = 0; j < d; j++)
            mean[s * d + j] = count[s] ? mean[s * d + j] / count[s] : 0;
    for (size_t i = 0; i < n; i++) {
        const float *x = g->rows + i * d;
        int s = g->speaker[i];
        if (s < 0 || !vg_finite(x, d) || vg_norm(x, d) <= 1e-6 || !count[s])
            continue;
        double dot = 0, cc = 0;
        for (size_t j = 0; j < d; j++) {
            dot += x[j] * mean[s * d + j];
            cc += mean[s * d + j] * mean[s * d + j];
        }
        double cosine = dot / (vg_norm(x, d) * sqrt(cc));
        if (cosine < 0.5)
            vg_add(&r, ES_CHECK_FAR_FROM_CENTROID, 0, i, ES_NO_ROW, cosine);
    }
    for (size_t s = 0; s < g->n_spk; s++) {
        const float *x = g->spk_rows + s * d;
        if (!count[s] || !vg_finite(x, d))
            continue;
        double diff = 0, norm = 0;
        for (size_t j = 0; j < d; j++) {
            diff += (x[j] - mean[s * d + j]) * (x[j] - mean[s * d + j]);
            norm += mean[s * d + j] * mean[s * d + j];
        }
        if (sqrt(diff / norm) > 1e-3)
            vg_add(&r, ES_CHECK_SPK_MEAN_MISMATCH, 1, s, ES_NO_ROW, sqrt(diff / norm));
    }
    free(mean);
    free(count);
    qsort(r.f, r.n, sizeof *r.f, vg_cmp);
    return r;
}

#endif
