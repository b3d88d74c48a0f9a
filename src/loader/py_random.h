/* Python's `random` module, bit for bit (CPython 3.x, _randommodule.c and
 * random.py), so that the loaders' `random.Random(epoch).shuffle(idx)` can be
 * replayed in C.
 *
 * - MT19937 (Matsumoto & Nishimura, genrand_uint32).
 * - Seeding an int n as CPython's random_seed does: the key is the 32-bit
 *   words of abs(n), least significant first ([0] for n = 0), fed to
 *   init_by_array. So seed(-n) == seed(n): random.Random(-1) is Random(1).
 * - getrandbits(k): k <= 32 takes the top k bits of one output; larger k fills
 *   32-bit words from the least significant up, the last word shifted right.
 * - _randbelow_with_getrandbits(n): k = n.bit_length(), draw getrandbits(k)
 *   until it is < n.
 * - shuffle (3.11+, same as the default path of earlier 3.x):
 *   for i in reversed(range(1, len(x))): j = _randbelow(i + 1); swap x[i], x[j].
 *
 * Invariant: a state is valid only after one of the seed functions. */
#ifndef ES_PY_RANDOM_H
#define ES_PY_RANDOM_H

#include <stddef.h>
#include <stdint.h>

typedef struct es_pyrandom {
    uint32_t mt[624];
    int index;
} es_pyrandom;

/* init_by_array(key, n); n = 0 is treated as the key [0], as CPython does. */
void es_pyrandom_seed_key(es_pyrandom *r, const uint32_t *key, size_t n);
/* random.seed(n) / random.Random(n) for a Python int that fits int64. */
void es_pyrandom_seed_i64(es_pyrandom *r, int64_t n);
/* The same for a non-negative int up to 2**64 - 1. */
void es_pyrandom_seed_u64(es_pyrandom *r, uint64_t n);

/* One MT19937 output (genrand_uint32). */
uint32_t es_pyrandom_u32(es_pyrandom *r);

/* getrandbits(k) for k <= 64 (0 gives 0 and draws nothing). */
uint64_t es_pyrandom_getrandbits(es_pyrandom *r, unsigned k);
/* getrandbits(k) for any k: (k + 31) / 32 words, least significant first. */
void es_pyrandom_getrandbits_words(es_pyrandom *r, unsigned k, uint32_t *words);

/* _randbelow(n): uniform in [0, n); n must be > 0. */
uint64_t es_pyrandom_randbelow(es_pyrandom *r, uint64_t n);

/* random.shuffle(x) on an array of n uint32 items, in place. */
void es_pyrandom_shuffle_u32(es_pyrandom *r, uint32_t *x, size_t n);

#endif
