/* The vocab (string → id) and merge (id pair → rank, id) maps. Both are open
 * addressing tables sized once: vocab ids index the strings, so a vocab slot is
 * just an id (4 bytes) and 151 643 entries take 1 MiB of slots; a merge slot
 * is 16 bytes. Hashes are xxh3 (strings) and a multiplicative mix (pairs). */
#include "text/tok_model.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/grow.h"

uint32_t tok_byte_char(unsigned b)
{
    /* Printable Latin-1 bytes stand for themselves; the other 68 get 256, 257,
     * … in byte order (GPT-2's bytes_to_unicode). */
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
        return b;
    uint32_t n = 0;
    for (unsigned c = 0; c < b; c++)
        if (!((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)))
            n++;
    return 256 + n;
}

int tok_vocab_put(tok_vocab *v, const char *s, size_t n, uint32_t id)
{
    if (id == TOK_NONE || n == 0 || n > UINT32_MAX)
        return ES_ERR_FORMAT;
    if (id >= v->cap) {
        /* ids index two arrays: grow both to one capacity */
        size_t cap = v->cap, cap2 = v->cap;
        void *str = v->str, *len = v->len;
        if (es_grow(&str, &cap, (size_t)id + 1, sizeof *v->str, 1 << 16) != 0)
            return ES_ERR_NOMEM;
        v->str = str;
        if (es_grow(&len, &cap2, cap, sizeof *v->len, 1 << 16) != 0)
            return ES_ERR_NOMEM;
        v->len = len;
        for (size_t i = v->cap; i < cap; i++)
            v->str[i] = NULL;
        v->cap = cap;
    }
    if (id >= v->n_ids)
        v->n_ids = (size_t)id + 1;
    char *copy = es_arena_strndup(&v->strs, s, n);
    if (!copy)
        return ES_ERR_NOMEM;
    if (!v->str[id])
        v->n_entries++;
    v->str[id] = copy;
    v->len[id] = (uint32_t)n;
    return ES_OK;
}

static size_t slot_of(const tok_vocab *v, const char *s, size_t n)
{
    size_t i = (size_t)XXH3_64bits(s, n) & v->mask;
    for (;; i = (i + 1) & v->mask) {
        uint32_t id = v->slots[i];
        if (id == TOK_NONE || (v->len[id] == n && memcmp(v->str[id], s, n) == 0))
            return i;
    }
}

int tok_vocab_finish(tok_vocab *v)
{
    /* Ids past the last used one were never set: trim n_ids to max id + 1. */
    while (v->n_ids > 0 && !v->str[v->n_ids - 1])
        v->n_ids--;
    size_t cap = 1024;
    while (cap < 2 * v->n_entries)
        cap *= 2;
    free(v->slots);
    v->slots = malloc(cap * sizeof *v->slots);
    if (!v->slots)
        return ES_ERR_NOMEM;
    memset(v->slots, 0xff, cap * sizeof *v->slots);
    v->mask = cap - 1;
    /* A string given twice keeps its last id, as a JSON object read into a map does. */
    for (size_t id = 0; id < v->n_ids; id++)
        if (v->str[id])
            v->slots[slot_of(v, v->str[id], v->len[id])] = (uint32_t)id;
    return ES_OK;
}

uint32_t tok_vocab_get(const tok_vocab *v, const char *s, size_t n)
{
    if (!v->slots)
        return TOK_NONE;
    return v->slots[slot_of(v, s, n)];
}

void tok_vocab_release(tok_vocab *v)
{
    free(v->str);
    free(v->len);
    free(v->slots);
    es_arena_release(&v->strs);
    memset(v, 0, sizeof *v);
}

static size_t pair_hash(uint64_t key)
{
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 32;
    return (size_t)key;
}

int tok_merges_reserve(tok_merges *m, size_t n)
{
    size_t cap = 1024;
    while (cap < 2 * n + 2)
        cap *= 2;
    free(m->slots);
    m->slots = malloc(cap * sizeof *m->slots);
    if (!m->slots)
        return ES_ERR_NOMEM;
    memset(m->slots, 0xff, cap * sizeof *m->slots);
    m->mask = cap - 1;
    m->n = 0;
    return ES_OK;
}

static size_t merge_slot(const tok_merges *m, uint64_t key)
{
    size_t i = pair_hash(key) & m->mask;
    while (m->slots[i].key != UINT64_MAX && m->slots[i].key != key)
        i = (i + 1) & m->mask;
    return i;
}

void tok_merges_put(tok_merges *m, uint32_t left, uint32_t right, uint32_t rank, uint32_t id)
{
    /* A pair listed twice keeps its last rank, as HF's map from the list does.
     * The caller reserved room for every line. */
    uint64_t key = (uint64_t)left << 32 | right;
    tok_merge_slot *s = &m->slots[merge_slot(m, key)];
    if (s->key == UINT64_MAX)
        m->n++;
    *s = (tok_merge_slot){key, rank, id};
}

const tok_merge_slot *tok_merges_get(const tok_merges *m, uint32_t left, uint32_t right)
{
    const tok_merge_slot *s = &m->slots[merge_slot(m, (uint64_t)left << 32 | right)];
    return s->key == UINT64_MAX ? NULL : s;
}

void tok_merges_release(tok_merges *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}
