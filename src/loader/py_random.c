#include "loader/py_random.h"

#include <string.h>

enum { MT_N = 624, MT_M = 397 };
#define MATRIX_A 0x9908b0dfu
#define UPPER_MASK 0x80000000u
#define LOWER_MASK 0x7fffffffu

static void init_genrand(es_pyrandom *r, uint32_t s)
{
    uint32_t *mt = r->mt;
    mt[0] = s;
    for (int i = 1; i < MT_N; i++)
        mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + (uint32_t)i;
    r->index = MT_N;
}

void es_pyrandom_seed_key(es_pyrandom *r, const uint32_t *key, size_t n)
{
    static const uint32_t zero = 0;
    if (n == 0) {
        key = &zero;
        n = 1;
    }
    uint32_t *mt = r->mt;
    init_genrand(r, 19650218u);
    size_t i = 1, j = 0;
    for (size_t k = MT_N > n ? MT_N : n; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
        i++;
        j++;
        if (i >= MT_N) {
            mt[0] = mt[MT_N - 1];
            i = 1;
        }
        if (j >= n)
            j = 0;
    }
    for (size_t k = MT_N - 1; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= MT_N) {
            mt[0] = mt[MT_N - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000u; /* MSB is 1, assuring a non-zero initial array */
    r->index = MT_N;
}

void es_pyrandom_seed_u64(es_pyrandom *r, uint64_t n)
{
    uint32_t key[2] = {(uint32_t)n, (uint32_t)(n >> 32)};
    es_pyrandom_seed_key(r, key, key[1] ? 2 : 1);
}

void es_pyrandom_seed_i64(es_pyrandom *r, int64_t n)
{
    /* abs() without overflow for INT64_MIN */
    uint64_t a = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    es_pyrandom_seed_u64(r, a);
}

static void generate(es_pyrandom *r)
{
    static const uint32_t mag01[2] = {0, MATRIX_A};
    uint32_t *mt = r->mt, y;
    int kk;
    for (kk = 0; kk < MT_N - MT_M; kk++) {
        y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
        mt[kk] = mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1u];
    }
    for (; kk < MT_N - 1; kk++) {
        y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
        mt[kk] = mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1u];
    }
    y = (mt[MT_N - 1] & UPPER_MASK) | (mt[0] & LOWER_MASK);
    mt[MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1u];
    r->index = 0;
}

uint32_t es_pyrandom_u32(es_pyrandom *r)
{
    if (r->index >= MT_N)
        generate(r);
    uint32_t y = r->mt[r->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

void es_pyrandom_getrandbits_words(es_pyrandom *r, unsigned k, uint32_t *words)
{
    for (unsigned i = 0; k; i++) {
        uint32_t w = es_pyrandom_u32(r);
        if (k < 32) {
            w >>= 32 - k; /* drop the least significant bits */
            k = 0;
        } else {
            k -= 32;
        }
        words[i] = w;
    }
}

uint64_t es_pyrandom_getrandbits(es_pyrandom *r, unsigned k)
{
    if (k == 0)
        return 0;
    if (k <= 32)
        return es_pyrandom_u32(r) >> (32 - k);
    uint32_t w[2];
    es_pyrandom_getrandbits_words(r, k > 64 ? 64 : k, w);
    return (uint64_t)w[0] | (uint64_t)w[1] << 32;
}

static unsigned bit_length(uint64_t n)
{
    unsigned k = 0;
    while (n) {
        k++;
        n >>= 1;
    }
    return k;
}

uint64_t es_pyrandom_randbelow(es_pyrandom *r, uint64_t n)
{
    unsigned k = bit_length(n);
    uint64_t v = es_pyrandom_getrandbits(r, k);
    while (v >= n)
        v = es_pyrandom_getrandbits(r, k);
    return v;
}

void es_pyrandom_shuffle_u32(es_pyrandom *r, uint32_t *x, size_t n)
{
    for (size_t i = n ? n - 1 : 0; i >= 1; i--) {
        size_t j = (size_t)es_pyrandom_randbelow(r, (uint64_t)i + 1);
        uint32_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}
