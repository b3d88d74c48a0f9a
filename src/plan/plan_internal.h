/* The plan in memory, shared by the mode builders (plan_shard.c, plan_batch.c,
 * plan_reshard.c), the metrics they share (plan_metrics.c), the accessors
 * (plan_access.c) and the writers in src/write/ (plan_write_shard.c, plan_json.c, the
 * reshard copiers), which only read it, but for the format and compression the
 * reshard writer settles (plan_reshard.h).
 *
 * Invariants: `kept` lists the table rows the filter keeps, in table order;
 * loads[r * W + w] is worker w of rank r; rank totals are the sums of their
 * workers. In shard mode every kept row belongs to one element, and every
 * element to one (rank, worker). In batch mode every batch lists its rows
 * (indices into the table) in batch_rows[begin, end). */
#ifndef ES_PLAN_INTERNAL_H
#define ES_PLAN_INTERNAL_H

#include "core/context.h"
#include "costs/cost_table.h"
#include "loader/cost_model.h"

/* A list entry the loader hands out whole: a shard, or one row of a raw list. */
typedef struct plan_element {
    size_t first_row;   /* table row that names it (its shard string) */
    int is_item;        /* a row-level entry (ES_FLAG_ITEM) */
    double cost;        /* kept rows' total */
    uint32_t rank, worker;
} plan_element;

typedef struct plan_batch {
    size_t begin, end;  /* into batch_rows */
    double cost;
    uint32_t longest;   /* frames of the longest utterance */
    uint64_t frames;    /* sum of frames */
    uint32_t rank, worker;
    uint64_t step;
    int repeat;         /* a padding copy of another batch (ES_REMAINDER_PAD) */
} plan_batch;

/* The lists as the loaders read them (plan_access.c), built by es_plan_build.
 * Shard mode: group g = rank·W + worker holds order[start[g] .. start[g + 1]),
 * list order; interleaved[] over the same ranges of a rank is its rank-R.list.
 * Batch mode: rank r's batches in step order are by_rank[start[r] .. start[r + 1]). */
typedef struct plan_index {
    size_t *order, *interleaved, *start;
    const plan_batch **by_rank;
    struct plan_raw_lines *raw; /* raw-list lines, read on first use */
} plan_index;

struct es_plan {
    es_plan_settings s;
    const es_cost_table *table; /* borrowed; must outlive the plan */
    uint32_t K, W;
    es_fill fill;       /* the context's flags for big arrays (core/bigarray.h): ES_FILL_AHEAD
                           unless its pages_ahead is off, ES_FILL_NO_HUGE when huge_pages is */
    /* filter */
    size_t *kept;
    size_t n_kept;
    uint64_t filtered[ES_DROP_REASONS];
    const unsigned char *leave_out; /* es_plan_build_subset's mask, during the build only */
    uint64_t left_out;  /* rows the mask left out (not counted as filtered) */
    uint32_t *frames;   /* per table row (0 for dropped rows) */
    double *cost;       /* per table row */
    /* shard mode */
    plan_element *elements;
    size_t n_elements;
    size_t *element_of_row; /* per table row; SIZE_MAX for dropped rows */
    /* batch mode */
    plan_batch *batches;
    size_t n_batches;
    size_t *batch_rows;
    size_t n_batch_rows;
    size_t *carried;    /* ES_REMAINDER_CARRY/DROP: rows left out of this epoch */
    size_t n_carried;
    /* reshard mode (plan_reshard.h) */
    struct plan_reshard *reshard;
    /* results */
    es_plan_load *loads; /* K × W */
    es_plan_metrics metrics;
    plan_index index;
    es_token_gap_counts token_gap; /* rows the token filters could not judge */
    char token_note[320];
};

/* Mode builders: fill elements/batches, loads and the mode's metrics. */
int es_plan_build_shard(es_context *ctx, es_plan *p);
int es_plan_build_batch(es_context *ctx, es_plan *p);
int es_plan_build_reshard(es_context *ctx, es_plan *p);
void es_plan_reshard_free(struct plan_reshard *r);

/* The index above (after the mode builder), and its release. */
int es_plan_index_build(es_context *ctx, es_plan *p);
void es_plan_index_release(plan_index *x);

/* es_plan_settings.build_progress: the build is PLAN_PASSES passes over the
 * table's n rows (check, filter, place, index), reported as row passes: pass
 * `pass` is `part` of `parts` through, i.e. done = pass·n + n·part/parts of
 * PLAN_PASSES·n. Callers go forward only, so done never falls; the last call
 * (PLAN_PASS_INDEX, parts of parts) reports total. Rows in a pass are
 * reported every PLAN_PROGRESS_ROWS at most: the callback costs nothing
 * measurable. */
enum { PLAN_PASS_CHECK, PLAN_PASS_FILTER, PLAN_PASS_PLACE, PLAN_PASS_INDEX, PLAN_PASSES };
#define PLAN_PROGRESS_ROWS 65536
void es_plan_progress(const es_plan *p, unsigned pass, size_t part, size_t parts);

/* Common metrics from loads (imbalance, spread, retention); lower_bound must be set. */
void es_plan_finish_metrics(es_plan *p);

/* Predicted batches of one worker's stream of rows under the loader's sort
 * buffer and batching rule (no shuffle: the expectation's deterministic core). */
uint64_t es_plan_predict_batches(const es_plan *p, const size_t *rows, size_t n);

#endif
