/* What touching memory costs on this machine, the floor under any phase that
 * builds a large array (docs/PERFORMANCE.md, "Fresh pages mapped in one call"):
 *
 *   bench_page_touch MIB
 *
 * In one process, on MIB MiB each time, prints the seconds of:
 *   fresh      writing freshly mapped memory (a page fault per 4 KiB page);
 *   huge       the same after es_advise_huge asked for transparent huge pages
 *              (a fault per 2 MiB instead of per 4 KiB where the kernel has
 *              them free);
 *   populated  the same after es_prefault_write mapped it in one call (huge
 *              pages asked for, then MADV_POPULATE_WRITE), the call included;
 *   again      writing the same memory a second time (the baseline: no fault);
 *   map only   MADV_POPULATE_WRITE alone, and the write that follows it;
 *   helper     writing memory whose pages a helper thread prepared ahead of the
 *              writer (core/prefault_ahead.h, as the table reader and the
 *              planner do): the wall time of the write, helper running;
 *   moved      reading memory that realloc has just moved (glibc moves a large
 *              block with mremap: same pages, new addresses);
 *   unmoved    reading it once more.
 * On bare metal "fresh" and "populated" are a few times "again" and "moved" is
 * close to "unmoved"; on a paravirtualised guest whose page tables the host
 * shadows, every new mapping of a page costs a trip to the host. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_clock.h"
#include "core/prefault.h"
#include "core/prefault_ahead.h"

static char *map(size_t n)
{
    char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return m;
}

/* Reads a byte per cache line; returns seconds. */
static double read_lines(const char *p, size_t n)
{
    double t0 = now();
    unsigned sum = 0;
    for (size_t i = 0; i < n; i += 64)
        sum += (unsigned char)p[i];
    __asm__ volatile("" : : "r"(sum));
    return now() - t0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || atol(argv[1]) <= 0) {
        fprintf(stderr, "usage: bench_page_touch MIB\n");
        return 2;
    }
    size_t n = (size_t)atol(argv[1]) << 20;

    char *a = map(n);
    double t0 = now();
    memset(a, 1, n);
    double fresh = now() - t0;
    t0 = now();
    memset(a, 2, n);
    double again = now() - t0;
    munmap(a, n);

    char *h = map(n);
    t0 = now();
    es_advise_huge(h, n);
    memset(h, 1, n);
    double huge = now() - t0;
    munmap(h, n);

    /* populated = the mapping call, then the write, timed apart */
    char *e = map(n);
    t0 = now();
    es_prefault_write(e, n, 1);
    double map_only = now() - t0;
    t0 = now();
    memset(e, 1, n);
    double after_map = now() - t0, populated = map_only + after_map;
    munmap(e, n);
    /* the writer fills 1 MiB at a time, reaching each before writing it */
    char *f = map(n);
    t0 = now();
    es_ahead_array arr = {f, 1};
    es_ahead_cursor cur = {es_prefault_ahead_start(&arr, 1, n, ES_AHEAD_LEAD, 0, 1), 0};
    for (size_t at = 0; at < n; at += 1u << 20) {
        size_t len = n - at < (1u << 20) ? n - at : 1u << 20;
        es_ahead_reach(&cur, at + len);
        memset(f + at, 1, len);
    }
    es_prefault_ahead_stop(cur.a);
    double helped = now() - t0;
    munmap(f, n);
    char *c = malloc(n);
    if (!c)
        return 1;
    memset(c, 1, n);
    uintptr_t was = (uintptr_t)c;
    char *d = realloc(c, 2 * n);
    if (!d)
        return 1;
    int did_move = (uintptr_t)d != was; /* mremap may also grow a block where it is */
    double moved = read_lines(d, n), unmoved = read_lines(d, n);
    free(d);

    printf("%zu MiB: fresh %.3f s, huge pages %.3f s, populated %.3f s, again %.3f s; map only %.3f s then "
           "write %.3f s; with the helper %.3f s; after realloc (%s): first read %.3f s, "
           "second %.3f s\n", n >> 20, fresh, huge, populated, again, map_only, after_map, helped,
           did_move ? "moved" : "not moved", moved, unmoved);
    return 0;
}
