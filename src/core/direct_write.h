/* Writing a whole file from one buffer around the page cache.
 *
 * On this project's machines a buffered write costs far more than the bytes:
 * the kernel copies every byte into page-cache pages, and on a virtual machine
 * those pages are often fresh to the host as well (each first touch a fault
 * there). A plan's rank files are gigabytes written once and never read back
 * by this process, so the whole 4 KiB blocks of a buffer that is itself
 * aligned go to the device with O_DIRECT (no copy, nothing left dirty), and
 * only the tail, or a file on a file system without O_DIRECT (tmpfs before
 * Linux 6.6, some network and FUSE file systems), takes the buffered path.
 * The bytes on disk are the same either way. */
#ifndef ES_DIRECT_WRITE_H
#define ES_DIRECT_WRITE_H

#include <stddef.h>

/* Alignment of buffer address, length and file offset that every Linux block
 * device accepts for O_DIRECT (the logical block size is 512 or 4096). */
enum { ES_DIRECT_ALIGN = 4096 };

/* Writes buf[0..len) to fd (opened for writing, without O_DIRECT) at its
 * offset. Buffers shorter than `direct_min`, or where the buffer or the file
 * offset is not a multiple of ES_DIRECT_ALIGN, are written the ordinary way.
 * EQUISHARD_DIRECT_IO=0 in the environment writes everything that way (for
 * a file system where O_DIRECT is accepted but slow). Returns 0, or -1 with
 * errno set (never a partial success: retries short writes and EINTR). fd's
 * status flags are as before on return. */
int es_write_whole(int fd, const void *buf, size_t len, size_t direct_min);

#endif
