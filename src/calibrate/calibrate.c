/* es_calibrate: step times → cost-model weights (docs/COST_MODEL.md).
 *
 * 1. Steps are read (step_log.c) and put in (log, rank, line) order.
 * 2. The first `warmup` steps of each rank of each log are dropped: start-up,
 *    allocator growth and autotuning make them slow for reasons no term models.
 * 3. Every `holdout_every`-th remaining step is held out (deterministic: the
 *    same logs give the same split); the rest are fitted.
 * 4. The fit: es_nnls over the fitted steps' padded terms, each row divided by
 *    its time, so the least squares are over relative errors (what is reported,
 *    and what a multiplicative noise makes right). Terms without signal in the
 *    log are left out (weight 0).
 * 5. Outliers (a GC pause, a checkpoint write): fitted steps whose relative
 *    residual lies beyond outlier_mads scaled MADs of the median are dropped
 *    and the fit is redone, once. Held-out steps are never dropped: their
 *    figures are honest.
 * 6. Figures: R² (fit and held-out), held-out median and 95th-percentile
 *    relative error, each term's share of the predicted time and the held-out
 *    median error of a fit without it ("which terms matter").
 * 7. A fit that is no model (every weight 0, values not finite, a held-out R²
 *    below 0 unless allowed) is an error, not a model.json. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate_internal.h"
#include "core/context.h"
#include "costs/cost_table.h"

ES_API void es_calibrate_defaults(es_calibrate_settings *s)
{
    memset(s, 0, sizeof *s);
    es_cost_model_defaults(&s->model);
    s->warmup = 3;
    s->holdout_every = 5;
    s->outlier_mads = 5;
    s->terms = (1u << ES_TERM_COUNT) - 1;
    s->time_field = "seconds";
}

ES_API void es_calibration_free(es_calibration *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_logs; i++)
        free(c->logs[i].path);
    free(c->logs);
    free(c->steps);
    free(c->time_field);
    free(c);
}

static int cmp_step(const void *a, const void *b)
{
    const cal_step *x = a, *y = b;
    if (x->log != y->log)
        return x->log < y->log ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* Warm-up and the held-out split (steps sorted). */
static void assign_roles(es_calibration *c)
{
    size_t usable = 0, run = 0;
    for (size_t i = 0; i < c->n_steps; i++) {
        cal_step *st = &c->steps[i];
        int same = i && st->log == st[-1].log && st->rank == st[-1].rank;
        run = same ? run + 1 : 0;
        if (run < c->s.warmup) {
            st->role = CAL_WARMUP;
            c->info.warmup_dropped++;
            continue;
        }
        st->role = c->s.holdout_every && usable % c->s.holdout_every == c->s.holdout_every - 1
                       ? CAL_HELD_OUT : CAL_FIT;
        usable++;
    }
}

/* The terms with signal among the fitted steps (and allowed by settings). */
static uint32_t terms_with_signal(const es_calibration *c)
{
    uint32_t mask = 0;
    for (int j = 0; j < ES_TERM_COUNT; j++) {
        int nonzero = 0, differs = 0;
        for (size_t i = 0; i < c->n_steps; i++) {
            const cal_step *st = &c->steps[i];
            if (st->role != CAL_FIT)
                continue;
            nonzero |= st->x[j] != 0;
            differs |= st->x[j] != st->frames_sum;
        }
        /* missing_emb equal to the frames of every row: the table knows no
         * embeddings, and the term would only echo frames */
        if ((c->s.terms >> j & 1) && nonzero && (j != ES_TERM_MISSING_EMB || differs))
            mask |= 1u << j;
    }
    return mask;
}

static double predict(const double *w, const cal_step *st)
{
    double p = 0;
    for (int j = 0; j < ES_TERM_COUNT; j++)
        p += w[j] * st->x[j];
    return p;
}

/* NNLS over the steps with role CAL_FIT and the terms in mask; w gets all
 * ES_TERM_COUNT weights (0 outside mask). */
static int fit(es_context *ctx, const es_calibration *c, uint32_t mask, double *w)
{
    size_t cols = 0, rows = 0, idx[ES_TERM_COUNT];
    for (int j = 0; j < ES_TERM_COUNT; j++)
        if (mask >> j & 1)
            idx[cols++] = (size_t)j;
    for (size_t i = 0; i < c->n_steps; i++)
        rows += c->steps[i].role == CAL_FIT;
    memset(w, 0, ES_TERM_COUNT * sizeof *w);
    if (!cols)
        return ES_OK;
    double *a = malloc(rows * cols * sizeof *a), *b = malloc(rows * sizeof *b), x[ES_TERM_COUNT];
    if (!a || !b) {
        free(a), free(b);
        return es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    }
    size_t r = 0;
    for (size_t i = 0; i < c->n_steps; i++) {
        const cal_step *st = &c->steps[i];
        if (st->role != CAL_FIT)
            continue;
        for (size_t k = 0; k < cols; k++)
            a[r * cols + k] = st->x[idx[k]] / st->seconds;
        b[r++] = 1;
    }
    int rc = es_nnls(ctx, a, rows, cols, b, x);
    for (size_t k = 0; k < cols && rc == ES_OK; k++)
        w[idx[k]] = x[k];
    free(a), free(b);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (nearest rank) of v[0..n), sorted in place; 0 when n is 0. */
static double quantile(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t k = (size_t)ceil(q * (double)n);
    return v[k ? k - 1 : 0];
}

/* Relative errors |p/y − 1| of the steps in `role` into buf; their count. */
static size_t rel_errors(const es_calibration *c, const double *w, cal_role role, double *buf)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_steps; i++)
        if (c->steps[i].role == role)
            buf[n++] = fabs(predict(w, &c->steps[i]) / c->steps[i].seconds - 1);
    return n;
}

static double r_squared(const es_calibration *c, const double *w, cal_role role)
{
    double sum = 0, res = 0, tot = 0;
    size_t n = 0;
    for (size_t i = 0; i < c->n_steps; i++)
        if (c->steps[i].role == role)
            sum += c->steps[i].seconds, n++;
    double mean = n ? sum / (double)n : 0;
    for (size_t i = 0; i < c->n_steps; i++) {
        const cal_step *st = &c->steps[i];
        if (st->role != role)
            continue;
        double d = st->seconds - predict(w, st);
        res += d * d;
        tot += (st->seconds - mean) * (st->seconds - mean);
    }
    return tot > 0 ? 1 - res / tot : 0;
}

/* Step 5: marks outliers among the fitted steps; how many. */
static size_t drop_outliers(es_calibration *c, const double *w, double *buf)
{
    if (!(c->s.outlier_mads > 0))
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < c->n_steps; i++)
        if (c->steps[i].role == CAL_FIT)
            buf[n++] = predict(w, &c->steps[i]) / c->steps[i].seconds - 1;
    double med = quantile(buf, n, 0.5);
    for (size_t i = 0; i < n; i++)
        buf[i] = fabs(buf[i] - med);
    double bound = c->s.outlier_mads * 1.4826 * quantile(buf, n, 0.5);
    size_t dropped = 0;
    for (size_t i = 0; i < c->n_steps && bound > 0; i++) {
        cal_step *st = &c->steps[i];
        if (st->role == CAL_FIT && fabs(predict(w, st) / st->seconds - 1 - med) > bound)
            st->role = CAL_OUTLIER, dropped++;
    }
    return dropped;
}

static int check_usable(es_context *ctx, const es_calibration *c, uint32_t mask)
{
    size_t fitn = 0, held = 0, terms = 0;
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < c->n_steps; i++) {
        const cal_step *st = &c->steps[i];
        fitn += st->role == CAL_FIT;
        held += st->role == CAL_HELD_OUT;
        if (st->role != CAL_WARMUP)
            lo = fmin(lo, st->seconds), hi = fmax(hi, st->seconds);
    }
    for (int j = 0; j < ES_TERM_COUNT; j++)
        terms += mask >> j & 1;
    size_t need = 3 * (terms > 3 ? terms : 3) + 1;
    if (fitn < need || held < 3)
        return es_fail(ctx, ES_ERR_FORMAT,
                       "calibrate: too few steps: %zu read, %zu warm-up dropped, %zu to fit and "
                       "%zu held out; need at least %zu to fit and 3 held out (log more steps)",
                       c->n_steps, c->info.warmup_dropped, fitn, held, need);
    if (!(hi > lo * (1 + 1e-9)))
        return es_fail(ctx, ES_ERR_FORMAT, "calibrate: degenerate log: every step took %g s, "
                       "nothing to tell the terms apart", hi);
    if (!mask)
        return es_fail(ctx, ES_ERR_FORMAT, "calibrate: degenerate log: no cost term varies over "
                       "the logged steps");
    return ES_OK;
}

/* The shortest and longest step times outside the warm-up, for messages. */
static void time_range(const es_calibration *c, double *lo, double *hi)
{
    *lo = INFINITY, *hi = 0;
    for (size_t i = 0; i < c->n_steps; i++)
        if (c->steps[i].role != CAL_WARMUP)
            *lo = fmin(*lo, c->steps[i].seconds), *hi = fmax(*hi, c->steps[i].seconds);
}

/* Step 7: a fit that is no model is refused, not written: a weight that is
 * not finite or above ES_COST_WEIGHT_MAX, or a figure that is not finite (step
 * times far out of range: plan's sums, and jansson, cannot hold them), every
 * weight 0 (every batch free: plan would give one rank all), a held-out R²
 * below 0 (worse than predicting the mean time) unless allowed. */
static int check_fit(es_context *ctx, const es_calibration *c, const double *w)
{
    const es_calibration_info *in = &c->info;
    double lo, hi;
    time_range(c, &lo, &hi);
    int any = 0;
    for (int j = 0; j < ES_TERM_COUNT; j++) {
        if (!isfinite(w[j]) || w[j] > ES_COST_WEIGHT_MAX)
            return es_fail(ctx, ES_ERR_FORMAT, "calibrate: the fitted %s is %g, above %g s a "
                           "unit: the step times are out of range (%g to %g s)",
                           es_enum_name(ES_ENUM_COST_TERM, j), w[j], ES_COST_WEIGHT_MAX, lo, hi);
        any |= w[j] > 0;
    }
    const struct {
        const char *name;
        double v;
    } figures[] = {{"R^2", in->r2_fit}, {"held-out R^2", in->r2_held_out},
                   {"held-out median error", in->median_error},
                   {"held-out p95 error", in->p95_error},
                   {"median error of the fitted steps", in->median_error_fit}};
    for (size_t k = 0; k < sizeof figures / sizeof figures[0]; k++)
        if (!isfinite(figures[k].v))
            return es_fail(ctx, ES_ERR_FORMAT, "calibrate: the fit's %s is %g: the step times "
                           "are out of range (%g to %g s)", figures[k].name, figures[k].v, lo, hi);
    if (!any)
        return es_fail(ctx, ES_ERR_FORMAT, "calibrate: degenerate fit: every weight is 0 (the "
                       "step times, %g to %g s, follow no term)", lo, hi);
    if (in->r2_held_out < 0 && !c->s.allow_negative_r2)
        return es_fail(ctx, ES_ERR_FORMAT, "calibrate: held-out R^2 is %.4f: the fit predicts "
                       "the held-out steps worse than their mean time does (step times %g to "
                       "%g s: one far off?); --allow-negative-r2 accepts it", in->r2_held_out,
                       lo, hi);
    return ES_OK;
}

/* Steps 4–7. */
static int fit_and_report(es_context *ctx, es_calibration *c, double *buf)
{
    uint32_t mask = terms_with_signal(c);
    int rc = check_usable(ctx, c, mask);
    double w[ES_TERM_COUNT], without[ES_TERM_COUNT];
    if (rc == ES_OK)
        rc = fit(ctx, c, mask, w);
    if (rc == ES_OK && (c->info.outliers_dropped = drop_outliers(c, w, buf)) > 0)
        rc = fit(ctx, c, mask, w);
    if (rc != ES_OK)
        return rc;
    es_calibration_info *in = &c->info;
    in->terms_fitted = mask;
    double *mw[ES_TERM_COUNT] = {&in->model.w_frames, &in->model.w_frames_sq, &in->model.w_text,
                                 &in->model.w_speech_tokens, &in->model.w_missing_emb,
                                 &in->model.w_overhead, &in->model.w_batch};
    for (int j = 0; j < ES_TERM_COUNT; j++)
        *mw[j] = w[j];
    in->r2_fit = r_squared(c, w, CAL_FIT);
    in->r2_held_out = r_squared(c, w, CAL_HELD_OUT);
    size_t n = rel_errors(c, w, CAL_HELD_OUT, buf);
    in->held_out_steps = n;
    in->median_error = quantile(buf, n, 0.5);
    in->p95_error = quantile(buf, n, 0.95);
    in->fit_steps = rel_errors(c, w, CAL_FIT, buf);
    in->median_error_fit = quantile(buf, in->fit_steps, 0.5);
    if ((rc = check_fit(ctx, c, w)) != ES_OK)
        return rc;
    double total = 0, part[ES_TERM_COUNT] = {0};
    for (size_t i = 0; i < c->n_steps; i++)
        for (int j = 0; j < ES_TERM_COUNT && c->steps[i].role == CAL_FIT; j++)
            part[j] += w[j] * c->steps[i].x[j], total += w[j] * c->steps[i].x[j];
    for (int j = 0; j < ES_TERM_COUNT && rc == ES_OK; j++) {
        es_calibration_term *t = &c->terms[j];
        t->name = es_enum_name(ES_ENUM_COST_TERM, j);
        t->fitted = mask >> j & 1;
        t->weight = w[j];
        t->share = total > 0 ? part[j] / total : 0;
        if (t->fitted && (rc = fit(ctx, c, mask & ~(1u << j), without)) == ES_OK)
            t->median_error_without = quantile(buf, rel_errors(c, without, CAL_HELD_OUT, buf), 0.5);
    }
    return rc;
}

ES_API int es_calibrate(es_context *ctx, const es_calibrate_settings *s, const es_cost_table *t,
                        const char *const *logs, size_t n_logs, es_calibration **out)
{
    es_clear_error(ctx);
    if (out)
        *out = NULL;
    if (!s || !t || !logs || !out || !n_logs)
        return es_fail(ctx, ES_ERR_USAGE, "calibrate: needs settings, a cost table and a step log");
    if (!(s->model.frame_rate > 0) || !isfinite(s->model.frame_rate) || !(s->outlier_mads >= 0))
        return es_fail(ctx, ES_ERR_USAGE, "calibrate: frame_rate must be positive, outlier_mads >= 0");
    es_calibration *c = calloc(1, sizeof *c);
    if (!c)
        return es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    c->s = *s;
    c->time_field = strdup(s->time_field && *s->time_field ? s->time_field : "seconds");
    c->s.time_field = c->time_field;
    c->info.model = s->model;
    c->info.model.source = NULL, c->info.model.source_digest = 0;
    int rc = c->time_field ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    if (rc == ES_OK)
        rc = es_cal_read_logs(ctx, c, t, logs, n_logs);
    double *buf = NULL;
    if (rc == ES_OK) {
        c->info.steps_read = c->n_steps;
        if (c->n_steps > 1) /* qsort's pointer must not be NULL, even for 0 steps */
            qsort(c->steps, c->n_steps, sizeof *c->steps, cmp_step);
        assign_roles(c);
        buf = malloc((c->n_steps ? c->n_steps : 1) * sizeof *buf);
        rc = buf ? fit_and_report(ctx, c, buf) : es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    }
    free(buf);
    if (rc != ES_OK) {
        es_calibration_free(c);
        return rc;
    }
    *out = c;
    return ES_OK;
}

ES_API int es_calibration_get_info(const es_calibration *c, es_calibration_info *out)
{
    if (!c || !out)
        return ES_ERR_USAGE;
    *out = c->info;
    return ES_OK;
}

ES_API int es_calibration_term_info(const es_calibration *c, int term, es_calibration_term *out)
{
    if (!c || !out || term < 0 || term >= ES_TERM_COUNT)
        return ES_ERR_USAGE;
    *out = c->terms[term];
    return ES_OK;
}
