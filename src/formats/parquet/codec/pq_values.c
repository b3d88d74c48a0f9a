#include "formats/parquet/codec/pq_values.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/grow.h"

#include "formats/parquet/codec/pq_delta.h"
#include "formats/parquet/codec/pq_meta.h"
#include "formats/parquet/codec/pq_rle.h"

enum { OK = 0, BAD = -1, NOMEM = -2 };

uint32_t pq_type_width(int type, int32_t type_length)
{
    switch (type) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32: case PQ_FLOAT: return 4;
    case PQ_INT64: case PQ_DOUBLE: return 8;
    case PQ_INT96: return 12;
    case PQ_FIXED_LEN_BYTE_ARRAY: return (uint32_t)type_length;
    default: return 0;
    }
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

double pq_value_as_double(int type, const pq_value *v)
{
    switch (type) {
    case PQ_FLOAT: { uint32_t u = le32(v->ptr); float f; memcpy(&f, &u, 4); return f; }
    case PQ_DOUBLE: { uint64_t u = le64(v->ptr); double d; memcpy(&d, &u, 8); return d; }
    case PQ_INT32: return (double)(int32_t)le32(v->ptr);
    case PQ_INT64: return (double)(int64_t)le64(v->ptr);
    default: return 0.0;
    }
}

static int short_data(char *err, size_t errlen, const char *enc, size_t got, size_t n)
{
    snprintf(err, errlen, "%s: data ends after %zu of %zu values", enc, got, n);
    return BAD;
}

/* ---- PLAIN ------------------------------------------------------------------- */

static int plain_bytes(const uint8_t *d, size_t len, size_t n, pq_value *out, char *err, size_t errlen)
{
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (len - off < 4)
            return short_data(err, errlen, "PLAIN", i, n);
        uint32_t l = le32(d + off);
        off += 4;
        if (l > len - off) {
            snprintf(err, errlen, "PLAIN: value %zu of %u bytes runs past the page (%zu left)", i, l, len - off);
            return BAD;
        }
        out[i].ptr = d + off;
        out[i].len = l;
        off += l;
    }
    return OK;
}

static int plain(int type, uint32_t width, const uint8_t *d, size_t len, size_t n,
                 pq_value_buf *b, char *err, size_t errlen)
{
    if (type == PQ_BYTE_ARRAY)
        return plain_bytes(d, len, n, b->vals, err, errlen);
    if (type == PQ_BOOLEAN) { /* bit-packed, LSB first */
        if ((n + 7) / 8 > len)
            return short_data(err, errlen, "PLAIN", len * 8, n);
        if (es_grow((void **)&b->scratch, &b->scratch_cap, n, 1, 64))
            return NOMEM;
        for (size_t i = 0; i < n; i++) {
            b->scratch[i] = (d[i / 8] >> (i % 8)) & 1;
            b->vals[i].ptr = b->scratch + i;
            b->vals[i].len = 1;
        }
        return OK;
    }
    if (len / width < n)
        return short_data(err, errlen, "PLAIN", len / width, n);
    for (size_t i = 0; i < n; i++) {
        b->vals[i].ptr = d + i * width;
        b->vals[i].len = width;
    }
    return OK;
}

/* ---- dictionary indices ------------------------------------------------------- */

static int dictionary(const uint8_t *d, size_t len, size_t n, const pq_value *dict, size_t n_dict,
                      pq_value_buf *b, char *err, size_t errlen)
{
    if (!dict) {
        snprintf(err, errlen, "dictionary-encoded page without a dictionary page");
        return BAD;
    }
    if (n == 0)
        return OK;
    if (len < 1 || d[0] > 32) {
        snprintf(err, errlen, "dictionary indices: bad bit width %d", len ? d[0] : -1);
        return BAD;
    }
    pq_rle r;
    pq_rle_init(&r, d + 1, len - 1, d[0]);
    uint32_t idx[512];
    char why[160];
    for (size_t i = 0; i < n;) {
        size_t k = n - i < 512 ? n - i : 512;
        if (pq_rle_get(&r, idx, k, why, sizeof why) < 0) {
            snprintf(err, errlen, "dictionary indices: %s", why);
            return BAD;
        }
        for (size_t j = 0; j < k; j++) {
            if (idx[j] >= n_dict) {
                snprintf(err, errlen, "dictionary index %u out of range (dictionary has %zu values)",
                         idx[j], n_dict);
                return BAD;
            }
            b->vals[i + j] = dict[idx[j]];
        }
        i += k;
    }
    return OK;
}

/* ---- delta encodings ----------------------------------------------------------- */

static int delta_ints(int type, const uint8_t *d, size_t len, size_t n, pq_value_buf *b,
                      char *err, size_t errlen)
{
    if (type != PQ_INT32 && type != PQ_INT64) {
        snprintf(err, errlen, "DELTA_BINARY_PACKED for a %s column", pq_type_name(type));
        return BAD;
    }
    uint32_t w = type == PQ_INT32 ? 4 : 8;
    size_t used;
    if (es_grow((void **)&b->ints, &b->ints_cap, n + 1, sizeof *b->ints, 64) ||
        es_grow((void **)&b->scratch, &b->scratch_cap, n * w + 1, 1, 64))
        return NOMEM;
    if (pq_delta_binary_decode(d, len, n, b->ints, &used, err, errlen) < 0)
        return BAD;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)b->ints[i];
        for (uint32_t k = 0; k < w; k++)
            b->scratch[i * w + k] = (uint8_t)(v >> (8 * k));
        b->vals[i].ptr = b->scratch + i * w;
        b->vals[i].len = w;
    }
    return OK;
}

/* Lengths (delta-packed) then the bytes; values point into d. *used = bytes taken. */
static int delta_length(const uint8_t *d, size_t len, size_t n, pq_value_buf *b, size_t *used,
                        char *err, size_t errlen)
{
    size_t off;
    if (es_grow((void **)&b->ints, &b->ints_cap, n + 1, sizeof *b->ints, 64))
        return NOMEM;
    char why[160];
    if (pq_delta_binary_decode(d, len, n, b->ints, &off, why, sizeof why) < 0) {
        snprintf(err, errlen, "DELTA_LENGTH_BYTE_ARRAY lengths: %s", why);
        return BAD;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t l = b->ints[i];
        if (l < 0 || l > INT32_MAX || (uint64_t)l > len - off) {
            snprintf(err, errlen, "DELTA_LENGTH_BYTE_ARRAY: value %zu of %lld bytes runs past the page",
                     i, (long long)l);
            return BAD;
        }
        b->vals[i].ptr = d + off;
        b->vals[i].len = (uint32_t)l;
        off += (size_t)l;
    }
    *used = off;
    return OK;
}

static int delta_byte_array(const uint8_t *d, size_t len, size_t n, size_t limit, pq_value_buf *b,
                            char *err, size_t errlen)
{
    int64_t *prefix = malloc((n + 1) * sizeof *prefix);
    if (!prefix)
        return NOMEM;
    size_t off, used;
    char why[160];
    int rc = OK;
    if (pq_delta_binary_decode(d, len, n, prefix, &off, why, sizeof why) < 0) {
        snprintf(err, errlen, "DELTA_BYTE_ARRAY prefix lengths: %s", why);
        rc = BAD;
    }
    if (rc == OK)
        rc = delta_length(d + off, len - off, n, b, &used, err, errlen);
    /* Sizes first, so the scratch buffer never moves under the values. */
    size_t total = 0, prev = 0;
    for (size_t i = 0; rc == OK && i < n; i++) {
        if (prefix[i] < 0 || (uint64_t)prefix[i] > prev) {
            snprintf(err, errlen, "DELTA_BYTE_ARRAY: value %zu shares %lld bytes with a %zu-byte predecessor",
                     i, (long long)prefix[i], prev);
            rc = BAD;
            break;
        }
        prev = (size_t)prefix[i] + b->vals[i].len;
        total += prev;
        if (prev > UINT32_MAX || total > limit) {
            snprintf(err, errlen, "DELTA_BYTE_ARRAY: values grow past %zu bytes", limit);
            rc = BAD;
        }
    }
    if (rc == OK && es_grow((void **)&b->scratch, &b->scratch_cap, total + 1, 1, 64))
        rc = NOMEM;
    size_t at = 0;
    for (size_t i = 0; rc == OK && i < n; i++) {
        size_t p = (size_t)prefix[i];
        if (p)
            memmove(b->scratch + at, b->vals[i - 1].ptr, p); /* i > 0: prev was 0 at i == 0 */
        memcpy(b->scratch + at + p, b->vals[i].ptr, b->vals[i].len);
        b->vals[i].ptr = b->scratch + at;
        b->vals[i].len += (uint32_t)p;
        at += b->vals[i].len;
    }
    free(prefix);
    return rc;
}

static int fixed_check(int type, uint32_t width, pq_value_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b->vals[i].len != width)
            return BAD;
    (void)type;
    return OK;
}

/* ---- BYTE_STREAM_SPLIT and RLE booleans ----------------------------------------------- */

static int byte_stream_split(uint32_t width, const uint8_t *d, size_t len, size_t n,
                             pq_value_buf *b, char *err, size_t errlen)
{
    if (width == 0 || len / width < n)
        return short_data(err, errlen, "BYTE_STREAM_SPLIT", width ? len / width : 0, n);
    if (es_grow((void **)&b->scratch, &b->scratch_cap, n * width + 1, 1, 64))
        return NOMEM;
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < width; k++)
            b->scratch[i * width + k] = d[k * n + i];
        b->vals[i].ptr = b->scratch + i * width;
        b->vals[i].len = width;
    }
    return OK;
}

static int rle_booleans(const uint8_t *d, size_t len, size_t n, pq_value_buf *b, char *err, size_t errlen)
{
    if (len < 4 || le32(d) > len - 4)
        return short_data(err, errlen, "RLE", 0, n);
    if (es_grow((void **)&b->scratch, &b->scratch_cap, n + 1, 1, 64))
        return NOMEM;
    pq_rle r;
    pq_rle_init(&r, d + 4, le32(d), 1);
    uint32_t v[512];
    char why[160];
    for (size_t i = 0; i < n;) {
        size_t k = n - i < 512 ? n - i : 512;
        if (pq_rle_get(&r, v, k, why, sizeof why) < 0) {
            snprintf(err, errlen, "RLE booleans: %s", why);
            return BAD;
        }
        for (size_t j = 0; j < k; j++) {
            b->scratch[i + j] = (uint8_t)v[j];
            b->vals[i + j].ptr = b->scratch + i + j;
            b->vals[i + j].len = 1;
        }
        i += k;
    }
    return OK;
}

int pq_values_decode(int type, int32_t type_length, int encoding, const uint8_t *data,
                     size_t len, size_t n, const pq_value *dict, size_t n_dict,
                     size_t scratch_limit, pq_value_buf *out, char *err, size_t errlen)
{
    if (es_grow((void **)&out->vals, &out->cap, n + 1, sizeof *out->vals, 64))
        return NOMEM;
    uint32_t width = pq_type_width(type, type_length);
    size_t used;
    int rc;
    switch (encoding) {
    case PQ_ENC_PLAIN:
        return plain(type, width, data, len, n, out, err, errlen);
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
        return dictionary(data, len, n, dict, n_dict, out, err, errlen);
    case PQ_ENC_DELTA_BINARY_PACKED:
        return delta_ints(type, data, len, n, out, err, errlen);
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        if (type != PQ_BYTE_ARRAY)
            break;
        return delta_length(data, len, n, out, &used, err, errlen);
    case PQ_ENC_DELTA_BYTE_ARRAY:
        if (type != PQ_BYTE_ARRAY && type != PQ_FIXED_LEN_BYTE_ARRAY)
            break;
        rc = delta_byte_array(data, len, n, scratch_limit, out, err, errlen);
        if (rc == OK && type == PQ_FIXED_LEN_BYTE_ARRAY && fixed_check(type, width, out, n) != OK) {
            snprintf(err, errlen, "DELTA_BYTE_ARRAY: a value is not %u bytes long", width);
            return BAD;
        }
        return rc;
    case PQ_ENC_BYTE_STREAM_SPLIT:
        if (type == PQ_BYTE_ARRAY || type == PQ_BOOLEAN)
            break;
        return byte_stream_split(width, data, len, n, out, err, errlen);
    case PQ_ENC_RLE:
        if (type != PQ_BOOLEAN)
            break;
        return rle_booleans(data, len, n, out, err, errlen);
    default:
        snprintf(err, errlen, "value encoding %s is not supported", pq_encoding_name(encoding));
        return BAD;
    }
    snprintf(err, errlen, "encoding %s for a %s column", pq_encoding_name(encoding), pq_type_name(type));
    return BAD;
}

void pq_value_buf_release(pq_value_buf *b)
{
    free(b->vals);
    free(b->scratch);
    free(b->ints);
    memset(b, 0, sizeof *b);
}
