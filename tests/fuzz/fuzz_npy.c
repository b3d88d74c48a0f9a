/* Fuzzes the .npy reader (header dict parser, dtype conversion, truncation): a
 * matrix of exactly the header's shape when ES_OK, else a one-line message
 * naming the input; never a crash, leak or a read past the data. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "validate/sources/emb_set.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    es_context *ctx = es_context_new();
    es_emb_set *s = es_emb_set_new("fuzz.npy");
    if (!ctx || !s) {
        es_context_free(ctx);
        es_emb_set_free(s);
        return 0;
    }
    es_byte_stream in;
    es_mem_stream m;
    es_byte_stream_from_memory(&in, &m, data, size);
    es_npy_info info;
    int rc = es_npy_read(ctx, "fuzz.npy", &in, &info, s);
    const char *msg = es_errmsg(ctx);
    if (rc == ES_OK) {
        check(msg[0] == '\0');
        check(info.ndim == 1 || info.ndim == 2);
        check(s->n_vals == info.rows * info.cols);
        size_t elem = (size_t)(info.descr[2] - '0');
        check(s->n_vals * elem <= size); /* never more values than bytes allow */
    } else {
        check(rc == ES_ERR_FORMAT || rc == ES_ERR_UNSUPPORTED || rc == ES_ERR_NOMEM);
        check(strncmp(msg, "fuzz.npy: ", 10) == 0);
        check(strchr(msg, '\n') == NULL);
    }
    es_emb_set_free(s);
    es_context_free(ctx);
    return 0;
}
