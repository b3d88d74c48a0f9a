/* Batch mode's OUTDIR files (es_write_batch_mode, called by es_plan_write_finish in
 * plan_write_stages.c): rank-00000.batches.jsonl, one batch a line in step order,
 * costs.tsv.zst (the table the plan was built from, for later epochs'
 * re-plans) and remainder.tsv for carried rows. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/direct_write.h"
#include "core/grow.h"
#include "core/strbuf.h"
#include "costs/cost_table.h"
#include "write/plan_json.h"
#include "core/outdir.h"
#include "write/plan_write.h"
#include "write/shard_literals.h"

/* Decimal digits of v at w; returns the end. */
static char *put_u64(char *w, uint64_t v)
{
    char tmp[20];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k)
        *w++ = tmp[--k];
    return w;
}

/* printf's %.6g of v: an integral value below 10^6 prints as its digits
 * (the common case, costs in frames), anything else through snprintf. */
static char *put_g6(char *w, double v)
{
    if (v >= 0 && v < 1e6 && v == (double)(uint64_t)v && !(v == 0 && signbit(v)))
        return put_u64(w, (uint64_t)v);
    return w + snprintf(w, 32, "%.6g", v);
}

#define PUT(w, lit) (memcpy(w, lit, sizeof lit - 1), (w) + sizeof lit - 1)

/* What a batch line needs of a row. A batch's rows are gathered just before its
 * line is formatted, so their keys are still in the nearest cache when the line
 * escapes them (gathering a whole rank first left them to be fetched again from
 * far memory: the escape was as costly as the gather). The rows are spread over
 * the table in no particular order; the gather prefetches ahead across batches. */
typedef struct line_row {
    const char *key, *shard;
    size_t key_len;
    size_t shard_lit; /* offset of the shard's literal in the cache's text
                         (shard_literals.h), or NO_LITERAL: escaped in the line */
    size_t shard_len; /* the literal's length; without one, strlen(shard) */
    uint64_t pos;
} line_row;

#define NO_LITERAL SIZE_MAX

/* What a batch line needs of its batch, copied while the rank's rows are
 * listed: a rank's batches lie one per step scattered over the whole batch
 * array (at 50 M rows, one page each), and reading them again while
 * formatting cost a second page-table walk per batch. */
typedef struct line_batch {
    uint64_t step, frames;
    double cost;
    size_t n; /* rows */
    uint32_t worker;
    int repeat;
} line_batch;

/* A rank's batches and row indices in line order, and one batch's gathered
 * rows; reused from rank to rank. */
typedef struct rank_lines {
    size_t *order;     /* the rank's rows (table indices), batch after batch */
    line_batch *batches;
    line_row *rows;    /* the batch being formatted */
    size_t order_cap, batches_cap, rows_cap, n_rows, n_batches;
} rank_lines;

enum {
    AHEAD = 16,       /* rows prefetched ahead of the gather; their keys half as far */
    BATCH_AHEAD = 8,  /* batches (and their first row indices) prefetched ahead */
};

/* Rank r's batches and its rows' table indices in line order: batch by batch,
 * each batch's rows (batch_rows is in packing order; a rank's batches are far
 * apart in it). */
static int list_rank(const es_plan *p, uint32_t r, rank_lines *l)
{
    const plan_batch *const *b = p->index.by_rank + p->index.start[r];
    size_t nb = p->index.start[r + 1] - p->index.start[r];
    size_t n = 0, widest = 0;
    for (size_t j = 0; j < nb; j++) {
        if (j + BATCH_AHEAD < nb)
            __builtin_prefetch(b[j + BATCH_AHEAD]);
        size_t m = b[j]->end - b[j]->begin;
        n += m;
        widest = m > widest ? m : widest;
    }
    if (es_grow((void **)&l->order, &l->order_cap, n, sizeof *l->order, 1024) != 0 ||
        es_grow((void **)&l->batches, &l->batches_cap, nb, sizeof *l->batches, 64) != 0 ||
        es_grow((void **)&l->rows, &l->rows_cap, widest, sizeof *l->rows, 64) != 0)
        return -1;
    l->n_batches = nb;
    l->n_rows = n;
    size_t k = 0;
    for (size_t j = 0; j < nb; j++) {
        if (j + BATCH_AHEAD < nb)
            __builtin_prefetch(&p->batch_rows[b[j + BATCH_AHEAD]->begin]);
        const plan_batch *pb = b[j];
        l->batches[j] = (line_batch){pb->step, pb->frames, pb->cost, pb->end - pb->begin,
                                     pb->worker, pb->repeat};
        for (size_t i = pb->begin; i < pb->end; i++)
            l->order[k++] = p->batch_rows[i];
    }
    return 0;
}

/* The rows at order[first, first + n) into l->rows, prefetching the rank's
 * later rows (and their keys) as it goes. */
static void gather_batch(const es_plan *p, shard_literals *lits, rank_lines *l, size_t first,
                         size_t n)
{
    const es_cost_row *rows = p->table->rows;
    const size_t *order = l->order;
    for (size_t i = first; i < first + n; i++) {
        if (i + AHEAD < l->n_rows)
            __builtin_prefetch(&rows[order[i + AHEAD]]);
        if (i + AHEAD / 2 < l->n_rows) /* (shard names come from shard_literals) */
            __builtin_prefetch(rows[order[i + AHEAD / 2]].key);
        const es_cost_row *row = &rows[order[i]];
        line_row lr = {row->key, row->shard, strlen(row->key), 0, 0, row->pos};
        if (shard_literal_get(lits, row->shard, &lr.shard_lit, &lr.shard_len) != 0) {
            lr.shard_lit = NO_LITERAL;
            lr.shard_len = strlen(row->shard);
        }
        l->rows[i - first] = lr;
    }
}

/* One line of rank-R.batches.jsonl, formatted straight into sb from its batch
 * and rows (gather_batch), in room reserved once for its worst case (every
 * string byte escaped). */
static void batch_line(es_strbuf *sb, const line_batch *b, const line_row *rows,
                       const char *literals)
{
    size_t n = b->n, room = 200;
    for (size_t i = 0; i < n; i++)
        room += ES_JSON_ESCAPED_MAX(rows[i].key_len) + 32 +
                (rows[i].shard_lit == NO_LITERAL ? ES_JSON_ESCAPED_MAX(rows[i].shard_len)
                                                 : rows[i].shard_len);
    char *w = es_strbuf_reserve(sb, room);
    if (!w)
        return;
    w = PUT(w, "{\"step\": ");
    w = put_u64(w, b->step);
    w = PUT(w, ", \"worker\": ");
    w = put_u64(w, b->worker);
    w = PUT(w, ", \"cost\": ");
    w = put_g6(w, b->cost);
    w = PUT(w, ", \"frames\": ");
    w = put_u64(w, b->frames);
    w = PUT(w, ", \"keys\": [");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            w = PUT(w, ", ");
        w = es_json_escape(w, rows[i].key, rows[i].key_len);
    }
    w = PUT(w, "], \"items\": [");
    for (size_t i = 0; i < n; i++) {
        w = i > 0 ? PUT(w, ", [") : PUT(w, "[");
        if (rows[i].shard_lit != NO_LITERAL) {
            memcpy(w, literals + rows[i].shard_lit, rows[i].shard_len);
            w += rows[i].shard_len;
        } else {
            w = es_json_escape(w, rows[i].shard, rows[i].shard_len);
        }
        w = PUT(w, ", ");
        w = put_u64(w, rows[i].pos);
        *w++ = ']';
    }
    /* a padding repeat (remainder pad) says so: its utterances train twice */
    w = b->repeat ? PUT(w, "], \"repeat\": true}\n") : PUT(w, "]}\n");
    es_strbuf_advance(sb, w);
}

/* OUTDIR/costs.tsv.zst, written by a second thread while the JSONL is formatted:
 * the two are independent, and compressing the table takes as long as all the
 * lines. The thread has its own context; its message is copied when it is the
 * error to report. */
typedef struct costs_job {
    es_context *ctx;
    const es_cost_table *t;
    FILE *fp;
    int rc;
} costs_job;

/* The table as zstd into fp: the image es_cost_table_compress_ahead made
 * while the plan was built, or compressed now. */
static int write_costs(es_context *ctx, const es_cost_table *t, FILE *fp)
{
    int rc = es_cost_table_write_zstd_image(ctx, t, fp, "costs.tsv.zst");
    return rc != 1 ? rc : es_cost_table_write_stream(ctx, t, fp, "costs.tsv.zst", 1);
}

static void *costs_main(void *arg)
{
    costs_job *j = arg;
    j->rc = write_costs(j->ctx, j->t, j->fp);
    return NULL;
}

/* Writes costs.tsv.zst (fp already created) and closes it. */
static int finish_costs(es_context *ctx, es_outdir *d, const es_plan *p, FILE *fp)
{
    int rc = write_costs(ctx, p->table, fp);
    int crc = es_outdir_close(ctx, d, fp, "costs.tsv.zst");
    return rc == ES_OK ? crc : rc;
}

/* es_plan_settings.progress in batch mode: the rows of the rank files written
 * so far, counted by both writing threads, reported by the calling thread
 * only (after each of its ranks, and once at the end). */
typedef struct rows_progress {
    atomic_size_t done;
    size_t total; /* every rank's batch rows, padding copies included */
} rows_progress;

static void report_rows(const es_plan *p, rows_progress *pr)
{
    if (p->s.progress)
        p->s.progress(p->s.progress_user, atomic_load(&pr->done), pr->total);
}

/* rank-R.batches.jsonl for ranks [first, end), each file written whole from
 * its own buffer. Stops early (ES_OK) once *stop is set: the thread writing
 * the lower ranks failed, and its error is the one reported. Counts each
 * rank's rows in *pr; `reports`: this is the calling thread, which reports. */
static int write_ranks(es_context *ctx, es_outdir *d, const es_plan *p, uint32_t first,
                       uint32_t end, const atomic_int *stop, rows_progress *pr, int reports)
{
    /* aligned: a rank file (megabytes) goes to disk around the page cache */
    es_strbuf sb = {.align = ES_DIRECT_ALIGN};
    rank_lines lines = {0};
    shard_literals lits = {0};
    int rc = ES_OK;
    for (uint32_t r = first; rc == ES_OK && r < end && !(stop && atomic_load(stop)); r++) {
        sb.len = 0;
        if (list_rank(p, r, &lines) != 0) {
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
            break;
        }
        size_t at = 0;
        for (size_t j = 0; j < lines.n_batches; j++) {
            gather_batch(p, &lits, &lines, at, lines.batches[j].n);
            batch_line(&sb, &lines.batches[j], lines.rows, lits.text.buf);
            at += lines.batches[j].n;
        }
        char name[64];
        snprintf(name, sizeof name, "rank-%05u.batches.jsonl", r);
        rc = sb.oom ? es_fail(ctx, ES_ERR_NOMEM, "out of memory") : es_outdir_write_text(ctx, d, name, &sb);
        atomic_fetch_add(&pr->done, lines.n_rows);
        if (reports && rc == ES_OK)
            report_rows(p, pr);
    }
    free(lines.order), free(lines.rows), free(lines.batches);
    shard_literals_release(&lits);
    es_strbuf_release(&sb);
    return rc;
}

/* The upper half of the ranks' files, on a second thread: gathering a rank's
 * rows waits on memory more than it computes, and the two halves share
 * nothing but the folder (core/outdir.c takes a lock where they meet). */
typedef struct ranks_job {
    es_context *ctx;
    es_outdir *d;
    const es_plan *p;
    uint32_t first, end;
    const atomic_int *stop;
    rows_progress *pr;
    int rc;
} ranks_job;

static void *ranks_main(void *arg)
{
    ranks_job *j = arg;
    j->rc = write_ranks(j->ctx, j->d, j->p, j->first, j->end, j->stop, j->pr, 0);
    return NULL;
}

/* All ranks' files: the lower half here, the upper half on a second thread
 * when there are two ranks, two cores and a thread to be had. The error
 * reported is the first in rank order, as one thread writing them in turn
 * would meet it. */
static int write_all_ranks(es_context *ctx, es_outdir *d, const es_plan *p)
{
    atomic_int lower_failed = 0;
    rows_progress pr = {0, 0};
    if (p->s.progress) /* a pass over the batches (a few per thousand rows) */
        for (size_t j = 0; j < p->index.start[p->K]; j++)
            pr.total += p->index.by_rank[j]->end - p->index.by_rank[j]->begin;
    ranks_job up = {NULL, d, p, p->K / 2, p->K, &lower_failed, &pr, ES_OK};
    pthread_t thread;
    int threaded = p->K >= 2 && sysconf(_SC_NPROCESSORS_ONLN) >= 2 &&
                   (up.ctx = es_context_new_like(ctx)) != NULL &&
                   pthread_create(&thread, NULL, ranks_main, &up) == 0;
    int rc = write_ranks(ctx, d, p, 0, threaded ? up.first : p->K, NULL, &pr, 1);
    if (threaded) {
        if (rc != ES_OK)
            atomic_store(&lower_failed, 1);
        pthread_join(thread, NULL);
        if (rc == ES_OK && up.rc != ES_OK)
            rc = es_fail(ctx, up.rc, "%s", es_errmsg(up.ctx));
    }
    es_context_free(up.ctx);
    if (rc == ES_OK) /* the upper half's last ranks: done reaches total */
        report_rows(p, &pr);
    return rc;
}

int es_write_batch_mode(es_context *ctx, es_outdir *d, const es_plan *p)
{
    /* Start the table first, in its own thread when one can be had; errors are
     * reported as before: the JSONL's first, then the table's. */
    costs_job job = {es_context_new_like(ctx), p->table, NULL, ES_OK};
    pthread_t costs_thread;
    int threaded = 0;
    if (job.ctx && (job.fp = es_outdir_create(job.ctx, d, "costs.tsv.zst")) != NULL)
        threaded = pthread_create(&costs_thread, NULL, costs_main, &job) == 0;
    int rc = write_all_ranks(ctx, d, p);
    if (threaded) {
        pthread_join(costs_thread, NULL);
        int crc = es_outdir_close(job.ctx, d, job.fp, "costs.tsv.zst");
        if (job.rc == ES_OK)
            job.rc = crc;
        if (rc == ES_OK && job.rc != ES_OK)
            rc = es_fail(ctx, job.rc, "%s", es_errmsg(job.ctx));
    } else if (rc != ES_OK) {
        if (job.fp)
            fclose(job.fp);
    } else if (job.fp) {
        rc = finish_costs(ctx, d, p, job.fp); /* no thread: write it here */
    } else {
        /* not created above (or no context for it): create it now, as before */
        FILE *fp = es_outdir_create(ctx, d, "costs.tsv.zst");
        rc = fp ? finish_costs(ctx, d, p, fp) : ES_ERR_IO;
    }
    es_context_free(job.ctx);
    if (rc == ES_OK && p->n_carried) {
        es_strbuf sb = {0};
        es_strbuf_puts(&sb, "key\tshard\tpos\n");
        for (size_t i = 0; i < p->n_carried; i++) {
            const es_cost_row *row = &p->table->rows[p->carried[i]];
            es_strbuf_printf(&sb, "%s\t%s\t%llu\n", row->key, row->shard,
                             (unsigned long long)row->pos);
        }
        rc = es_outdir_write_text(ctx, d, "remainder.tsv", &sb);
        es_strbuf_release(&sb);
    }
    return rc;
}
