/* Fuzzes the tar shard reader (libarchive + member grouping + audio probes) on
 * arbitrary bytes: it must end every input with records, BAD utterances or one
 * error, never a crash, leak or hang. The reader opens paths, so each input is
 * written to a private temporary file first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "readers/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/es-fuzz-tar-%ld", (long)getpid());
    }
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return 0;
    fwrite(data, 1, size, fp);
    fclose(fp);
    es_context ctx = {{0}};
    es_reader_opts opts = {.hash = size & 1, .probe_buffer = 1 << 20};
    es_shard_reader *r;
    if (es_reader_tar.open(&ctx, path, "fuzz.tar", &opts, &r) == ES_OK) {
        es_cost_row row;
        int rc, n = 0;
        while ((rc = es_reader_tar.next(&ctx, r, &row)) > 0 && n++ < 100000)
            ;
        es_reader_tar.close(r);
    }
    unlink(path);
    return 0;
}
