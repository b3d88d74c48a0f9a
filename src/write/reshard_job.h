/* Reshard, the write side shared by both shard formats: which source rows go
 * to which new shard, in the order the sources are read, and the files beside
 * the shards (data.list, shards.tsv, filtered.tsv).
 *
 * es_reshard_write (plan_reshard.h) collects the job, checks that every source
 * is still there and that all are tar shards or all CosyVoice parquet files,
 * settles the output's format and compression, and hands the job to the
 * format's copier: reshard_copy.c (tar) or reshard_parquet.c (parquet). */
#ifndef ES_RESHARD_JOB_H
#define ES_RESHARD_JOB_H

#include "plan/plan_reshard.h"

/* One kept utterance to copy: table row, its position in its source, target. */
typedef struct copy_item {
    uint64_t pos;
    size_t row;
    uint32_t src;
    uint32_t target;
} copy_item;

typedef struct copy_source {
    const char *shard; /* as the table names it */
    char *path;        /* resolved against the root */
    size_t begin, end; /* its items */
} copy_source;

typedef struct reshard_job {
    const es_plan *p;
    es_outdir *d;
    copy_item *items;     /* sorted by (source, pos): the order sources are read in */
    size_t n_items;
    copy_source *sources; /* in table order of first appearance */
    size_t n_sources;
    es_reshard_format format;
    es_compress compress; /* settled: never ES_COMPRESS_AUTO */
} reshard_job;

/* Writers that may be open at once: the open-file limit (less 64 for
 * everything else) and a 1 GiB budget of `writer_memory` bytes each. */
size_t reshard_open_cap(const es_plan *p, size_t writer_memory);

/* The format copiers: every target shard written, read back and checked. */
int reshard_copy_tar(es_context *ctx, reshard_job *job);
int reshard_copy_parquet(es_context *ctx, reshard_job *job);

#endif
