/* Fuzzes torch .pt reading: libarchive's zip reader and the strict unpickler
 * (and plain pickles, which start with PROTO). Besides "no crash, no leak, no
 * hang", it checks the contract: entries exactly when ES_OK, each a unique key
 * with its values inside the value array; otherwise a one-line message naming
 * the input. Caps keep decompression bombs cheap. */
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
    es_emb_set *s = es_emb_set_new("fuzz.pt");
    if (!ctx || !s) {
        es_context_free(ctx);
        es_emb_set_free(s);
        return 0;
    }
    s->max_vals = 1 << 22;
    s->max_bytes = 64 << 20;
    int rc = es_torch_load_memory(ctx, "fuzz.pt", data, size, s);
    const char *msg = es_errmsg(ctx);
    if (rc == ES_OK) {
        check(msg[0] == '\0');
        volatile float sink = 0;
        for (size_t i = 0; i < s->n; i++) {
            check(s->keys[i] != NULL && es_emb_set_find(s, s->keys[i]) == (ptrdiff_t)i);
            check(s->off[i] <= s->n_vals && s->len[i] <= s->n_vals - s->off[i]);
            for (uint32_t j = 0; j < s->len[i]; j++) /* touch: ASan checks the bounds */
                sink += s->vals[s->off[i] + j];
        }
        (void)sink;
    } else {
        check(rc == ES_ERR_FORMAT || rc == ES_ERR_UNSUPPORTED || rc == ES_ERR_NOMEM);
        check(strncmp(msg, "fuzz.pt: ", 9) == 0);
        check(strchr(msg, '\n') == NULL);
    }
    es_emb_set_free(s);
    es_context_free(ctx);
    return 0;
}
