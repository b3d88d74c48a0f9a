#include "core/line_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int es_line_reader_open(es_line_reader *lr, const char *path)
{
    memset(lr, 0, sizeof *lr);
    lr->fp = fopen(path, "rb");
    return lr->fp ? 0 : errno;
}

int es_line_reader_next(es_line_reader *lr)
{
    errno = 0;
    ssize_t n = getline(&lr->line, &lr->cap, lr->fp);
    if (n < 0)
        return ferror(lr->fp) ? -1 : 0;
    lr->lineno++;
    size_t len = (size_t)n;
    if (len && lr->line[len - 1] == '\n')
        len--;
    if (len && lr->line[len - 1] == '\r')
        len--;
    lr->line[len] = '\0';
    lr->len = len;
    lr->has_nul = memchr(lr->line, '\0', len) != NULL;
    return 1;
}

void es_line_reader_close(es_line_reader *lr)
{
    if (lr->fp)
        fclose(lr->fp);
    free(lr->line);
    memset(lr, 0, sizeof *lr);
}
