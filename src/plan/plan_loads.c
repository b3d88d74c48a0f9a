/* A built plan's numbers read back: its metrics, the filter's counts, the
 * loads of ranks and workers, the tokenizer note. Apart from plan.c, which
 * builds the plan: plan_metrics.c sums the rank loads as every builder
 * finishes, and the builders are called by plan.c, so the accessors sit
 * below both. */
#include <string.h>

#include "plan/plan_internal.h"

ES_API int es_plan_get_metrics(const es_plan *p, es_plan_metrics *m)
{
    if (!p || !m)
        return ES_ERR_USAGE;
    *m = p->metrics;
    m->filtered_by_reason = p->filtered;
    m->token_note = p->token_note;
    return ES_OK;
}

ES_API int es_plan_rank_load(const es_plan *p, uint32_t rank, int32_t worker, es_plan_load *out)
{
    if (!p || !out || rank >= p->K || (worker >= 0 && (uint32_t)worker >= p->W))
        return ES_ERR_USAGE;
    if (worker >= 0) {
        *out = p->loads[(size_t)rank * p->W + (uint32_t)worker];
        return ES_OK;
    }
    memset(out, 0, sizeof *out);
    for (uint32_t w = 0; w < p->W; w++) {
        const es_plan_load *l = &p->loads[(size_t)rank * p->W + w];
        out->cost += l->cost;
        out->utterances += l->utterances;
        out->frames += l->frames;
        out->batches += l->batches;
    }
    return ES_OK;
}

