/* Non-negative least squares (Lawson & Hanson, "Solving Least Squares
 * Problems", 1974, ch. 23): the active-set method. Calibration's systems are
 * tall and thin (thousands of steps, at most ES_TERM_COUNT columns), so each
 * passive-set subproblem is solved afresh by Householder QR on the m × |P|
 * columns — no normal equations, whose squared condition would hurt with
 * columns as correlated as n·L and n·L².
 *
 * Invariants: x >= 0 always; a column enters P only when its gradient w_j is
 * positive beyond tol; columns are scaled to unit norm first (and zero
 * columns kept at 0), so tol is relative to |b|, whatever the units. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"

/* Least squares on the columns idx[0..k) of a (m × n, row-major): z[idx[j]].
 * q is scratch of m × k + m doubles. Returns 0, or -1 when rank-deficient. */
static int solve_passive(const double *a, size_t m, size_t n, const double *b, const size_t *idx,
                         size_t k, double *q, double *z)
{
    double *r = q, *y = q + m * k;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < k; j++)
            r[i * k + j] = a[i * n + idx[j]];
        y[i] = b[i];
    }
    for (size_t j = 0; j < k; j++) { /* Householder on column j, rows j..m-1 */
        double norm = 0;
        for (size_t i = j; i < m; i++)
            norm += r[i * k + j] * r[i * k + j];
        norm = sqrt(norm);
        if (norm < 1e-13)
            return -1;
        double alpha = r[j * k + j] > 0 ? -norm : norm;
        double v0 = r[j * k + j] - alpha, vnorm2 = v0 * v0;
        for (size_t i = j + 1; i < m; i++)
            vnorm2 += r[i * k + j] * r[i * k + j];
        r[j * k + j] = v0; /* v = (v0, r[j+1..m-1][j]) */
        for (size_t c = j + 1; c <= k; c++) { /* c == k: the right-hand side */
            double dot = 0;
            for (size_t i = j; i < m; i++)
                dot += r[i * k + j] * (c < k ? r[i * k + c] : y[i]);
            double f = vnorm2 > 0 ? 2 * dot / vnorm2 : 0;
            for (size_t i = j; i < m; i++)
                *(c < k ? &r[i * k + c] : &y[i]) -= f * r[i * k + j];
        }
        r[j * k + j] = alpha;
    }
    for (size_t jj = k; jj-- > 0;) {
        double s = y[jj];
        for (size_t c = jj + 1; c < k; c++)
            s -= r[jj * k + c] * z[idx[c]];
        z[idx[jj]] = s / r[jj * k + jj];
    }
    return 0;
}

/* w = Aᵀ(b − A x) */
static void gradient(const double *a, size_t m, size_t n, const double *b, const double *x,
                     double *w)
{
    memset(w, 0, n * sizeof *w);
    for (size_t i = 0; i < m; i++) {
        double r = b[i];
        for (size_t j = 0; j < n; j++)
            r -= a[i * n + j] * x[j];
        for (size_t j = 0; j < n; j++)
            w[j] += a[i * n + j] * r;
    }
}

/* The active-set iterations on the scaled matrix s. */
static int lawson_hanson(es_context *ctx, const double *s, size_t m, size_t n, const double *b,
                         const int *usable, double *x)
{
    double bnorm = 0;
    for (size_t i = 0; i < m; i++)
        bnorm += b[i] * b[i];
    double tol = 1e-11 * (sqrt(bnorm) + DBL_MIN);
    double *w = calloc(n, sizeof *w), *z = calloc(n, sizeof *z);
    double *q = malloc((m * n + m) * sizeof *q);
    size_t *idx = malloc(n * sizeof *idx);
    int *passive = calloc(n, sizeof *passive), *blocked = calloc(n, sizeof *blocked);
    int rc = ES_OK;
    if (!w || !z || !q || !idx || !passive || !blocked) {
        rc = es_fail(ctx, ES_ERR_NOMEM, "nnls: out of memory");
        goto done;
    }
    memset(x, 0, n * sizeof *x);
    for (size_t outer = 0;; outer++) {
        gradient(s, m, n, b, x, w);
        size_t t = n;
        for (size_t j = 0; j < n; j++)
            if (usable[j] && !passive[j] && !blocked[j] && w[j] > tol && (t == n || w[j] > w[t]))
                t = j;
        if (t == n)
            break;
        if (outer >= 3 * n) {
            rc = es_fail(ctx, ES_ERR_INTERNAL, "nnls: no convergence after %zu iterations", outer);
            goto done;
        }
        passive[t] = 1;
        for (size_t inner = 0;; inner++) {
            size_t k = 0;
            for (size_t j = 0; j < n; j++)
                if (passive[j])
                    idx[k++] = j;
            memset(z, 0, n * sizeof *z);
            int singular = solve_passive(s, m, n, b, idx, k, q, z);
            if (singular || (inner == 0 && z[t] <= 0)) { /* t adds nothing: keep it out */
                passive[t] = 0, blocked[t] = 1;
                break;
            }
            double alpha = 2;
            for (size_t j = 0; j < n; j++)
                if (passive[j] && z[j] <= 0 && x[j] - z[j] > 0 && x[j] / (x[j] - z[j]) < alpha)
                    alpha = x[j] / (x[j] - z[j]);
            if (alpha > 1) { /* z feasible */
                memcpy(x, z, n * sizeof *x);
                memset(blocked, 0, n * sizeof *blocked);
                break;
            }
            for (size_t j = 0; j < n; j++) {
                if (!passive[j])
                    continue;
                x[j] += alpha * (z[j] - x[j]);
                if (x[j] <= 1e-15)
                    x[j] = 0, passive[j] = 0;
            }
            if (inner > 3 * n) {
                rc = es_fail(ctx, ES_ERR_INTERNAL, "nnls: inner loop did not settle");
                goto done;
            }
        }
    }
done:
    free(w), free(z), free(q), free(idx), free(passive), free(blocked);
    return rc;
}

ES_API int es_nnls(es_context *ctx, const double *a, size_t rows, size_t cols, const double *b,
                   double *x)
{
    es_clear_error(ctx);
    if (!a || !b || !x || cols == 0 || rows == 0)
        return es_fail(ctx, ES_ERR_USAGE, "nnls: need at least one row and one column");
    double *s = malloc(rows * cols * sizeof *s), *scale = calloc(cols, sizeof *scale);
    int *usable = calloc(cols, sizeof *usable);
    if (!s || !scale || !usable) {
        free(s), free(scale), free(usable);
        return es_fail(ctx, ES_ERR_NOMEM, "nnls: out of memory");
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            scale[j] += a[i * cols + j] * a[i * cols + j];
    for (size_t j = 0; j < cols; j++) {
        usable[j] = isfinite(scale[j]) && scale[j] > 0;
        scale[j] = usable[j] ? sqrt(scale[j]) : 1;
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            s[i * cols + j] = a[i * cols + j] / scale[j];
    int rc = lawson_hanson(ctx, s, rows, cols, b, usable, x);
    for (size_t j = 0; j < cols && rc == ES_OK; j++)
        x[j] /= scale[j];
    free(s), free(scale), free(usable);
    return rc;
}
