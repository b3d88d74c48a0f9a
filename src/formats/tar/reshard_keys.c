/* Reshard's check of tar output before anything is written (tar.h). */
#include "formats/tar/tar.h"

#include <stdlib.h>
#include <string.h>

#include "costs/cost_table.h"

/* WeNet's tar_file_and_group merges adjacent members that share a key: two
 * utterances of one key written one after the other into a new tar shard (the
 * last of one source and the first of the next, say) would become one sample,
 * and equishard measure refuses such a shard. Refused before anything is
 * written, with the count and the first pair. */
int reshard_tar_check_keys(es_context *ctx, const reshard_job *job)
{
    const es_plan *p = job->p;
    uint32_t n_targets = p->reshard->n_shards;
    size_t *last = malloc((n_targets ? n_targets : 1) * sizeof *last);
    if (!last)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (uint32_t t = 0; t < n_targets; t++)
        last[t] = SIZE_MAX;
    size_t pairs = 0;
    const es_cost_row *first_a = NULL, *first_b = NULL;
    for (size_t i = 0; i < job->n_items; i++) {
        const copy_item *it = &job->items[i];
        const es_cost_row *row = &p->table->rows[it->row];
        size_t prev = last[it->target];
        last[it->target] = i;
        if (prev == SIZE_MAX || strcmp(p->table->rows[job->items[prev].row].key, row->key) != 0)
            continue;
        if (pairs++ == 0) {
            first_a = &p->table->rows[job->items[prev].row];
            first_b = row;
        }
    }
    free(last);
    if (!pairs)
        return ES_OK;
    return es_fail(ctx, ES_ERR_FORMAT, "reshard: %zu pair(s) of utterances with one key would be "
                   "adjacent in a new tar shard, where WeNet's loader merges them into one "
                   "sample; first: %s (%s pos %llu, and %s pos %llu); give every utterance its "
                   "own key", pairs, first_b->key, first_a->shard,
                   (unsigned long long)first_a->pos, first_b->shard,
                   (unsigned long long)first_b->pos);
}
