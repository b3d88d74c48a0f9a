#include "core/grow.h"

#include <stdint.h>
#include <stdlib.h>

int es_grow(void **arr, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : (first ? first : 1);
    while (c < need) {
        if (c > SIZE_MAX / 2 / size)
            return -1;
        c *= 2;
    }
    void *p = realloc(*arr, c * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}
