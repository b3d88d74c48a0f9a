#include "readers/shard_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes per read adapt to the access pattern. Right after a skip, a small read
 * (MIN_BLOCK) usually covers a member's tar header, the `.txt` member and the
 * start of the audio member, whose header is all we parse; copying more is
 * wasted. Reads that follow reads (a compressed shard, --hash) double up to
 * MAX_BLOCK to save system calls. Measured in docs/PERFORMANCE.md. */
#define MIN_BLOCK (4u << 10)
#define MAX_BLOCK (256u << 10)

static la_ssize_t block_read(struct archive *a, void *opaque, const void **out)
{
    es_shard_file *f = opaque;
    if (f->mapped) { /* the rest of the mapped file, in one block */
        size_t n = f->size > f->offset ? (size_t)(f->size - f->offset) : 0;
        *out = n ? (const char *)f->map + f->offset : NULL;
        f->offset += n;
        return (la_ssize_t)n;
    }
    for (;;) {
        ssize_t n = pread(f->fd, f->block, f->want, (off_t)f->offset);
        if (n >= 0) {
            f->offset += (uint64_t)n;
            if (f->want < MAX_BLOCK)
                f->want *= 2;
            *out = f->block;
            return n;
        }
        if (errno != EINTR) {
            archive_set_error(a, errno, "read error");
            return -1;
        }
    }
}

/* Skipping past the end is clamped: the next read then returns 0 and the tar
 * reader reports the truncation itself. */
static la_int64_t block_skip(struct archive *a, void *opaque, la_int64_t request)
{
    (void)a; /* libarchive's skip callback */
    es_shard_file *f = opaque;
    uint64_t left = f->size > f->offset ? f->size - f->offset : 0;
    uint64_t n = request < 0 ? 0 : (uint64_t)request;
    if (n > left)
        n = left;
    f->offset += n;
    f->want = MIN_BLOCK;
    return (la_int64_t)n;
}

static la_int64_t block_seek(struct archive *a, void *opaque, la_int64_t offset, int whence)
{
    es_shard_file *f = opaque;
    int64_t base = whence == SEEK_SET ? (int64_t)f->start : whence == SEEK_CUR ? (int64_t)f->offset : (int64_t)f->size;
    if (base + offset < (int64_t)f->start) {
        archive_set_error(a, EINVAL, "seek before the start of the file");
        return ARCHIVE_FATAL;
    }
    f->offset = (uint64_t)(base + offset);
    f->want = MIN_BLOCK;
    return (la_int64_t)(f->offset - f->start);
}

static int block_close(struct archive *a, void *opaque)
{
    (void)a; /* libarchive's close callback */
    es_shard_file *f = opaque;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    free(f->block);
    f->block = NULL;
    if (f->map)
        munmap(f->map, (size_t)f->size);
    f->map = NULL;
    return ARCHIVE_OK;
}

/* Opens path as es_shard_file_open documents, libarchive's offset 0 at byte
 * `start`; with `mapped`, maps the file whole instead of allocating the read
 * block (only from its start). */
static int shard_open(struct archive *a, es_shard_file *f, const char *path, uint64_t start,
                      int mapped)
{
    f->offset = f->start = start;
    f->block = NULL;
    f->map = NULL;
    f->mapped = mapped;
    /* O_NONBLOCK: opening a FIFO without a writer would wait forever; only
     * regular files are read (positional reads, a size that ends). */
    f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    int e = f->fd < 0 || fstat(f->fd, &st) != 0 ? errno : 0;
    const char *why = e                     ? strerror(e)
                      : S_ISDIR(st.st_mode)  ? strerror(EISDIR)
                      : !S_ISREG(st.st_mode) ? "not a regular file"
                                             : NULL;
    if (why) {
        archive_set_error(a, e ? e : EINVAL, "cannot open: %s", why);
        if (f->fd >= 0)
            close(f->fd);
        f->fd = -1;
        return ARCHIVE_FATAL;
    }
    f->size = (uint64_t)st.st_size;
    f->want = MIN_BLOCK;
    if (mapped && f->size) {
        /* MAP_POPULATE: the page tables filled in one call; touched page by
         * page, the faults cost more than the copy pread makes. */
        void *m = f->size <= SIZE_MAX ? mmap(NULL, (size_t)f->size, PROT_READ,
                                             MAP_PRIVATE | MAP_POPULATE, f->fd, 0)
                                      : MAP_FAILED;
        e = errno;
        if (m == MAP_FAILED) {
            archive_set_error(a, e, "cannot open: %s", strerror(e));
            close(f->fd);
            f->fd = -1;
            return ARCHIVE_FATAL;
        }
        f->map = m;
    } else if (!mapped)
        f->block = malloc(MAX_BLOCK);
    if (!mapped && !f->block) {
        archive_set_error(a, ENOMEM, "out of memory");
        close(f->fd);
        f->fd = -1;
        return ARCHIVE_FATAL;
    }
    archive_read_set_callback_data(a, f);
    archive_read_set_read_callback(a, block_read);
    archive_read_set_skip_callback(a, block_skip);
    archive_read_set_seek_callback(a, block_seek);
    archive_read_set_close_callback(a, block_close);
    return archive_read_open1(a);
}

int es_shard_file_open(struct archive *a, es_shard_file *f, const char *path)
{
    return shard_open(a, f, path, 0, 0);
}

int es_shard_file_open_at(struct archive *a, es_shard_file *f, const char *path, uint64_t start)
{
    return shard_open(a, f, path, start, 0);
}

int es_shard_file_open_mapped(struct archive *a, es_shard_file *f, const char *path)
{
    return shard_open(a, f, path, 0, 1);
}
