/* Faulting in memory that is about to be filled, in one system call.
 *
 * Large arrays written once front to back (a 10 M-row cost table is 800 MB of
 * rows and ~200 MB of strings) otherwise take one page fault per 4 KiB page as
 * the writes reach it. On a virtualised machine such as this project's (a
 * paravirtualised guest) each fault is an exception round trip of several
 * microseconds: reading a 1.1 GB cost table spent 1.6 s of its 3.7 s CPU in the
 * kernel, 0.3 s with this. MADV_POPULATE_WRITE (Linux 5.14) maps a whole range
 * in one call. (The first write to each page stays dear on such a machine:
 * tools/bench/bench_page_touch, docs/PERFORMANCE.md.) */
#ifndef ES_PREFAULT_H
#define ES_PREFAULT_H

#include <stddef.h>

/* Asks the kernel to map the whole pages inside [p, p + n) for writing, huge
 * pages where it can when `huge` (es_advise_huge first: the caller passes its
 * context's huge_pages setting, es_ctx_huge_pages). Only advice: on a kernel
 * without MADV_POPULATE_WRITE, or when it fails (memory limits), the pages
 * are simply faulted in later as they are written. */
void es_prefault_write(void *p, size_t n, int huge);

/* Asks for transparent huge pages (MADV_HUGEPAGE) over the 2 MiB-aligned part
 * of [p, p + n): a big array written once then costs one fault per 2 MiB
 * instead of 512 faults of 4 KiB, each a trip to the host on a virtual
 * machine (tools/bench/bench_page_touch: 12-14 µs per 4 KiB page fresh, 0.3 µs
 * per 4 KiB when huge pages are free; docs/PERFORMANCE.md). Many kernels,
 * this machine's among them, run THP in "madvise" mode, where nothing gets
 * huge pages without this call; in "always" mode it changes nothing, in "never" it is
 * ignored. Memory in use grows by at most the huge pages at the ends of what
 * is written, because only pages touched are backed. Callers skip it when
 * their context's huge_pages setting is off (the CLI's EQUISHARD_HUGE_PAGES=0):
 * where memory is fragmented, the kernel (defrag "madvise") compacts it
 * synchronously at such a fault, and a run can stall (docs/PERFORMANCE.md,
 * "Huge pages"). */
void es_advise_huge(void *p, size_t n);

#endif
