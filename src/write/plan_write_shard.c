/* What es_plan_write (plan_write_stages.c) puts in OUTDIR beside plan.json in shard
 * mode: rank-00000.list holds the rank's entries interleaved by worker (see
 * plan_shard.c), rank-00000.worker-0.list each worker's own, written from
 * es_plan_rank_shard (plan_access.c), so callers of the library get the same
 * lines. An entry is written as the user's list wrote it: a shard path; a
 * raw-list row as its original JSON line; a Kaldi entry as its utterance key.
 * Also filtered.tsv (shard and batch modes) and the line-break check every
 * list shares. Batch mode's files: plan_write_batch.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "costs/cost_table.h"
#include "write/plan_json.h"
#include "core/outdir.h"
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
