/* The byte source under libarchive for a shard on disk: positional reads
 * (pread) with skips that only move an offset. libarchive's own file source
 * pays an lseek for every member it skips; on page-cached shards those system
 * calls were half the cost of measuring (docs/PERFORMANCE.md). */
#ifndef ES_SHARD_FILE_H
#define ES_SHARD_FILE_H

#include <archive.h>
#include <stddef.h>
#include <stdint.h>

typedef struct es_shard_file {
    int fd;
    uint64_t offset, size;
    uint64_t start; /* where libarchive's offset 0 is in the file */
    size_t want;  /* bytes the next read asks for */
    void *block;
    void *map;    /* es_shard_file_open_mapped: the whole file (NULL when empty) */
    int mapped;
} es_shard_file;

/* Opens path and attaches it to `a` as its data source (archive_read_open1).
 * Returns an ARCHIVE_* code; on failure the archive's error string says why.
 * The file is closed by archive_read_close/free through the close callback. */
int es_shard_file_open(struct archive *a, es_shard_file *f, const char *path);

/* The same, the file mapped whole instead of read into a block: libarchive then
 * hands out an uncompressed member's data in place, without pread's copy. For
 * a reader that goes through every byte of a file nobody else writes (reshard's
 * read-back of its own shards): a mapped file cut short meanwhile is a SIGBUS,
 * where a read is an error. A reader that skips most bytes is faster with
 * es_shard_file_open. */
int es_shard_file_open_mapped(struct archive *a, es_shard_file *f, const char *path);
/* The same, the source beginning at byte `start` of the file: a plain tar read
 * from one of its headers (rows_tar.c resumes a pass there). libarchive's
 * offsets then count from `start`. */
int es_shard_file_open_at(struct archive *a, es_shard_file *f, const char *path, uint64_t start);

/* Whether archive_read_next_header's result r gave a usable header. ARCHIVE_RETRY
 * is a damaged header that libarchive would step over to resync: members lost,
 * so a corrupt shard, as it is to GNU tar (and Python's tarfile stops there).
 * ARCHIVE_WARN (a name not convertible to the locale, say) is usable. */
static inline int es_archive_header_ok(int r)
{
    return r == ARCHIVE_OK || r == ARCHIVE_WARN;
}

#endif
