/* A table's shard files against what measure found (cost_table.h): a plan
 * built on rows whose files moved or changed since would name files that are
 * not there, or balance costs they no longer hold. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/path.h"
#include "core/strmap.h"
#include "costs/cost_table.h"

es_shard_change es_shard_stat_compare(const es_shard_stat *was, const char *path, char *why,
                                      size_t len)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        snprintf(why, len, "%s", e == ENOENT ? "not found (moved or deleted)" : strerror(e));
        return ES_SHARD_GONE;
    }
    if ((uint64_t)st.st_size != was->size) {
        snprintf(why, len, "%llu bytes, %llu when measured", (unsigned long long)st.st_size,
                 (unsigned long long)was->size);
        return ES_SHARD_RESIZED;
    }
    if (st.st_mtim.tv_sec != was->mtime_s || (uint32_t)st.st_mtim.tv_nsec != was->mtime_ns) {
        snprintf(why, len, "modified at %lld.%09ld, %lld.%09u when measured",
                 (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, (long long)was->mtime_s,
                 was->mtime_ns);
        return ES_SHARD_TOUCHED;
    }
    return ES_SHARD_SAME;
}

int es_cost_table_check_shards(es_context *ctx, const es_cost_table *t, const char *root)
{
    if (!t->shard_stats.n)
        return ES_OK;
    es_strmap seen = {0};
    size_t checked = 0, changed = 0;
    const char *first = NULL, *last = NULL;
    char first_why[160] = "", why[160], buf[4096];
    int rc = ES_OK;
    /* table order, each shard once: the first named is the first in the table */
    for (size_t i = 0; i < t->n; i++) {
        const es_cost_row *row = &t->rows[i];
        if ((row->flags & ES_FLAG_ITEM) || row->shard == last)
            continue;
        last = row->shard;
        const es_shard_stat *was = es_cost_table_shard_stat(t, row->shard);
        if (!was)
            continue;
        int existed;
        if (!es_strmap_insert(&seen, row->shard, strlen(row->shard), &existed)) {
            rc = es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
            break;
        }
        if (existed)
            continue;
        checked++;
        const char *path = es_resolve_path(root, row->shard, buf, sizeof buf);
        if (es_shard_stat_compare(was, path, why, sizeof why) == ES_SHARD_SAME)
            continue;
        if (!changed++) {
            first = row->shard;
            memcpy(first_why, why, sizeof why);
        }
    }
    es_strmap_release(&seen);
    if (rc != ES_OK || !changed)
        return rc;
    char at[4096];
    return es_fail(ctx, ES_ERR_FORMAT, "%s: %s: the shard changed since it was measured (%zu of "
                   "the table's %zu shard files moved or changed): measure them again; %s",
                   es_resolve_path(root, first, at, sizeof at), first_why, changed, checked,
                   ES_ROOT_HINT);
}
