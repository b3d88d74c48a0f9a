/* Shard literals escaped once, found by the shard's pointer (shard_literals.h). */
#include "write/shard_literals.h"

#include <stdlib.h>
#include <string.h>

#include "write/plan_json.h"

enum {
    FIRST_SLOTS = 1024,
    MAX_ENTRIES = 1 << 20,        /* a million shards; past that, escape as before */
    MAX_TEXT = 256u << 20,        /* and no more than 256 MiB of literals */
};

static size_t slot_of(const shard_literals *c, const char *shard)
{
    uint64_t h = (uint64_t)(uintptr_t)shard * 0x9e3779b97f4a7c15u;
    return (size_t)(h >> 32) & c->mask;
}

/* Doubles the slots (or makes the first ones); -1 when out of memory. */
static int grow(shard_literals *c)
{
    size_t cap = c->mask ? (c->mask + 1) * 2 : FIRST_SLOTS;
    shard_literal *old = c->slots, *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    size_t old_cap = c->mask ? c->mask + 1 : 0;
    c->slots = slots;
    c->mask = cap - 1;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].shard)
            continue;
        size_t j = slot_of(c, old[i].shard);
        while (slots[j].shard)
            j = (j + 1) & c->mask;
        slots[j] = old[i];
    }
    free(old);
    return 0;
}

/* The slot of `shard`, or the empty slot where it would go. */
static shard_literal *probe(const shard_literals *c, const char *shard)
{
    size_t j = slot_of(c, shard);
    while (c->slots[j].shard && c->slots[j].shard != shard)
        j = (j + 1) & c->mask; /* ends: the slots are never more than half full */
    return &c->slots[j];
}

int shard_literal_get(shard_literals *c, const char *shard, size_t *off, size_t *len)
{
    if (!c->mask && grow(c) != 0)
        return -1;
    shard_literal *s = probe(c, shard);
    if (!s->shard) {
        if (c->n >= MAX_ENTRIES || c->text.len >= MAX_TEXT)
            return -1;
        if ((c->n + 1) * 2 > c->mask + 1) {
            if (grow(c) != 0)
                return -1;
            s = probe(c, shard);
        }
        size_t shard_len = strlen(shard);
        char *w = es_strbuf_reserve(&c->text, ES_JSON_ESCAPED_MAX(shard_len));
        if (!w)
            return -1;
        size_t at = c->text.len;
        es_strbuf_advance(&c->text, es_json_escape(w, shard, shard_len));
        *s = (shard_literal){shard, at, c->text.len - at};
        c->n++;
    }
    *off = s->off;
    *len = s->len;
    return 0;
}

void shard_literals_release(shard_literals *c)
{
    free(c->slots);
    es_strbuf_release(&c->text);
    *c = (shard_literals){0};
}
