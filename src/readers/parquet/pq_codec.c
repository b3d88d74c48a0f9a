#include "readers/parquet/pq_codec.h"

#include <limits.h>
#include <snappy-c.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "readers/parquet/pq_meta.h"

int pq_codec_supported(int codec)
{
    return codec == PQ_UNCOMPRESSED || codec == PQ_SNAPPY || codec == PQ_GZIP || codec == PQ_ZSTD;
}

static int size_mismatch(char *err, size_t errlen, const char *codec, size_t got, size_t want)
{
    snprintf(err, errlen, "%s: %zu bytes, the page header says %zu", codec, got, want);
    return -1;
}

static int snappy(const uint8_t *src, size_t n, uint8_t *dst, size_t want, char *err, size_t errlen)
{
    size_t len;
    if (snappy_uncompressed_length((const char *)src, n, &len) != SNAPPY_OK) {
        snprintf(err, errlen, "snappy: corrupt input");
        return -1;
    }
    if (len != want)
        return size_mismatch(err, errlen, "snappy", len, want);
    size_t out = want;
    if (snappy_uncompress((const char *)src, n, (char *)dst, &out) != SNAPPY_OK || out != want) {
        snprintf(err, errlen, "snappy: corrupt input");
        return -1;
    }
    return 0;
}

static int zstd(const uint8_t *src, size_t n, uint8_t *dst, size_t want, char *err, size_t errlen)
{
    size_t r = ZSTD_decompress(dst, want, src, n);
    if (ZSTD_isError(r)) {
        snprintf(err, errlen, "zstd: %s", ZSTD_getErrorName(r));
        return -1;
    }
    return r == want ? 0 : size_mismatch(err, errlen, "zstd", r, want);
}

/* gzip (or zlib) members, concatenated members allowed, as Hadoop writes them. */
static int gzip(const uint8_t *src, size_t n, uint8_t *dst, size_t want, char *err, size_t errlen)
{
    if (n > UINT_MAX || want > UINT_MAX) {
        snprintf(err, errlen, "gzip: page larger than 4 GiB");
        return -1;
    }
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) {
        snprintf(err, errlen, "gzip: cannot initialise zlib");
        return -1;
    }
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)want;
    int rc;
    for (;;) {
        rc = inflate(&z, Z_FINISH);
        if (rc == Z_STREAM_END && z.avail_in > 0 && z.avail_out > 0) {
            if (inflateReset(&z) != Z_OK)
                break;
            continue; /* another member follows */
        }
        break;
    }
    size_t got = want - z.avail_out;
    const char *msg = z.msg;
    inflateEnd(&z);
    if (rc == Z_STREAM_END)
        return got == want ? 0 : size_mismatch(err, errlen, "gzip", got, want);
    if (rc == Z_BUF_ERROR && z.avail_out == 0)
        snprintf(err, errlen, "gzip: more than the %zu bytes the page header says", want);
    else if (rc == Z_BUF_ERROR)
        snprintf(err, errlen, "gzip: truncated input");
    else
        snprintf(err, errlen, "gzip: %s", msg ? msg : "corrupt input");
    return -1;
}

int pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t want,
                  char *err, size_t errlen)
{
    switch (codec) {
    case PQ_UNCOMPRESSED:
        if (n != want)
            return size_mismatch(err, errlen, "uncompressed page", n, want);
        memcpy(dst, src, n);
        return 0;
    case PQ_SNAPPY:
        return snappy(src, n, dst, want, err, errlen);
    case PQ_ZSTD:
        return zstd(src, n, dst, want, err, errlen);
    case PQ_GZIP:
        return gzip(src, n, dst, want, err, errlen);
    default:
        snprintf(err, errlen, "codec %s is not supported", pq_codec_name(codec));
        return -1;
    }
}
