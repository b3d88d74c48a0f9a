/* The vocab (string → id) and merge (id pair → rank, id) maps. Both are open
 * addressing tables sized once. A vocab slot is an entry index + 1 (0 = empty)
 * and a merge slot's key is (left << 32 | right) + 1 (0 = empty), so both start as
 * calloc's fresh zero pages instead of a memset pass over megabytes: loading is
 * dominated by touching memory, not by parsing. Hashes are xxh3 (strings) and
 * a multiplicative mix (pairs).
 *
 * The vocab exists only while a tokenizer loads (merges.txt names tokens by
 * their strings); encoding needs just the merge table and byte ids. */
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

/* The table holds entries (string, id) in the order given; a slot is an
 * entry index + 1. Entries, not ids, because a JSON object may give two
 * strings one id, and HF's map keeps both. */
static int grow_entries(tok_vocab *v)
{
    size_t cap = v->cap, cap2 = v->cap, cap3 = v->cap;
    void *str = v->str, *len = v->len, *id = v->id;
    if (es_grow(&str, &cap, v->n_all + 1, sizeof *v->str, 1 << 16) != 0)
        return ES_ERR_NOMEM;
    v->str = str;
    if (es_grow(&len, &cap2, cap, sizeof *v->len, 1 << 16) != 0)
        return ES_ERR_NOMEM;
    v->len = len;
    if (es_grow(&id, &cap3, cap, sizeof *v->id, 1 << 16) != 0)
        return ES_ERR_NOMEM;
    v->id = id;
    v->cap = cap;
    return ES_OK;
}

static int grow_by_id(tok_vocab *v, uint32_t id)
{
    void *p = v->by_id;
    size_t old = v->cap_ids;
    if (es_grow(&p, &v->cap_ids, (size_t)id + 1, sizeof *v->by_id, 1 << 16) != 0)
        return ES_ERR_NOMEM;
    v->by_id = p;
    memset(v->by_id + old, 0, (v->cap_ids - old) * sizeof *v->by_id);
    return ES_OK;
}

static size_t slot_of(const tok_vocab *v, const char *s, size_t n)
{
    size_t i = (size_t)XXH3_64bits(s, n) & v->mask;
    for (;; i = (i + 1) & v->mask) {
        uint32_t e = v->slots[i] - 1;
        if (v->slots[i] == 0 || (v->len[e] == n && memcmp(v->str[e], s, n) == 0))
            return i;
    }
}

static int rehash(tok_vocab *v, size_t want)
{
    size_t cap = 1024;
    while (cap < 2 * want + 2)
        cap *= 2;
    free(v->slots);
    v->slots = calloc(cap, sizeof *v->slots);
    if (!v->slots)
        return ES_ERR_NOMEM;
    v->mask = cap - 1;
    for (size_t e = 0; e < v->n_all; e++)
        if (v->id[e] != TOK_NONE)
            v->slots[slot_of(v, v->str[e], v->len[e])] = (uint32_t)e + 1;
    return ES_OK;
}

int tok_vocab_reserve(tok_vocab *v, size_t n)
{
    return rehash(v, n > v->n_entries ? n : v->n_entries);
}

int tok_vocab_put(tok_vocab *v, const char *s, size_t n, uint32_t id)
{
    if (id >= TOK_NONE || n == 0 || n > UINT32_MAX || v->n_all >= TOK_NONE - 1)
        return ES_ERR_FORMAT;
    /* at most half full, so probes stay short and always end */
    if (!v->slots || 2 * (v->n_entries + 1) > v->mask + 1)
        if (rehash(v, 2 * (v->n_entries + 1)) != ES_OK)
            return ES_ERR_NOMEM;
    if ((v->n_all >= v->cap && grow_entries(v) != ES_OK) ||
        (id >= v->cap_ids && grow_by_id(v, id) != ES_OK))
        return ES_ERR_NOMEM;
    char *copy = es_arena_strndup(&v->strs, s, n);
    if (!copy)
        return ES_ERR_NOMEM;
    size_t slot = slot_of(v, s, n);
    if (v->slots[slot]) {
        /* A string given twice keeps its last id, as a JSON object read into a
         * map does. */
        uint32_t old = v->slots[slot] - 1;
        if (v->by_id[v->id[old]] == old + 1)
            v->by_id[v->id[old]] = 0;
        v->id[old] = TOK_NONE;
        v->n_entries--;
    }
    uint32_t e = (uint32_t)v->n_all++;
    v->str[e] = copy;
    v->len[e] = (uint32_t)n;
    v->id[e] = id;
    v->slots[slot] = e + 1;
    v->by_id[id] = e + 1;
    v->n_entries++;
    if (id >= v->n_ids)
        v->n_ids = (size_t)id + 1;
    return ES_OK;
}

uint32_t tok_vocab_get(const tok_vocab *v, const char *s, size_t n)
{
    if (!v->slots)
        return TOK_NONE;
    uint32_t slot = v->slots[slot_of(v, s, n)];
    return slot ? v->id[slot - 1] : TOK_NONE;
}

int tok_vocab_is(const tok_vocab *v, uint32_t id, const char *a, size_t na, const char *b,
                 size_t nb)
{
    if (id >= v->n_ids || !v->by_id[id])
        return 0;
    uint32_t e = v->by_id[id] - 1;
    return v->len[e] == na + nb && memcmp(v->str[e], a, na) == 0 &&
           memcmp(v->str[e] + na, b, nb) == 0;
}

void tok_vocab_release(tok_vocab *v)
{
    free(v->str);
    free(v->len);
    free(v->id);
    free(v->by_id);
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

size_t tok_merges_capacity(size_t n)
{
    /* at most 2/3 full: a lookup that misses (most BPE probes do) stays short */
    size_t cap = 1024;
    while (cap < n + n / 2 + 1)
        cap *= 2;
    return cap;
}

int tok_merges_reserve(tok_merges *m, size_t n)
{
    tok_merges_release(m);
    size_t cap = tok_merges_capacity(n);
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots)
        return ES_ERR_NOMEM;
    m->mask = cap - 1;
    m->n = 0;
    return ES_OK;
}

static size_t merge_slot(const tok_merges *m, uint64_t key)
{
    size_t i = pair_hash(key) & m->mask;
    while (m->slots[i].key != 0 && m->slots[i].key != key)
        i = (i + 1) & m->mask;
    return i;
}

void tok_merges_put(tok_merges *m, uint32_t left, uint32_t right, uint32_t rank, uint32_t id)
{
    /* A pair listed twice keeps its last rank, as HF's map from the list does.
     * The caller reserved room for every line. */
    uint64_t key = ((uint64_t)left << 32 | right) + 1;
    tok_merge_slot *s = &m->slots[merge_slot(m, key)];
    if (s->key == 0)
        m->n++;
    *s = (tok_merge_slot){key, rank, id};
}

const tok_merge_slot *tok_merges_get(const tok_merges *m, uint32_t left, uint32_t right)
{
    const tok_merge_slot *s = &m->slots[merge_slot(m, ((uint64_t)left << 32 | right) + 1)];
    return s->key == 0 ? NULL : s;
}

void tok_merges_release(tok_merges *m)
{
    if (m->unmap)
        m->unmap(m->mapped, m->mapped_len);
    else
        free(m->slots);
    memset(m, 0, sizeof *m);
}
