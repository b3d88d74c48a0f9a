/* Is this file a cost table? Commands that take "COSTS | LIST" ask before
 * choosing between reading and measuring. Decided by content: the magic line,
 * possibly inside a zstd frame (a .tar.zst shard is zstd too, so the frame's
 * first bytes are decompressed and looked at). */
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "core/file_stream.h"
#include "costs/cost_table.h"

static int starts_with_magic(const void *data, size_t n)
{
    static const char magic[] = "#equishard-costs ";
    return n >= sizeof magic - 1 && memcmp(data, magic, sizeof magic - 1) == 0;
}

/* The first bytes of a zstd frame's content. A block is decompressed only when
 * all of it has been read, and blocks reach 128 KiB compressed, so input is fed
 * until enough comes out, the frame ends, or SNIFF_MAX_IN bytes were read. */
#define SNIFF_MAX_IN (256u << 10)

static int zstd_starts_with_magic(FILE *fp, const unsigned char *first, size_t n)
{
    ZSTD_DStream *z = ZSTD_createDStream();
    if (!z)
        return 0;
    unsigned char in[4096];
    char out[64];
    ZSTD_outBuffer zout = {out, sizeof out, 0};
    size_t total = n, rc = 0;
    memcpy(in, first, n);
    while (n > 0 && zout.pos < zout.size) {
        ZSTD_inBuffer zin = {in, n, 0};
        while (zin.pos < zin.size && zout.pos < zout.size) {
            rc = ZSTD_decompressStream(z, &zout, &zin);
            if (ZSTD_isError(rc) || rc == 0)
                break;
        }
        if (ZSTD_isError(rc) || rc == 0 || total >= SNIFF_MAX_IN)
            break;
        n = fread(in, 1, sizeof in, fp);
        total += n;
    }
    ZSTD_freeDStream(z);
    return !ZSTD_isError(rc) && starts_with_magic(out, zout.pos);
}

ES_API int es_is_cost_table(const char *path)
{
    /* Not a regular file, not a table: opening a FIFO would wait for a writer, and
     * reading it would take bytes from whoever reads it next. */
    FILE *fp;
    if (es_fopen_regular(path, &fp))
        return 0;
    unsigned char in[4096];
    size_t n = fread(in, 1, sizeof in, fp);
    int yes = n >= 4 && in[0] == 0x28 && in[1] == 0xb5 && in[2] == 0x2f && in[3] == 0xfd
                  ? zstd_starts_with_magic(fp, in, n)
                  : starts_with_magic(in, n);
    fclose(fp);
    return yes;
}
