/* Fuzzes the cost table reader (plain and zstd) through the in-memory entry point,
 * so no temporary files slow the fuzzer down. Besides "no crash, no leak", it
 * checks the reader's contract: a table exactly when ES_OK, a one-line message
 * naming the input and line otherwise, and rows that satisfy the table's
 * invariants. */
#include "costs/cost_table.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Decoded-size cap: zstd bombs would otherwise spend the fuzzer's memory. */
enum { MAX_DECODED = 64 << 20 };

/* Every flag the library names (es_flag_name is NULL past the last bit): a
 * constant here fell behind once (0x1ff missed ES_FLAG_ITEM, found by a long
 * run of tools/fuzz.sh). */
static uint32_t all_flags(void)
{
    uint32_t all = 0;
    for (unsigned bit = 0; bit < 32 && es_flag_name(bit); bit++)
        all |= 1u << bit;
    return all;
}

static void check(int ok)
{
    if (!ok)
        abort();
}

static void check_table(const es_cost_table *t)
{
    size_t n = es_cost_table_size(t);
    for (size_t i = 0; i < n; i++) {
        es_cost_row r;
        check(es_cost_table_row(t, i, &r) == ES_OK);
        check(r.key && r.shard && r.spk);
        /* Touch the strings so ASan sees any dangling pointer. */
        check(strlen(r.key) + strlen(r.shard) + strlen(r.spk) < ((size_t)1 << 40));
        check((r.flags & ~all_flags()) == 0);
        check((r.flags & ES_FLAG_HASHED) || r.hash == 0);
    }
    es_cost_row r;
    check(es_cost_table_row(t, n, &r) == ES_ERR_USAGE);
}

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
