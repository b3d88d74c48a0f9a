/* A tokenizer file read whole: vocab.json, merges.txt, tokenizer_config.json,
 * tokenizer.json (tok_load.c) and WeNet's units.txt / non-lang-syms
 * (char_tok.c). In a file of its own so both loaders call it without calling
 * each other. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/tok_model.h"

int tok_read_file(es_context *ctx, const char *path, char **data, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    char *buf = NULL;
    int rc = ES_OK;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode))
        rc = es_fail(ctx, ES_ERR_IO, "%s: not a regular file", path);
    else if (!(buf = malloc((size_t)st.st_size + 1)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    else if (fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size)
        rc = es_fail(ctx, ES_ERR_IO, "%s: read error", path);
    fclose(fp);
    if (rc != ES_OK) {
        free(buf);
        return rc;
    }
    buf[st.st_size] = '\0';
    *data = buf;
    *len = (size_t)st.st_size;
    return ES_OK;
}
