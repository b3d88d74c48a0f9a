/* Reshard's parquet copy without a spool (reshard_parquet_run.h): when every
 * new file of the range can be open at once (a writer's page being filled
 * each, inside the open cap's budget: DIRECT_TARGET_MEMORY), the files are
 * written column by column together, leaf l of every new file from one read of
 * leaf l of every source, so each value is copied once from the source's page
 * into the new file's page. The spool's write and read-back were half of a
 * parquet reshard's kernel time (docs/PERFORMANCE.md). Each file's writer gets
 * the same entries in the same order as from a spool, so the bytes are the same
 * (test_reshard compares the two ways). Each source is opened once per leaf;
 * the files' pages share one queue, compressed beside the reading thread. */
#include <stdlib.h>

#include "costs/cost_table.h"
#include "formats/parquet/reshard_parquet_run.h"

/* An open file's writer at its fullest: a page's values (cut past 1 MiB, so
 * up to 1 MiB and a row, in a buffer grown by doubling) and its levels (a byte
 * each of def and rep per entry). With the open cap's 1 GiB budget, up to 256
 * new files go without a spool. */
#define DIRECT_TARGET_MEMORY ((size_t)4 << 20)

/* Row `ordinal` of leaf l (its segment read) into the writers of items [a, b)
 * in the range, after the checks that leaf carries. */
static int put_row(es_context *ctx, pq_run *run, const es_pq_file *f, uint64_t ordinal,
                   uint32_t l, size_t a, size_t b)
{
    int rc = l == run->utt_leaf ? rp_check_keys(ctx, run, f, ordinal, a, b) : ES_OK;
    if (rc == ES_OK && a < b && (l == run->audio_leaf || l == run->text_leaf))
        rc = rp_check_measured(ctx, run, f, ordinal, &run->p->table->rows[run->job->items[a].row],
                            l == run->audio_leaf, l == run->text_leaf);
    const es_strbuf *seg = &run->seg[l];
    for (size_t i = a; rc == ES_OK && i < b; i++) {
        const copy_item *it = &run->job->items[i];
        if (!rp_in_pass(run, it))
            continue;
        pq_writer *w = &run->direct[it->target - run->t0];
        if (rp_put_segment(w, (const uint8_t *)seg->buf, seg->len, run->schema.leaves[l].max_def)) {
            char name[64];
            reshard_job_shard_name(run->job, it->target, name, sizeof name);
            return es_fail(ctx, ES_ERR_FORMAT, "%s/%s: %s", run->job->d->final_path, name, w->err);
        }
        uint64_t *h = &run->digest[(size_t)it->target * run->L + l];
        *h = rp_chain(*h, seg);
    }
    return rc;
}

/* Leaf l of source s, row by row, into the writers (stream_rows for one leaf). */
static int stream_leaf(es_context *ctx, pq_run *run, const es_pq_file *f, const copy_source *s,
                       uint32_t l)
{
    size_t at = s->begin;
    uint64_t ordinal = 0;
    for (uint32_t rg = 0; rg < f->meta.n_row_groups; rg++) {
        int64_t rows = f->meta.row_groups[rg].num_rows;
        run->has_look[l] = 0;
        if (pq_column_open(&run->cols[l], f, rg, &f->leaves[l], 1) != ES_OK)
            return rp_column_error(ctx, f->path, rg, &f->leaves[l], &run->cols[l]);
        for (int64_t r = 0; r < rows; r++, ordinal++) {
            size_t a = at;
            int wanted = 0;
            for (; at < s->end && run->job->items[at].pos == ordinal; at++)
                wanted |= rp_in_pass(run, &run->job->items[at]);
            int rc = rp_read_leaf_row(ctx, run, f, rg, l, (uint64_t)r, wanted);
            if (rc == ES_OK && wanted)
                rc = put_row(ctx, run, f, ordinal, l, a, at);
            if (rc != ES_OK)
                return rc;
        }
        if (run->has_look[l])
            return rp_more_rows(ctx, f, rg, l);
    }
    return at < s->end ? rp_ends_early(ctx, run, f, at, ordinal) : ES_OK;
}

/* Leaf l of every source into chunk l of every writer. */
static int copy_leaf(es_context *ctx, pq_run *run, uint32_t l)
{
    uint32_t n = run->t1 - run->t0;
    for (uint32_t t = 0; t < n; t++)
        pq_writer_chunk_begin(&run->direct[t], l);
    int rc = ES_OK;
    for (size_t i = 0; rc == ES_OK && i < run->job->n_sources; i++) {
        const copy_source *s = &run->job->sources[i];
        if (!rp_source_wanted(run, s))
            continue;
        es_pq_file *f;
        rc = es_pq_file_open(ctx, s->path, &f);
        if (rc != ES_OK)
            break;
        rc = rp_check_schema(ctx, run, f);
        if (rc == ES_OK)
            rc = stream_leaf(ctx, run, f, s, l);
        es_pq_file_close(f);
        /* a step per source and column, then one per file read back */
        reshard_progress(run->job, (size_t)l * run->job->n_sources + i + 1,
                         (size_t)run->L * run->job->n_sources + n);
    }
    /* every writer's chunk ends before any begins the next (pq_writer_init_shared) */
    for (uint32_t t = 0; rc == ES_OK && t < n; t++)
        if (pq_writer_chunk_end(&run->direct[t]) != 0) {
            char name[64];
            reshard_job_shard_name(run->job, run->t0 + t, name, sizeof name);
            rc = es_fail(ctx, ES_ERR_IO, "%s/%s: %s", run->job->d->final_path, name, run->direct[t].err);
        }
    return rc;
}

/* Files [t0, t1) read back (verify_file), as many at once as there are
 * threads: they were all finished together, and reading one back is a core's
 * work (decompressing every page). The error reported is the first file's. */
static int verify_files(es_context *ctx, pq_run *run, uint32_t t0, uint32_t t1)
{
    uint32_t n = t1 - t0;
    int *rcs = calloc(n, sizeof *rcs);
    es_context **ctxs = calloc(n, sizeof *ctxs);
    int rc = rcs && ctxs ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (uint32_t t = 0; rc == ES_OK && t < n; t++)
        if (!(ctxs[t] = es_context_new_like(ctx)))
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    if (rc == ES_OK) {
#pragma omp parallel for schedule(dynamic, 1)
        for (uint32_t t = 0; t < n; t++)
            rcs[t] = rp_verify_file(ctxs[t], run, t0 + t);
        for (uint32_t t = 0; rc == ES_OK && t < n; t++)
            if (rcs[t] != ES_OK)
                rc = es_fail(ctx, rcs[t], "%s", es_errmsg(ctxs[t]));
    }
    for (uint32_t t = 0; ctxs && t < n; t++)
        es_context_free(ctxs[t]);
    free(ctxs);
    free(rcs);
    return rc;
}

/* New files [t0, t1) created, written column by column, closed and read back. */
int rp_copy_direct(es_context *ctx, pq_run *run, uint32_t t0, uint32_t t1)
{
    uint32_t n = t1 - t0;
    run->t0 = t0;
    run->t1 = t1;
    for (size_t i = 0; i < run->job->n_items; i++)
        if (rp_in_pass(run, &run->job->items[i]))
            run->targets[run->job->items[i].target].rows++;
    run->direct = calloc(n, sizeof *run->direct);
    run->direct_fp = calloc(n, sizeof *run->direct_fp);
    if (!run->direct || !run->direct_fp ||
        pq_page_queue_init(&run->direct_queue, rp_codec(run->job->compress)) != 0)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    /* the schema (and run->L) from the first source, before any file begins */
    int rc = ES_OK;
    for (size_t i = 0; !run->schema_from && rc == ES_OK && i < run->job->n_sources; i++) {
        es_pq_file *f;
        if (!rp_source_wanted(run, &run->job->sources[i]))
            continue;
        rc = es_pq_file_open(ctx, run->job->sources[i].path, &f);
        if (rc == ES_OK)
            rc = rp_check_schema(ctx, run, f);
        es_pq_file_close(f);
    }
    for (uint32_t t = 0; rc == ES_OK && t < n; t++) {
        char name[64];
        reshard_job_shard_name(run->job, t0 + t, name, sizeof name);
        if (pq_writer_init_shared(&run->direct[t], &run->schema, &run->direct_queue) != 0)
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        else if (!(run->direct_fp[t] = es_outdir_create(ctx, run->job->d, name)))
            rc = ES_ERR_IO;
        else if (pq_writer_begin(&run->direct[t], run->direct_fp[t]) != 0)
            rc = es_fail(ctx, ES_ERR_IO, "%s/%s: %s", run->job->d->final_path, name, run->direct[t].err);
    }
    for (uint32_t l = 0; rc == ES_OK && l < run->L; l++)
        rc = copy_leaf(ctx, run, l);
    for (uint32_t t = 0; t < n; t++) {
        char name[64];
        reshard_job_shard_name(run->job, t0 + t, name, sizeof name);
        if (rc == ES_OK && pq_writer_end(&run->direct[t], (int64_t)run->targets[t0 + t].rows))
            rc = es_fail(ctx, ES_ERR_IO, "%s/%s: %s", run->job->d->final_path, name, run->direct[t].err);
        if (run->direct_fp[t]) {
            int crc = rc == ES_OK ? es_outdir_close(ctx, run->job->d, run->direct_fp[t], name)
                                  : (fclose(run->direct_fp[t]), rc);
            rc = rc == ES_OK ? crc : rc;
        }
        pq_writer_release(&run->direct[t]);
    }
    rc = rc == ES_OK ? verify_files(ctx, run, t0, t1) : rc;
    if (rc == ES_OK) {
        size_t total = (size_t)run->L * run->job->n_sources + n;
        reshard_progress(run->job, total, total);
    }
    return rc;
}

/* Whether [t0, t1) can go without a spool: all its writers open at once, and
 * a source to take the schema from. */
int rp_direct_fits(pq_run *run, uint32_t t0, uint32_t t1)
{
    const reshard_job *job = run->job;
    run->t0 = t0;
    run->t1 = t1;
    int fed = 0;
    for (size_t i = 0; !fed && i < job->n_sources; i++)
        fed = rp_source_wanted(run, &job->sources[i]);
    return fed && !job->p->reshard->spool &&
           t1 - t0 <= reshard_open_cap(job->p, DIRECT_TARGET_MEMORY);
}
