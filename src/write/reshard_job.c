/* Reshard's write side (write/plan_write.h): the job in source order, the
 * sources' format, a range of new shards handed to that format's copier
 * through its table (formats/format.h), and data.list / shards.tsv /
 * filtered.tsv. */
#include "write/plan_write.h"
#include "formats/reshard_job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_stream.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "costs/cost_table.h"
#include "readers/manifest.h"
#include "formats/format.h"
#include "readers/reader.h"

static int cmp_items(const void *a, const void *b)
{
    const copy_item *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Sources in table order of first appearance; items sorted by (source, pos). */
static int collect(es_context *ctx, reshard_job *job)
{
    const es_plan *p = job->p;
    const plan_reshard *r = p->reshard;
    es_strmap seen = {0};
    job->items = malloc((p->n_kept ? p->n_kept : 1) * sizeof *job->items);
    job->sources = malloc((p->n_kept ? p->n_kept : 1) * sizeof *job->sources);
    int rc = job->items && job->sources ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (size_t k = 0; rc == ES_OK && k < p->n_kept; k++) {
        const char *shard = p->table->rows[p->kept[k]].shard;
        if (es_strmap_get(&seen, shard, strlen(shard)))
            continue;
        if (job->n_sources == UINT32_MAX) {
            rc = es_fail(ctx, ES_ERR_UNSUPPORTED, "plan: reshard reads at most 2^32 - 1 shards");
            break;
        }
        char buf[4096];
        const char *path = es_resolve_path(p->s.root, shard, buf, sizeof buf);
        copy_source *s = &job->sources[job->n_sources];
        *s = (copy_source){.shard = shard, .path = strdup(path)};
        if (!s->path || es_strmap_put(&seen, shard, strlen(shard),
                                      (const void *)(uintptr_t)(job->n_sources + 1)))
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        job->n_sources += s->path != NULL;
    }
    for (uint32_t t = 0; rc == ES_OK && t < r->n_shards; t++)
        for (size_t i = r->start[t]; i < r->start[t + 1]; i++) {
            const es_cost_row *row = &p->table->rows[r->rows[i]];
            const es_strmap_slot *slot = es_strmap_get(&seen, row->shard, strlen(row->shard));
            job->items[job->n_items++] =
                (copy_item){row->pos, r->rows[i], (uint32_t)((uintptr_t)slot->value - 1), t};
        }
    es_strmap_release(&seen);
    if (rc != ES_OK)
        return rc;
    qsort(job->items, job->n_items, sizeof *job->items, cmp_items);
    for (size_t i = 0; i < job->n_items; i++) {
        copy_source *s = &job->sources[job->items[i].src];
        if (s->end == 0)
            s->begin = i;
        s->end = i + 1;
    }
    return ES_OK;
}

/* A source whose size or modification time moved since measure recorded them
 * (a table from before they were recorded has none) changed since it was
 * measured: its rows' costs, and so the balance, may be wrong. */
static int check_stat(es_context *ctx, const es_cost_table *t, const copy_source *s)
{
    const es_shard_stat *was = es_cost_table_shard_stat(t, s->shard);
    char why[160];
    es_shard_change c = was ? es_shard_stat_compare(was, s->path, why, sizeof why) : ES_SHARD_SAME;
    if (c == ES_SHARD_RESIZED)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: %s: the shard changed since it was measured "
                       "(measure it again)", s->path, why);
    if (c == ES_SHARD_TOUCHED)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: %s: the shard changed since it was measured "
                       "(measure it again, or restore its time if only that moved)", s->path, why);
    return ES_OK; /* a source that is gone was named when it was opened */
}

/* Every source must still be there, unchanged, and all of one format, before
 * anything is written: that format is the output's. */
static int check_sources(es_context *ctx, reshard_job *job)
{
    const es_format_ops *first = NULL;
    for (size_t i = 0; i < job->n_sources; i++) {
        const copy_source *s = &job->sources[i];
        uint8_t head[ES_SNIFF_BYTES];
        FILE *fp;
        int e = es_fopen_regular(s->path, &fp);
        if (e)
            return es_fail(ctx, ES_ERR_IO, "%s: source shard cannot be opened: %s (moved or "
                           "deleted since it was measured?)", s->path, es_file_stream_strerror(e));
        size_t n = fread(head, 1, sizeof head, fp);
        int bad = ferror(fp);
        fclose(fp);
        if (bad)
            return es_fail(ctx, ES_ERR_IO, "%s: source shard cannot be read", s->path);
        int rc = check_stat(ctx, job->p->table, s);
        if (rc != ES_OK)
            return rc;
        const es_format_ops *ops = es_format_for(head, n);
        if (!ops || !ops->reshard_copy)
            return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: neither a tar shard nor a CosyVoice "
                           "parquet file: reshard rewrites those", s->path);
        if (first && ops != first)
            return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s is a %s shard, %s a %s one: reshard "
                           "writes one format, so its sources must all be tar or all parquet",
                           s->path, ops->name, job->sources[0].path, first->name);
        first = ops;
    }
    /* no sources: the enum's first value, as the plan was made with */
    job->fmt = first ? first : es_format_for_reshard(ES_RESHARD_TAR);
    job->format = job->fmt->reshard_format;
    es_compress c = job->p->s.compress;
    if (c == ES_COMPRESS_AUTO)
        c = job->fmt->reshard_compress;
    if (job->fmt->reshard_compress_check) {
        int rc = job->fmt->reshard_compress_check(ctx, c);
        if (rc != ES_OK)
            return rc;
    }
    job->compress = c;
    return ES_OK;
}

/* data.list and shards.tsv: shard j is read by rank j % K, worker (j / K) % W
 * under the un-permuted split. */
static int write_lists(es_context *ctx, es_outdir *d, const es_plan *p)
{
    const plan_reshard *r = p->reshard;
    es_strbuf list = {0}, tsv = {0};
    es_strbuf_puts(&tsv, "shard\tutterances\tframes\tcost\trank\tworker\n");
    for (uint32_t s = 0; s < r->n_shards; s++) {
        char name[64];
        es_reshard_shard_name(p, s, name, sizeof name);
        es_strbuf_printf(&list, "%s/%s\n", d->final_path, name);
        es_strbuf_printf(&tsv, "%s/%s\t%zu\t%llu\t%.17g\t%u\t%u\n", d->final_path, name,
                         r->start[s + 1] - r->start[s], (unsigned long long)r->shard_frames[s],
                         r->shard_cost[s], s % p->K, (s / p->K) % p->W);
    }
    int rc = es_outdir_write_text(ctx, d, "data.list", &list);
    if (rc == ES_OK)
        rc = es_outdir_write_text(ctx, d, "shards.tsv", &tsv);
    es_strbuf_release(&list);
    es_strbuf_release(&tsv);
    return rc;
}

/* filtered.tsv: the rows the filter dropped (not copied), with the reason, and
 * what --on-error skip left out (unreadable). */
static int write_filtered(es_context *ctx, es_outdir *d, const es_plan *p)
{
    if (p->n_kept == p->table->n && !p->table->n_skips)
        return ES_OK;
    es_strbuf sb = {0};
    es_strbuf_puts(&sb, "key\tshard\tpos\treason\n");
    for (size_t i = 0, k = 0; i < p->table->n; i++) {
        if (k < p->n_kept && p->kept[k] == i) {
            k++;
            continue;
        }
        const es_cost_row *row = &p->table->rows[i];
        es_strbuf_printf(&sb, "%s\t%s\t%llu\t%s\n", row->key, row->shard,
                         (unsigned long long)row->pos,
                         es_filter_reason_name(es_filter_row(&p->s.model, row)));
    }
    es_plan_unreadable_rows(&sb, p);
    int rc = es_outdir_write_text(ctx, d, "filtered.tsv", &sb);
    es_strbuf_release(&sb);
    return rc;
}

void es_reshard_job_free(reshard_job *job)
{
    if (!job)
        return;
    for (size_t i = 0; i < job->n_sources; i++) {
        free(job->sources[i].path);
        free(job->sources[i].copy);
    }
    free(job->sources);
    free(job->items);
    free(job);
}

int es_reshard_prepare(es_context *ctx, es_outdir *d, const es_plan *p, reshard_job **out)
{
    *out = NULL;
    reshard_job *job = calloc(1, sizeof *job);
    if (!job)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    job->p = p;
    job->d = d;
    int rc = collect(ctx, job);
    if (rc == ES_OK)
        rc = check_sources(ctx, job);
    if (rc == ES_OK && job->fmt->reshard_check)
        rc = job->fmt->reshard_check(ctx, job);
    if (rc != ES_OK) {
        es_reshard_job_free(job);
        return rc;
    }
    /* what plan.json and the shard names report */
    p->reshard->format = job->format;
    p->reshard->compress = job->compress;
    *out = job;
    return ES_OK;
}

int es_reshard_copy(es_context *ctx, reshard_job *job, uint32_t t0, uint32_t t1)
{
    return job->fmt->reshard_copy(ctx, job, t0, t1);
}

int es_reshard_expand(es_context *ctx, reshard_job *job, uint32_t part, uint32_t parts)
{
    return job->fmt->reshard_expand ? job->fmt->reshard_expand(ctx, job, part, parts) : ES_OK;
}

int es_reshard_use_copies(es_context *ctx, reshard_job *job)
{
    return job->fmt->reshard_use_copies ? job->fmt->reshard_use_copies(ctx, job) : ES_OK;
}

void es_reshard_remove_copies(reshard_job *job)
{
    if (job && job->fmt->reshard_remove_copies)
        job->fmt->reshard_remove_copies(job);
}

int es_reshard_finish(es_context *ctx, reshard_job *job)
{
    int rc = job->fmt->reshard_finish ? job->fmt->reshard_finish(ctx, job) : ES_OK;
    if (rc == ES_OK)
        rc = write_lists(ctx, job->d, job->p);
    if (rc == ES_OK)
        rc = write_filtered(ctx, job->d, job->p);
    return rc;
}
