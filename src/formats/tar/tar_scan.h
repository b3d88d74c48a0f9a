/* Plain tar headers read without libarchive, for the common shard: an
 * uncompressed file of ustar or GNU headers of regular members with short
 * ASCII names. libarchive spends more per member than measuring needs
 * (a wide-character copy of every name, allocations); this scanner reads a
 * 512-byte header in place and positions member data by offset.
 *
 * It never decides anything libarchive would decide differently: on any
 * header it is not sure of (another type, a pax or GNU long-name extension,
 * a ustar prefix, a non-canonical number, a bad checksum, a name with bytes
 * outside printable ASCII, a member that runs past the end of the file) it
 * stops, and the caller hands the shard to libarchive, stepped past the
 * headers already read: the same members, sizes and errors either way. */
#ifndef ES_TAR_SCAN_H
#define ES_TAR_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct es_tar_scan {
    int fd;             /* not owned */
    const uint8_t *map; /* es_tar_scan_init_mapped: the whole file, not owned */
    uint64_t size;      /* the file's */
    uint64_t next;      /* offset of the next header */
    uint8_t *buf;       /* a window of the file: [buf_off, buf_off + buf_len) */
    uint64_t buf_off;
    size_t buf_len, want;
    /* the member es_tar_scan_next found */
    char name[101];
    uint64_t data_off, data_size;
} es_tar_scan;

/* Starts at offset 0 of the open file fd of `size` bytes. 0, or -1 when out
 * of memory. */
int es_tar_scan_init(es_tar_scan *s, int fd, uint64_t size);
/* The same over a file mapped whole (`size` bytes at map): reads are copies
 * out of it, and member data can be used in place (map + data_off). */
void es_tar_scan_init_mapped(es_tar_scan *s, const void *map, uint64_t size);
void es_tar_scan_release(es_tar_scan *s);

enum {
    ES_TAR_SCAN_MEMBER = 1, /* s->name, data_off, data_size set */
    ES_TAR_SCAN_END = 0,    /* end of archive, as libarchive ends it */
    ES_TAR_SCAN_STOP = -1,  /* a header to leave to libarchive (or a read error) */
};

/* The next header, or END, or STOP. After STOP the scanner must not be used
 * further (but may be released). */
int es_tar_scan_next(es_tar_scan *s);

/* Up to n bytes of the file at `off` into dst: the count read (less at the
 * end of the file), or -1 on a read error (errno set). */
ssize_t es_tar_scan_read(es_tar_scan *s, uint64_t off, void *dst, size_t n);

/* Up to n bytes of the file at `off`, in place: *p points at them in the
 * window (valid until the next call) or the mapping. The count (at least 1
 * unless off is at the end), or -1 on a read error (errno set). A member's
 * data is read this way without a copy out of the window. */
ssize_t es_tar_scan_view(es_tar_scan *s, uint64_t off, size_t n, const uint8_t **p);

#endif
