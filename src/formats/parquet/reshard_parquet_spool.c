/* Reshard's parquet copy through a spool (reshard_parquet_run.h), for ranges
 * of new files too large to have all open at once: each new file of a pass
 * gets a spool, and for every row routed to it one segment per leaf column is
 * appended in source order. After a pass over the sources, each spool is
 * turned into the file column by column (pq_write.c) and deleted. Passes: as
 * the tar copy, as many spools open at once as the open-file limit allows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/grow.h"
#include "costs/cost_table.h"
#include "formats/parquet/reshard_parquet_run.h"

#define SPOOL_BUFFER (1u << 20)

/* Appends the row's segments to the spools of items [a, b) in the pass. */
static int spool_row(es_context *ctx, pq_run *run, const es_pq_file *f, uint64_t ordinal,
                     size_t a, size_t b)
{
    int rc = rp_check_keys(ctx, run, f, ordinal, a, b);
    if (rc == ES_OK && a < b)
        rc = rp_check_measured(ctx, run, f, ordinal, &run->p->table->rows[run->job->items[a].row],
                            1, 1);
    if (rc != ES_OK)
        return rc;
    for (size_t i = a; i < b; i++) {
        const copy_item *it = &run->job->items[i];
        if (!rp_in_pass(run, it))
            continue;
        pq_target *tg = &run->targets[it->target];
        for (uint32_t l = 0; l < run->L; l++) {
            const es_strbuf *seg = &run->seg[l];
            uint64_t n = seg->len;
            if (fwrite(&n, sizeof n, 1, tg->spool) != 1 ||
                (n && fwrite(seg->buf, 1, n, tg->spool) != n))
                return es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", tg->spool_path,
                               strerror(errno));
            uint64_t *h = &run->digest[(size_t)it->target * run->L + l];
            *h = rp_chain(*h, seg);
        }
        tg->rows++;
    }
    return ES_OK;
}

static int stream_rows(es_context *ctx, pq_run *run, const es_pq_file *f, const copy_source *s)
{
    size_t at = s->begin;
    uint64_t ordinal = 0;
    for (uint32_t rg = 0; rg < f->meta.n_row_groups; rg++) {
        int64_t rows = f->meta.row_groups[rg].num_rows;
        for (uint32_t l = 0; l < run->L; l++) {
            run->has_look[l] = 0;
            if (pq_column_open(&run->cols[l], f, rg, &f->leaves[l], 1) != ES_OK)
                return rp_column_error(ctx, f->path, rg, &f->leaves[l], &run->cols[l]);
        }
        for (int64_t r = 0; r < rows; r++, ordinal++) {
            size_t a = at;
            while (at < s->end && run->job->items[at].pos == ordinal)
                at++;
            int wanted = 0;
            for (size_t i = a; i < at; i++)
                wanted |= rp_in_pass(run, &run->job->items[i]);
            for (uint32_t l = 0; l < run->L; l++) {
                int rc = rp_read_leaf_row(ctx, run, f, rg, l, (uint64_t)r, wanted);
                if (rc != ES_OK)
                    return rc;
            }
            if (wanted) {
                int rc = spool_row(ctx, run, f, ordinal, a, at);
                if (rc != ES_OK)
                    return rc;
            }
        }
        for (uint32_t l = 0; l < run->L; l++)
            if (run->has_look[l])
                return rp_more_rows(ctx, f, rg, l);
    }
    return at < s->end ? rp_ends_early(ctx, run, f, at, ordinal) : ES_OK;
}

static int copy_source_file(es_context *ctx, pq_run *run, const copy_source *s)
{
    if (!rp_source_wanted(run, s))
        return ES_OK;
    es_pq_file *f;
    int rc = es_pq_file_open(ctx, s->path, &f);
    if (rc != ES_OK)
        return rc;
    rc = rp_check_schema(ctx, run, f);
    if (rc == ES_OK)
        rc = stream_rows(ctx, run, f, s);
    es_pq_file_close(f);
    return rc;
}

/* (offset, length) of every segment in the spool, row-major. The length
 * headers are found by reading the spool front to back in large blocks
 * (fseeko past each segment cost a system call a segment). */
static int index_spool(es_context *ctx, pq_run *run, pq_target *tg)
{
    size_t need = (size_t)tg->rows * run->L * 2;
    if (need > run->index_cap) {
        void *ix = run->index;
        if (es_grow(&ix, &run->index_cap, need, sizeof *run->index, 1024))
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        run->index = ix;
    }
    if (fflush(tg->spool) != 0)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", tg->spool_path, strerror(errno));
    if (es_grow((void **)&run->buf, &run->buf_cap, SPOOL_BUFFER, 1, 1 << 16) != 0)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    int fd = fileno(tg->spool);
    uint64_t off = 0;           /* of the next header */
    uint64_t block_at = 0, block_len = 0;
    for (size_t k = 0; k < need; k += 2) {
        uint64_t n;
        if (off < block_at || off + sizeof n > block_at + block_len) {
            ssize_t got = pread(fd, run->buf, SPOOL_BUFFER, (off_t)off);
            if (got < (ssize_t)sizeof n)
                return es_fail(ctx, ES_ERR_IO, "%s: cannot be read back", tg->spool_path);
            block_at = off, block_len = (uint64_t)got;
        }
        memcpy(&n, run->buf + (off - block_at), sizeof n);
        run->index[k] = off + sizeof n;
        run->index[k + 1] = n;
        off += sizeof n + n;
    }
    return ES_OK;
}

static int write_column(es_context *ctx, pq_run *run, pq_target *tg, uint32_t l,
                        const char *name)
{
    int fd = fileno(tg->spool);
    uint8_t max_def = run->schema.leaves[l].max_def;
    if (pq_writer_chunk_begin(&run->w, l) != 0)
        return es_fail(ctx, ES_ERR_IO, "%s/%s: %s", run->job->d->final_path, name, run->w.err);
    for (uint64_t r = 0; r < tg->rows; r++) {
        const uint64_t *ix = &run->index[(r * run->L + l) * 2];
        if (es_grow((void **)&run->buf, &run->buf_cap, ix[1] ? ix[1] : 1, 1, 1 << 16) != 0)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        if (ix[1] && pread(fd, run->buf, ix[1], (off_t)ix[0]) != (ssize_t)ix[1])
            return es_fail(ctx, ES_ERR_IO, "%s: cannot be read back", tg->spool_path);
        if (rp_put_segment(&run->w, run->buf, ix[1], max_def) != 0)
            return es_fail(ctx, ES_ERR_FORMAT, "%s/%s: %s", run->job->d->final_path, name, run->w.err);
    }
    if (pq_writer_chunk_end(&run->w) != 0)
        return es_fail(ctx, ES_ERR_IO, "%s/%s: %s", run->job->d->final_path, name, run->w.err);
    return ES_OK;
}

static int write_file(es_context *ctx, pq_run *run, uint32_t t)
{
    pq_target *tg = &run->targets[t];
    char name[64];
    reshard_job_shard_name(run->job, t, name, sizeof name);
    int rc = index_spool(ctx, run, tg);
    /* the spool's one writer, made with the first file (its threads are not
     * needed without a spool) */
    if (rc == ES_OK && !run->w.chunks &&
        pq_writer_init(&run->w, &run->schema, rp_codec(run->job->compress)) != 0)
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    FILE *fp = rc == ES_OK ? es_outdir_create(ctx, run->job->d, name) : NULL;
    if (rc == ES_OK && !fp)
        return ES_ERR_IO;
    if (rc == ES_OK && pq_writer_begin(&run->w, fp) != 0)
        rc = es_fail(ctx, ES_ERR_IO, "%s/%s: %s", run->job->d->final_path, name, run->w.err);
    for (uint32_t l = 0; rc == ES_OK && l < run->L; l++)
        rc = write_column(ctx, run, tg, l, name);
    if (rc == ES_OK && pq_writer_end(&run->w, (int64_t)tg->rows) != 0)
        rc = es_fail(ctx, ES_ERR_IO, "%s/%s: %s", run->job->d->final_path, name, run->w.err);
    if (fp) {
        int crc = es_outdir_close(ctx, run->job->d, fp, name);
        rc = rc == ES_OK ? crc : rc;
    }
    return rc;
}

static int open_spools(es_context *ctx, pq_run *run)
{
    for (uint32_t t = run->t0; t < run->t1; t++) {
        pq_target *tg = &run->targets[t];
        snprintf(tg->spool_path, sizeof tg->spool_path, "%s/.spool_%09u", run->job->d->temp_path,
                 t);
        tg->spool = fopen(tg->spool_path, "w+b");
        if (!tg->spool)
            return es_fail(ctx, ES_ERR_IO, "%s: %s", tg->spool_path, strerror(errno));
        /* rows arrive as small segments: without a real buffer each was a
         * write(2) or two (strace: 8 500 writes, 16 000 lseeks for 370 MB) */
        if ((tg->spool_buffer = malloc(SPOOL_BUFFER)))
            setvbuf(tg->spool, tg->spool_buffer, _IOFBF, SPOOL_BUFFER);
        tg->rows = 0;
    }
    return ES_OK;
}

static void close_spool(pq_target *tg)
{
    if (tg->spool) {
        fclose(tg->spool);
        unlink(tg->spool_path);
    }
    free(tg->spool_buffer);
    tg->spool = NULL;
    tg->spool_buffer = NULL;
}

static size_t pq_target_memory(const reshard_job *job)
{
    (void)job;
    return SPOOL_BUFFER;
}

static int pq_begin_pass(es_context *ctx, void *r, uint32_t t0, uint32_t t1)
{
    pq_run *run = r;
    run->t0 = t0;
    run->t1 = t1;
    return open_spools(ctx, run);
}

static int pq_copy_source(es_context *ctx, void *r, const copy_source *s)
{
    return copy_source_file(ctx, r, s);
}

/* Each spool into its file, read back; every spool of the pass closed. */
static int pq_end_pass(es_context *ctx, void *r, int rc)
{
    pq_run *run = r;
    for (uint32_t t = run->t0; rc == ES_OK && t < run->t1; t++) {
        rc = write_file(ctx, run, t);
        close_spool(&run->targets[t]); /* disk back before the next file */
        if (rc == ES_OK)
            rc = rp_verify_file(ctx, run, t);
    }
    for (uint32_t t = run->t0; t < run->t1; t++)
        close_spool(&run->targets[t]);
    return rc;
}

static const reshard_ops parquet_ops = {
    .name = "parquet",
    .target_memory = pq_target_memory,
    .begin_pass = pq_begin_pass,
    .copy_source = pq_copy_source,
    .end_pass = pq_end_pass,
};

int rp_copy_spooled(es_context *ctx, pq_run *run, uint32_t t0, uint32_t t1)
{
    return reshard_run_passes(ctx, run->job, &parquet_ops, run, t0, t1);
}
