/* filtered.tsv's unreadable rows (plan_write.h), which every plan mode writes:
 * apart from plan_write_shard.c and reshard_job.c, its two users, so that they do
 * not call each other. */
#include "costs/cost_table.h"
#include "write/plan_write.h"

void es_plan_unreadable_rows(es_strbuf *sb, const es_plan *p)
{
    for (size_t i = 0; i < p->table->n_skips; i++) {
        const es_cost_skip *k = &p->table->skips[i];
        if (k->key)
            es_strbuf_printf(sb, "%s\t%s\t%llu\tunreadable\n", k->key, k->shard,
                             (unsigned long long)k->pos);
        else
            es_strbuf_printf(sb, "\t%s\t\tunreadable\n", k->shard);
    }
}
