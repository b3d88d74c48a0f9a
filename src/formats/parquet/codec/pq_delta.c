#include "formats/parquet/codec/pq_delta.h"

#include <stdio.h>

typedef struct cursor {
    const uint8_t *p, *end;
} cursor;

static int uvarint(cursor *c, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end)
            return -1;
        uint8_t b = *c->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static int zigzag(cursor *c, int64_t *v)
{
    uint64_t u;
    if (uvarint(c, &u) < 0)
        return -1;
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* Unpacks `count` values of `w` bits (LSB first) starting at p. */
static void unpack(const uint8_t *p, int w, size_t count, uint64_t *out)
{
    uint64_t bit = 0;
    for (size_t i = 0; i < count; i++, bit += (uint64_t)w) {
        uint64_t v = 0;
        for (int k = 0; k < w;) {
            uint64_t pos = bit + (uint64_t)k;
            int avail = 8 - (int)(pos % 8);
            int take = w - k < avail ? w - k : avail;
            uint64_t bits = ((uint64_t)p[pos / 8] >> (pos % 8)) & ((1u << take) - 1);
            v |= bits << k;
            k += take;
        }
        out[i] = v;
    }
}

typedef struct header {
    uint64_t block, minis, total;
    int64_t first;
} header;

static int read_header(cursor *c, header *h, char *err, size_t errlen)
{
    if (uvarint(c, &h->block) < 0 || uvarint(c, &h->minis) < 0 || uvarint(c, &h->total) < 0 ||
        zigzag(c, &h->first) < 0) {
        snprintf(err, errlen, "DELTA_BINARY_PACKED: header runs past the data");
        return -1;
    }
    if (h->block == 0 || h->block % 128 || h->block > (1u << 20) || h->minis == 0 ||
        h->block % h->minis || (h->block / h->minis) % 32) {
        snprintf(err, errlen, "DELTA_BINARY_PACKED: bad block layout (%llu values in %llu miniblocks)",
                 (unsigned long long)h->block, (unsigned long long)h->minis);
        return -1;
    }
    return 0;
}

int pq_delta_binary_decode(const uint8_t *data, size_t len, size_t n, int64_t *out,
                           size_t *used, char *err, size_t errlen)
{
    cursor c = {data, data + len};
    header h;
    if (read_header(&c, &h, err, errlen) < 0)
        return -1;
    if (h.total != n) {
        snprintf(err, errlen, "DELTA_BINARY_PACKED: %llu values, the page levels say %zu",
                 (unsigned long long)h.total, n);
        return -1;
    }
    size_t per_mini = (size_t)(h.block / h.minis);
    uint64_t prev = (uint64_t)h.first;
    if (n)
        out[0] = h.first;
    size_t i = 1;
    uint64_t tmp[256];
    while (i < n) {
        int64_t min_delta;
        if (zigzag(&c, &min_delta) < 0 || (size_t)(c.end - c.p) < h.minis) {
            snprintf(err, errlen, "DELTA_BINARY_PACKED: block header runs past the data");
            return -1;
        }
        const uint8_t *widths = c.p;
        c.p += h.minis;
        for (uint64_t m = 0; m < h.minis && i < n; m++) {
            int w = widths[m];
            if (w > 64) {
                snprintf(err, errlen, "DELTA_BINARY_PACKED: miniblock bit width %d", w);
                return -1;
            }
            size_t bytes = per_mini * (size_t)w / 8;
            if ((size_t)(c.end - c.p) < bytes) {
                snprintf(err, errlen, "DELTA_BINARY_PACKED: miniblock runs past the data");
                return -1;
            }
            for (size_t done = 0; done < per_mini && i < n;) {
                size_t k = per_mini - done < 256 ? per_mini - done : 256;
                if (k > n - i)
                    k = n - i;
                /* values are unpacked from the miniblock's start */
                if (w == 64) {
                    for (size_t j = 0; j < k; j++) {
                        uint64_t v = 0;
                        for (int b = 0; b < 8; b++)
                            v |= (uint64_t)c.p[(done + j) * 8 + (size_t)b] << (8 * b);
                        tmp[j] = v;
                    }
                } else {
                    /* offset `done` values into the miniblock: done*w is a whole
                     * number of bytes because done is a multiple of 256 */
                    unpack(c.p + done * (size_t)w / 8, w, k, tmp);
                }
                for (size_t j = 0; j < k; j++) {
                    prev += (uint64_t)min_delta + tmp[j];
                    out[i++] = (int64_t)prev;
                }
                done += k;
            }
            c.p += bytes;
        }
    }
    *used = (size_t)(c.p - data);
    return 0;
}
