#include "formats/parquet/codec/pq_rle.h"

#include <stdio.h>
#include <string.h>

#include "formats/parquet/codec/pq_meta.h"

int pq_bit_width(uint32_t max)
{
    int w = 0;
    while (max) {
        w++;
        max >>= 1;
    }
    return w;
}

void pq_rle_init(pq_rle *d, const uint8_t *p, size_t n, int width)
{
    memset(d, 0, sizeof *d);
    d->p = p;
    d->end = p + n;
    d->width = width;
}

static int uvarint(pq_rle *d, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (d->p >= d->end)
            return -1;
        uint8_t b = *d->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* Starts the next run. */
static int next_run(pq_rle *d, char *err, size_t errlen)
{
    uint64_t h;
    if (uvarint(d, &h) < 0) {
        snprintf(err, errlen, "RLE data ends before its values");
        return -1;
    }
    if (h & 1) { /* bit-packed: (h >> 1) groups of 8 values */
        uint64_t groups = h >> 1;
        size_t avail = (size_t)(d->end - d->p);
        if (groups == 0 || groups > (uint64_t)avail + 1) {
            snprintf(err, errlen, "RLE bit-packed run of %llu groups in %zu bytes",
                     (unsigned long long)groups, avail);
            return -1;
        }
        d->bp = d->p;
        d->bit = 0;
        d->bp_left = groups * 8;
        /* The last run may be cut short by the writer; values past the data are
         * caught when read. */
        uint64_t bytes = groups * (uint64_t)d->width;
        d->p += bytes < avail ? bytes : avail;
        return 0;
    }
    uint64_t count = h >> 1;
    int nbytes = (d->width + 7) / 8;
    if (count == 0 || count > UINT32_MAX) {
        snprintf(err, errlen, "RLE run of %llu values", (unsigned long long)count);
        return -1;
    }
    if ((size_t)(d->end - d->p) < (size_t)nbytes) {
        snprintf(err, errlen, "RLE data ends inside a run value");
        return -1;
    }
    uint32_t v = 0;
    for (int i = 0; i < nbytes; i++)
        v |= (uint32_t)d->p[i] << (8 * i);
    d->p += nbytes;
    if (d->width < 32 && (v >> d->width)) {
        snprintf(err, errlen, "RLE run value %u wider than %d bits", v, d->width);
        return -1;
    }
    d->rle_value = v;
    d->rle_left = (uint32_t)count;
    return 0;
}

static int bitpacked(pq_rle *d, uint32_t *out, size_t n, char *err, size_t errlen)
{
    const uint8_t *end = d->p; /* the run's data ends where the next run starts */
    size_t bytes = (size_t)(end - d->bp);
    int w = d->width;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = d->bit;
        if ((b + (uint64_t)w + 7) / 8 > bytes) {
            snprintf(err, errlen, "RLE bit-packed run ends before its values");
            return -1;
        }
        uint64_t acc = 0;
        size_t first = (size_t)(b / 8);
        size_t last = (size_t)((b + (uint64_t)w - 1) / 8);
        for (size_t k = first; k <= last && w; k++)
            acc |= (uint64_t)d->bp[k] << (8 * (k - first));
        out[i] = w ? (uint32_t)((acc >> (b % 8)) & ((w == 32) ? 0xffffffffu : ((1u << w) - 1))) : 0;
        d->bit += (uint64_t)w;
    }
    return 0;
}

int pq_rle_get(pq_rle *d, uint32_t *out, size_t n, char *err, size_t errlen)
{
    while (n) {
        if (!d->rle_left && !d->bp_left && next_run(d, err, errlen) < 0)
            return -1;
        if (d->rle_left) {
            size_t k = n < d->rle_left ? n : d->rle_left;
            for (size_t i = 0; i < k; i++)
                out[i] = d->rle_value;
            d->rle_left -= (uint32_t)k;
            out += k;
            n -= k;
        } else {
            size_t k = n < d->bp_left ? n : (size_t)d->bp_left;
            if (bitpacked(d, out, k, err, errlen) < 0)
                return -1;
            d->bp_left -= k;
            out += k;
            n -= k;
        }
    }
    return 0;
}

/* Deprecated BIT_PACKED levels: MSB first, no runs. */
static int bit_packed_levels(const uint8_t *data, size_t len, int w, uint8_t *out, size_t n,
                             char *err, size_t errlen)
{
    if (((uint64_t)n * (uint64_t)w + 7) / 8 > len) {
        snprintf(err, errlen, "BIT_PACKED levels: %zu values need more than %zu bytes", n, len);
        return -1;
    }
    uint64_t bit = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = 0;
        for (int k = 0; k < w; k++, bit++)
            v = (v << 1) | ((data[bit / 8] >> (7 - bit % 8)) & 1);
        out[i] = (uint8_t)v;
    }
    return 0;
}

int pq_levels_decode(int encoding, const uint8_t *data, size_t len, int max, uint8_t *out,
                     size_t n, const char *what, char *err, size_t errlen)
{
    int w = pq_bit_width((uint32_t)max);
    char why[160];
    if (encoding == PQ_ENC_BIT_PACKED) {
        if (bit_packed_levels(data, len, w, out, n, why, sizeof why) < 0)
            goto bad;
    } else if (encoding == PQ_ENC_RLE) {
        pq_rle d;
        pq_rle_init(&d, data, len, w);
        uint32_t tmp[512];
        for (size_t i = 0; i < n;) {
            size_t k = n - i < 512 ? n - i : 512;
            if (pq_rle_get(&d, tmp, k, why, sizeof why) < 0)
                goto bad;
            for (size_t j = 0; j < k; j++)
                out[i + j] = (uint8_t)tmp[j];
            i += k;
        }
    } else {
        snprintf(err, errlen, "%s levels in encoding %s", what, pq_encoding_name(encoding));
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (out[i] > max) {
            snprintf(err, errlen, "%s level %u > maximum %d", what, out[i], max);
            return -1;
        }
    return 0;
bad:
    snprintf(err, errlen, "%s levels: %s", what, why);
    return -1;
}
