/* es_plan_write: OUTDIR with plan.json and the per-rank files the loaders read.
 *
 * Shard mode: rank-00000.list holds the rank's entries interleaved by worker
 * (see plan_shard.c), rank-00000.worker-0.list each worker's own. An entry is
 * written as the user's list wrote it: a shard path; a raw-list row as its
 * original JSON line; a Kaldi entry as its utterance key.
 * Batch mode: rank-00000.batches.jsonl, one batch a line in step order:
 * {"step", "worker", "cost", "frames", "keys": [...], "items": [[shard, pos], ...]}.
 * Carried or dropped utterances go to remainder.tsv (key, shard, pos). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/line_reader.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "costs/cost_table.h"
#include "plan/plan_json.h"
#include "plan/plan_outdir.h"
#include "plan/plan_reshard.h"

/* Original lines of raw lists, for item entries: file → array of lines. */
typedef struct raw_lines {
    es_strmap files; /* shard string → index into `sets` + 1 */
    char ***sets;
    size_t *counts;
    size_t n_sets;
} raw_lines;

static void raw_lines_release(raw_lines *r)
{
    for (size_t i = 0; i < r->n_sets; i++) {
        for (size_t j = 0; j < r->counts[i]; j++)
            free(r->sets[i][j]);
        free(r->sets[i]);
    }
    free(r->sets);
    free(r->counts);
    es_strmap_release(&r->files);
}

static int load_lines(es_context *ctx, raw_lines *r, const char *path, size_t *set)
{
    es_line_reader lr;
    int e = es_line_reader_open(&lr, path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot reopen the raw list to write its lines: %s",
                       path, strerror(e));
    char ***sets = realloc(r->sets, (r->n_sets + 1) * sizeof *sets);
    size_t *counts = realloc(r->counts, (r->n_sets + 1) * sizeof *counts);
    if (sets)
        r->sets = sets;
    if (counts)
        r->counts = counts;
    if (!sets || !counts) {
        es_line_reader_close(&lr);
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    char **lines = NULL;
    size_t n = 0, cap = 0;
    int got, rc = ES_OK;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) > 0) {
        if (n == cap) {
            char **p = realloc(lines, (cap = cap ? 2 * cap : 256) * sizeof *p);
            if (!p)
                rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
            else
                lines = p;
        }
        if (rc == ES_OK && !(lines[n++] = strdup(lr.line)))
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    es_line_reader_close(&lr);
    r->sets[r->n_sets] = lines;
    r->counts[r->n_sets] = n;
    *set = r->n_sets++;
    if (rc == ES_OK && es_strmap_put(&r->files, path, strlen(path), (const void *)(uintptr_t)(*set + 1)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    return rc;
}

/* The text of element e as the user's list wrote it. */
static int element_text(es_context *ctx, const es_plan *p, raw_lines *raw, size_t e,
                        const char **text)
{
    const plan_element *el = &p->elements[e];
    const es_cost_row *row = &p->table->rows[el->first_row];
    if (!el->is_item) {
        *text = row->shard;
        return ES_OK;
    }
    struct stat st;
    if (stat(row->shard, &st) == 0 && S_ISDIR(st.st_mode)) {
        *text = row->key; /* a Kaldi entry: its utterance id */
        return ES_OK;
    }
    const es_strmap_slot *slot = es_strmap_get(&raw->files, row->shard, strlen(row->shard));
    size_t set = 0;
    if (slot) {
        set = (size_t)(uintptr_t)slot->value - 1;
    } else {
        int rc = load_lines(ctx, raw, row->shard, &set);
        if (rc != ES_OK)
            return rc;
    }
    if (row->pos >= raw->counts[set])
        return es_fail(ctx, ES_ERR_FORMAT, "%s: has no line %llu any more (changed since it was "
                       "measured?)", row->shard, (unsigned long long)row->pos + 1);
    *text = raw->sets[set][row->pos];
    return ES_OK;
}

/* Elements grouped by (rank, worker), in list order within each group:
 * group g = rank·W + worker holds order[start[g] .. start[g + 1]). */
typedef struct groups {
    size_t *order, *start;
} groups;

static int group_elements(const es_plan *p, groups *g)
{
    size_t n_groups = (size_t)p->K * p->W;
    g->order = malloc((p->n_elements ? p->n_elements : 1) * sizeof *g->order);
    g->start = calloc(n_groups + 1, sizeof *g->start);
    size_t *fill = malloc((n_groups + 1) * sizeof *fill);
    if (!g->order || !g->start || !fill) {
        free(fill);
        return -1;
    }
    for (size_t e = 0; e < p->n_elements; e++)
        g->start[(size_t)p->elements[e].rank * p->W + p->elements[e].worker + 1]++;
    for (size_t i = 0; i < n_groups; i++)
        g->start[i + 1] += g->start[i];
    memcpy(fill, g->start, (n_groups + 1) * sizeof *fill);
    for (size_t e = 0; e < p->n_elements; e++)
        g->order[fill[(size_t)p->elements[e].rank * p->W + p->elements[e].worker]++] = e;
    free(fill);
    return 0;
}

static int write_text_file(es_context *ctx, es_outdir *d, const char *name, const es_strbuf *sb)
{
    FILE *fp = es_outdir_create(ctx, d, name);
    if (!fp)
        return ES_ERR_IO;
    if (sb->len)
        fwrite(sb->buf, 1, sb->len, fp);
    return es_outdir_close(ctx, d, fp, name);
}

static int write_rank_lists(es_context *ctx, es_outdir *d, const es_plan *p, raw_lines *raw,
                            uint32_t r, const groups *g)
{
    const size_t *first = &g->start[(size_t)r * p->W];
    size_t max = 0;
    for (uint32_t w = 0; w < p->W; w++)
        if (first[w + 1] - first[w] > max)
            max = first[w + 1] - first[w];
    es_strbuf all = {0}, one = {0};
    char name[64];
    int rc = ES_OK;
    for (uint32_t w = 0; rc == ES_OK && w < p->W; w++) {
        one.len = 0;
        for (size_t j = first[w]; rc == ES_OK && j < first[w + 1]; j++) {
            const char *text;
            rc = element_text(ctx, p, raw, g->order[j], &text);
            if (rc == ES_OK) {
                es_strbuf_puts(&one, text);
                es_strbuf_putc(&one, '\n');
            }
        }
        snprintf(name, sizeof name, "rank-%05u.worker-%u.list", r, w);
        if (rc == ES_OK)
            rc = one.oom ? es_fail(ctx, ES_ERR_NOMEM, "out of memory")
                         : write_text_file(ctx, d, name, &one);
    }
    /* interleaved: position j·W + w is worker w's j-th entry */
    for (size_t j = 0; rc == ES_OK && j < max; j++)
        for (uint32_t w = 0; rc == ES_OK && w < p->W; w++) {
            const char *text;
            if (first[w] + j >= first[w + 1])
                continue;
            rc = element_text(ctx, p, raw, g->order[first[w] + j], &text);
            if (rc == ES_OK) {
                es_strbuf_puts(&all, text);
                es_strbuf_putc(&all, '\n');
            }
        }
    snprintf(name, sizeof name, "rank-%05u.list", r);
    if (rc == ES_OK)
        rc = all.oom ? es_fail(ctx, ES_ERR_NOMEM, "out of memory")
                     : write_text_file(ctx, d, name, &all);
    es_strbuf_release(&all);
    es_strbuf_release(&one);
    return rc;
}

static int write_shard_mode(es_context *ctx, es_outdir *d, const es_plan *p)
{
    raw_lines raw = {0};
    groups g = {0};
    int rc = group_elements(p, &g) == 0 ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (uint32_t r = 0; rc == ES_OK && r < p->K; r++)
        rc = write_rank_lists(ctx, d, p, &raw, r, &g);
    free(g.order);
    free(g.start);
    raw_lines_release(&raw);
    return rc;
}

static void batch_line(es_strbuf *sb, const es_plan *p, const plan_batch *b)
{
    es_strbuf_printf(sb, "{\"step\": %llu, \"worker\": %u, \"cost\": %.6g, \"frames\": %llu, "
                     "\"keys\": [", (unsigned long long)b->step, b->worker, b->cost,
                     (unsigned long long)b->frames);
    for (size_t i = b->begin; i < b->end; i++) {
        if (i > b->begin)
            es_strbuf_puts(sb, ", ");
        es_json_string(sb, p->table->rows[p->batch_rows[i]].key);
    }
    es_strbuf_puts(sb, "], \"items\": [");
    for (size_t i = b->begin; i < b->end; i++) {
        const es_cost_row *row = &p->table->rows[p->batch_rows[i]];
        es_strbuf_puts(sb, i > b->begin ? ", [" : "[");
        es_json_string(sb, row->shard);
        es_strbuf_printf(sb, ", %llu]", (unsigned long long)row->pos);
    }
    es_strbuf_puts(sb, "]}\n");
}

static int cmp_rank_step(const void *a, const void *b)
{
    const plan_batch *x = *(const plan_batch *const *)a, *y = *(const plan_batch *const *)b;
    if (x->rank != y->rank)
        return x->rank > y->rank ? 1 : -1;
    return (x->step > y->step) - (x->step < y->step);
}

static int write_batch_mode(es_context *ctx, es_outdir *d, const es_plan *p)
{
    const plan_batch **mine = malloc((p->n_batches ? p->n_batches : 1) * sizeof *mine);
    int rc = mine ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    es_strbuf sb = {0};
    for (size_t b = 0; mine && b < p->n_batches; b++)
        mine[b] = &p->batches[b];
    if (mine)
        qsort(mine, p->n_batches, sizeof *mine, cmp_rank_step);
    size_t at = 0;
    for (uint32_t r = 0; rc == ES_OK && r < p->K; r++) {
        sb.len = 0;
        for (; at < p->n_batches && mine[at]->rank == r; at++)
            batch_line(&sb, p, mine[at]);
        char name[64];
        snprintf(name, sizeof name, "rank-%05u.batches.jsonl", r);
        rc = sb.oom ? es_fail(ctx, ES_ERR_NOMEM, "out of memory") : write_text_file(ctx, d, name, &sb);
    }
    if (rc == ES_OK && p->n_carried) {
        sb.len = 0;
        es_strbuf_puts(&sb, "key\tshard\tpos\n");
        for (size_t i = 0; i < p->n_carried; i++) {
            const es_cost_row *row = &p->table->rows[p->carried[i]];
            es_strbuf_printf(&sb, "%s\t%s\t%llu\n", row->key, row->shard,
                             (unsigned long long)row->pos);
        }
        rc = write_text_file(ctx, d, "remainder.tsv", &sb);
    }
    es_strbuf_release(&sb);
    free(mine);
    return rc;
}

ES_API int es_plan_write(es_context *ctx, const es_plan *p, const es_cost_table *t,
                         const char *outdir, const char *const *inputs, size_t n_inputs)
{
    es_clear_error(ctx);
    if (!p || !outdir || t != p->table)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_write: the plan, its table and OUTDIR are required");
    es_outdir d;
    int rc = es_outdir_begin(ctx, &d, outdir);
    if (rc != ES_OK)
        return rc;
    rc = p->s.mode == ES_PLAN_BATCH     ? write_batch_mode(ctx, &d, p)
         : p->s.mode == ES_PLAN_RESHARD ? es_reshard_write(ctx, &d, p)
                                        : write_shard_mode(ctx, &d, p);
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
