#include "core/prefault.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void es_prefault_write(void *p, size_t n, int huge)
{
    if (huge)
        es_advise_huge(p, n);
#ifdef MADV_POPULATE_WRITE
    /* atomic: helper threads call this too (core/prefault_ahead.h) */
    static atomic_size_t cached;
    size_t page = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!page) {
        long ps = sysconf(_SC_PAGESIZE);
        page = ps > 0 ? (size_t)ps : 4096;
        atomic_store_explicit(&cached, page, memory_order_relaxed);
    }
    /* madvise wants page-aligned bounds; partial pages at the ends are left to
     * ordinary faults. */
    uintptr_t from = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t to = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

void es_advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t from = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t to = ((uintptr_t)p + n) & ~(huge - 1);
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}
