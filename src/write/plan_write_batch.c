/* Batch mode's OUTDIR files (es_write_batch_mode, called by es_plan_write_finish in
 * plan_writer.c): rank-00000.batches.jsonl, one batch a line in step order,
 * costs.tsv.zst (the table the plan was built from, for later epochs'
 * re-plans) and remainder.tsv for carried rows. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "costs/cost_table.h"
#include "write/plan_json.h"
#include "write/plan_outdir.h"
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

/* What a batch line needs of a row, gathered for a whole rank before its lines
 * are formatted: the rows are spread over the table in no particular order, and
 * fetching them (and their keys) one by one while formatting stalled on a cache
 * miss per row; the gather prefetches ahead instead. */
typedef struct line_row {
    const char *key, *shard;
    size_t key_len;
    size_t shard_lit; /* offset of the shard's literal in the cache's text
                         (shard_literals.h), or NO_LITERAL: escaped in the line */
    size_t shard_len; /* the literal's length; without one, strlen(shard) */
    uint64_t pos;
} line_row;

#define NO_LITERAL SIZE_MAX

enum { AHEAD = 16 }; /* rows prefetched ahead of the gather; their keys half as far */

static int gather_rank(const es_plan *p, uint32_t r, shard_literals *lits, line_row **rows_out,
                       size_t *cap)
{
    const es_cost_row *rows = p->table->rows;
    size_t n = 0;
    for (size_t i = p->index.start[r]; i < p->index.start[r + 1]; i++)
        n += p->index.by_rank[i]->end - p->index.by_rank[i]->begin;
    if (n > *cap) {
        free(*rows_out);
        *cap = n;
        if (!(*rows_out = malloc(n * sizeof **rows_out)))
            return -1;
    }
    line_row *out = *rows_out;
    /* the rank's row indices in line order: batch by batch, each batch's rows */
    size_t k = 0;
    const plan_batch *const *b = p->index.by_rank + p->index.start[r];
    size_t nb = p->index.start[r + 1] - p->index.start[r];
    for (size_t j = 0; j < nb; j++)
        for (size_t i = b[j]->begin; i < b[j]->end; i++)
            out[k++].pos = p->batch_rows[i];
    for (size_t i = 0; i < n; i++) {
        if (i + AHEAD < n)
            __builtin_prefetch(&rows[out[i + AHEAD].pos]);
        if (i + AHEAD / 2 < n) /* (shard names come from shard_literals) */
            __builtin_prefetch(rows[out[i + AHEAD / 2].pos].key);
        const es_cost_row *row = &rows[out[i].pos];
        line_row lr = {row->key, row->shard, strlen(row->key), 0, 0, row->pos};
        if (shard_literal_get(lits, row->shard, &lr.shard_lit, &lr.shard_len) != 0) {
            lr.shard_lit = NO_LITERAL;
            lr.shard_len = strlen(row->shard);
        }
        out[i] = lr;
    }
    return 0;
}

/* One line of rank-R.batches.jsonl, formatted straight into sb from its rows
 * (gather_rank), in room reserved once for its worst case (every string byte
 * escaped). */
static void batch_line(es_strbuf *sb, const plan_batch *b, const line_row *rows,
                       const char *literals)
{
    size_t n = b->end - b->begin, room = 200;
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

static void *costs_main(void *arg)
{
    costs_job *j = arg;
    j->rc = es_cost_table_write_stream(j->ctx, j->t, j->fp, "costs.tsv.zst", 1);
    return NULL;
}

/* Writes costs.tsv.zst (fp already created) and closes it. */
static int finish_costs(es_context *ctx, es_outdir *d, const es_plan *p, FILE *fp)
{
    int rc = es_cost_table_write_stream(ctx, p->table, fp, "costs.tsv.zst", 1);
    int crc = es_outdir_close(ctx, d, fp, "costs.tsv.zst");
    return rc == ES_OK ? crc : rc;
}

int es_write_batch_mode(es_context *ctx, es_outdir *d, const es_plan *p)
{
    es_strbuf sb = {0};
    int rc = ES_OK;
    /* Start the table first, in its own thread when one can be had; errors are
     * reported as before: the JSONL's first, then the table's. */
    costs_job job = {es_context_new(), p->table, NULL, ES_OK};
    pthread_t costs_thread;
    int threaded = 0;
    if (job.ctx && (job.fp = es_outdir_create(job.ctx, d, "costs.tsv.zst")) != NULL)
        threaded = pthread_create(&costs_thread, NULL, costs_main, &job) == 0;
    line_row *rows = NULL;
    size_t cap = 0;
    shard_literals lits = {0};
    for (uint32_t r = 0; rc == ES_OK && r < p->K; r++) {
        sb.len = 0;
        if (gather_rank(p, r, &lits, &rows, &cap) != 0) {
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
            break;
        }
        const line_row *at = rows;
        for (size_t i = p->index.start[r]; i < p->index.start[r + 1]; i++) {
            const plan_batch *b = p->index.by_rank[i];
            batch_line(&sb, b, at, lits.text.buf);
            at += b->end - b->begin;
        }
        char name[64];
        snprintf(name, sizeof name, "rank-%05u.batches.jsonl", r);
        rc = sb.oom ? es_fail(ctx, ES_ERR_NOMEM, "out of memory") : es_outdir_write_text(ctx, d, name, &sb);
    }
    free(rows);
    shard_literals_release(&lits);
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
        sb.len = 0;
        es_strbuf_puts(&sb, "key\tshard\tpos\n");
        for (size_t i = 0; i < p->n_carried; i++) {
            const es_cost_row *row = &p->table->rows[p->carried[i]];
            es_strbuf_printf(&sb, "%s\t%s\t%llu\n", row->key, row->shard,
                             (unsigned long long)row->pos);
        }
        rc = es_outdir_write_text(ctx, d, "remainder.tsv", &sb);
    }
    es_strbuf_release(&sb);
    return rc;
}
