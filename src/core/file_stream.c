#include "core/file_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ssize_t fd_read(void *opaque, void *buf, size_t n)
{
    es_file_stream *f = opaque;
    for (;;) {
        ssize_t r = read(f->fd, buf, n);
        if (r >= 0)
            return r;
        if (errno != EINTR) {
            f->err = errno;
            return -1;
        }
    }
}

static int64_t fd_skip(void *opaque, uint64_t n)
{
    es_file_stream *f = opaque;
    off_t here = lseek(f->fd, 0, SEEK_CUR);
    off_t end = lseek(f->fd, 0, SEEK_END);
    if (here < 0 || end < 0) {
        f->err = errno;
        return -1;
    }
    uint64_t left = (uint64_t)(end - here);
    if (n > left)
        n = left;
    if (lseek(f->fd, here + (off_t)n, SEEK_SET) < 0) {
        f->err = errno;
        return -1;
    }
    return (int64_t)n;
}

int es_open_regular(const char *path, int *fd)
{
    /* O_NONBLOCK: opening a FIFO without a writer would wait forever. */
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0)
        return errno;
    struct stat st;
    int e = fstat(*fd, &st) != 0 ? errno
            : S_ISDIR(st.st_mode)  ? EISDIR
            : !S_ISREG(st.st_mode) ? ES_ENOTREG
                                   : 0;
    if (!e && fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK) != 0)
        e = errno;
    if (e) {
        close(*fd);
        *fd = -1;
    }
    return e;
}

int es_fopen_regular(const char *path, FILE **fp)
{
    int fd;
    int e = es_open_regular(path, &fd);
    *fp = e ? NULL : fdopen(fd, "rb");
    if (!e && !*fp) {
        e = errno;
        close(fd);
    }
    return e;
}

int es_file_stream_open(es_byte_stream *s, es_file_stream *f, const char *path)
{
    f->err = 0;
    int e = es_open_regular(path, &f->fd);
    if (e)
        return e;
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        e = errno;
        close(f->fd);
        f->fd = -1;
        return e;
    }
    s->read = fd_read;
    s->skip = fd_skip;
    s->opaque = f;
    s->size = (uint64_t)st.st_size;
    s->consumed = 0;
    return 0;
}

const char *es_file_stream_strerror(int e)
{
    return e == ES_ENOTREG ? "not a regular file" : strerror(e);
}

void es_file_stream_close(es_file_stream *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}
