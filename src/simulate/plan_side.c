/* HOOK — the plan side by side: simulate also shows what `equishard plan` would
 * give for the same data, so the loader's imbalance has a point of comparison.
 * For the same table, world size, workers, filter and batching rule, runs the
 * planner in shard and batch mode and keeps its metrics and per-rank loads, so
 * reports show the loader's split next to equishard's. The planner's own
 * failures never fail the simulation: they are recorded in the side's `error`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulate/simulate_internal.h"

static void plan_one(const es_context *parent, sim_plan_side *side, es_plan_mode mode,
                     const es_simulate_settings *s, const es_cost_table *t)
{
    es_plan_settings ps;
    es_plan_defaults(&ps);
    ps.world_size = s->world_size;
    ps.workers = s->workers;
    ps.mode = mode;
    ps.model = s->model;
    ps.max_frames_in_batch = s->max_frames_in_batch;
    ps.batch_size = s->batch_size;
    ps.sort_size = s->sort_size;
    ps.seed = s->seed;
    ps.epoch = s->epoch_first;
    side->ranks = calloc(s->world_size, sizeof *side->ranks);
    es_context *ctx = es_context_new_like(parent); /* the caller's settings */
    es_plan *p = NULL;
    if (!side->ranks || !ctx) {
        snprintf(side->error, sizeof side->error, "out of memory");
    } else if (es_plan_build(ctx, &ps, t, &p) != ES_OK) {
        snprintf(side->error, sizeof side->error, "%s", es_errmsg(ctx));
    } else {
        es_plan_get_metrics(p, &side->metrics);
        /* the method string belongs to the plan: keep a copy */
        snprintf(side->method, sizeof side->method, "%s",
                 side->metrics.method ? side->metrics.method : "");
        side->metrics.method = side->method;
        side->metrics.filtered_by_reason = NULL; /* the replay's input has them */
        side->metrics.token_note = "";
        for (uint32_t k = 0; k < s->world_size; k++)
            es_plan_rank_load(p, k, -1, &side->ranks[k]);
        side->available = 1;
    }
    es_plan_free(p);
    es_context_free(ctx);
}

void es_sim_plan_side(const es_context *ctx, es_simulate_result *r, const es_cost_table *t)
{
    static const struct {
        const char *name;
        es_plan_mode mode;
    } modes[SIM_PLAN_MODES] = {{"shard", ES_PLAN_SHARD}, {"batch", ES_PLAN_BATCH}};
    for (int i = 0; i < SIM_PLAN_MODES; i++) {
        r->plan[i].mode = modes[i].name;
        plan_one(ctx, &r->plan[i], modes[i].mode, &r->s, t);
    }
}

void es_sim_plan_side_release(es_simulate_result *r)
{
    for (int i = 0; i < SIM_PLAN_MODES; i++) {
        free(r->plan[i].ranks);
        r->plan[i].ranks = NULL;
    }
}

ES_API int es_simulate_plan_info(const es_simulate_result *r, size_t i, es_simulate_plan *out)
{
    if (!r || !out || i >= SIM_PLAN_MODES)
        return ES_ERR_USAGE;
    const sim_plan_side *side = &r->plan[i];
    memset(out, 0, sizeof *out);
    out->mode = i == 0 ? "shard" : "batch";
    out->available = side->available;
    out->error = side->available ? "" : side->error[0] ? side->error : "not planned";
    if (side->available)
        out->metrics = side->metrics;
    return ES_OK;
}

ES_API int es_simulate_plan_rank(const es_simulate_result *r, size_t i, uint32_t rank,
                                 es_plan_load *out)
{
    if (!r || !out || i >= SIM_PLAN_MODES || rank >= r->s.world_size || !r->plan[i].available)
        return ES_ERR_USAGE;
    *out = r->plan[i].ranks[rank];
    return ES_OK;
}
