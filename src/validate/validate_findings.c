/* Per-row results → findings. See validate_findings.h. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/prefault.h"
#include "validate/validate_findings.h"

static const char *key_of(const es_vset *set, size_t i)
{
    return set->m->keys && set->m->keys[i] ? set->m->keys[i] : "";
}

static size_t row_of(const es_vset *set, size_t i) { return set->src_row ? set->src_row[i] : i; }

static void add(es_validate_result *r, const es_vset *set, es_check c, int is_speaker, size_t i,
                double value)
{
    es_vresult_add(r, c, is_speaker, key_of(set, i), row_of(set, i), value, NULL, ES_NO_ROW,
                   row_of(set, i));
}

static void swap(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* k-th smallest of v[0..n) (Hoare's quickselect, middle pivot); reorders v. */
static double select_kth(double *v, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j)
                swap(&v[i++], &v[j--]);
        }
        /* now v[lo..j] <= pivot, v[i..hi] >= pivot, and v[j+1..i-1] == pivot */
        if (kk <= j)
            hi = j;
        else if (kk >= i)
            lo = i;
        else
            return v[kk];
    }
    return v[kk];
}

double es_vmedian(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    double upper = select_kth(v, n, n / 2);
    if (n % 2)
        return upper;
    /* After selection every element before n/2 is <= upper: the lower middle
     * is their maximum. */
    double lower = v[0];
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lower)
            lower = v[i];
    return (lower + upper) / 2;
}

static int finite_row(const es_row_result *x) { return x->nan == 0 && x->inf == 0; }

/* Median norm of the finite rows whose norm is above zero_norm. */
static int median_norm(es_context *ctx, const es_validate_settings *s, const es_row_result *res,
                       size_t n, double *median)
{
    double *norms = malloc((n ? n : 1) * sizeof *norms);
    if (!norms)
        return es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    es_prefault_write(norms, n * sizeof *norms, es_ctx_huge_pages(ctx));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double norm = sqrt(res[i].sumsq);
        if (finite_row(&res[i]) && norm > s->zero_norm)
            norms[k++] = norm;
    }
    *median = es_vmedian(norms, k);
    free(norms);
    return ES_OK;
}

static int abnormal(const es_validate_settings *s, double norm, double median)
{
    if (s->min_norm > 0 && norm < s->min_norm)
        return 1;
    if (s->max_norm > 0 && norm > s->max_norm)
        return 1;
    return s->norm_ratio > 0 && median > 0 &&
           (norm > s->norm_ratio * median || norm * s->norm_ratio < median);
}

/* ---- duplicates ------------------------------------------------------------------ */

typedef struct cand {
    uint64_t hash;
    uint32_t row;
} cand;

static int cmp_cand(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

/* Rows whose checksum some other row shares, sorted by (checksum, row). Uses an
 * open-addressing table of first occurrences: O(n). */
static int collect_candidates(const es_context *ctx, const es_row_result *res, size_t n,
                              cand **out, size_t *n_out)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    uint32_t *slot = malloc(cap * sizeof *slot);   /* row + 1, 0 = empty */
    uint8_t *shared = calloc(n ? n : 1, 1);        /* row's checksum seen twice */
    if (!slot || !shared) {
        free(slot);
        free(shared);
        return -1;
    }
    es_prefault_write(slot, cap * sizeof *slot, es_ctx_huge_pages(ctx));
    memset(slot, 0, cap * sizeof *slot);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        size_t h = (size_t)res[i].hash & (cap - 1);
        while (slot[h] && res[slot[h] - 1].hash != res[i].hash)
            h = (h + 1) & (cap - 1);
        if (!slot[h]) {
            slot[h] = (uint32_t)i + 1;
            continue;
        }
        size_t first = slot[h] - 1;
        count += !shared[first] + 1;
        shared[first] = shared[i] = 1;
    }
    free(slot);
    cand *c = malloc((count ? count : 1) * sizeof *c);
    if (!c) {
        free(shared);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (shared[i])
            c[k++] = (cand){res[i].hash, (uint32_t)i};
    free(shared);
    qsort(c, k, sizeof *c, cmp_cand);
    *out = c;
    *n_out = k;
    return 0;
}

/* Bytes of the candidate rows: in place for host matrices, gathered from the
 * device otherwise (then bytes[j] is candidate j's copy). */
static int candidate_bytes(es_context *ctx, const es_emb_matrix *m, int on_device, const cand *c,
                           size_t k, unsigned char **copy)
{
    *copy = NULL;
    if (!on_device || k == 0)
        return ES_OK;
    size_t row_bytes = m->dim * es_dtype_size(m->dtype);
    uint32_t *idx = malloc(k * sizeof *idx);
    *copy = malloc(k * row_bytes);
    if (!idx || !*copy) {
        free(idx);
        free(*copy);
        *copy = NULL;
        return es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    }
    for (size_t j = 0; j < k; j++)
        idx[j] = c[j].row;
    int rc = es_cuda_gather_rows(ctx, m->data, m->dtype, m->dim, idx, k, *copy);
    free(idx);
    return rc;
}

/* Among candidates with one checksum, a row is a duplicate of the earliest row
 * with the same bytes; rows that differ (a checksum collision) start their own
 * group. */
static int find_duplicates(es_context *ctx, const es_vset *set, int is_speaker,
                           const es_row_result *res, int on_device, es_validate_result *r)
{
    const es_emb_matrix *m = set->m;
    cand *c;
    size_t k;
    if (collect_candidates(ctx, res, m->n, &c, &k))
        return es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    unsigned char *copy;
    int rc = candidate_bytes(ctx, m, on_device, c, k, &copy);
    size_t row_bytes = m->dim * es_dtype_size(m->dtype);
#define BYTES(j) (copy ? copy + (j) * row_bytes : (const unsigned char *)m->data + (size_t)c[j].row * row_bytes)
    for (size_t a = 0; rc == ES_OK && a < k;) {
        size_t b = a;
        while (b < k && c[b].hash == c[a].hash)
            b++;
        for (size_t j = a + 1; j < b; j++)
            for (size_t first = a; first < j; first++) {
                if (memcmp(BYTES(first), BYTES(j), row_bytes) != 0)
                    continue;
                /* `first` may itself repeat an earlier row: name the earliest. */
                size_t f = first;
                while (c[f].row != c[first].row)
                    f++;
                uint32_t i = c[j].row, e = c[f].row;
                es_vresult_add(r, ES_CHECK_DUPLICATE_VECTOR, is_speaker, key_of(set, i), row_of(set, i),
                               0, key_of(set, e), row_of(set, e), row_of(set, i));
                break;
            }
        a = b;
    }
#undef BYTES
    free(copy);
    free(c);
    return rc;
}

int es_vfind_rows(es_context *ctx, const es_validate_settings *s, const es_vset *set,
                  int is_speaker, const es_row_result *res, int on_device,
                  es_validate_result *r, double *median)
{
    size_t n = set->m->n;
    int rc = median_norm(ctx, s, res, n, median);
    for (size_t i = 0; rc == ES_OK && i < n; i++) {
        const es_row_result *x = &res[i];
        if (x->nan)
            add(r, set, ES_CHECK_NAN, is_speaker, i, x->nan);
        if (x->inf)
            add(r, set, ES_CHECK_INF, is_speaker, i, x->inf);
        if (!finite_row(x))
            continue;
        double norm = sqrt(x->sumsq);
        if (norm <= s->zero_norm) {
            add(r, set, ES_CHECK_ZERO_NORM, is_speaker, i, norm);
            continue;
        }
        if (abnormal(s, norm, *median))
            add(r, set, ES_CHECK_ABNORMAL_NORM, is_speaker, i, norm);
        if (!is_speaker && x->cosine != ES_K_NO_COSINE && x->cosine < s->min_cosine)
            add(r, set, ES_CHECK_FAR_FROM_CENTROID, 0, i, x->cosine);
    }
    if (rc == ES_OK && s->duplicates)
        rc = find_duplicates(ctx, set, is_speaker, res, on_device, r);
    return rc;
}

int es_vfind_spk_mean(es_context *ctx, const es_validate_settings *s, const es_vset *spk,
                      const es_row_result *spk_res, const float *spk_rows, const double *mean,
                      const uint32_t *n_finite, es_validate_result *r)
{
    (void)ctx; /* the sibling finders' signature; this one cannot fail */
    size_t d = spk->m->dim;
    for (size_t i = 0; i < spk->m->n; i++) {
        if (!n_finite[i] || !finite_row(&spk_res[i]))
            continue;
        const float *x = spk_rows + i * d;
        const double *mu = mean + i * d;
        double diff = 0, norm = 0;
        for (size_t j = 0; j < d; j++) {
            diff += ((double)x[j] - mu[j]) * ((double)x[j] - mu[j]);
            norm += mu[j] * mu[j];
        }
        double rel = norm > 0 ? sqrt(diff / norm) : sqrt(diff);
        if (rel > s->spk_mean_tol)
            add(r, spk, ES_CHECK_SPK_MEAN_MISMATCH, 1, i, rel);
    }
    return ES_OK;
}
