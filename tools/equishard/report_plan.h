/* A plan OUTDIR for the reports (report, simulate --plan --html): opened with
 * es_plan_dir_open, the one reader of plan.json, and shown to report_html.c's
 * and the SVG chart's drawing code as the plan.json-shaped document they draw
 * from, built from the reader's values (not from the file). */
#ifndef ES_REPORT_PLAN_H
#define ES_REPORT_PLAN_H
#include <jansson.h>

#include "cli.h"

/* {"parameters": {"mode", "world_size", "workers", "cost_model": {…, "source"},
 * "filter": {…}}, "metrics": {"imbalance", "lower_bound", "lower_bound_gap",
 * "batch_spread", "retention", "step_straggler", "kept", "filtered": {reason:
 * count}}, "ranks": [{"rank", "cost", "utterances", "frames", "batches"}]};
 * NULL when out of memory. */
json_t *report_plan_view(const es_plan_dir *d);

#endif
