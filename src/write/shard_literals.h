/* Each shard's JSON string literal, escaped once (plan_write_batch.c).
 *
 * Every item of a batch line names its utterance's shard, so a table of 1000
 * utterances a shard escapes each shard name 1000 times over, and the batches
 * (sorted by length across the whole table) visit shards in no order. The cost
 * table interns shard names (consecutive rows of one shard share one pointer),
 * so the pointer is the key; the same name under two pointers is two entries
 * with the same bytes. Past a bound (a table whose shards alternate row by
 * row) nothing more is cached and callers escape as before: the output is the
 * same bytes either way. */
#ifndef ES_SHARD_LITERALS_H
#define ES_SHARD_LITERALS_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

typedef struct shard_literal {
    const char *shard; /* the row's shard pointer; NULL = empty slot */
    size_t off;        /* the literal (quotes included) at text.buf + off ... */
    size_t len;        /* ... of len bytes */
} shard_literal;

typedef struct shard_literals {
    shard_literal *slots;
    size_t mask; /* slots - 1 (a power of two), 0 before the first lookup */
    size_t n;
    es_strbuf text;
} shard_literals;

/* The literal of `shard`: its offset in c->text and its length in *off and
 * *len (the name's strlen is taken only the first time). Returns 0, or -1 when
 * it is not cached (out of memory, or the cache is full): the caller escapes
 * the name itself. Offsets stay valid as the cache grows; c->text.buf may move,
 * so read it after the lookups. */
int shard_literal_get(shard_literals *c, const char *shard, size_t *off, size_t *len);

void shard_literals_release(shard_literals *c);

#endif
