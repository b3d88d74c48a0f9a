/* Reshard, what every format's copier shares: which source rows go to which
 * new shard, in the order the sources are read, and the one pass loop.
 *
 * es_reshard_prepare (write/plan_write.h, write/reshard_job.c) collects the
 * job, checks that every source is still there and that all are of one
 * format, and settles the output's format and compression; es_reshard_copy
 * hands a range of new shards to that format's copier (its table's
 * reshard_copy, formats/format.h), a reshard_ops table driven by the one pass
 * loop (reshard_pass.c). */
#ifndef ES_RESHARD_JOB_H
#define ES_RESHARD_JOB_H

#include "core/outdir.h"
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
    char *path;        /* resolved against the root; what messages name */
    char *copy;        /* a plain tar copy of a compressed source, read instead
                          (reshard_expand.c), or NULL */
    size_t begin, end; /* its items */
} copy_source;

/* The file the copier reads for s: its plain copy when there is one. */
static inline const char *copy_source_read_path(const copy_source *s)
{
    return s->copy ? s->copy : s->path;
}

typedef struct reshard_job {
    const es_plan *p;
    es_outdir *d;
    copy_item *items;     /* sorted by (source, pos): the order sources are read in */
    size_t n_items;
    copy_source *sources; /* in table order of first appearance */
    size_t n_sources;
    const struct es_format_ops *fmt; /* the sources' (formats/format.h) */
    es_reshard_format format;        /* fmt's reshard_format */
    es_compress compress; /* settled: never ES_COMPRESS_AUTO */
} reshard_job;

/* File name of new shard i under the settled format and compression
 * ("shards_000000007.tar.zst", "parquet_000000007.tar"): the plan's, for the
 * writer's files beside the shards (format_registry.c, which looks the format up),
 * and the job's, for its copier (through job->fmt: a copier never calls back
 * into the registry that names it). The same name: es_reshard_prepare settles
 * the plan's format and compression from the job's. */
void es_reshard_shard_name(const es_plan *p, uint32_t i, char *buf, size_t len);
void reshard_job_shard_name(const reshard_job *job, uint32_t i, char *buf, size_t len);

/* Writers that may be open at once: the open-file limit (less 64 for
 * everything else) and a 1 GiB budget of `writer_memory` bytes each. */
size_t reshard_open_cap(const es_plan *p, size_t writer_memory);

/* A format's copier as the pass loop drives it. The new shards asked for
 * (all N, or one process's share) are written in passes of as many targets as reshard_open_cap allows (one pass when all
 * fit); in each pass targets [t0, t1) are begun, every source is offered to
 * copy_source (which skips one that feeds none of them), and the pass ends:
 * its targets written out, closed, read back and checked. */
typedef struct reshard_ops {
    const char *name;
    /* Memory one open target takes (the open cap's budget). */
    size_t (*target_memory)(const reshard_job *job);
    int (*begin_pass)(es_context *ctx, void *run, uint32_t t0, uint32_t t1);
    int (*copy_source)(es_context *ctx, void *run, const copy_source *s);
    /* rc is the pass's result so far (after an error: release quietly);
     * returns the pass's result. */
    int (*end_pass)(es_context *ctx, void *run, int rc);
} reshard_ops;

/* es_plan_settings.progress, when set: `done` of `total` steps (a source
 * read in a pass, or a new shard written and read back). */
void reshard_progress(const reshard_job *job, size_t done, size_t total);

/* The pass loop both copiers run (reshard_pass.c) over new shards [first,
 * end); `run` is the ops' state. Reports progress: every source per pass,
 * then the pass's new shards once they are read back. */
int reshard_run_passes(es_context *ctx, const reshard_job *job, const reshard_ops *ops,
                       void *run, uint32_t first, uint32_t end);

#endif
