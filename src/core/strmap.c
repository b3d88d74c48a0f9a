#include "core/strmap.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static es_strmap_slot *find(es_strmap_slot *slots, size_t cap, const char *key, size_t len,
                            uint64_t h)
{
    size_t i = (size_t)h & (cap - 1);
    for (;;) {
        es_strmap_slot *s = &slots[i];
        if (!s->key || (s->hash == h && s->key_len == len && memcmp(s->key, key, len) == 0))
            return s;
        i = (i + 1) & (cap - 1);
    }
}

/* Rehashes into cap slots (a power of two above the load limit). */
static int rehash(es_strmap *m, size_t cap)
{
    es_strmap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            *find(slots, cap, m->slots[i].key, m->slots[i].key_len, m->slots[i].hash) = m->slots[i];
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

static int grow(es_strmap *m) { return rehash(m, m->cap ? m->cap * 2 : 64); }

int es_strmap_reserve(es_strmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 64;
    while (n > SIZE_MAX / 8 || n * 4 > cap * 3) {
        if (cap > SIZE_MAX / 2 / sizeof(es_strmap_slot))
            return -1;
        cap *= 2;
    }
    return cap == m->cap ? 0 : rehash(m, cap);
}

es_strmap_slot *es_strmap_insert(es_strmap *m, const char *key, size_t len, int *existed)
{
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0)
        return NULL;
    uint64_t h = XXH3_64bits(key, len);
    es_strmap_slot *s = find(m->slots, m->cap, key, len, h);
    *existed = s->key != NULL;
    if (!s->key) {
        char *copy = es_arena_strndup(&m->keys, key, len);
        if (!copy)
            return NULL;
        s->key = copy;
        s->key_len = len;
        s->hash = h;
        s->value = NULL;
        m->n++;
    }
    return s;
}

int es_strmap_put(es_strmap *m, const char *key, size_t len, const void *value)
{
    int existed;
    es_strmap_slot *s = es_strmap_insert(m, key, len, &existed);
    if (!s)
        return -1;
    s->value = value;
    return 0;
}

const es_strmap_slot *es_strmap_get(const es_strmap *m, const char *key, size_t len)
{
    if (!m->cap)
        return NULL;
    es_strmap_slot *s = find(m->slots, m->cap, key, len, XXH3_64bits(key, len));
    return s->key ? s : NULL;
}

void es_strmap_release(es_strmap *m)
{
    free(m->slots);
    es_arena_release(&m->keys);
    memset(m, 0, sizeof *m);
}
