/* A shard-mode plan OUTDIR replayed as equishard.loaders feed it (simulate
 * --plan): each (rank, worker) reads its own rank-R.worker-W.list, so the split
 * of the list is the plan's, not the loader's. plan_replay.c also takes
 * plan.json's settings (es_simulate_settings_from_plan); both read OUTDIR
 * through es_plan_dir_open, the one reader of what `equishard plan` writes.
 *
 * Invariant: unit u = r*W + w's entries are items[unit_start[u] .. [u + 1]),
 * indices into the simulation's list entries, in the order of the file. */
#ifndef ES_SIM_PLAN_REPLAY_H
#define ES_SIM_PLAN_REPLAY_H

#include "core/context.h"
#include "loader/split.h"

typedef struct es_sim_planned {
    uint32_t k, w;
    uint32_t *items;
    size_t *unit_start; /* k*w + 1 offsets */
} es_sim_planned;

/* Reads outdir's rank lists for k ranks of w workers and maps every line to
 * the list entry of that name (names[i] is entry i; a raw-list line maps by its
 * "key"). Checks plan.json's mode, world_size and workers first. Errors name
 * the file, the line and the entry. */
int es_sim_planned_read(es_context *ctx, const char *outdir, uint32_t k, uint32_t w,
                        const char *const *names, size_t n_names, es_sim_planned *out);
void es_sim_planned_release(es_sim_planned *p);

/* The epoch's split: every unit's entries, shuffled with
 * random.Random(epoch).shuffle when `shuffle` and epoch >= 0 (DataList);
 * a rank's list is its workers' lists one after the other. */
int es_sim_split_planned(const es_sim_planned *p, int64_t epoch, int shuffle, es_loader_split *out);

#endif
