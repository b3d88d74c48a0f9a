/* Fuzzes the parquet reader (thrift footer, schema, pages, codecs, levels,
 * encodings, audio probes) on arbitrary bytes: every input must end with rows,
 * BAD rows or one error, never a crash, leak, hang or unbounded allocation.
 * Odd-sized inputs also go through the embeddings API (the float path). The
 * reader opens paths, so each input is written to a private temporary file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/parquet/codec/parquet_embeddings.h"
#include "fuzz_shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_input("parquet", data, size);
    if (!path)
        return 0;
    es_context ctx = {0};
    fuzz_read_shard(es_format_named("parquet"), path, "fuzz.parquet", size & 2, &ctx);
    if (size & 1) {
        es_embedding_rows e;
        if (es_parquet_read_embeddings(&ctx, path, size & 4 ? "spk_embedding" : "utt_embedding", &e) == ES_OK)
            es_embedding_rows_release(&e);
    }
    unlink(path);
    return 0;
}
