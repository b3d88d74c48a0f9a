/* A tokenizer file read whole: vocab.json, merges.txt, tokenizer_config.json,
 * tokenizer.json (tok_load.c) and WeNet's units.txt / non-lang-syms
 * (char_tok.c). In a file of its own so both loaders call it without calling
 * each other. Opened as every input is (core/file_stream.h): regular files
 * only, so a FIFO named as a tokenizer file is refused, not waited on. */
#include <stdlib.h>

#include "core/file_stream.h"
#include "text/tok_model.h"

int tok_read_file(es_context *ctx, const char *path, char **data, size_t *len)
{
    es_byte_stream s;
    es_file_stream f;
    int e = es_file_stream_open(&s, &f, path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", path, es_file_stream_strerror(e));
    char *buf = malloc(s.size + 1);
    int rc = ES_OK;
    ssize_t got = 0;
    if (!buf)
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    else if ((got = es_stream_read_full(&s, buf, s.size)) < 0 || (uint64_t)got != s.size)
        rc = es_fail(ctx, ES_ERR_IO, "%s: read error", path);
    es_file_stream_close(&f);
    if (rc != ES_OK) {
        free(buf);
        return rc;
    }
    buf[got] = '\0';
    *data = buf;
    *len = (size_t)got;
    return ES_OK;
}
