/* model.json: the calibrated cost model on disk (docs/COST_MODEL.md).
 * Written by es_calibration_write_json, read back by es_cost_model_read for
 * `--cost-model`. The reader takes only "format", "frame_rate" and "weights";
 * "fit" and "provenance" are for people (and for plan.json's digest to point
 * at). Keys are written in a fixed order, numbers with jansson's round-trip
 * precision, so the same logs and table give the same bytes. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "calibrate/calibrate_internal.h"
#include "core/context.h"
#include "core/file_stream.h"
#include "core/json_text.h"
#include "loader/cost_model.h"

#define MODEL_FORMAT "equishard-cost-model v1"

/* A path need not be UTF-8 (core/json_text.h). */
static json_t *path_string(const char *path)
{
    return es_json_bytes(path);
}

static json_t *digest_string(uint64_t d)
{
    char buf[32];
    snprintf(buf, sizeof buf, "xxh3-64:%016llx", (unsigned long long)d);
    return json_string(buf);
}

/* xxh3-64 of a file's bytes. */
static int file_digest(es_context *ctx, const char *path, uint64_t *out)
{
    FILE *f;
    int e = es_fopen_regular(path, &f); /* a FIFO would block, /dev/zero never end */
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot read for its digest: %s", path,
                       es_file_stream_strerror(e));
    XXH3_state_t *st = XXH3_createState();
    char buf[65536];
    size_t n;
    XXH3_64bits_reset(st);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        XXH3_64bits_update(st, buf, n);
    int bad = ferror(f);
    fclose(f);
    *out = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return bad ? es_fail(ctx, ES_ERR_IO, "%s: read error", path) : ES_OK;
}

static json_t *weights(const es_cost_model *m)
{
    const double w[ES_TERM_COUNT] = {m->w_frames, m->w_frames_sq, m->w_text, m->w_speech_tokens,
                                     m->w_missing_emb, m->w_overhead, m->w_batch};
    json_t *o = json_object();
    for (int j = 0; j < ES_TERM_COUNT; j++)
        json_object_set_new(o, es_enum_name(ES_ENUM_COST_TERM, j), json_real(w[j]));
    return o;
}

static json_t *fit_json(const es_calibration *c)
{
    const es_calibration_info *in = &c->info;
    json_t *terms = json_array();
    for (int j = 0; j < ES_TERM_COUNT; j++) {
        const es_calibration_term *t = &c->terms[j];
        json_array_append_new(terms, json_pack("{s:s, s:b, s:f, s:f, s:f}", "name", t->name,
                                               "fitted", t->fitted, "weight", t->weight, "share",
                                               t->share, "held_out_median_error_without",
                                               t->median_error_without));
    }
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:o}", "steps_read",
                     (json_int_t)in->steps_read, "warmup_dropped", (json_int_t)in->warmup_dropped,
                     "outliers_dropped", (json_int_t)in->outliers_dropped, "fit_steps",
                     (json_int_t)in->fit_steps, "held_out_steps", (json_int_t)in->held_out_steps,
                     "r2_fit", in->r2_fit, "r2_held_out", in->r2_held_out,
                     "held_out_median_error", in->median_error, "held_out_p95_error",
                     in->p95_error, "fit_median_error", in->median_error_fit, "terms", terms);
}

static json_t *provenance(es_context *ctx, const es_calibration *c, const char *const *inputs,
                          size_t n_inputs, int *rc)
{
    json_t *logs = json_array(), *costs = json_array();
    for (size_t i = 0; i < c->n_logs; i++)
        json_array_append_new(logs, json_pack("{s:o, s:o, s:I}", "path",
                                               path_string(c->logs[i].path), "digest",
                                               digest_string(c->logs[i].digest), "lines",
                                               (json_int_t)c->logs[i].lines));
    for (size_t i = 0; i < n_inputs && *rc == ES_OK; i++) {
        uint64_t d = 0;
        *rc = file_digest(ctx, inputs[i], &d);
        json_array_append_new(costs, json_pack("{s:o, s:o}", "path", path_string(inputs[i]),
                                               "digest", digest_string(d)));
    }
    char rule[160];
    snprintf(rule, sizeof rule, "fitted steps whose relative residual is more than %g scaled "
             "MADs (1.4826 x MAD) from the median, dropped once", c->s.outlier_mads);
    return json_pack("{s:s, s:o, s:o, s:s, s:I, s:I, s:s, s:s}", "equishard",
                     es_version(), "logs", logs, "costs", costs, "time_field",
                     c->time_field, "warmup_steps_per_rank", (json_int_t)c->s.warmup,
                     "held_out_every", (json_int_t)c->s.holdout_every, "outlier_rule",
                     c->s.outlier_mads > 0 ? rule : "none",
                     "fit", "non-negative least squares (Lawson-Hanson) of relative residuals");
}

ES_API int es_calibration_write_json(es_context *ctx, const es_calibration *c, const char *path,
                                     const char *const *inputs, size_t n_inputs)
{
    es_clear_error(ctx);
    if (!c || !path)
        return es_fail(ctx, ES_ERR_USAGE, "calibrate: no calibration or path");
    int rc = ES_OK;
    json_t *prov = provenance(ctx, c, inputs, n_inputs, &rc);
    json_t *doc = json_pack(
        "{s:s, s:s, s:f, s:o, s:s, s:o, s:o}", "format", MODEL_FORMAT, "units", "seconds",
        "frame_rate", c->info.model.frame_rate, "weights", weights(&c->info.model), "padding",
        "per batch of n: frames, frames_sq, text, speech_tokens = n x the longest's; missing_emb "
        "= frames of rows lacking an embedding; overhead = n; batch = 1",
        "fit", fit_json(c), "provenance", prov);
    es_strbuf text = {0};
    int bad = !doc || es_json_dump(&text, doc, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    es_strbuf_putc(&text, '\n');
    json_decref(doc);
    if (rc == ES_OK)
        rc = bad || text.oom ? es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path)
                             : es_write_output(ctx, path, text.buf, text.len);
    es_strbuf_release(&text);
    return rc;
}

ES_API int es_cost_model_read(es_context *ctx, const char *path, es_cost_model *m)
{
    es_clear_error(ctx);
    if (!path || !m)
        return es_fail(ctx, ES_ERR_USAGE, "cost model: no path or model");
    uint64_t digest;
    int rc = file_digest(ctx, path, &digest);
    if (rc != ES_OK)
        return rc;
    json_error_t err;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!doc)
        return es_fail(ctx, ES_ERR_FORMAT, "%s:%d: not JSON: %s", path, err.line, err.text);
    const char *format = json_string_value(json_object_get(doc, "format"));
    json_t *fr = json_object_get(doc, "frame_rate"), *w = json_object_get(doc, "weights");
    es_cost_model got = *m;
    if (!format || strcmp(format, MODEL_FORMAT) != 0)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: not a cost model (\"format\" is not \"%s\")", path,
                     MODEL_FORMAT);
    else if (!json_is_number(fr) || !(json_number_value(fr) > 0))
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: \"frame_rate\" is not a positive number", path);
    else if (!json_is_object(w))
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: no \"weights\" object", path);
    double *field[ES_TERM_COUNT] = {&got.w_frames, &got.w_frames_sq, &got.w_text,
                                    &got.w_speech_tokens, &got.w_missing_emb, &got.w_overhead,
                                    &got.w_batch};
    for (int j = 0; j < ES_TERM_COUNT && rc == ES_OK; j++) {
        json_t *v = json_object_get(w, es_enum_name(ES_ENUM_COST_TERM, j));
        double d = json_number_value(v);
        if (!json_is_number(v) || !(d >= 0) || !isfinite(d))
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: weights.%s is %s", path, es_enum_name(ES_ENUM_COST_TERM, j),
                         v ? "not a number >= 0" : "missing");
        *field[j] = d;
    }
    /* too large (sums overflow) or all 0 (one rank gets all): the file is damaged */
    if (rc == ES_OK && es_cost_model_check_weights(ctx, path, "weights.", &got) != ES_OK)
        rc = ES_ERR_FORMAT;
    if (rc == ES_OK) {
        got.frame_rate = json_number_value(fr);
        got.source = path;
        got.source_digest = digest;
        *m = got;
    }
    json_decref(doc);
    return rc;
}
