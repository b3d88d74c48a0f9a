/* LSD radix sort of 64-bit keys, a byte a pass (radix_sort.h). */
#include "algo/radix_sort.h"

#include <string.h>

void es_radix_sort_u64(uint64_t *keys, size_t n, uint64_t *tmp)
{
    if (n < 2)
        return;
    /* every byte's histogram in one read of the keys */
    size_t count[8][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            count[d][(keys[i] >> (8 * d)) & 255]++;
    uint64_t *from = keys, *to = tmp;
    for (int d = 0; d < 8; d++) {
        if (count[d][(from[0] >> (8 * d)) & 255] == n)
            continue; /* one value in this byte: the pass would change nothing */
        size_t at[256], sum = 0;
        for (int b = 0; b < 256; b++) {
            at[b] = sum;
            sum += count[d][b];
        }
        for (size_t i = 0; i < n; i++)
            to[at[(from[i] >> (8 * d)) & 255]++] = from[i];
        uint64_t *t = from;
        from = to;
        to = t;
    }
    if (from != keys)
        memcpy(keys, from, n * sizeof *keys);
}

/* The same passes as es_radix_sort_u64, moving each key's value with it; a
 * pass moves in order of the input, which keeps equal keys' order. */
void es_radix_sort_pairs(es_radix_pair *pairs, size_t n, es_radix_pair *tmp)
{
    if (n < 2)
        return;
    size_t count[8][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            count[d][(pairs[i].key >> (8 * d)) & 255]++;
    es_radix_pair *from = pairs, *to = tmp;
    for (int d = 0; d < 8; d++) {
        if (count[d][(from[0].key >> (8 * d)) & 255] == n)
            continue;
        size_t at[256], sum = 0;
        for (int b = 0; b < 256; b++) {
            at[b] = sum;
            sum += count[d][b];
        }
        for (size_t i = 0; i < n; i++)
            to[at[(from[i].key >> (8 * d)) & 255]++] = from[i];
        es_radix_pair *t = from;
        from = to;
        to = t;
    }
    if (from != pairs)
        memcpy(pairs, from, n * sizeof *pairs);
}
