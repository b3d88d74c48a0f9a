/* Shared by the harnesses whose result is a cost table (cost_table_read,
 * measure_part): `check`, which aborts so that libFuzzer reports the input, and
 * the table's invariants. Header-only: each harness is its own program. */
#ifndef ES_FUZZ_TABLE_H
#define ES_FUZZ_TABLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <equishard/equishard.h>

static inline void check(int ok)
{
    if (!ok)
        abort();
}

/* Every flag the library names (es_flag_name is NULL past the last bit): a
 * constant here fell behind once (0x1ff missed ES_FLAG_ITEM, found by a long
 * run of tools/fuzz.sh). */
static inline uint32_t all_flags(void)
{
    uint32_t all = 0;
    for (unsigned bit = 0; bit < 32 && es_flag_name(bit); bit++)
        all |= 1u << bit;
    return all;
}

/* Rows with their strings, known flags only, a hash only where hashed; skips
 * readable. Strings are touched so that ASan sees any dangling pointer. */
static inline void check_table(const es_cost_table *t)
{
    size_t n = es_cost_table_size(t);
    for (size_t i = 0; i < n; i++) {
        es_cost_row r;
        check(es_cost_table_row(t, i, &r) == ES_OK);
        check(r.key && r.shard && r.spk);
        check(strlen(r.key) + strlen(r.shard) + strlen(r.spk) < ((size_t)1 << 40));
        check((r.flags & ~all_flags()) == 0);
        check((r.flags & ES_FLAG_HASHED) || r.hash == 0);
    }
    es_cost_row r;
    check(es_cost_table_row(t, n, &r) == ES_ERR_USAGE);
    for (size_t i = 0; es_cost_table_skip(t, i); i++)
        check(strlen(es_cost_table_skip(t, i)) < ((size_t)1 << 40));
}

#endif
