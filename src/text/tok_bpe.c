/* Byte-pair encoding of one pre-token, as HF's BPE (word.rs merge_all) does it:
 * start from one symbol per byte, then repeatedly merge the adjacent pair of
 * lowest rank, the leftmost of equal ranks, until no pair has a merge. A heap
 * of (rank, position) with stale entries skipped keeps a long word (a 2000-letter
 * run is one pre-token) at n log n instead of n².
 *
 * Words repeat (" the", " and", "，"), so results are cached per state: a
 * hash of word → ids, cleared whole when full (cheap, and bounded memory). */
#include "text/tok_model.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/grow.h"

#define CACHE_SLOTS (1u << 15)       /* cleared when half full */
#define CACHE_MAX_WORD 64            /* longer words are not cached */

static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
    return es_grow(p, cap, need, size, 256) == 0 ? ES_OK : ES_ERR_NOMEM;
}

static int push_ids(tok_state *st, const uint32_t *ids, size_t n)
{
    void *p = st->ids;
    if (reserve(&p, &st->cap_ids, st->n_ids + n, sizeof *st->ids) != ES_OK)
        return ES_ERR_NOMEM;
    st->ids = p;
    memcpy(st->ids + st->n_ids, ids, n * sizeof *ids);
    st->n_ids += n;
    return ES_OK;
}

/* Heap entries pack rank (high 32 bits) and left position (low 32): the
 * smallest value is the lowest rank, leftmost. */
static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

static void push_pair(const tok_model *m, tok_state *st, size_t *nh, uint32_t pos)
{
    const tok_sym *y = st->syms;
    uint32_t r = y[pos].next;
    if (r == TOK_NONE)
        return;
    const tok_merge_slot *s = tok_merges_get(&m->merges, y[pos].id, y[r].id);
    if (s)
        heap_push(st->heap, nh, (uint64_t)s->rank << 32 | pos);
}

/* Merges w's bytes; the result is the live symbols from position 0. */
static int merge_word(const tok_model *m, tok_state *st, const unsigned char *w, size_t n)
{
    void *a = st->syms, *h = st->heap;
    if (reserve(&a, &st->cap_sym, n, sizeof *st->syms))
        return ES_ERR_NOMEM;
    st->syms = a;
    /* n - 1 pairs at first, at most 2 more per merge */
    if (reserve(&h, &st->cap_heap, 3 * n, sizeof *st->heap))
        return ES_ERR_NOMEM;
    st->heap = h;
    tok_sym *y = st->syms;
    for (size_t i = 0; i < n; i++)
        y[i] = (tok_sym){m->byte_id[w[i]], i ? (uint32_t)i - 1 : TOK_NONE,
                         i + 1 < n ? (uint32_t)i + 1 : TOK_NONE};
    size_t nh = 0;
    for (size_t i = 0; i + 1 < n; i++)
        push_pair(m, st, &nh, (uint32_t)i);
    while (nh) {
        uint64_t top = heap_pop(st->heap, &nh);
        uint32_t pos = (uint32_t)top, rank = (uint32_t)(top >> 32);
        uint32_t r = y[pos].next;
        if (y[pos].id == TOK_NONE || r == TOK_NONE)
            continue;
        const tok_merge_slot *s = tok_merges_get(&m->merges, y[pos].id, y[r].id);
        if (!s || s->rank != rank)
            continue; /* stale: one side has merged since */
        y[pos].id = s->id;
        y[r].id = TOK_NONE;
        y[pos].next = y[r].next;
        if (y[r].next != TOK_NONE)
            y[y[r].next].prev = pos;
        if (y[pos].prev != TOK_NONE)
            push_pair(m, st, &nh, y[pos].prev);
        push_pair(m, st, &nh, pos);
    }
    return ES_OK;
}

static void cache_clear(tok_state *st)
{
    memset(st->cache, 0, (st->cache_mask + 1) * sizeof *st->cache);
    st->cache_n = st->cache_keys_len = st->cache_ids_len = 0;
}

static tok_cache_slot *cache_find(tok_state *st, const char *w, size_t n, uint64_t hash)
{
    if (!st->cache) {
        st->cache = calloc(CACHE_SLOTS, sizeof *st->cache);
        if (!st->cache)
            return NULL;
        st->cache_mask = CACHE_SLOTS - 1;
    }
    size_t i = (size_t)hash & st->cache_mask;
    for (;; i = (i + 1) & st->cache_mask) {
        tok_cache_slot *s = &st->cache[i];
        if (s->key_len == 0 || (s->hash == hash && s->key_len == n &&
                                memcmp(st->cache_keys + s->key_off, w, n) == 0))
            return s;
    }
}

static void cache_store(tok_state *st, const char *w, size_t n, uint64_t hash, size_t first)
{
    /* Best effort: a cache that cannot grow just stops caching. */
    size_t k = st->n_ids - first;
    if (st->cache_n >= CACHE_SLOTS / 2)
        cache_clear(st);
    void *keys = st->cache_keys, *ids = st->cache_ids;
    if (reserve(&keys, &st->cache_keys_cap, st->cache_keys_len + n, 1))
        return;
    st->cache_keys = keys;
    if (reserve(&ids, &st->cache_ids_cap, st->cache_ids_len + k, sizeof *st->cache_ids))
        return;
    st->cache_ids = ids;
    tok_cache_slot *s = cache_find(st, w, n, hash);
    if (!s)
        return;
    memcpy(st->cache_keys + st->cache_keys_len, w, n);
    memcpy(st->cache_ids + st->cache_ids_len, st->ids + first, k * sizeof *st->ids);
    *s = (tok_cache_slot){hash, (uint32_t)st->cache_keys_len, (uint32_t)n,
                          (uint32_t)st->cache_ids_len, (uint32_t)k};
    st->cache_keys_len += n;
    st->cache_ids_len += k;
    st->cache_n++;
}

int tok_bpe_word(const tok_model *m, tok_state *st, const char *w, size_t n)
{
    if (n == 1)
        return push_ids(st, &m->byte_id[(unsigned char)w[0]], 1);
    uint64_t hash = 0;
    if (n <= CACHE_MAX_WORD) {
        hash = XXH3_64bits(w, n);
        tok_cache_slot *s = cache_find(st, w, n, hash);
        if (s && s->key_len)
            return push_ids(st, st->cache_ids + s->ids_off, s->n_ids);
    }
    if (n > UINT32_MAX / 2)
        return ES_ERR_USAGE;
    int rc = merge_word(m, st, (const unsigned char *)w, n);
    size_t first = st->n_ids;
    for (uint32_t p = 0; rc == ES_OK && p != TOK_NONE; p = st->syms[p].next)
        rc = push_ids(st, &st->syms[p].id, 1);
    if (rc == ES_OK && n <= CACHE_MAX_WORD)
        cache_store(st, w, n, hash, first);
    return rc;
}

void tok_state_release(tok_state *st)
{
    free(st->ids);
    free(st->cps);
    free(st->off);
    free(st->up);
    free(st->cls);
    free(st->piece);
    free(st->syms);
    free(st->heap);
    free(st->cache);
    free(st->cache_keys);
    free(st->cache_ids);
    memset(st, 0, sizeof *st);
}
