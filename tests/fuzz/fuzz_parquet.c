/* Fuzzes the parquet reader (thrift footer, schema, pages, codecs, levels,
 * encodings, audio probes) on arbitrary bytes: every input must end with rows,
 * BAD rows or one error, never a crash, leak, hang or unbounded allocation.
 * Odd-sized inputs also go through the embeddings API (the float path). The
 * reader opens paths, so each input is written to a private temporary file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "readers/parquet/parquet_embeddings.h"
#include "readers/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/es-fuzz-parquet-%ld", (long)getpid());
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return 0;
    fwrite(data, 1, size, fp);
    fclose(fp);
    es_context ctx = {{0}};
    es_reader_opts opts = {.hash = size & 2, .probe_buffer = 1 << 20};
    es_shard_reader *r;
    if (es_reader_parquet.open(&ctx, path, "fuzz.parquet", &opts, &r) == ES_OK) {
        es_cost_row row;
        int n = 0;
        while (es_reader_parquet.next(&ctx, r, &row) > 0 && n++ < 100000)
            ;
        es_reader_parquet.close(r);
    }
    if (size & 1) {
        es_embedding_rows e;
        if (es_parquet_read_embeddings(&ctx, path, size & 4 ? "spk_embedding" : "utt_embedding", &e) == ES_OK)
            es_embedding_rows_release(&e);
    }
    unlink(path);
    return 0;
}
