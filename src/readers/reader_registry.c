#include "readers/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Adding a format: write reader_<format>.c with its ops and list it here. */
static const es_reader_ops *const readers[] = {
    &es_reader_tar,
    &es_reader_parquet,
};

const es_reader_ops *es_reader_for(const uint8_t *head, size_t n)
{
    const es_reader_ops *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++) {
        int b = readers[i]->bid(head, n);
        if (b > best_bid) {
            best_bid = b;
            best = readers[i];
        }
    }
    return best;
}

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
