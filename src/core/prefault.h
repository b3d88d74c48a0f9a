/* Faulting in memory that is about to be filled, in one system call.
 *
 * Large arrays written once front to back (a 10 M-row cost table is 800 MB of
 * rows and ~200 MB of strings) otherwise take one page fault per 4 KiB page as
 * the writes reach it. On a virtualised machine such as this project's (a
 * paravirtualised guest) a fault costs several microseconds, most of it the
 * exception round trip rather than zeroing the page: reading a 1.1 GB cost
 * table spent 1.6 s of its 3.7 s in the kernel. MADV_POPULATE_WRITE (Linux 5.14)
 * maps a whole range at once. */
#ifndef ES_PREFAULT_H
#define ES_PREFAULT_H

#include <stddef.h>

/* Asks the kernel to map the whole pages inside [p, p + n) for writing. Only
 * advice: on a kernel without MADV_POPULATE_WRITE, or when it fails (memory
 * limits), the pages are simply faulted in later as they are written. */
void es_prefault_write(void *p, size_t n);

#endif
