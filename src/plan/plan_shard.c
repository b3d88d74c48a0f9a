/* Shard mode: whole list entries (shards, or raw-list rows) to ranks, then to
 * workers within each rank, for loaders that read whole shards.
 *
 * Ranks: multiway partitioning of entry costs (es_partition: LPT, KK, swaps).
 * Workers: the same with balanced counts (floor or ceil of the rank's entries
 * each, larger counts on lower worker ids), because a rank's list is written
 * interleaved — entry j of worker w at position j·W + w — so that the loaders'
 * `[worker_id::num_workers]` slicing hands each worker exactly its entries. */
#include <stdlib.h>
#include <string.h>

#include "core/bigarray.h"
#include "core/strmap.h"
#include "costs/cost_table.h"
#include "algo/partition.h"
#include "plan/plan_internal.h"

/* One element per distinct shard string; one per row for ES_FLAG_ITEM rows. */
static int collect_elements(es_context *ctx, es_plan *p)
{
    size_t n = p->table->n;
    es_strmap seen = {0};
    p->elements = malloc((n ? n : 1) * sizeof *p->elements);
    p->element_of_row = malloc((n ? n : 1) * sizeof *p->element_of_row);
    if (!p->elements || !p->element_of_row)
        return es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    int rc = ES_OK;
    /* element_of_row written front to back (core/bigarray.h) */
    es_bigarray_col col = {p->element_of_row, sizeof *p->element_of_row};
    es_bigarray_writer w;
    es_bigarray_begin(&w, p->fill, &col, 1, n);
    /* The reader interns a shard name shared by consecutive rows (one string,
     * one pointer), so a row naming the same pointer as the last shard row
     * has its element without hashing the name: one lookup per run of rows,
     * not per row. */
    const char *last_shard = NULL;
    size_t last_element = 0;
    for (size_t i = 0; i < n && rc == ES_OK; i++) {
        es_bigarray_reach(&w, i);
        const es_cost_row *row = &p->table->rows[i];
        size_t e = p->n_elements;
        if (!(row->flags & ES_FLAG_ITEM) && row->shard == last_shard) {
            e = last_element;
        } else if (!(row->flags & ES_FLAG_ITEM)) {
            const es_strmap_slot *slot = es_strmap_get(&seen, row->shard, strlen(row->shard));
            if (slot) {
                e = (size_t)(uintptr_t)slot->value - 1;
            } else if (es_strmap_put(&seen, row->shard, strlen(row->shard),
                                     (const void *)(uintptr_t)(e + 1))) {
                rc = es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
                break;
            }
        }
        if (e == p->n_elements)
            p->elements[p->n_elements++] =
                (plan_element){i, (row->flags & ES_FLAG_ITEM) != 0, 0, 0, 0};
        if (!(row->flags & ES_FLAG_ITEM)) {
            last_shard = row->shard;
            last_element = e;
        }
        p->element_of_row[i] = e;
    }
    es_bigarray_end(&w);
    es_strmap_release(&seen);
    if (rc != ES_OK)
        return rc;
    for (size_t k = 0; k < p->n_kept; k++) {
        size_t i = p->kept[k];
        p->elements[p->element_of_row[i]].cost += p->cost[i];
    }
    return ES_OK;
}

/* Elements to ranks. Sets the lower bound and the method. */
static int assign_ranks(es_context *ctx, es_plan *p)
{
    size_t n = p->n_elements;
    double *cost = malloc(n * sizeof *cost);
    uint32_t *bin = malloc(n * sizeof *bin);
    es_partition_result res;
    int failed = !cost || !bin;
    double total = 0, largest = 0;
    for (size_t e = 0; !failed && e < n; e++) {
        cost[e] = p->elements[e].cost;
        total += cost[e];
        if (cost[e] > largest)
            largest = cost[e];
    }
    if (!failed)
        failed = es_partition(cost, n, p->K, 0, bin, &res) != 0;
    for (size_t e = 0; !failed && e < n; e++)
        p->elements[e].rank = bin[e];
    if (!failed) {
        p->metrics.lower_bound = total / p->K > largest ? total / p->K : largest;
        p->metrics.method = res.method;
    }
    free(cost);
    free(bin);
    return failed ? es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory") : ES_OK;
}

/* One rank's elements to its workers, counts balanced (see the file comment). */
static int assign_workers(es_plan *p, const size_t *members, size_t m)
{
    double *cost = malloc((m ? m : 1) * sizeof *cost);
    uint32_t *bin = malloc((m ? m : 1) * sizeof *bin);
    es_partition_result res;
    int failed = !cost || !bin;
    for (size_t j = 0; !failed && j < m; j++)
        cost[j] = p->elements[members[j]].cost;
    if (!failed)
        failed = es_partition(cost, m, p->W, 1, bin, &res) != 0;
    for (size_t j = 0; !failed && j < m; j++)
        p->elements[members[j]].worker = bin[j];
    free(cost);
    free(bin);
    return failed ? -1 : 0;
}

/* Rows of worker (r, w) in the order its stream yields them. */
static size_t worker_rows(const es_plan *p, uint32_t w, const size_t *rank_members,
                          size_t m, const size_t *rows_by_element, const size_t *element_start,
                          size_t *out)
{
    size_t n = 0;
    for (size_t j = 0; j < m; j++) {
        size_t e = rank_members[j];
        if (p->elements[e].worker != w)
            continue;
        for (size_t k = element_start[e]; k < element_start[e + 1]; k++)
            out[n++] = rows_by_element[k];
    }
    return n;
}

/* Kept rows grouped by element, in table order within each element. */
static int group_rows(es_plan *p, size_t **rows_by_element, size_t **element_start)
{
    size_t *start = calloc(p->n_elements + 1, sizeof *start);
    size_t *rows = malloc((p->n_kept ? p->n_kept : 1) * sizeof *rows);
    size_t *fill = calloc(p->n_elements + 1, sizeof *fill);
    if (!start || !rows || !fill) {
        free(start), free(rows), free(fill);
        return -1;
    }
    for (size_t k = 0; k < p->n_kept; k++)
        start[p->element_of_row[p->kept[k]] + 1]++;
    for (size_t e = 0; e < p->n_elements; e++)
        start[e + 1] += start[e];
    memcpy(fill, start, (p->n_elements + 1) * sizeof *fill);
    /* Written in about index order when the table lists each shard's rows
     * together (the usual case); reaching an index prepares all before it,
     * so any order is safe. */
    es_bigarray_col col = {rows, sizeof *rows};
    es_bigarray_writer w;
    es_bigarray_begin(&w, p->fill, &col, 1, p->n_kept);
    for (size_t k = 0; k < p->n_kept; k++) {
        size_t at = fill[p->element_of_row[p->kept[k]]]++;
        es_bigarray_reach(&w, at);
        rows[at] = p->kept[k];
    }
    es_bigarray_end(&w);
    free(fill);
    *rows_by_element = rows;
    *element_start = start;
    return 0;
}

static void add_loads(es_plan *p, uint32_t r, uint32_t w, const size_t *rows, size_t n)
{
    es_plan_load *l = &p->loads[(size_t)r * p->W + w];
    for (size_t i = 0; i < n; i++) {
        l->cost += p->cost[rows[i]];
        l->frames += p->frames[rows[i]];
    }
    l->utterances = n;
    l->batches = es_plan_predict_batches(p, rows, n);
}

/* Workers and loads, rank by rank. */
static int assign_all_workers(es_context *ctx, es_plan *p)
{
    size_t *rows_by_element = NULL, *element_start = NULL;
    size_t *members = malloc(p->n_elements * sizeof *members);
    size_t *rows = malloc((p->n_kept ? p->n_kept : 1) * sizeof *rows);
    int failed = !members || !rows || group_rows(p, &rows_by_element, &element_start);
    /* members of each rank, in element order: a counting pass per rank would be
     * O(K·n); one stable bucket pass instead */
    size_t *rank_start = failed ? NULL : calloc(p->K + 1, sizeof *rank_start);
    failed = failed || !rank_start;
    for (size_t e = 0; !failed && e < p->n_elements; e++)
        rank_start[p->elements[e].rank + 1]++;
    for (uint32_t r = 0; !failed && r < p->K; r++)
        rank_start[r + 1] += rank_start[r];
    size_t *fill = failed ? NULL : malloc((p->K + 1) * sizeof *fill);
    failed = failed || !fill;
    if (!failed) {
        memcpy(fill, rank_start, (p->K + 1) * sizeof *fill);
        for (size_t e = 0; e < p->n_elements; e++)
            members[fill[p->elements[e].rank]++] = e;
    }
    for (uint32_t r = 0; !failed && r < p->K; r++) {
        const size_t *mine = members + rank_start[r];
        size_t m = rank_start[r + 1] - rank_start[r];
        failed = assign_workers(p, mine, m) != 0;
        for (uint32_t w = 0; !failed && w < p->W; w++) {
            size_t n = worker_rows(p, w, mine, m, rows_by_element, element_start, rows);
            add_loads(p, r, w, rows, n);
        }
    }
    free(members), free(rows), free(rows_by_element), free(element_start), free(rank_start);
    free(fill);
    return failed ? es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory") : ES_OK;
}

int es_plan_build_shard(es_context *ctx, es_plan *p)
{
    int rc = collect_elements(ctx, p);
    if (rc == ES_OK) {
        es_plan_progress(p, PLAN_PASS_PLACE, 1, 3);
        rc = assign_ranks(ctx, p);
    }
    if (rc == ES_OK) {
        es_plan_progress(p, PLAN_PASS_PLACE, 2, 3);
        rc = assign_all_workers(ctx, p);
    }
    if (rc == ES_OK)
        es_plan_finish_metrics(p);
    return rc;
}
