/* Fuzzes the cost table reader (plain and zstd) through the in-memory entry point,
 * so no temporary files slow the fuzzer down. Besides "no crash, no leak", it
 * checks the reader's contract: a table exactly when ES_OK, a one-line message
 * naming the input and line otherwise, and rows that satisfy the table's
 * invariants. */
#include "costs/cost_table.h"
#include "fuzz_table.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Decoded-size cap: zstd bombs would otherwise spend the fuzzer's memory. */
enum { MAX_DECODED = 64 << 20 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    es_context *ctx = es_context_new();
    if (!ctx)
        return 0;
    es_cost_table *t = NULL;
    int rc = es_cost_table_parse_buffer(ctx, "fuzz", data, size, MAX_DECODED, &t);
    const char *msg = es_errmsg(ctx);
    if (rc == ES_OK) {
        check(t != NULL);
        check(msg[0] == '\0');
        check_table(t);
    } else {
        check(t == NULL);
        check(rc == ES_ERR_FORMAT || rc == ES_ERR_UNSUPPORTED || rc == ES_ERR_NOMEM);
        check(strncmp(msg, "fuzz: line ", 11) == 0);
        check(strchr(msg, '\n') == NULL);
    }
    es_cost_table_free(t);
    es_context_free(ctx);
    return 0;
}
