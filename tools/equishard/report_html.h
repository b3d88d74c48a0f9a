/* The HTML report of `equishard report OUTDIR --html FILE` and `equishard
 * simulate ... --html FILE` (docs/REPORT.md): one self-contained page (inline
 * SVG and CSS, a few lines of script, nothing fetched) telling the story of a
 * plan: the recipe's own split against the plan per epoch, cost per rank,
 * the lengths and the filter, token counts, hours per speaker, validate's
 * findings. Written atomically; same inputs, same bytes. */
#ifndef ES_REPORT_HTML_H
#define ES_REPORT_HTML_H
#include <jansson.h>
#include <stdio.h>

#include "cli.h"

typedef struct report_html_in {
    const char *title;          /* the page's heading */
    const char *source;         /* one line: what was read and run */
    json_t *plan;               /* plan.json (report), or NULL */
    json_t *sim;                /* the simulation's JSON (docs/SIMULATE.md), or NULL */
    const char *sim_missing;    /* why there is no simulation, or NULL */
    const es_cost_table *table; /* the measured rows, or NULL */
    json_t *validate;           /* `validate --json`'s report, or NULL */
} report_html_in;

/* Writes the page to path (es_write_output: atomic, "-" is standard output). */
int report_html_write(es_context *ctx, const char *path, const report_html_in *in);

/* The cost-per-rank chart (shared with `report --svg`): plan.json-shaped
 * ranks[] ({"cost"}), the lower bound (<= 0: none), the cost model
 * ({"w_*", "source"}: the unit), zoomed around the mean so that 0.1 % shows. */
void report_cost_chart(FILE *fp, const char *id, const char *title, json_t *ranks,
                       double lower_bound, json_t *cost_model);

/* The simulation's JSON (es_simulate_write_json_fd) parsed: ES_OK, or an
 * es_status with ctx's message. */
int report_sim_json(es_context *ctx, const es_simulate_result *r, json_t **out);

/* A JSON file a report reads (--validate FILE): the document, or NULL after
 * one line on stderr naming path (and line) and the problem. */
json_t *report_load_json(const char *path);

#endif
