/* es_plan_write and its stages (equishard.h): OUTDIR's temporary folder begun
 * or joined, the new shards written by range (reshard), then the rest and the
 * commit. The files themselves come from plan_write_shard.c (shard mode, and
 * filtered.tsv of shard and batch modes), plan_write_batch.c (batch mode),
 * reshard_job.c (reshard) and plan_json.c (plan.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "costs/cost_table.h"
#include "write/plan_json.h"
#include "core/outdir.h"
#include "write/plan_write.h"
#include "formats/reshard_job.h"

/* A plan's OUTDIR being written, by one process or several (equishard.h). */
struct es_plan_writer {
    const es_plan *p;
    es_outdir d;
    int owner;        /* began the folder (else joined it) */
    int open;         /* d holds a folder not yet committed or abandoned */
    reshard_job *job; /* reshard: the sources checked, the format settled */
};

ES_API int es_plan_write_begin(es_context *ctx, const es_plan *p, const char *outdir,
                               const char *join, es_plan_writer **out)
{
    es_clear_error(ctx);
    if (out)
        *out = NULL;
    if (!p || !outdir || !out)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_write_begin: the plan, OUTDIR and out are "
                       "required");
    if (p->s.mode == ES_PLAN_RESHARD && strpbrk(outdir, "\r\n"))
        return es_refuse_line_break(ctx, outdir, "data.list");
    /* the lists every mode writes name these files, and the costs balanced are
     * theirs as measured: a file moved or changed since is refused before
     * anything is made */
    int rc = es_cost_table_check_shards(ctx, p->table, p->s.root);
    if (rc != ES_OK)
        return rc;
    es_plan_writer *w = calloc(1, sizeof *w);
    if (!w)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    w->p = p;
    w->owner = join == NULL;
    rc = join ? es_outdir_join(ctx, &w->d, outdir, join) : es_outdir_begin(ctx, &w->d, outdir);
    if (rc != ES_OK) {
        free(w);
        return rc;
    }
    w->open = 1;
    /* Every file is fsync'd before the rename either way; deferred, the kernel
     * writes back while the next files are made (shard/batch: thousands of
     * small lists; reshard: the copy goes on while earlier shards reach disk,
     * as `cp` + one `sync` at the end does). */
    es_outdir_defer_sync(&w->d);
    if (p->s.mode == ES_PLAN_RESHARD)
        rc = es_reshard_prepare(ctx, &w->d, p, &w->job);
    if (rc != ES_OK) {
        es_plan_writer_free(w);
        return rc;
    }
    *out = w;
    return ES_OK;
}

ES_API const char *es_plan_writer_folder(const es_plan_writer *w)
{
    return w && w->open ? w->d.temp_path : NULL;
}

/* An open reshard writer, else ES_ERR_USAGE naming the call. */
static int reshard_writer(es_context *ctx, const es_plan_writer *w, const char *call)
{
    if (!w || !w->open || !w->job)
        return es_fail(ctx, ES_ERR_USAGE, "%s: a reshard plan's open writer is required", call);
    return ES_OK;
}

ES_API int es_plan_write_shards(es_context *ctx, es_plan_writer *w, uint32_t first, uint32_t end)
{
    es_clear_error(ctx);
    if (reshard_writer(ctx, w, "es_plan_write_shards") != ES_OK)
        return ES_ERR_USAGE;
    uint32_t N = w->p->reshard->n_shards;
    if (first > end || end > N)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_write_shards: shards [%u, %u) of %u", first,
                       end, N);
    int rc = es_reshard_copy(ctx, w->job, first, end);
    /* on disk before the process reports them written (another may commit) */
    return rc == ES_OK ? es_outdir_sync(ctx, &w->d) : rc;
}

ES_API int es_plan_write_expand_sources(es_context *ctx, es_plan_writer *w, uint32_t part,
                                        uint32_t parts)
{
    es_clear_error(ctx);
    int rc = reshard_writer(ctx, w, "es_plan_write_expand_sources");
    if (rc == ES_OK && part >= parts)
        rc = es_fail(ctx, ES_ERR_USAGE, "es_plan_write_expand_sources: part %u of %u", part,
                     parts);
    return rc == ES_OK ? es_reshard_expand(ctx, w->job, part, parts) : rc;
}

ES_API int es_plan_write_use_copies(es_context *ctx, es_plan_writer *w)
{
    es_clear_error(ctx);
    int rc = reshard_writer(ctx, w, "es_plan_write_use_copies");
    return rc == ES_OK ? es_reshard_use_copies(ctx, w->job) : rc;
}

/* Reshard: every new shard is in the folder, whichever process wrote it. */
static int check_all_shards(es_context *ctx, const es_plan_writer *w)
{
    for (uint32_t t = 0; t < w->p->reshard->n_shards; t++) {
        char name[64], path[4200];
        es_reshard_shard_name(w->p, t, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", w->d.temp_path, name);
        if (access(path, F_OK) != 0)
            return es_fail(ctx, ES_ERR_USAGE, "%s/%s: new shard %u was not written "
                           "(es_plan_write_shards covers [0, %u) before finishing)",
                           w->d.final_path, name, t, w->p->reshard->n_shards);
    }
    return ES_OK;
}

ES_API int es_plan_write_finish(es_context *ctx, es_plan_writer *w, const char *const *inputs,
                                size_t n_inputs)
{
    es_clear_error(ctx);
    if (!w || !w->open || !w->owner)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_write_finish: the writer that began OUTDIR "
                       "is required");
    const es_plan *p = w->p;
    es_outdir *d = &w->d;
    int rc = p->s.mode == ES_PLAN_BATCH     ? es_write_batch_mode(ctx, d, p)
             : p->s.mode == ES_PLAN_RESHARD ? check_all_shards(ctx, w)
                                            : es_write_shard_mode(ctx, d, p);
    if (p->s.mode == ES_PLAN_RESHARD) /* OUTDIR holds the outputs only */
        es_reshard_remove_copies(w->job);
    if (rc == ES_OK)
        rc = p->s.mode == ES_PLAN_RESHARD ? es_reshard_finish(ctx, w->job)
                                          : es_write_unreadable(ctx, d, p);
    FILE *fp = rc == ES_OK ? es_outdir_create(ctx, d, "plan.json") : NULL;
    if (rc == ES_OK && !fp)
        rc = ES_ERR_IO;
    if (fp) {
        rc = es_plan_json_write(ctx, p, fp, inputs, n_inputs);
        int crc = es_outdir_close(ctx, d, fp, "plan.json");
        if (rc == ES_OK)
            rc = crc;
    }
    w->open = 0;
    if (rc != ES_OK) {
        es_outdir_abort(d);
        return rc;
    }
    return es_outdir_commit(ctx, d);
}

ES_API void es_plan_writer_free(es_plan_writer *w)
{
    if (!w)
        return;
    if (w->open)
        es_outdir_abort(&w->d); /* the owner's folder removed; a joiner's left alone */
    es_reshard_job_free(w->job);
    free(w);
}

ES_API uint64_t es_plan_writer_digest(const es_plan_writer *w)
{
    if (!w)
        return 0;
    const es_plan *p = w->p;
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return 0;
    XXH3_64bits_reset(h);
    const uint64_t shape[] = {(uint64_t)p->s.mode, p->K, p->W, p->n_kept, p->table->n};
    XXH3_64bits_update(h, shape, sizeof shape);
    const reshard_job *job = w->job;
    if (job) {
        const uint64_t out[] = {p->reshard->n_shards, job->format, job->compress, job->n_items};
        XXH3_64bits_update(h, out, sizeof out);
        for (size_t i = 0; i < job->n_sources; i++) /* names with their NULs: no run-ins */
            XXH3_64bits_update(h, job->sources[i].shard, strlen(job->sources[i].shard) + 1);
        for (size_t i = 0; i < job->n_items; i++) {
            const copy_item *it = &job->items[i];
            const uint64_t item[] = {it->pos, it->row, it->src, it->target};
            XXH3_64bits_update(h, item, sizeof item);
        }
    }
    uint64_t digest = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return digest;
}

ES_API int es_plan_write(es_context *ctx, const es_plan *p, const char *outdir,
                         const char *const *inputs, size_t n_inputs)
{
    es_plan_writer *w;
    int rc = es_plan_write_begin(ctx, p, outdir, NULL, &w);
    if (rc == ES_OK && p->s.mode == ES_PLAN_RESHARD)
        rc = es_plan_write_shards(ctx, w, 0, p->reshard->n_shards);
    if (rc == ES_OK)
        rc = es_plan_write_finish(ctx, w, inputs, n_inputs);
    es_plan_writer_free(w);
    return rc;
}
