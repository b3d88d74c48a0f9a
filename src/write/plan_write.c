/* es_plan_write: OUTDIR with plan.json and the per-rank files the loaders read.
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
static int refuse_line_break(es_context *ctx, const char *path, const char *list)
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
            rc = refuse_line_break(ctx, text, name);
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
static int write_unreadable(es_context *ctx, es_outdir *d, const es_plan *p)
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

static int write_shard_mode(es_context *ctx, es_outdir *d, const es_plan *p)
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

ES_API int es_plan_write(es_context *ctx, const es_plan *p, const char *outdir,
                         const char *const *inputs, size_t n_inputs)
{
    es_clear_error(ctx);
    if (!p || !outdir)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_write: the plan and OUTDIR are required");
    if (p->s.mode == ES_PLAN_RESHARD && strpbrk(outdir, "\r\n"))
        return refuse_line_break(ctx, outdir, "data.list");
    es_outdir d;
    int rc = es_outdir_begin(ctx, &d, outdir);
    if (rc != ES_OK)
        return rc;
    /* Every file is fsync'd before the rename either way; deferred, the kernel
     * writes back while the next files are made (shard/batch: thousands of
     * small lists; reshard: the copy goes on while earlier shards reach disk,
     * as `cp` + one `sync` at the end does). */
    es_outdir_defer_sync(&d);
    rc = p->s.mode == ES_PLAN_BATCH     ? es_write_batch_mode(ctx, &d, p)
         : p->s.mode == ES_PLAN_RESHARD ? es_reshard_write(ctx, &d, p)
                                        : write_shard_mode(ctx, &d, p);
    if (rc == ES_OK && p->s.mode != ES_PLAN_RESHARD)
        rc = write_unreadable(ctx, &d, p);
    FILE *fp = rc == ES_OK ? es_outdir_create(ctx, &d, "plan.json") : NULL;
    if (rc == ES_OK && !fp)
        rc = ES_ERR_IO;
    if (fp) {
        rc = es_plan_json_write(ctx, p, fp, inputs, n_inputs);
        int crc = es_outdir_close(ctx, &d, fp, "plan.json");
        if (rc == ES_OK)
            rc = crc;
    }
    if (rc != ES_OK) {
        es_outdir_abort(&d);
        return rc;
    }
    return es_outdir_commit(ctx, &d);
}
