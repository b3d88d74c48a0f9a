/* The data checks that need the loader model (docs/VALIDATE.md): `filtered`,
 * the rows the loader's filter drops, and `imbalance`, the loader's own split
 * of the list replayed by es_simulate. See es_validate_data in the header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costs/cost_table.h"
#include "loader/cost_model.h"
#include "validate/validate_result.h"

_Static_assert(ES_DROP_REASONS <= 16, "es_validate_result.filtered is too small");

void es_validate_data_defaults(es_validate_data_settings *s)
{
    memset(s, 0, sizeof *s);
    es_cost_model_defaults(&s->model);
    s->loader = ES_LOADER_COSYVOICE;
    s->workers = 1;
    s->max_imbalance = 0.05;
}

static int check_filtered(const es_validate_data_settings *s, const es_cost_table *t,
                          es_validate_result *r)
{
    size_t n = es_cost_table_size(t);
    for (size_t i = 0; i < n; i++) {
        es_cost_row row;
        if (es_cost_table_row(t, i, &row) != ES_OK)
            continue;
        es_filter_reason why = es_filter_row(&s->model, &row);
        if (why == ES_KEEP)
            continue;
        r->filtered[why]++;
        es_vresult_add(r, ES_CHECK_FILTERED, ES_KIND_DATA, row.key, ES_NO_ROW, (double)why,
                       es_filter_reason_name(why), ES_NO_ROW, i);
    }
    return ES_OK;
}

/* max/mean − 1 of the ranks' frames in epoch e; 0 when no frames. */
static int frames_imbalance(const es_simulate_result *sim, size_t e, uint32_t k, double *out)
{
    double sum = 0, max = 0;
    for (uint32_t rank = 0; rank < k; rank++) {
        es_simulate_rank ri;
        if (es_simulate_rank_info(sim, e, rank, -1, &ri) != ES_OK)
            return ES_ERR_INTERNAL;
        sum += (double)ri.frames;
        if ((double)ri.frames > max)
            max = (double)ri.frames;
    }
    double mean = sum / k;
    *out = mean > 0 ? max / mean - 1 : 0;
    return ES_OK;
}

static int check_imbalance(es_context *ctx, const es_validate_data_settings *s,
                           const es_cost_table *t, es_validate_result *r)
{
    es_simulate_settings ss;
    es_simulate_defaults(&ss, s->loader);
    ss.world_size = s->world_size;
    ss.workers = s->workers ? s->workers : 1;
    ss.model = s->model;
    ss.plan_side = 0;
    es_simulate_result *sim = NULL;
    int rc = es_simulate(ctx, &ss, t, &sim);
    for (size_t e = 0; rc == ES_OK && e < es_simulate_epoch_count(sim); e++) {
        es_simulate_epoch ep;
        double imbalance = 0;
        rc = es_simulate_epoch_info(sim, e, &ep);
        if (rc == ES_OK)
            rc = frames_imbalance(sim, e, ss.world_size, &imbalance);
        if (rc != ES_OK) {
            rc = es_fail(ctx, ES_ERR_INTERNAL, "validate: simulate result incomplete");
            break;
        }
        /* no batches at all (everything filtered): nothing is cut by the join */
        double retention = ep.total_batches > 0 ? ep.retention : 1.0;
        if (e == 0) {
            r->imbalance = imbalance;
            r->retention = retention;
        }
        if (imbalance > s->max_imbalance || retention < 1 - s->max_imbalance) {
            char key[48], text[96];
            snprintf(key, sizeof key, "epoch %lld", (long long)ep.epoch);
            snprintf(text, sizeof text, "imbalance %.4f retention %.4f", imbalance, retention);
            es_vresult_add(r, ES_CHECK_IMBALANCE, ES_KIND_DATA, key, ES_NO_ROW, imbalance, text,
                           ES_NO_ROW, e);
            if (!r->oom)
                r->items[r->n - 1].value2 = retention;
        }
    }
    es_simulate_result_free(sim);
    return rc;
}

int es_validate_data(es_context *ctx, const es_validate_data_settings *s, const es_cost_table *t,
                     es_validate_result *r)
{
    es_clear_error(ctx);
    if (!s || !t || !r)
        return es_fail(ctx, ES_ERR_USAGE, "validate: no settings, table or result");
    if (s->loader != ES_LOADER_COSYVOICE && s->loader != ES_LOADER_WENET)
        return es_fail(ctx, ES_ERR_USAGE, "validate: unknown loader %d", (int)s->loader);
    if (!(s->max_imbalance >= 0))
        return es_fail(ctx, ES_ERR_USAGE, "validate: max imbalance must be >= 0");
    r->data = *s;
    es_cost_model_settle(&r->data.model, t, s->loader);
    es_token_gap(&r->data.model, t, &r->token_gap);
    es_token_gap_note(&r->token_gap, r->token_note, sizeof r->token_note);
    free(r->tokenizer);
    if (!(r->tokenizer = t->tokenizer ? strdup(t->tokenizer) : NULL) && t->tokenizer)
        return es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    r->data_checked = 1;
    memset(r->filtered, 0, sizeof r->filtered);
    int rc = check_filtered(&r->data, t, r);
    if (rc == ES_OK && s->world_size > 0) {
        r->imbalance_checked = 1;
        rc = check_imbalance(ctx, &r->data, t, r);
    }
    if (rc == ES_OK)
        rc = es_vresult_finish(ctx, r);
    return rc;
}
