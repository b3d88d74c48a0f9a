/* A file's first bytes, for the formats and manifests to bid on (reader.h). */
#include "readers/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

long es_sniff_file(es_context *ctx, const char *path, uint8_t *head)
{
    /* Only regular files: a FIFO would block here (O_NONBLOCK keeps the open
     * from waiting for a writer) and lose what the sniff read; a device such as
     * /dev/zero never ends. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return es_fail(ctx, -1, "%s: cannot open: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return es_fail(ctx, -1, "%s: cannot open: %s", path,
                       S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
    }
    size_t n = 0;
    while (n < ES_SNIFF_BYTES) {
        ssize_t r = pread(fd, head + n, ES_SNIFF_BYTES - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return es_fail(ctx, -1, "%s: cannot read: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    return (long)n;
}
