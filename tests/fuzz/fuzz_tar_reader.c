/* Fuzzes the tar shard reader (libarchive + member grouping + audio probes) on
 * arbitrary bytes: it must end every input with records, BAD utterances or one
 * error, never a crash, leak or hang. The reader opens paths, so each input is
 * written to a private temporary file first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_input("tar", data, size);
    if (!path)
        return 0;
    es_context ctx = {0};
    fuzz_read_shard(&es_reader_tar, path, "fuzz.tar", size & 1, &ctx);
    unlink(path);
    return 0;
}
