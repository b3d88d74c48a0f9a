/* A plan's rank lists and batches for callers (es_plan_rank_shard,
 * es_plan_batch_info) and for es_plan_write, which writes the files from the
 * same index in the same order, so both see the same lists.
 *
 * The index is built once by es_plan_build: shard mode groups the elements by
 * (rank, worker), list order within a group, and interleaves each rank's
 * workers (position j·W + w of rank-R.list is worker w's j-th entry, the
 * DataLoader's round robin); batch mode sorts batches by (rank, step). The
 * original lines of raw lists are read back on first use, into the index. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_stream.h"
#include "core/grow.h"
#include "core/line_reader.h"
#include "core/strmap.h"
#include "plan/plan_internal.h"

/* Original lines of raw lists, for item entries: file → array of lines. */
struct plan_raw_lines {
    es_strmap files; /* shard string → index into `sets` + 1 */
    char ***sets;
    size_t *counts;
    size_t n_sets, cap_sets, cap_counts;
};

static void raw_lines_free(struct plan_raw_lines *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_sets; i++) {
        for (size_t j = 0; j < r->counts[i]; j++)
            free(r->sets[i][j]);
        free(r->sets[i]);
    }
    free(r->sets);
    free(r->counts);
    es_strmap_release(&r->files);
    free(r);
}

static int load_lines(es_context *ctx, struct plan_raw_lines *r, const char *path, size_t *set)
{
    es_line_reader lr;
    int e = es_line_reader_open(&lr, path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot reopen the raw list to write its lines: %s",
                       path, es_file_stream_strerror(e));
    void *sets = r->sets, *counts = r->counts;
    int bad = es_grow(&sets, &r->cap_sets, r->n_sets + 1, sizeof *r->sets, 4);
    r->sets = sets;
    bad |= es_grow(&counts, &r->cap_counts, r->n_sets + 1, sizeof *r->counts, 4);
    r->counts = counts;
    if (bad) {
        es_line_reader_close(&lr);
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    char **lines = NULL;
    size_t n = 0, cap = 0;
    int got, rc = ES_OK;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) > 0) {
        if (n == cap) {
            void *p = lines;
            if (es_grow(&p, &cap, n + 1, sizeof *lines, 256))
                rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
            else
                lines = p;
        }
        if (rc == ES_OK && !(lines[n++] = strdup(lr.line)))
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    if (rc == ES_OK && got < 0)
        rc = es_line_reader_fail(ctx, &lr, path);
    es_line_reader_close(&lr);
    r->sets[r->n_sets] = lines;
    r->counts[r->n_sets] = n;
    *set = r->n_sets++;
    if (rc == ES_OK && es_strmap_put(&r->files, path, strlen(path), (const void *)(uintptr_t)(*set + 1)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    return rc;
}

/* Element e as the user's list wrote it: a shard path; a raw-list row as its
 * original JSON line; a Kaldi entry as its key. *text is owned by the plan. */
static int element_text(es_context *ctx, const es_plan *p, size_t e, const char **text)
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
    struct plan_raw_lines *raw = p->index.raw;
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

static int index_shard_mode(es_plan *p)
{
    plan_index *x = &p->index;
    size_t n_groups = (size_t)p->K * p->W, n = p->n_elements ? p->n_elements : 1;
    x->order = malloc(n * sizeof *x->order);
    x->interleaved = malloc(n * sizeof *x->interleaved);
    x->start = calloc(n_groups + 1, sizeof *x->start);
    size_t *fill = malloc((n_groups + 1) * sizeof *fill);
    if (!x->order || !x->interleaved || !x->start || !fill) {
        free(fill);
        return -1;
    }
    for (size_t e = 0; e < p->n_elements; e++)
        x->start[(size_t)p->elements[e].rank * p->W + p->elements[e].worker + 1]++;
    for (size_t i = 0; i < n_groups; i++)
        x->start[i + 1] += x->start[i];
    memcpy(fill, x->start, (n_groups + 1) * sizeof *fill);
    for (size_t e = 0; e < p->n_elements; e++)
        x->order[fill[(size_t)p->elements[e].rank * p->W + p->elements[e].worker]++] = e;
    free(fill);
    /* a rank's groups are contiguous: its interleaved list takes the same range */
    for (uint32_t r = 0; r < p->K; r++) {
        const size_t *first = &x->start[(size_t)r * p->W];
        size_t at = first[0];
        for (size_t j = 0; at < first[p->W]; j++)
            for (uint32_t w = 0; w < p->W; w++)
                if (first[w] + j < first[w + 1])
                    x->interleaved[at++] = x->order[first[w] + j];
    }
    return 0;
}

static int cmp_rank_step(const void *a, const void *b)
{
    const plan_batch *x = *(const plan_batch *const *)a, *y = *(const plan_batch *const *)b;
    if (x->rank != y->rank)
        return x->rank > y->rank ? 1 : -1;
    return (x->step > y->step) - (x->step < y->step);
}

static int index_batch_mode(es_plan *p)
{
    plan_index *x = &p->index;
    x->by_rank = malloc((p->n_batches ? p->n_batches : 1) * sizeof *x->by_rank);
    x->start = calloc((size_t)p->K + 1, sizeof *x->start);
    if (!x->by_rank || !x->start)
        return -1;
    for (size_t b = 0; b < p->n_batches; b++) {
        x->by_rank[b] = &p->batches[b];
        x->start[p->batches[b].rank + 1]++;
    }
    for (uint32_t r = 0; r < p->K; r++)
        x->start[r + 1] += x->start[r];
    /* Each rank has one batch per step (assign_steps), so a rank's steps are
     * 0 .. its count - 1 and each batch's place is start[rank] + step: placed
     * directly, no sort of millions of pointers. Anything else is sorted. */
    const plan_batch **placed = calloc(p->n_batches ? p->n_batches : 1, sizeof *placed);
    int direct = placed != NULL;
    for (size_t b = 0; direct && b < p->n_batches; b++) {
        const plan_batch *pb = &p->batches[b];
        size_t at = x->start[pb->rank] + pb->step;
        direct = pb->step < x->start[pb->rank + 1] - x->start[pb->rank] && !placed[at];
        if (direct)
            placed[at] = pb;
    }
    if (direct) {
        free(x->by_rank);
        x->by_rank = placed;
    } else {
        free(placed);
        qsort(x->by_rank, p->n_batches, sizeof *x->by_rank, cmp_rank_step);
    }
    return 0;
}

int es_plan_index_build(es_context *ctx, es_plan *p)
{
    if (p->s.mode == ES_PLAN_RESHARD)
        return ES_OK;
    p->index.raw = calloc(1, sizeof *p->index.raw);
    int bad = !p->index.raw || (p->s.mode == ES_PLAN_BATCH ? index_batch_mode(p) : index_shard_mode(p));
    return bad ? es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory") : ES_OK;
}

void es_plan_index_release(plan_index *x)
{
    free(x->order);
    free(x->interleaved);
    free(x->start);
    free(x->by_rank);
    raw_lines_free(x->raw);
}

/* The range of the list asked for: [*begin, *end) of index.order or .interleaved. */
static const size_t *shard_list(const es_plan *p, uint32_t rank, uint32_t worker, size_t *begin,
                                size_t *end)
{
    if (!p || p->s.mode != ES_PLAN_SHARD || rank >= p->K ||
        (worker >= p->W && worker != ES_PLAN_ALL_WORKERS))
        return NULL;
    const size_t *first = &p->index.start[(size_t)rank * p->W];
    if (worker == ES_PLAN_ALL_WORKERS) {
        *begin = first[0], *end = first[p->W];
        return p->index.interleaved;
    }
    *begin = first[worker], *end = first[worker + 1];
    return p->index.order;
}

ES_API size_t es_plan_rank_shard_count(const es_plan *p, uint32_t rank, uint32_t worker)
{
    size_t begin, end;
    return shard_list(p, rank, worker, &begin, &end) ? end - begin : 0;
}

ES_API int es_plan_rank_shard(es_context *ctx, const es_plan *p, uint32_t rank, uint32_t worker,
                              size_t i, const char **entry)
{
    es_clear_error(ctx);
    size_t begin, end;
    const size_t *list = entry ? shard_list(p, rank, worker, &begin, &end) : NULL;
    if (!list || i >= end - begin)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_rank_shard: no entry %zu of rank %u worker %d "
                       "in a shard-mode plan", i, rank, worker == ES_PLAN_ALL_WORKERS ? -1 : (int)worker);
    return element_text(ctx, p, list[begin + i], entry);
}

ES_API size_t es_plan_batch_count(const es_plan *p, uint32_t rank)
{
    if (!p || p->s.mode != ES_PLAN_BATCH || rank >= p->K)
        return 0;
    return p->index.start[rank + 1] - p->index.start[rank];
}

ES_API int es_plan_batch_info(const es_plan *p, uint32_t rank, size_t i, es_plan_batch *out)
{
    if (!out || i >= es_plan_batch_count(p, rank))
        return ES_ERR_USAGE;
    const plan_batch *b = p->index.by_rank[p->index.start[rank] + i];
    *out = (es_plan_batch){.step = b->step, .worker = b->worker, .cost = b->cost,
                           .frames = b->frames, .longest = b->longest, .repeat = b->repeat,
                           .n_rows = b->end - b->begin, .rows = p->batch_rows + b->begin};
    return ES_OK;
}

ES_API size_t es_plan_remainder_row(const es_plan *p, size_t i)
{
    return p && i < p->n_carried ? p->carried[i] : (size_t)-1;
}
