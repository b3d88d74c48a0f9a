/* plan.json: inputs and their digests, every parameter, the metrics and the
 * per-rank/per-worker loads. Key names are a contract (docs/PLAN.md). */
#ifndef ES_PLAN_JSON_H
#define ES_PLAN_JSON_H

#include <stdio.h>

#include "core/json_text.h"
#include "core/strbuf.h"
#include "plan/plan_internal.h"

int es_plan_json_write(es_context *ctx, const es_plan *p, FILE *fp,
                       const char *const *inputs, size_t n_inputs);

#endif
