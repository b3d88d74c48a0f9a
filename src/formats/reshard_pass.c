/* The pass loop every reshard copier runs (reshard_job.h), and what all need:
 * the new shards' names (the job's format's) and how many may be open at once.
 * Apart from write/reshard_job.c, which calls the copiers, so that no copier
 * calls back into it; and below the registry, which names the copiers. */
#include "formats/reshard_job.h"

#include <stdio.h>
#include <sys/resource.h>

#include "formats/format.h"

#define WRITER_MEMORY_BUDGET ((size_t)1 << 30)
#define RESERVED_FDS 64

void reshard_job_shard_name(const reshard_job *job, uint32_t i, char *buf, size_t len)
{
    job->fmt->reshard_shard_name(job->compress, i, buf, len);
}

size_t reshard_open_cap(const es_plan *p, size_t writer_memory)
{
    if (p->reshard->max_open)
        return p->reshard->max_open;
    struct rlimit rl;
    size_t fds = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        fds = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 20) ? (1u << 20) : rl.rlim_cur;
    fds = fds > RESERVED_FDS + 1 ? fds - RESERVED_FDS : 1;
    size_t mem = WRITER_MEMORY_BUDGET / (writer_memory ? writer_memory : 1);
    mem = mem ? mem : 1;
    return fds < mem ? fds : mem;
}

void reshard_progress(const reshard_job *job, size_t done, size_t total)
{
    const es_plan_settings *s = &job->p->s;
    if (s->progress)
        s->progress(s->progress_user, done, total);
}

int reshard_run_passes(es_context *ctx, const reshard_job *job, const reshard_ops *ops,
                       void *run, uint32_t first, uint32_t end)
{
    size_t cap = reshard_open_cap(job->p, ops->target_memory(job));
    size_t targets = end > first ? end - first : 0;
    size_t passes = (targets + cap - 1) / cap;
    size_t total = passes * job->n_sources + targets, done = 0;
    for (uint32_t t0 = first, t1; t0 < end; t0 = t1) {
        t1 = end - t0 > cap ? t0 + (uint32_t)cap : end;
        int rc = ops->begin_pass(ctx, run, t0, t1);
        for (size_t i = 0; rc == ES_OK && i < job->n_sources; i++) {
            rc = ops->copy_source(ctx, run, &job->sources[i]);
            reshard_progress(job, ++done, total);
        }
        rc = ops->end_pass(ctx, run, rc);
        if (rc != ES_OK)
            return rc;
        done += t1 - t0;
        reshard_progress(job, done, total);
    }
    return ES_OK;
}
