/* A tokenizer file read whole: vocab.json, merges.txt, tokenizer_config.json,
 * tokenizer.json (tok_load.c) and WeNet's units.txt / non-lang-syms
 * (char_tok.c). In a file of its own so both loaders call it without calling
 * each other. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text/tok_model.h"

int tok_read_file(es_context *ctx, const char *path, char **data, size_t *len)
{
    /* O_NONBLOCK and regular files only: a FIFO named as a tokenizer file
     * would otherwise wait in open() for a writer, forever */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    char *buf = NULL;
    int rc = ES_OK;
    size_t got = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = es_fail(ctx, ES_ERR_IO, "%s: not a regular file", path);
    else if (!(buf = malloc((size_t)st.st_size + 1)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    while (rc == ES_OK && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = es_fail(ctx, ES_ERR_IO, "%s: read error", path);
        else
            got += (size_t)n;
    }
    close(fd);
    if (rc != ES_OK) {
        free(buf);
        return rc;
    }
    buf[got] = '\0';
    *data = buf;
    *len = got;
    return ES_OK;
}
