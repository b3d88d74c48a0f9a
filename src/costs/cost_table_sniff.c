/* Is this file a cost table? Commands that take "COSTS | LIST" ask before
 * choosing between reading and measuring. Decided by content: the magic line,
 * possibly inside a zstd frame (a .tar.zst shard is zstd too, so the frame's
 * first bytes are decompressed and looked at). */
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "costs/cost_table.h"

static int starts_with_magic(const void *data, size_t n)
{
    static const char magic[] = "#equishard-costs ";
    return n >= sizeof magic - 1 && memcmp(data, magic, sizeof magic - 1) == 0;
}

ES_API int es_is_cost_table(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    unsigned char in[4096];
    size_t n = fread(in, 1, sizeof in, fp);
    fclose(fp);
    if (n >= 4 && in[0] == 0x28 && in[1] == 0xb5 && in[2] == 0x2f && in[3] == 0xfd) {
        ZSTD_DStream *z = ZSTD_createDStream();
        if (!z)
            return 0;
        char out[64];
        ZSTD_inBuffer zin = {in, n, 0};
        ZSTD_outBuffer zout = {out, sizeof out, 0};
        size_t rc = ZSTD_decompressStream(z, &zout, &zin);
        ZSTD_freeDStream(z);
        return !ZSTD_isError(rc) && starts_with_magic(out, zout.pos);
    }
    return starts_with_magic(in, n);
}
