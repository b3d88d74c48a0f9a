/* The simulation as JSON (docs/SIMULATE.md). Keys are a contract users' scripts
 * read: add, never rename. Insertion order is the output order; reals are
 * rounded to fixed decimals so the same result gives the same bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "core/json_text.h"
#include "simulate/simulate_internal.h"

/* Reals with 6 decimals (hours: 3.6 ms) print the same everywhere. */
static json_t *real(double v)
{
    return json_real(round(v * 1e6) / 1e6);
}

static json_t *u64(uint64_t v)
{
    return json_integer((json_int_t)v);
}

#define SET(obj, key, val) json_object_set_new((obj), (key), (val))

static json_t *names_of(const es_simulate_result *r, const uint32_t *items, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, es_json_bytes(r->names + r->name_at[items[i]]));
    return a;
}

static void put_stats(json_t *o, const es_simulate_result *r, const sim_stats *st)
{
    es_simulate_rank v;
    memset(&v, 0, sizeof v);
    SET(o, "utterances", u64(st->utterances));
    SET(o, "frames", u64(st->frames));
    SET(o, "hours", real(st->seconds / 3600));
    SET(o, "batches", real(es_sim_mean(r, st->b_sum)));
    SET(o, "batches_min", u64(st->b_min));
    SET(o, "batches_max", u64(st->b_max));
    SET(o, "batches_stddev", real(es_sim_stddev(r, st->b_sum, st->b_sq)));
    SET(o, "trained_batches", real(es_sim_mean(r, st->trained_sum)));
    SET(o, "skipped_utterances", real(es_sim_mean(r, st->skip_utts)));
    SET(o, "skipped_frames", real(es_sim_mean(r, st->skip_frames)));
    SET(o, "skipped_hours", real(es_sim_mean(r, st->skip_seconds) / 3600));
}

static json_t *trials_array(const uint64_t *v, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t t = 0; t < n; t++)
        json_array_append_new(a, u64(v[t]));
    return a;
}

static json_t *rank_json(const es_simulate_result *r, const sim_epoch *ep, uint32_t k)
{
    const es_loader_split *sp = &ep->split;
    uint32_t W = r->s.workers;
    json_t *o = json_object();
    SET(o, "rank", u64(k));
    SET(o, "shards", names_of(r, sp->rank_items + sp->rank_start[k],
                              sp->rank_start[k + 1] - sp->rank_start[k]));
    put_stats(o, r, &ep->ranks[k]);
    SET(o, "batches_trials", trials_array(ep->rank_batches + (size_t)k * r->trials, r->trials));
    json_t *workers = json_array();
    for (uint32_t w = 0; w < W; w++) {
        size_t u = (size_t)k * W + w;
        json_t *wo = json_object();
        SET(wo, "worker", u64(w));
        SET(wo, "shards", names_of(r, sp->items + sp->worker_start[u],
                                   sp->worker_start[u + 1] - sp->worker_start[u]));
        put_stats(wo, r, &ep->workers[u]);
        json_array_append_new(workers, wo);
    }
    SET(o, "workers", workers);
    return o;
}

/* Predicted step time (step_time.c): seconds with a calibrated model. */
static json_t *step_time_json(const es_simulate_result *r, size_t e)
{
    es_simulate_step_time st;
    double *rank = calloc(r->s.world_size, sizeof *rank);
    es_simulate_step_time_info(r, e, &st, rank);
    json_t *ranks = json_array();
    for (uint32_t k = 0; rank && k < r->s.world_size; k++)
        json_array_append_new(ranks, real(rank[k]));
    free(rank);
    json_t *o = json_object();
    SET(o, "unit", json_string(r->s.model.source ? "seconds" : "cost"));
    SET(o, "steps", real(st.steps));
    SET(o, "straggler", real(st.straggler));
    SET(o, "epoch_seconds", real(st.epoch_seconds));
    SET(o, "ideal_seconds", real(st.ideal_seconds));
    SET(o, "ranks", ranks);
    return o;
}

static json_t *epoch_json(const es_simulate_result *r, size_t e)
{
    const sim_epoch *ep = &r->epochs[e];
    es_simulate_epoch info;
    es_simulate_epoch_info(r, e, &info);
    json_t *o = json_object();
    SET(o, "epoch", json_integer((json_int_t)ep->epoch));
    json_t *ranks = json_array();
    double lo = 0, hi = 0;
    for (uint32_t k = 0; k < r->s.world_size; k++) {
        json_array_append_new(ranks, rank_json(r, ep, k));
        double b = es_sim_mean(r, ep->ranks[k].b_sum);
        lo = k == 0 || b < lo ? b : lo;
        hi = k == 0 || b > hi ? b : hi;
    }
    SET(o, "ranks", ranks);
    SET(o, "min_batches", real(info.min_batches));
    SET(o, "retention", real(info.retention));
    SET(o, "min_batches_trials", trials_array(ep->min_batches, r->trials));
    SET(o, "total_batches", real(info.total_batches));
    SET(o, "batch_spread", real(hi - lo));
    SET(o, "utterances", u64(info.utterances));
    SET(o, "frames", u64(info.frames));
    SET(o, "hours", real(info.seconds / 3600));
    SET(o, "skipped_batches", real(info.skipped_batches));
    SET(o, "skipped_utterances", real(info.skipped_utterances));
    SET(o, "skipped_frames", real(info.skipped_frames));
    SET(o, "skipped_hours", real(info.skipped_seconds / 3600));
    SET(o, "empty_first_batches", u64(info.empty_first_batches));
    SET(o, "step_time", step_time_json(r, e));
    return o;
}

static json_t *parameters_json(const es_simulate_result *r)
{
    const es_simulate_settings *s = &r->s;
    json_t *o = json_object();
    SET(o, "loader", json_string(es_enum_name(ES_ENUM_LOADER, s->loader)));
    SET(o, "world_size", u64(s->world_size));
    SET(o, "workers", u64(s->workers));
    SET(o, "epochs", json_pack("[II]", (json_int_t)s->epoch_first, (json_int_t)s->epoch_last));
    SET(o, "list_shuffle", json_boolean(s->list_shuffle));
    SET(o, "partition", json_boolean(s->partition));
    SET(o, "plan", r->plan_dir ? es_json_bytes(r->plan_dir) : json_null()); /* simulate --plan */
    SET(o, "shuffle_size", u64(s->shuffle_size));
    SET(o, "sort_size", u64(s->sort_size));
    SET(o, "batch_type", json_string(s->batch_size ? "static" : "dynamic"));
    SET(o, "max_frames_in_batch", u64(s->max_frames_in_batch));
    SET(o, "batch_size", u64(s->batch_size));
    SET(o, "trials", u64(r->trials));
    SET(o, "seed", u64(s->seed));
    const es_cost_model *m = &s->model;
    SET(o, "frame_rate", real(m->frame_rate));
    json_t *cm = json_object();
    for (int j = 0; j < ES_TERM_COUNT; j++) {
        const double w[ES_TERM_COUNT] = {m->w_frames, m->w_frames_sq, m->w_text, m->w_speech_tokens,
                                         m->w_missing_emb, m->w_overhead, m->w_batch};
        SET(cm, es_enum_name(ES_ENUM_COST_TERM, j), real(w[j]));
    }
    json_t *src = json_null();
    if (m->source) {
        char digest[32];
        snprintf(digest, sizeof digest, "xxh3-64:%016llx", (unsigned long long)m->source_digest);
        src = json_pack("{s:o, s:s}", "path", es_json_bytes(m->source), "digest", digest);
    }
    SET(cm, "source", src);
    SET(o, "cost_model", cm);
    json_t *f = json_object();
    SET(f, "min_length", real(m->min_length));
    SET(f, "max_length", real(m->max_length));
    SET(f, "token_min_length", u64(m->token_min_length));
    SET(f, "token_max_length", u64(m->token_max_length));
    SET(f, "min_output_input_ratio", real(m->min_output_input_ratio));
    SET(f, "max_output_input_ratio", real(m->max_output_input_ratio));
    SET(f, "require_speech_token", json_boolean(m->require_speech_token));
    SET(o, "filter", f);
    return o;
}

static json_t *input_json(const es_simulate_result *r)
{
    json_t *o = json_object();
    SET(o, "entries", u64(r->n_entries));
    SET(o, "utterances", u64(r->rows));
    SET(o, "kept", u64(r->kept));
    json_t *f = json_object();
    for (int why = 1; why < ES_DROP_REASONS; why++)
        SET(f, es_filter_reason_name((es_filter_reason)why), u64(r->filtered[why]));
    SET(o, "filtered", f);
    SET(o, "frames", u64(r->kept_frames));
    SET(o, "hours", real(r->kept_seconds / 3600));
    return o;
}

static json_t *summary_json(const es_simulate_result *r)
{
    double total = 0, trained = 0, utts = 0, secs = 0, min_sum = 0;
    for (size_t e = 0; e < r->n_epochs; e++) {
        es_simulate_epoch info;
        es_simulate_epoch_info(r, e, &info);
        total += info.total_batches;
        min_sum += info.min_batches;
        trained += info.total_batches - info.skipped_batches;
        utts += info.skipped_utterances;
        secs += info.skipped_seconds;
    }
    json_t *o = json_object();
    SET(o, "epochs", u64(r->n_epochs));
    SET(o, "total_batches", real(total));
    SET(o, "trained_batches", real(trained));
    SET(o, "retention", real(total > 0 ? r->s.world_size * min_sum / total : 0));
    SET(o, "skipped_utterances", real(utts));
    SET(o, "skipped_hours", real(secs / 3600));
    return o;
}

static json_t *plan_json(const es_simulate_result *r)
{
    json_t *o = json_object();
    for (int i = 0; i < SIM_PLAN_MODES; i++) {
        const sim_plan_side *side = &r->plan[i];
        json_t *m = json_object();
        SET(m, "available", json_boolean(side->available));
        if (!side->available) {
            SET(m, "error", es_json_bytes(side->error[0] ? side->error : "not planned"));
        } else {
            const es_plan_metrics *x = &side->metrics;
            double lo = 0;
            json_t *ranks = json_array();
            for (uint32_t k = 0; k < r->s.world_size; k++) {
                const es_plan_load *l = &side->ranks[k];
                json_array_append_new(ranks, json_pack("{s:I,s:o,s:I,s:I,s:I}", "rank",
                                                       (json_int_t)k, "cost", real(l->cost),
                                                       "utterances", (json_int_t)l->utterances,
                                                       "frames", (json_int_t)l->frames,
                                                       "batches", (json_int_t)l->batches));
                lo = k == 0 || (double)l->batches < lo ? (double)l->batches : lo;
            }
            SET(m, "ranks", ranks);
            SET(m, "min_batches", real(lo));
            SET(m, "retention", real(x->retention));
            SET(m, "total_batches", u64(x->total_batches));
            SET(m, "batch_spread", u64(x->batch_spread));
            SET(m, "imbalance", real(x->imbalance));
            SET(m, "lower_bound_gap", real(x->lower_bound_gap));
            SET(m, "method", json_string(x->method ? x->method : ""));
        }
        SET(o, side->mode ? side->mode : (i == 0 ? "shard" : "batch"), m);
    }
    return o;
}

/* The JSON text and a line break in *text; -1 when out of memory. Names and paths
 * need not be UTF-8 (core/json_text.h). */
static int dump(const es_simulate_result *r, es_strbuf *text)
{
    json_t *o = json_object();
    SET(o, "equishard", json_string(es_version()));
    SET(o, "command", json_string("simulate"));
    SET(o, "parameters", parameters_json(r));
    SET(o, "input", input_json(r));
    SET(o, "text_tokens", es_token_report(&r->s.model, &r->token_gap, r->token_note, NULL,
                                          r->tokenizer));
    json_t *epochs = json_array();
    for (size_t e = 0; e < r->n_epochs; e++)
        json_array_append_new(epochs, epoch_json(r, e));
    SET(o, "epochs", epochs);
    SET(o, "summary", summary_json(r));
    SET(o, "plan", r->s.plan_side ? plan_json(r) : json_null());
    int bad = es_json_dump(text, o, JSON_INDENT(1) | JSON_REAL_PRECISION(15));
    es_strbuf_putc(text, '\n');
    json_decref(o);
    return bad || text->oom ? -1 : 0;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

ES_API int es_simulate_write_json_fd(es_context *ctx, const es_simulate_result *r, int fd)
{
    es_clear_error(ctx);
    if (!r)
        return es_fail(ctx, ES_ERR_USAGE, "es_simulate_write_json_fd: invalid arguments");
    es_strbuf text = {0};
    if (dump(r, &text)) {
        es_strbuf_release(&text);
        return es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    }
    int failed = write_all(fd, text.buf, text.len);
    es_strbuf_release(&text);
    return failed ? es_fail(ctx, ES_ERR_IO, "simulate: cannot write the JSON") : ES_OK;
}

ES_API int es_simulate_write_json(es_context *ctx, const es_simulate_result *r, const char *path)
{
    es_clear_error(ctx);
    if (!r || !path)
        return es_fail(ctx, ES_ERR_USAGE, "es_simulate_write_json: invalid arguments");
    es_strbuf text = {0};
    int rc = dump(r, &text) ? es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory")
                            : es_write_output(ctx, path, text.buf, text.len);
    es_strbuf_release(&text);
    return rc;
}
