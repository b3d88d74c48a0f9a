/* LSD radix sort of 64-bit keys, a byte a pass (radix_sort.h). */
#include "algo/radix_sort.h"

#include <string.h>

static inline uint64_t key_at(const char *elem)
{
    uint64_t key;
    memcpy(&key, elem, sizeof key);
    return key;
}

/* The passes of both sorts, over elements of `size` bytes whose first eight
 * are the key. Inlined into each with `size` a constant, so the moves are
 * plain 8- or 16-byte copies. A pass moves elements in input order, which
 * keeps equal keys' order (es_radix_sort_pairs promises it). */
static inline __attribute__((always_inline)) void radix_sort(void *elems, size_t n, size_t size,
                                                             void *tmp)
{
    if (n < 2)
        return;
    /* every byte's histogram in one read of the keys */
    size_t count[8][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) {
        uint64_t key = key_at((const char *)elems + i * size);
        for (int d = 0; d < 8; d++)
            count[d][(key >> (8 * d)) & 255]++;
    }
    char *from = elems, *to = tmp;
    for (int d = 0; d < 8; d++) {
        if (count[d][(key_at(from) >> (8 * d)) & 255] == n)
            continue; /* one value in this byte: the pass would change nothing */
        size_t at[256], sum = 0;
        for (int b = 0; b < 256; b++) {
            at[b] = sum;
            sum += count[d][b];
        }
        for (size_t i = 0; i < n; i++) {
            const char *e = from + i * size;
            memcpy(to + at[(key_at(e) >> (8 * d)) & 255]++ * size, e, size);
        }
        char *t = from;
        from = to;
        to = t;
    }
    if (from != (char *)elems)
        memcpy(elems, from, n * size);
}

void es_radix_sort_u64(uint64_t *keys, size_t n, uint64_t *tmp)
{
    radix_sort(keys, n, sizeof *keys, tmp);
}

void es_radix_sort_pairs(es_radix_pair *pairs, size_t n, es_radix_pair *tmp)
{
    /* the key must lead: radix_sort reads each element's first eight bytes */
    _Static_assert(offsetof(es_radix_pair, key) == 0, "es_radix_pair's key comes first");
    radix_sort(pairs, n, sizeof *pairs, tmp);
}
