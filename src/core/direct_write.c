#include "core/direct_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* write(2) until n bytes are written; 0, or -1 with errno. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The whole blocks of p[0..n) with O_DIRECT; returns how many bytes went out
 * (a multiple of ES_DIRECT_ALIGN, possibly 0 where the file system refuses
 * O_DIRECT: the caller writes the rest buffered), or -1 with errno on a real
 * write error. */
static ssize_t write_blocks_direct(int fd, int flags, const char *p, size_t n)
{
    size_t blocks = n / ES_DIRECT_ALIGN * ES_DIRECT_ALIGN, done = 0;
    if (!blocks || fcntl(fd, F_SETFL, flags | O_DIRECT) != 0)
        return 0; /* no O_DIRECT here: all of it buffered */
    while (done < blocks) {
        ssize_t w = write(fd, p + done, blocks - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EINVAL)
            break; /* refused for this file after all: the rest buffered */
        if (w <= 0) {
            int e = w == 0 ? EIO : errno;
            fcntl(fd, F_SETFL, flags);
            errno = e;
            return -1;
        }
        done += (size_t)w;
        if (done % ES_DIRECT_ALIGN)
            break; /* a short write off the block grid: the rest buffered */
    }
    if (fcntl(fd, F_SETFL, flags) != 0)
        return -1;
    return (ssize_t)done;
}

int es_write_whole(int fd, const void *buf, size_t len, size_t direct_min)
{
    const char *p = buf;
    size_t done = 0;
    off_t at;
    if (len >= direct_min && (uintptr_t)p % ES_DIRECT_ALIGN == 0 &&
        (at = lseek(fd, 0, SEEK_CUR)) >= 0 && at % ES_DIRECT_ALIGN == 0) {
        int flags = fcntl(fd, F_GETFL);
        ssize_t d = flags < 0 ? 0 : write_blocks_direct(fd, flags, p, len);
        if (d < 0)
            return -1;
        done = (size_t)d;
    }
    return write_all(fd, p + done, len - done);
}
