/* es_plan_build: filter the table as the loader would, then hand over to the
 * mode's builder; the settings' defaults and the plan freed. Its numbers are
 * read back in plan_loads.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigarray.h"
#include "costs/cost_table.h"
#include "plan/plan_internal.h"

ES_API void es_plan_defaults(es_plan_settings *s)
{
    memset(s, 0, sizeof *s);
    s->workers = 1;
    s->mode = ES_PLAN_SHARD;
    es_cost_model_defaults(&s->model);
    s->max_frames_in_batch = 2000;
    s->sort_size = 500;
    s->remainder = ES_REMAINDER_PAD;
    s->compress = ES_COMPRESS_AUTO;
}

ES_API void es_plan_free(es_plan *p)
{
    if (!p)
        return;
    free(p->kept);
    free(p->frames);
    free(p->cost);
    free(p->elements);
    free(p->element_of_row);
    free(p->batches);
    free(p->batch_rows);
    free(p->carried);
    free(p->loads);
    es_plan_reshard_free(p->reshard);
    es_plan_index_release(&p->index);
    free(p);
}

static int check_settings(es_context *ctx, const es_plan_settings *s)
{
    if (s->world_size == 0)
        return es_fail(ctx, ES_ERR_USAGE, "plan: world_size must be at least 1");
    if (s->workers == 0)
        return es_fail(ctx, ES_ERR_USAGE, "plan: workers must be at least 1");
    if ((uint64_t)s->world_size * s->workers > (1u << 24))
        return es_fail(ctx, ES_ERR_USAGE, "plan: world_size × workers is implausibly large");
    if (!es_enum_name(ES_ENUM_PLAN_MODE, (int)s->mode))
        return es_fail(ctx, ES_ERR_USAGE, "plan: mode: unknown value %d", (int)s->mode);
    if (!es_enum_name(ES_ENUM_REMAINDER, (int)s->remainder))
        return es_fail(ctx, ES_ERR_USAGE, "plan: remainder: unknown value %d", (int)s->remainder);
    if (!(s->model.frame_rate > 0) || !isfinite(s->model.frame_rate))
        return es_fail(ctx, ES_ERR_USAGE, "plan: frame_rate must be positive");
    if (es_cost_model_check_weights(ctx, "plan", "", &s->model) != ES_OK)
        return ES_ERR_USAGE;
    if (s->batch_size == 0 && s->max_frames_in_batch == 0)
        return es_fail(ctx, ES_ERR_USAGE, "plan: max_frames_in_batch must be positive (or batch_size set)");
    return ES_OK;
}

/* Frames, cost and the filter's verdict for every row. */
static int filter_rows(es_context *ctx, es_plan *p)
{
    size_t n = p->table->n;
    p->frames = malloc((n ? n : 1) * sizeof *p->frames);
    p->cost = malloc((n ? n : 1) * sizeof *p->cost);
    p->kept = malloc((n ? n : 1) * sizeof *p->kept);
    if (!p->frames || !p->cost || !p->kept)
        return es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    /* all three are written front to back below, in step (core/bigarray.h) */
    es_bigarray_col cols[3] = {{p->frames, sizeof *p->frames}, {p->cost, sizeof *p->cost},
                               {p->kept, sizeof *p->kept}};
    es_bigarray_writer w;
    es_bigarray_begin(&w, p->fill | ES_FILL_MAP, cols, 3, n);
    for (size_t i = 0; i < n; i++) {
        es_bigarray_reach(&w, i);
        if ((i & (PLAN_PROGRESS_ROWS - 1)) == 0 && i)
            es_plan_progress(p, PLAN_PASS_FILTER, i, n);
        const es_cost_row *row = &p->table->rows[i];
        es_filter_reason why = es_filter_row(&p->s.model, row);
        p->frames[i] = es_row_frames(&p->s.model, row);
        p->cost[i] = es_row_cost(&p->s.model, row);
        if (p->leave_out && p->leave_out[i])
            p->left_out++; /* not in this plan, and not the filter's doing */
        else if (why == ES_KEEP)
            p->kept[p->n_kept++] = i;
        else
            p->filtered[why]++;
    }
    es_bigarray_end(&w);
    if (p->n_kept == 0 && p->left_out)
        return es_fail(ctx, ES_ERR_USAGE, "plan: no utterances to plan (%zu rows, %llu of them "
                       "left out, the rest filtered)", n, (unsigned long long)p->left_out);
    if (p->n_kept == 0)
        return es_fail(ctx, ES_ERR_FORMAT, "plan: no utterances to plan (%zu rows, all filtered "
                       "or empty input); see the filter flags", n);
    return ES_OK;
}

typedef struct row_at {
    const char *shard;
    uint64_t pos;
    size_t row;
} row_at;

static int cmp_row_at(const void *a, const void *b)
{
    const row_at *x = a, *y = b;
    int c = x->shard == y->shard ? 0 : strcmp(x->shard, y->shard);
    if (c)
        return c;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static int cmp_run_shard(const void *a, const void *b)
{
    return strcmp(((const row_at *)a)->shard, ((const row_at *)b)->shard);
}

/* The common case decided without sorting every row: tables list each shard's
 * rows together, positions rising. Returns 1 when the rows form runs of one
 * shard string with strictly rising pos and no shard string heads two runs
 * (then no (shard, pos) repeats); 0 when that is not so or memory is short,
 * and the full check decides. */
static int unique_by_runs(const es_cost_table *t)
{
    size_t n_runs = 1;
    for (size_t i = 1; i < t->n; i++) {
        const es_cost_row *a = &t->rows[i - 1], *b = &t->rows[i];
        if (a->shard == b->shard || strcmp(a->shard, b->shard) == 0) {
            if (b->pos <= a->pos)
                return 0;
        } else {
            n_runs++;
        }
    }
    row_at *runs = malloc(n_runs * sizeof *runs);
    if (!runs)
        return 0;
    size_t k = 0;
    runs[k++] = (row_at){t->rows[0].shard, 0, 0};
    for (size_t i = 1; i < t->n; i++)
        if (t->rows[i].shard != t->rows[i - 1].shard &&
            strcmp(t->rows[i].shard, t->rows[i - 1].shard) != 0)
            runs[k++] = (row_at){t->rows[i].shard, 0, i};
    qsort(runs, n_runs, sizeof *runs, cmp_run_shard);
    int unique = 1;
    for (size_t i = 1; i < n_runs && unique; i++)
        unique = strcmp(runs[i - 1].shard, runs[i].shard) != 0;
    free(runs);
    return unique;
}

/* One utterance, one row: a table concatenated with an overlapping one, or a
 * list naming one shard twice, would plan (and count, and copy) an utterance
 * twice. Refused, naming the first duplicate (shard, pos) in table order. */
static int check_unique_rows(es_context *ctx, const es_cost_table *t)
{
    if (t->n < 2 || unique_by_runs(t))
        return ES_OK;
    row_at *at = malloc(t->n * sizeof *at);
    if (!at)
        return es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    for (size_t i = 0; i < t->n; i++)
        at[i] = (row_at){t->rows[i].shard, t->rows[i].pos, i};
    qsort(at, t->n, sizeof *at, cmp_row_at);
    size_t first = SIZE_MAX, dups = 0, earlier = 0;
    for (size_t i = 1; i < t->n; i++) {
        if (at[i - 1].pos != at[i].pos || strcmp(at[i - 1].shard, at[i].shard) != 0)
            continue;
        dups++; /* copies sort by row, so at[i - 1] is the earlier one */
        if (at[i].row < first) {
            first = at[i].row;
            earlier = at[i - 1].row;
        }
    }
    free(at);
    if (!dups)
        return ES_OK;
    const es_cost_row *r = &t->rows[first];
    return es_fail(ctx, ES_ERR_FORMAT, "%s: pos %llu (%s) is in the table twice (rows %zu and "
                   "%zu; %zu duplicate row(s) in all): overlapping cost tables concatenated, or "
                   "a shard listed twice; remove the duplicates", r->shard,
                   (unsigned long long)r->pos, r->key, earlier + 1, first + 1, dups);
}

/* Every rank and every worker must get work: a rank with none waits at the
 * first collective for ever (or trains on nothing), a worker with none feeds
 * its rank nothing in its turn. Shard mode hands out whole list entries, so
 * fewer entries than K·W slots (or a few that dwarf the rest) cannot fill
 * them; batch mode can, with fewer workers or smaller batches. */
static int check_every_worker(es_context *ctx, const es_plan *p)
{
    size_t slots = (size_t)p->K * p->W, items = 0;
    for (size_t e = 0; e < p->n_elements; e++)
        items += p->elements[e].is_item;
    const char *what = items ? "list entries" : "shards";
    const char *fix = p->s.mode == ES_PLAN_BATCH ? "use fewer workers, or smaller batches "
                                                   "(--max-frames-in-batch, --batch-size)"
                      : items                    ? "use --mode batch"
                                                 : "use --mode batch (or reshard)";
    if (p->s.mode == ES_PLAN_SHARD && p->n_elements < slots)
        return es_fail(ctx, ES_ERR_USAGE, "plan: %zu %s for %zu rank×worker slots (%u ranks × "
                       "%u workers), so some would get none: %s", p->n_elements, what, slots,
                       p->K, p->W, fix);
    if (p->s.mode == ES_PLAN_BATCH && p->metrics.steps < p->W)
        return es_fail(ctx, ES_ERR_USAGE, "plan: %llu step(s) of batches for %u workers a rank, "
                       "so some workers would get none: %s",
                       (unsigned long long)p->metrics.steps, p->W, fix);
    for (size_t u = 0; u < slots; u++)
        if (p->loads[u].utterances == 0)
            return es_fail(ctx, ES_ERR_USAGE, "plan: rank %zu worker %zu would get no "
                           "utterances (%zu %s for %zu rank×worker slots, too unequal to fill "
                           "them all): %s", u / p->W, u % p->W,
                           p->s.mode == ES_PLAN_SHARD ? p->n_elements : p->n_kept,
                           p->s.mode == ES_PLAN_SHARD ? what : "utterances", slots, fix);
    return ES_OK;
}

ES_API int es_plan_build(es_context *ctx, const es_plan_settings *s, const es_cost_table *t,
                         es_plan **out)
{
    return es_plan_build_subset(ctx, s, t, NULL, out);
}

ES_API int es_plan_build_subset(es_context *ctx, const es_plan_settings *s,
                                const es_cost_table *t, const unsigned char *leave_out,
                                es_plan **out)
{
    es_clear_error(ctx);
    if (!out || !s || !t)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_build: settings, table and out are required");
    *out = NULL;
    int rc = check_settings(ctx, s);
    if (rc == ES_OK)
        rc = check_unique_rows(ctx, t);
    if (rc != ES_OK)
        return rc;
    es_plan *p = calloc(1, sizeof *p);
    if (!p)
        return es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    p->s = *s;
    p->table = t;
    p->leave_out = leave_out;
    p->fill = (es_ctx_pages_ahead(ctx) ? ES_FILL_AHEAD : 0) |
              (es_ctx_huge_pages(ctx) ? 0 : ES_FILL_NO_HUGE);
    es_cost_model_settle(&p->s.model, t, ES_LOADER_COSYVOICE);
    es_token_gap(&p->s.model, t, &p->token_gap);
    es_token_gap_note(&p->token_gap, p->token_note, sizeof p->token_note);
    es_plan_progress(p, PLAN_PASS_CHECK, 1, 1);
    p->K = s->world_size;
    p->W = s->workers;
    p->loads = calloc((size_t)p->K * p->W, sizeof *p->loads);
    rc = p->loads ? filter_rows(ctx, p) : es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    if (rc == ES_OK) {
        es_plan_progress(p, PLAN_PASS_FILTER, 1, 1);
        rc = s->mode == ES_PLAN_BATCH     ? es_plan_build_batch(ctx, p)
             : s->mode == ES_PLAN_RESHARD ? es_plan_build_reshard(ctx, p)
                                          : es_plan_build_shard(ctx, p);
    }
    if (rc == ES_OK) {
        es_plan_progress(p, PLAN_PASS_PLACE, 1, 1);
        rc = check_every_worker(ctx, p);
    }
    if (rc == ES_OK)
        rc = es_plan_index_build(ctx, p);
    if (rc == ES_OK)
        es_plan_progress(p, PLAN_PASS_INDEX, 1, 1);
    p->leave_out = NULL; /* the caller's: not kept past the build */
    if (rc != ES_OK) {
        es_plan_free(p);
        return rc;
    }
    *out = p;
    return ES_OK;
}
