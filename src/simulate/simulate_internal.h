/* The simulation result in memory, shared by the driver (simulate.c), the JSON
 * writer (simulate_json.c) and the plan side (plan_side.c).
 *
 * Invariants: per epoch, ranks[r] sums workers[r*W + w]; batch statistics are
 * over `trials` draws (1 when the rules draw nothing); split arrays index
 * `names` (the list entries, in list order). */
#ifndef ES_SIMULATE_INTERNAL_H
#define ES_SIMULATE_INTERNAL_H

#include <jansson.h>

#include "core/context.h"
#include "costs/cost_table.h"
#include "loader/cost_model.h"
#include "loader/split.h"
#include "simulate/plan_replay.h"

/* Numbers of a rank or of one worker, summed over trials where they vary. */
typedef struct sim_stats {
    uint64_t utterances, frames; /* kept, read in this epoch (repeats counted) */
    double seconds;
    double b_sum, b_sq;          /* batches over trials */
    uint64_t b_min, b_max;
    double trained_sum;          /* batches trained under the join, over trials */
    double skip_utts, skip_frames, skip_seconds; /* over trials */
} sim_stats;

typedef struct sim_epoch {
    int64_t epoch;
    es_loader_split split;
    sim_stats *ranks;         /* K */
    sim_stats *workers;       /* K × W */
    uint64_t *rank_batches;   /* K × trials: rank r in trial t at [r * trials + t] */
    uint64_t *min_batches;    /* trials */
    uint64_t *total_batches;  /* trials */
    uint64_t empty_first;
    size_t rows_read;         /* table rows over all workers' streams */
    /* predicted step time (step_time.c), summed over trials */
    double st_steps, st_straggler, st_epoch, st_ideal;
    double *st_rank;          /* K: each rank's trained steps' time */
    uint64_t *st_cursor;      /* K × 2: scratch, the rank's (round, worker) */
} sim_epoch;

/* What `equishard plan` gives for the same table, per mode (the side by side). */
typedef struct sim_plan_side {
    const char *mode;         /* "shard", "batch" */
    int available;
    char error[256];
    char method[32];
    es_plan_metrics metrics;
    es_plan_load *ranks;      /* K */
} sim_plan_side;

enum { SIM_PLAN_MODES = 2 };

struct es_simulate_result {
    es_simulate_settings s;
    uint32_t trials;          /* draws run: s.trials, or 1 when nothing is random */
    /* the list */
    size_t n_entries;
    char *names;              /* entry names, NUL-separated */
    size_t *name_at;          /* n_entries offsets into names */
    /* the table under the filter */
    uint64_t rows, kept, kept_frames;
    double kept_seconds;
    uint64_t filtered[ES_DROP_REASONS];
    es_token_gap_counts token_gap; /* rows the token filters could not judge */
    char token_note[320];          /* es_token_gap_note: "" when none */
    char *tokenizer;               /* the table's "# tokenizer:" record, or NULL */
    size_t n_epochs;
    sim_epoch *epochs;
    sim_plan_side plan[SIM_PLAN_MODES];
    /* s.plan_dir's replay (simulate --plan): the path copied (s.plan_dir is set
     * to it), the rank lists while simulating */
    char *plan_dir;
    es_sim_planned planned;
};

/* Fills r->plan (HOOK: the plan side by side; see plan_side.c). Never fails the
 * simulation: a planner error is recorded in the side's `error`. */
void es_sim_plan_side(const es_context *ctx, es_simulate_result *r, const es_cost_table *t);
void es_sim_plan_side_release(es_simulate_result *r);

/* Adds trial's predicted step times (the first `steps` batches of every rank,
 * ub as account_trial has them) to ep's st_* sums. */
struct es_loader_batches;
void es_sim_step_times(const es_simulate_result *r, sim_epoch *ep,
                       const struct es_loader_batches *ub, uint64_t steps);

/* Expected value, min/max and standard deviation of stats over r->trials. */
double es_sim_mean(const es_simulate_result *r, double sum);
double es_sim_stddev(const es_simulate_result *r, double sum, double sq);

#endif
