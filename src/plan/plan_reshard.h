/* Reshard mode: the kept utterances into N = K·W·M new shards
 * (tar, or CosyVoice parquet) of equal cost, so that any permutation a loader
 * applies to the new data.list gives every rank and worker the same work.
 *
 * plan_reshard.c plans (which utterance goes to which new shard, the loads and
 * the permutation check). Writing them is src/write/'s: es_reshard_prepare
 * (write/plan_write.h, reshard_job.c) settles the format and hands the job to
 * the format's copier through its table (src/formats/format.h: tar's and
 * parquet's folders), each driven by one pass loop (formats/reshard_pass.c).
 *
 * Invariants: every kept row is in exactly one shard; shard s holds
 * rows[start[s] .. start[s + 1]) in table order (source shard in list order,
 * then position in it); shard s is read by rank s % K, worker (s / K) % W under
 * the loaders' un-permuted split. */
#ifndef ES_PLAN_RESHARD_H
#define ES_PLAN_RESHARD_H

#include "plan/plan_internal.h"

/* Loader permutations the plan checks: CosyVoice epochs 0 .. 19. */
#define ES_RESHARD_PERMUTATIONS 20

/* What the new shards are: the sources' format (all tar, or all parquet). */
typedef enum es_reshard_format {
    ES_RESHARD_TAR = 0,     /* shards_000000000.tar[.gz|.zst] (WeNet / WebDataset) */
    ES_RESHARD_PARQUET = 1, /* parquet_000000000.tar (CosyVoice's make_parquet_list.py
                               names its parquet files so) + utt2/spk2parquet JSON */
} es_reshard_format;

typedef struct plan_reshard {
    uint32_t n_shards;   /* N */
    uint32_t per_worker; /* M */
    size_t *rows;        /* kept rows grouped by shard (n_kept) */
    size_t *start;       /* N + 1 */
    double *shard_cost;  /* N */
    uint64_t *shard_frames; /* N */
    es_plan_reshard_info info;
    /* Writers open at once; 0 = from the open-file limit and a memory budget.
     * Tests set it to force several passes. */
    size_t max_open;
    /* Parquet rows always through a spool, as when the new files cannot all be
     * open at once (reshard_parquet.c). Tests set it to compare the two ways. */
    int spool;
    /* Settled by es_reshard_write from the sources (and reported by plan.json,
     * written after the shards): the format and compression written. */
    es_reshard_format format;
    es_compress compress;
} plan_reshard;

#endif
