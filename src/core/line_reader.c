#include "core/line_reader.h"

#include "core/file_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BYTES 65536

int es_line_reader_open(es_line_reader *lr, const char *path)
{
    memset(lr, 0, sizeof *lr);
    lr->fd = -1;
    lr->max_len = ES_LINE_MAX;
    if (!(lr->buf = malloc(READ_BYTES)))
        return ENOMEM;
    int e = es_open_regular(path, &lr->fd);
    if (e) {
        free(lr->buf);
        lr->buf = NULL;
        return e;
    }
    return 0;
}

static int fill(es_line_reader *lr)
{
    for (;;) {
        ssize_t r = read(lr->fd, lr->buf, READ_BYTES);
        if (r >= 0) {
            lr->pos = 0;
            lr->end = (size_t)r;
            return 0;
        }
        if (errno != EINTR) {
            lr->err = errno;
            return -1;
        }
    }
}

/* Room for len + more bytes and a NUL in lr->line, growing it by doubling (but
 * not past max_len + 1, so the longest accepted line costs no more than that). */
static int reserve(es_line_reader *lr, size_t want)
{
    if (want <= lr->cap)
        return 0;
    size_t cap = lr->cap ? lr->cap : 256;
    while (cap < want)
        cap *= 2;
    if (cap > lr->max_len + 1)
        cap = lr->max_len + 1;
    char *p = realloc(lr->line, cap);
    if (!p) {
        lr->err = ENOMEM;
        return -1;
    }
    lr->line = p;
    lr->cap = cap;
    return 0;
}

int es_line_reader_next(es_line_reader *lr)
{
    size_t len = 0;
    int any = 0; /* bytes of this line were seen (a last line without "\n" counts) */
    lr->err = 0;
    for (;;) {
        if (lr->pos == lr->end) {
            if (fill(lr))
                return -1;
            if (lr->end == 0)
                break;
        }
        any = 1;
        const char *from = lr->buf + lr->pos;
        const char *nl = memchr(from, '\n', lr->end - lr->pos);
        size_t take = nl ? (size_t)(nl - from) : lr->end - lr->pos;
        if (take > lr->max_len - len) {
            lr->lineno++; /* the line the error names */
            lr->err = ES_ELINE_TOO_LONG;
            return -1;
        }
        if (reserve(lr, len + take + 1)) {
            lr->lineno++;
            return -1;
        }
        memcpy(lr->line + len, from, take);
        len += take;
        lr->pos += take + (nl != NULL);
        if (nl)
            break;
    }
    if (!any)
        return 0;
    if (reserve(lr, len + 1)) {
        lr->lineno++;
        return -1;
    }
    lr->lineno++;
    if (len && lr->line[len - 1] == '\r')
        len--;
    lr->line[len] = '\0';
    lr->len = len;
    lr->has_nul = memchr(lr->line, '\0', len) != NULL;
    return 1;
}

int es_line_reader_fail(es_context *ctx, const es_line_reader *lr, const char *path)
{
    if (lr->err == ENOMEM)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: line %lu: out of memory", path, lr->lineno);
    if (lr->err == ES_ELINE_TOO_LONG)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: line %lu: longer than %zu bytes, the most a line may be",
                       path, lr->lineno, lr->max_len);
    return es_fail(ctx, ES_ERR_IO, "%s: read error: %s", path, strerror(lr->err));
}

void es_line_reader_close(es_line_reader *lr)
{
    if (lr->fd >= 0)
        close(lr->fd);
    free(lr->buf);
    free(lr->line);
    memset(lr, 0, sizeof *lr);
    lr->fd = -1;
}
