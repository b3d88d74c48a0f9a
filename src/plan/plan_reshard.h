/* Reshard mode (DESIGN.md §7): the kept utterances into N = K·W·M new tar
 * shards of equal cost, so that any permutation a loader applies to the new
 * data.list gives every rank and worker the same work.
 *
 * plan_reshard.c plans (which utterance goes to which new shard, the loads and
 * the permutation check); reshard_copy.c writes the shards by streaming the
 * source shards; reshard_tar.c holds the libarchive writer and the read-back
 * check.
 *
 * Invariants: every kept row is in exactly one shard; shard s holds
 * rows[start[s] .. start[s + 1]) in table order (source shard in list order,
 * then position in it); shard s is read by rank s % K, worker (s / K) % W under
 * the loaders' un-permuted split. */
#ifndef ES_PLAN_RESHARD_H
#define ES_PLAN_RESHARD_H

#include "core/strbuf.h"
#include "plan/plan_internal.h"
#include "write/plan_outdir.h"

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
    /* Settled by es_reshard_write from the sources (and reported by plan.json,
     * written after the shards): the format and compression written. */
    es_reshard_format format;
    es_compress compress;
} plan_reshard;

/* Writes the shards, data.list, shards.tsv and filtered.tsv into d (and, for
 * parquet, utt2data.list, spk2data.list and the JSON files they list). */
int es_reshard_write(es_context *ctx, es_outdir *d, const es_plan *p);

/* plan.json's reshard keys: parameters "compress", "shards_per_worker";
 * metrics "reshard": {"shards", "shards_per_worker", "shard_cost": {"min",
 * "max", "mean", "max_deviation"}, "permutations", "permutation_max_deviation"}. */
struct json_t;
void es_reshard_json(const es_plan *p, struct json_t *parameters, struct json_t *metrics);

/* File name of new shard i under the settled format and compression
 * ("shards_000000007.tar.zst", "parquet_000000007.tar"). */
void es_reshard_shard_name(const es_plan *p, uint32_t i, char *buf, size_t len);

/* filtered.tsv's rows for what --on-error skip left out of the plan's table,
 * reason `unreadable`: an utterance with its key and pos, a whole shard with
 * both empty. Every plan mode writes them (plan_write.c). */
void es_plan_unreadable_rows(es_strbuf *sb, const es_plan *p);

#endif
