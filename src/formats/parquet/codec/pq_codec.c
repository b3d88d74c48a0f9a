#include "formats/parquet/codec/pq_codec.h"

#include <limits.h>
#include <snappy-c.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "core/grow.h"
#include "formats/parquet/codec/pq_meta.h"

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

static int zstd(void **state, const uint8_t *src, size_t n, uint8_t *dst, size_t want, char *err,
                size_t errlen)
{
    if (!*state && !(*state = ZSTD_createDCtx())) {
        snprintf(err, errlen, "zstd: out of memory");
        return -1;
    }
    size_t r = ZSTD_decompressDCtx(*state, dst, want, src, n);
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

void pq_decompress_free(void *state) { ZSTD_freeDCtx(state); }

int pq_decompress(int codec, void **state, const uint8_t *src, size_t n, uint8_t *dst,
                  size_t want, char *err, size_t errlen)
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
        return zstd(state, src, n, dst, want, err, errlen);
    case PQ_GZIP:
        return gzip(src, n, dst, want, err, errlen);
    default:
        snprintf(err, errlen, "codec %s is not supported", pq_codec_name(codec));
        return -1;
    }
}

/* ---- compression (the reshard writer) ----------------------------------------- */

/* Bound on the compressed size of n bytes under `codec`. */
static size_t compress_bound(int codec, size_t n)
{
    switch (codec) {
    case PQ_SNAPPY: return snappy_max_compressed_length(n);
    case PQ_ZSTD: return ZSTD_compressBound(n);
    case PQ_GZIP: return compressBound((uLong)n) + 32; /* + gzip header and trailer */
    default: return n;
    }
}

static int gzip_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, size_t *out)
{
    z_stream z = {0};
    /* windowBits 15 + 16: a gzip wrapper with mtime 0, so output is deterministic */
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *out = z.total_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : -1;
}

void pq_compress_free(void *state) { ZSTD_freeCCtx(state); }

int pq_compress(int codec, void **state, const uint8_t *src, size_t n, uint8_t **dst,
                     size_t *cap, size_t *out, char *err, size_t errlen)
{
    size_t bound = compress_bound(codec, n);
    if (bound > UINT32_MAX || es_grow((void **)dst, cap, bound ? bound : 1, 1, 1 << 16) != 0) {
        snprintf(err, errlen, "out of memory compressing a %zu-byte page", n);
        return -1;
    }
    int bad = 0;
    switch (codec) {
    case PQ_UNCOMPRESSED:
        if (n)
            memcpy(*dst, src, n);
        *out = n;
        break;
    case PQ_SNAPPY:
        *out = *cap;
        bad = snappy_compress((const char *)src, n, (char *)*dst, out) != SNAPPY_OK;
        break;
    case PQ_ZSTD:
        if (!*state && !(*state = ZSTD_createCCtx())) {
            snprintf(err, errlen, "out of memory compressing a %zu-byte page", n);
            return -1;
        }
        *out = ZSTD_compressCCtx(*state, *dst, *cap, src, n, 3);
        bad = ZSTD_isError(*out);
        break;
    case PQ_GZIP:
        bad = gzip_compress(src, n, *dst, *cap, out) != 0;
        break;
    default:
        snprintf(err, errlen, "codec %s cannot be written", pq_codec_name(codec));
        return -1;
    }
    if (bad)
        snprintf(err, errlen, "%s: compression failed", pq_codec_name(codec));
    return bad ? -1 : 0;
}
