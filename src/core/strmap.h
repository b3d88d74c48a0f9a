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
/* Room for n keys without rehashing (a map filled from a list of known
 * length). Returns 0, or -1 when out of memory. */
int es_strmap_reserve(es_strmap *m, size_t n);
/* The slot for key, added (value NULL) when absent; *existed says whether it
 * was there. One lookup where a get, a put and a get again took three. NULL
 * when out of memory. The slot is valid until the next insertion. */
es_strmap_slot *es_strmap_insert(es_strmap *m, const char *key, size_t len, int *existed);
/* Returns the slot for key, or NULL. */
const es_strmap_slot *es_strmap_get(const es_strmap *m, const char *key, size_t len);
void es_strmap_release(es_strmap *m);

#endif
