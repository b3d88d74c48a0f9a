/* Fuzzes the row reader over parquet (footer, schema → value kinds, page
 * skipping, list chunks and their cache) on arbitrary bytes: every input must
 * end in rows or one error, never a crash, leak, hang or unbounded allocation.
 * Each input is fetched three times: a few scattered rows of all columns
 * (skipping pages), the same with every PLAIN BYTE_ARRAY page read in part
 * (pq_span.h), then every row (the list cache reused), as a loader would.
 * Seeds: the parquet reader's corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_shard.h"
#include "formats/parquet/parquet.h"
#include "rows/row_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_input("parquet-rows", data, size);
    if (!path)
        return 0;
    es_context ctx = {0};
    es_row_reader *r;
    if (es_row_reader_open(&ctx, path, &r) == ES_OK) {
        uint64_t n = 0;
        const es_row *rows;
        if (es_row_reader_count(&ctx, r, &n) == ES_OK && n > 0) {
            uint64_t some[] = {n - 1, n / 2, 0, n / 2};
            es_row_reader_read(&ctx, r, some, 4, NULL, 0, &rows);
            if (strcmp(es_row_reader_format(r), "parquet") == 0) {
                /* the same rows with every PLAIN BYTE_ARRAY page read in part */
                rows_parquet_set_span_min(r->state, 0);
                es_row_reader_read(&ctx, r, some, 4, NULL, 0, &rows);
                rows_parquet_set_span_min(r->state, UINT32_MAX);
            }
            size_t m = n < 4096 ? (size_t)n : 4096;
            uint64_t *all = malloc(m * sizeof *all);
            for (size_t i = 0; all && i < m; i++)
                all[i] = i;
            if (all)
                es_row_reader_read(&ctx, r, all, m, NULL, 0, &rows);
            free(all);
        }
        uint64_t past = n + (size & 3);
        es_row_reader_read(&ctx, r, &past, 1, NULL, 0, &rows);
        es_row_reader_free(r);
    }
    unlink(path);
    return 0;
}
