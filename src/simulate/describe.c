/* es_describe_json: what a cost table holds, as `equishard describe` and
 * equishard.describe() print it (docs/DESCRIBE.md lists the keys). One
 * function for both, so the CLI and Python give the same JSON. Lives beside
 * the simulator: its filter section is the loader's filter over the table,
 * settled as the replay settles it. */
#include "core/context.h"
#include "costs/cost_table.h"
#include "loader/cost_model.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* numpy's default ("linear") percentile of sorted x[0..n): the value at
 * position (n-1)·q/100, interpolated between its two neighbours as
 * x[lo] + (x[hi] - x[lo])·frac. */
static double percentile(const double *x, size_t n, double q)
{
    double pos = (double)(n - 1) * q / 100.0;
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return x[lo] + (x[hi] - x[lo]) * frac;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* {"min", "p5", "p25", "p50", "p75", "p95", "p99", "max"} of x (sorted here);
 * null for none. */
static json_t *percentiles(double *x, size_t n)
{
    if (n == 0)
        return json_null();
    qsort(x, n, sizeof *x, cmp_double);
    static const char *const names[] = {"min", "p5", "p25", "p50", "p75", "p95", "p99", "max"};
    static const double qs[] = {0, 5, 25, 50, 75, 95, 99, 100};
    json_t *o = json_object();
    for (size_t i = 0; o && i < sizeof qs / sizeof qs[0]; i++)
        json_object_set_new(o, names[i], json_real(percentile(x, n, qs[i])));
    return o;
}

/* {"16000": 20, …}: how many rows have each value (keys in increasing value). */
static json_t *counts(uint32_t *v, size_t n)
{
    json_t *o = json_object();
    size_t i = 0;
    while (o && i < n) {
        size_t j = i;
        while (j < n && v[j] == v[i])
            j++;
        char key[16];
        snprintf(key, sizeof key, "%u", v[i]);
        json_object_set_new(o, key, json_integer((json_int_t)(j - i)));
        i = j;
    }
    return o;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* A speaker's row: its name and seconds, sorted by name to sum each speaker. */
typedef struct spk_secs {
    const char *spk;
    double seconds;
} spk_secs;

static int cmp_spk(const void *a, const void *b)
{
    return strcmp(((const spk_secs *)a)->spk, ((const spk_secs *)b)->spk);
}

static double seconds_of(const es_cost_row *r)
{
    return r->sample_rate && (r->flags & ES_FLAG_AUDIO) ? (double)r->samples / r->sample_rate
                                                         : -1;
}

/* The table has text-token counts: some row was counted by a tokenizer. */
static int has_text_tokens(const es_cost_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].text_tokens > 0 || (t->rows[i].flags & ES_FLAG_NO_TOKENS))
            return 1;
    return 0;
}

static json_t *speakers(spk_secs *s, size_t n, size_t *count)
{
    qsort(s, n, sizeof *s, cmp_spk);
    size_t k = 0; /* sums over s in place: s[k].seconds is speaker k's */
    for (size_t i = 0; i < n; k++) {
        size_t j = i;
        double sum = 0;
        for (; j < n && strcmp(s[j].spk, s[i].spk) == 0; j++)
            sum += s[j].seconds;
        s[k].seconds = sum;
        i = j;
    }
    double *hours = malloc(sizeof *hours * (k ? k : 1));
    if (!hours)
        return NULL;
    for (size_t i = 0; i < k; i++)
        hours[i] = s[i].seconds / 3600.0;
    *count = k;
    json_t *p = percentiles(hours, k);
    free(hours);
    return p;
}

static json_t *filter_json(const es_cost_table *t, es_loader loader, const es_cost_model *given)
{
    es_cost_model m;
    if (given)
        m = *given;
    else
        es_cost_model_defaults(&m);
    es_cost_model_settle(&m, t, loader);
    uint64_t by[ES_DROP_REASONS] = {0}, uncounted = 0;
    for (size_t i = 0; i < t->n; i++) {
        es_cost_row row;
        es_cost_table_row(t, i, &row);
        by[es_filter_row(&m, &row)]++;
        uncounted += m.token_chars <= 0 && !es_row_has_tokens(&row);
    }
    json_t *f = json_object(), *reasons = json_object();
    uint64_t dropped = 0;
    for (int r = 1; r < ES_DROP_REASONS; r++) {
        dropped += by[r];
        json_object_set_new(reasons, es_filter_reason_name((es_filter_reason)r),
                            json_integer((json_int_t)by[r]));
    }
    json_object_set_new(f, "loader", json_string(loader == ES_LOADER_WENET ? "wenet" : "cosyvoice"));
    json_object_set_new(f, "kept", json_integer((json_int_t)by[ES_KEEP]));
    json_object_set_new(f, "filtered", json_integer((json_int_t)dropped));
    json_object_set_new(f, "filtered_by_reason", reasons);
    /* what the token limits count, and the rows they could not be applied to
     * (no text-token count: measured without a tokenizer) */
    json_object_set_new(f, "token_limits_on",
                        json_string(m.token_chars > 0 ? "characters" : "tokens"));
    json_object_set_new(f, "rows_without_token_count", json_integer((json_int_t)uncounted));
    return f;
}

static json_t *describe(const es_cost_table *t, es_loader loader, const es_cost_model *model,
                        double *dur, uint32_t *rates, uint32_t *chans, double *text,
                        spk_secs *spk)
{
    size_t n_dur = 0, n_text = 0, n_spk = 0;
    uint64_t miss_audio = 0, miss_text = 0, miss_utt = 0, miss_spk_emb = 0, miss_speech = 0,
             miss_spk = 0;
    double total = 0;
    int tokens = has_text_tokens(t);
    for (size_t i = 0; i < t->n; i++) {
        const es_cost_row *r = &t->rows[i];
        double s = seconds_of(r);
        if (s >= 0) {
            dur[n_dur++] = s;
            total += s;
        } else {
            miss_audio++;
        }
        rates[i] = r->sample_rate;
        chans[i] = r->channels;
        if (r->flags & ES_FLAG_TEXT)
            text[n_text++] = tokens ? r->text_tokens : r->text_len;
        else
            miss_text++;
        miss_utt += !(r->flags & ES_FLAG_UTT_EMB);
        miss_spk_emb += !(r->flags & ES_FLAG_SPK_EMB);
        miss_speech += r->speech_tokens == 0;
        if (r->spk && *r->spk)
            spk[n_spk++] = (spk_secs){r->spk, s >= 0 ? s : 0};
        else
            miss_spk++;
    }
    qsort(rates, t->n, sizeof *rates, cmp_u32);
    qsort(chans, t->n, sizeof *chans, cmp_u32);
    size_t n_speakers = 0;
    json_t *hours_per = speakers(spk, n_spk, &n_speakers);
    json_t *o = json_object(), *sp = json_object(), *tx = json_object(), *miss = json_object();
    if (!o || !sp || !tx || !miss || !hours_per) {
        json_decref(o), json_decref(sp), json_decref(tx), json_decref(miss);
        json_decref(hours_per);
        return NULL;
    }
    json_object_set_new(o, "utterances", json_integer((json_int_t)t->n));
    json_object_set_new(o, "seconds", json_real(total));
    json_object_set_new(o, "hours", json_real(total / 3600.0));
    json_object_set_new(o, "duration_seconds", percentiles(dur, n_dur));
    json_object_set_new(o, "sample_rates", counts(rates, t->n));
    json_object_set_new(o, "channels", counts(chans, t->n));
    json_object_set_new(tx, "unit", json_string(tokens ? "tokens" : "characters"));
    json_object_set_new(tx, "utterances", json_integer((json_int_t)n_text));
    json_object_set_new(tx, "percentiles", percentiles(text, n_text));
    json_object_set_new(o, "text", tx);
    json_object_set_new(sp, "count", json_integer((json_int_t)n_speakers));
    json_object_set_new(sp, "hours_per_speaker", hours_per);
    json_object_set_new(o, "speakers", sp);
    json_object_set_new(miss, "audio", json_integer((json_int_t)miss_audio));
    json_object_set_new(miss, "text", json_integer((json_int_t)miss_text));
    json_object_set_new(miss, "speaker", json_integer((json_int_t)miss_spk));
    json_object_set_new(miss, "utt_emb", json_integer((json_int_t)miss_utt));
    json_object_set_new(miss, "spk_emb", json_integer((json_int_t)miss_spk_emb));
    json_object_set_new(miss, "speech_tokens", json_integer((json_int_t)miss_speech));
    json_object_set_new(o, "missing", miss);
    json_object_set_new(o, "filter", filter_json(t, loader, model));
    return o;
}

ES_API int es_describe_json(es_context *ctx, const es_cost_table *t, es_loader loader,
                            const es_cost_model *model, char **json)
{
    if (!json)
        return es_fail(ctx, ES_ERR_USAGE, "es_describe_json: no output pointer");
    *json = NULL;
    if (!t)
        return es_fail(ctx, ES_ERR_USAGE, "es_describe_json: no table");
    if (loader != ES_LOADER_COSYVOICE && loader != ES_LOADER_WENET)
        return es_fail(ctx, ES_ERR_USAGE, "es_describe_json: unknown loader %d", (int)loader);
    size_t n = t->n ? t->n : 1;
    double *dur = malloc(sizeof *dur * n), *text = malloc(sizeof *text * n);
    uint32_t *rates = malloc(sizeof *rates * n), *chans = malloc(sizeof *chans * n);
    spk_secs *spk = malloc(sizeof *spk * n);
    json_t *o = dur && text && rates && chans && spk
                    ? describe(t, loader, model, dur, rates, chans, text, spk)
                    : NULL;
    free(dur), free(text), free(rates), free(chans), free(spk);
    /* two-space indent, keys in the order set: the documented order */
    *json = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))
              : NULL;
    json_decref(o);
    if (!*json)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory describing the table");
    return ES_OK;
}

ES_API void es_free(void *p)
{
    free(p);
}
