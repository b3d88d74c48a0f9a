/* What es_plan_write (plan_writer.c) puts in OUTDIR beside plan.json: the
 * per-rank files the loaders read.
 *
 * Shard mode: rank-00000.list holds the rank's entries interleaved by worker
 * (see plan_shard.c), rank-00000.worker-0.list each worker's own, written from
 * es_plan_rank_shard (plan_access.c), so callers of the library get the same
 * lines. An entry is written as the user's list wrote it: a shard path; a
 * raw-list row as its original JSON line; a Kaldi entry as its utterance key.
 * Batch mode: rank-00000.batches.jsonl, one batch a line in step order:
 * {"step", "worker", "cost", "frames", "keys": [...], "items": [[shard, pos], ...]},
 * plus "repeat": true on a remainder-padding repeat.
 * Carried or dropped utterances go to remainder.tsv (key, shard, pos), and the
 * table the plan was built from to costs.tsv.zst: a batch plan fixes one
 * epoch's batches, and equishard.loaders re-plans later epochs from that table
 * (their own batches, identical on every rank, no communication). */
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

/* The loaders read lists one entry a line: a path with a line break in it would
 * become two entries. Refused, the path shown with the break escaped. */
int es_refuse_line_break(es_context *ctx, const char *path, const char *list)
{
    char shown[512];
    size_t o = 0;
    for (const char *c = path; *c && o + 3 < sizeof shown; c++) {
        if (*c == '\n' || *c == '\r') {
            shown[o++] = '\\';
            shown[o++] = *c == '\n' ? 'n' : 'r';
        } else {
            shown[o++] = *c;
        }
    }
    shown[o] = '\0';
    return es_fail(ctx, ES_ERR_FORMAT, "%s: a path with a line break cannot go into %s (the "
                   "loaders read one entry a line); rename it", shown, list);
}

/* One list file: entries 0 .. n-1 of (rank, worker) as es_plan_rank_shard gives them. */
static int write_list(es_context *ctx, es_outdir *d, const es_plan *p, uint32_t r, uint32_t w,
                      const char *name, es_strbuf *sb)
{
    size_t n = es_plan_rank_shard_count(p, r, w);
    int rc = ES_OK;
    sb->len = 0;
    for (size_t i = 0; rc == ES_OK && i < n; i++) {
        const char *text;
        rc = es_plan_rank_shard(ctx, p, r, w, i, &text);
        if (rc == ES_OK && strpbrk(text, "\r\n"))
            rc = es_refuse_line_break(ctx, text, name);
        if (rc == ES_OK) {
            es_strbuf_puts(sb, text);
            es_strbuf_putc(sb, '\n');
        }
    }
    if (rc == ES_OK)
        rc = sb->oom ? es_fail(ctx, ES_ERR_NOMEM, "out of memory") : es_outdir_write_text(ctx, d, name, sb);
    return rc;
}

/* Shard and batch modes: filtered.tsv only when --on-error skip left something
 * out (the loader applies the filter itself there; reshard lists its drops). */
int es_write_unreadable(es_context *ctx, es_outdir *d, const es_plan *p)
{
    if (!p->table->n_skips)
        return ES_OK;
    es_strbuf sb = {0};
    es_strbuf_puts(&sb, "key\tshard\tpos\treason\n");
    es_plan_unreadable_rows(&sb, p);
    int rc = es_outdir_write_text(ctx, d, "filtered.tsv", &sb);
    es_strbuf_release(&sb);
    return rc;
}

int es_write_shard_mode(es_context *ctx, es_outdir *d, const es_plan *p)
{
    es_strbuf sb = {0};
    char name[64];
    int rc = ES_OK;
    for (uint32_t r = 0; rc == ES_OK && r < p->K; r++) {
        for (uint32_t w = 0; rc == ES_OK && w < p->W; w++) {
            snprintf(name, sizeof name, "rank-%05u.worker-%u.list", r, w);
            rc = write_list(ctx, d, p, r, w, name, &sb);
        }
        snprintf(name, sizeof name, "rank-%05u.list", r);
        if (rc == ES_OK)
            rc = write_list(ctx, d, p, r, ES_PLAN_ALL_WORKERS, name, &sb);
    }
    es_strbuf_release(&sb);
    return rc;
}

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
    size_t key_len, shard_len;
    uint64_t pos;
} line_row;

enum { AHEAD = 16 }; /* rows prefetched ahead of the gather; their keys half as far */

static int gather_rank(const es_plan *p, uint32_t r, line_row **rows_out, size_t *cap)
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
        if (i + AHEAD / 2 < n) {
            __builtin_prefetch(rows[out[i + AHEAD / 2].pos].key);
            __builtin_prefetch(rows[out[i + AHEAD / 2].pos].shard);
        }
        const es_cost_row *row = &rows[out[i].pos];
        out[i] = (line_row){row->key, row->shard, strlen(row->key), strlen(row->shard), row->pos};
    }
    return 0;
}

/* One line of rank-R.batches.jsonl, formatted straight into sb from its rows
 * (gather_rank), in room reserved once for its worst case (every string byte
 * escaped). */
static void batch_line(es_strbuf *sb, const plan_batch *b, const line_row *rows)
{
    size_t n = b->end - b->begin, room = 200;
    for (size_t i = 0; i < n; i++)
        room += ES_JSON_ESCAPED_MAX(rows[i].key_len) + ES_JSON_ESCAPED_MAX(rows[i].shard_len) + 32;
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
        w = es_json_escape(w, rows[i].shard, rows[i].shard_len);
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
    for (uint32_t r = 0; rc == ES_OK && r < p->K; r++) {
        sb.len = 0;
        if (gather_rank(p, r, &rows, &cap) != 0) {
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
            break;
        }
        const line_row *at = rows;
        for (size_t i = p->index.start[r]; i < p->index.start[r + 1]; i++) {
            const plan_batch *b = p->index.by_rank[i];
            batch_line(&sb, b, at);
            at += b->end - b->begin;
        }
        char name[64];
        snprintf(name, sizeof name, "rank-%05u.batches.jsonl", r);
        rc = sb.oom ? es_fail(ctx, ES_ERR_NOMEM, "out of memory") : es_outdir_write_text(ctx, d, name, &sb);
    }
    free(rows);
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
