/* A string → value map (open addressing, xxh3 hashes) for joining Kaldi files
 * by key. Keys are copied into the map's arena; values are opaque pointers or
 * integers the caller stores. Inserting an existing key replaces its value. */
#ifndef ES_STRMAP_H
#define ES_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

typedef struct es_strmap_slot {
    const char *key; /* NULL = empty */
    size_t key_len;
    uint64_t hash;
    const void *value;
} es_strmap_slot;

typedef struct es_strmap {
    es_strmap_slot *slots;
    size_t cap, n;
    es_arena keys;
} es_strmap;

/* Returns 0, or -1 when out of memory. */
int es_strmap_put(es_strmap *m, const char *key, size_t len, const void *value);
/* Returns the slot for key, or NULL. */
const es_strmap_slot *es_strmap_get(const es_strmap *m, const char *key, size_t len);
void es_strmap_release(es_strmap *m);

#endif
