/* Turning the user's inputs into units of parallel work (threads, or MPI ranks).
 *
 * An input is a shard list (one path per line), a single shard, a WeNet raw
 * list or a Kaldi directory — told apart by content. A shard becomes one unit
 * (sniffed and opened by a worker thread, so a list of 10 000 shards on a slow
 * file system is not probed serially); a manifest becomes chunks of items.
 * Units are in input order, and rows are merged back in that order. */
#ifndef ES_WORK_UNITS_H
#define ES_WORK_UNITS_H

#include <stddef.h>

#include "core/context.h"
#include "core/strbuf.h"
#include "readers/manifest.h"

typedef struct es_unit {
    const char *path;      /* shard: file to open (resolved); NULL for items */
    const char *shard;     /* shard: the name rows carry (as the list writes it) */
    const es_manifest *m;  /* items: the manifest and the range [begin, end) */
    size_t begin, end;
} es_unit;

typedef struct es_work {
    es_unit *units;
    size_t n, cap;
    es_manifest **manifests;
    size_t n_manifests, cap_manifests;
    es_arena strings;
} es_work;

/* Appends the units of every input. `root` resolves relative paths inside lists
 * (NULL = current directory). */
int es_work_expand(es_context *ctx, es_work *w, const char *const *inputs, size_t n,
                   const char *root);
void es_work_release(es_work *w);

#endif
