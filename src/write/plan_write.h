/* What es_plan_write and its stages (plan_write_stages.c) hand the output folder
 * to: the mode writers (plan_write_shard.c; batch mode plan_write_batch.c), the
 * reshard writer (reshard_job.c) and filtered.tsv's unreadable rows
 * (plan_filtered.c). The planners (src/plan/) never see the output folder. */
#ifndef ES_PLAN_WRITE_H
#define ES_PLAN_WRITE_H

#include "core/strbuf.h"
#include "plan/plan_reshard.h"
#include "core/outdir.h"

/* Reshard's write side in stages (reshard_job.c), so that several processes
 * can write the new shards of one OUTDIR (es_plan_write_begin and friends):
 * prepare checks the sources (there, unchanged since measured, one format, one
 * parquet schema) and settles the output's format before anything is written;
 * copy writes new shards [t0, t1), read back and checked; finish writes the
 * files beside the shards: data.list, shards.tsv, filtered.tsv (and, for
 * parquet, utt2data.list, spk2data.list and the JSON files they list). */
typedef struct reshard_job reshard_job;
int es_reshard_prepare(es_context *ctx, es_outdir *d, const es_plan *p, reshard_job **out);
int es_reshard_copy(es_context *ctx, reshard_job *job, uint32_t t0, uint32_t t1);
int es_reshard_finish(es_context *ctx, reshard_job *job);
void es_reshard_job_free(reshard_job *job);
/* es_plan_write_expand_sources and friends: the format's plain copies of
 * compressed sources (its table's reshard_expand; no-ops for a format
 * without). */
int es_reshard_expand(es_context *ctx, reshard_job *job, uint32_t part, uint32_t parts);
int es_reshard_use_copies(es_context *ctx, reshard_job *job);
void es_reshard_remove_copies(reshard_job *job);

/* The mode writers es_plan_write_finish (plan_write_stages.c) calls: rank lists
 * (shard mode, plan_write_shard.c), filtered.tsv's unreadable rows (shard and batch
 * modes). */
int es_write_shard_mode(es_context *ctx, es_outdir *d, const es_plan *p);
int es_write_unreadable(es_context *ctx, es_outdir *d, const es_plan *p);

/* A path with a line break cannot go into a list the loaders read a line at a
 * time: the error, the path shown with the break escaped. */
int es_refuse_line_break(es_context *ctx, const char *path, const char *list);

/* Batch mode's files into d (plan_write_batch.c): rank-R.batches.jsonl,
 * costs.tsv.zst and, when rows were carried, remainder.tsv. */
int es_write_batch_mode(es_context *ctx, es_outdir *d, const es_plan *p);

/* filtered.tsv's rows for what --on-error skip left out of the plan's table,
 * reason `unreadable`: an utterance with its key and pos, a whole shard with
 * both empty. Every plan mode writes them (plan_filtered.c). */
void es_plan_unreadable_rows(es_strbuf *sb, const es_plan *p);

#endif
