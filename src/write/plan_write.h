/* What es_plan_write (plan_write.c) hands the output folder to: the batch-mode
 * writer (plan_write_batch.c), the reshard writer (reshard_job.c) and
 * filtered.tsv's unreadable rows (plan_filtered.c).
 * The planners (src/plan/) never see the output folder. */
#ifndef ES_PLAN_WRITE_H
#define ES_PLAN_WRITE_H

#include "core/strbuf.h"
#include "plan/plan_reshard.h"
#include "write/plan_outdir.h"

/* Writes the shards, data.list, shards.tsv and filtered.tsv into d (and, for
 * parquet, utt2data.list, spk2data.list and the JSON files they list). */
int es_reshard_write(es_context *ctx, es_outdir *d, const es_plan *p);

/* Batch mode's files into d (plan_write_batch.c): rank-R.batches.jsonl,
 * costs.tsv.zst and, when rows were carried, remainder.tsv. */
int es_write_batch_mode(es_context *ctx, es_outdir *d, const es_plan *p);

/* filtered.tsv's rows for what --on-error skip left out of the plan's table,
 * reason `unreadable`: an utterance with its key and pos, a whole shard with
 * both empty. Every plan mode writes them (plan_write.c). */
void es_plan_unreadable_rows(es_strbuf *sb, const es_plan *p);

#endif
