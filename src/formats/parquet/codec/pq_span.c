#include "formats/parquet/codec/pq_span.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/grow.h"
#include "equishard/equishard.h"

#define SPAN_MARK 4096u /* uncompressed bytes between marks */
#define WINDOW 4096u    /* tag pass: compressed bytes read at a time */

static int failf(pq_span *s, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return status;
}

static int reserve(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = 4096;
    while (n < need)
        n *= 2;
    free(*p);
    *p = malloc(n);
    *cap = *p ? n : 0;
    return *p ? 0 : -1;
}

/* pread exactly n bytes at stream offset at. */
static int read_at(pq_span *s, uint8_t *buf, size_t n, uint64_t at)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(s->fd, buf + got, n - got, (off_t)(s->off + at + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return failf(s, ES_ERR_IO, "read error: %s", strerror(errno));
        if (r == 0)
            return failf(s, ES_ERR_FORMAT, "file ends early (truncated while reading?)");
        got += (size_t)r;
    }
    return ES_OK;
}

/* Points *p at stream bytes from `at` on, *avail of them (at least 5, or up
 * to the stream's end): enough for any tag. */
static int peek(pq_span *s, uint32_t at, const uint8_t **p, uint32_t *avail)
{
    uint32_t left = s->z - at, want = left < 5 ? left : 5;
    if (at < s->win_at || at + want > s->win_at + s->win_len) {
        s->win_at = at;
        s->win_len = left < WINDOW ? left : WINDOW;
        int rc = read_at(s, s->win, s->win_len, at);
        if (rc != ES_OK) {
            s->win_len = 0;
            return rc;
        }
    }
    *p = s->win + (at - s->win_at);
    *avail = s->win_at + s->win_len - at;
    return ES_OK;
}

static uint32_t le(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

/* One snappy tag at p (avail bytes): header bytes, output length, and for a
 * copy its offset (a literal's is 0: tell them apart by p[0] & 3). 0 or -1 when the tag runs past avail. */
static int tag(const uint8_t *p, uint32_t avail, uint32_t *hdr, uint64_t *len, uint32_t *offset)
{
    uint8_t t = p[0];
    static const uint8_t copy_hdr[4] = {0, 2, 3, 5};
    if ((t & 3) == 0) {
        uint32_t n = t >> 2, extra = n >= 60 ? n - 59 : 0;
        if (avail < 1 + extra)
            return -1;
        *hdr = 1 + extra;
        *len = (uint64_t)(extra ? le(p + 1, (int)extra) : n) + 1;
        *offset = 0;
        return 0;
    }
    *hdr = copy_hdr[t & 3];
    if (avail < *hdr)
        return -1;
    if ((t & 3) == 1) {
        *len = 4 + ((t >> 2) & 7);
        *offset = (uint32_t)(t >> 5) << 8 | p[1];
    } else {
        *len = 1 + (t >> 2);
        *offset = le(p + 1, (t & 3) == 2 ? 2 : 4);
    }
    return 0;
}

static int add_mark(pq_span *s, uint32_t in, uint32_t out, uint32_t lit)
{
    if (s->n_marks == s->marks_cap) {
        void *m = s->marks;
        if (es_grow(&m, &s->marks_cap, s->n_marks + 1, sizeof *s->marks, 64))
            return failf(s, ES_ERR_NOMEM, "out of memory");
        s->marks = m;
    }
    s->marks[s->n_marks++] = (pq_span_mark){in, out, lit, out};
    return ES_OK;
}

/* The snappy preamble: the uncompressed length, a varint. */
static int preamble(pq_span *s)
{
    const uint8_t *p;
    uint32_t avail;
    int rc = peek(s, 0, &p, &avail);
    uint64_t v = 0;
    uint32_t i = 0;
    for (; rc == ES_OK && i < avail && i < 5; i++) {
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80))
            break;
    }
    if (rc != ES_OK)
        return rc;
    if (i == avail || i == 5)
        return failf(s, ES_ERR_FORMAT, "snappy: corrupt input");
    if (v != s->u)
        return failf(s, ES_ERR_FORMAT, "snappy: %llu bytes, expected %u", (unsigned long long)v, s->u);
    s->start = i + 1;
    return ES_OK;
}

/* A literal of len bytes whose body starts at `in`: marks inside it. */
static int literal_marks(pq_span *s, uint32_t in, uint32_t out, uint32_t len, uint32_t *last)
{
    while (*last + SPAN_MARK < out + len) {
        uint32_t k = *last + SPAN_MARK - out;
        int rc = add_mark(s, in + k, out + k, len - k);
        if (rc != ES_OK)
            return rc;
        *last = out + k;
    }
    return ES_OK;
}

/* The tag pass: every tag checked, bodies jumped over, marks laid. */
static int index_tags(pq_span *s)
{
    int rc = preamble(s);
    uint32_t in = s->start, out = 0, last = 0;
    if (rc == ES_OK)
        rc = add_mark(s, in, 0, 0);
    while (rc == ES_OK && in < s->z) {
        if (out - last >= SPAN_MARK) {
            if ((rc = add_mark(s, in, out, 0)) != ES_OK)
                break;
            last = out;
        }
        const uint8_t *p;
        uint32_t avail, hdr, offset;
        uint64_t len;
        if ((rc = peek(s, in, &p, &avail)) != ES_OK)
            break;
        if (tag(p, avail, &hdr, &len, &offset) < 0)
            return failf(s, ES_ERR_FORMAT, "snappy: corrupt input (a tag runs past the page)");
        if (len > s->u - out)
            return failf(s, ES_ERR_FORMAT, "snappy: more than the %u bytes declared", s->u);
        if ((p[0] & 3) == 0) {
            if (len > s->z - in - hdr)
                return failf(s, ES_ERR_FORMAT, "snappy: corrupt input (a literal runs past the page)");
            rc = literal_marks(s, in + hdr, out, (uint32_t)len, &last);
            in += hdr + (uint32_t)len;
        } else {
            if (offset == 0 || offset > out)
                return failf(s, ES_ERR_FORMAT, "snappy: copy offset %u before the start", offset);
            pq_span_mark *m = &s->marks[s->n_marks - 1];
            if (out - offset < m->low)
                m->low = out - offset;
            in += hdr;
        }
        out += (uint32_t)len;
    }
    if (rc == ES_OK && out != s->u)
        return failf(s, ES_ERR_FORMAT, "snappy: %u bytes, expected %u", out, s->u);
    return rc;
}

int pq_span_open(pq_span *s, int fd, uint64_t off, uint32_t z, uint32_t u, int snappy)
{
    s->fd = fd;
    s->off = off;
    s->z = z;
    s->u = u;
    s->snappy = snappy;
    s->n_marks = 0;
    s->win_at = s->win_len = 0;
    s->err[0] = '\0';
    if (!snappy)
        return z == u ? ES_OK : failf(s, ES_ERR_FORMAT, "stored page of %u bytes declares %u", z, u);
    if (!s->win && !(s->win = malloc(WINDOW)))
        return failf(s, ES_ERR_NOMEM, "out of memory");
    if (z == 0)
        return failf(s, ES_ERR_FORMAT, "snappy: corrupt input (empty)");
    return index_tags(s);
}

/* The last mark at or before output offset `out`. */
static size_t mark_at(const pq_span *s, uint32_t out)
{
    size_t lo = 0, hi = s->n_marks;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->marks[mid].out <= out)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Bytes [o, o + n) of output land in s->out (which holds [lo, b)) where they
 * overlap it. */
static void emit(uint8_t *dst, uint32_t lo, uint32_t b, uint32_t o, const uint8_t *src, uint32_t n)
{
    uint32_t from = o > lo ? o : lo, to = o + n < b ? o + n : b;
    if (from < to)
        memcpy(dst + (from - lo), src + (from - o), to - from);
}

/* Decodes output [lo, b) into s->out from mark m, whose compressed bytes up to
 * in_end are in s->in. Checks again what the tag pass checked: the file may
 * have changed in between. */
static int decode(pq_span *s, const pq_span_mark *m, uint32_t in_end, uint32_t lo, uint32_t b)
{
    const uint8_t *p = s->in, *e = s->in + (in_end - m->in);
    uint8_t *dst = s->out;
    uint32_t o = m->out;
    if (m->lit) {
        uint32_t n = m->lit < (uint32_t)(e - p) ? m->lit : (uint32_t)(e - p);
        emit(dst, lo, b, o, p, n);
        p += n;
        o += n;
    }
    while (o < b) {
        uint32_t hdr, offset;
        uint64_t len;
        if (p >= e || tag(p, (uint32_t)(e - p), &hdr, &len, &offset) < 0)
            return failf(s, ES_ERR_FORMAT, "snappy: the page changed while reading");
        int literal = (p[0] & 3) == 0;
        if (len > s->u - o)
            return failf(s, ES_ERR_FORMAT, "snappy: the page changed while reading");
        p += hdr;
        if (literal) {
            uint64_t n = len < (uint64_t)(e - p) ? len : (uint64_t)(e - p);
            emit(dst, lo, b, o, p, (uint32_t)n);
            p += n;
        } else {
            if (o < lo || offset == 0 || offset > o - lo)
                return failf(s, ES_ERR_FORMAT, "snappy: the page changed while reading");
            uint32_t n = len < b - o ? (uint32_t)len : b - o;
            uint8_t *d = dst + (o - lo);
            const uint8_t *from = d - offset;
            if (offset >= n)
                memcpy(d, from, n);
            else
                for (uint32_t k = 0; k < n; k++) /* a copy that overlaps itself: a byte at a time */
                    d[k] = from[k];
        }
        o += (uint32_t)len;
    }
    return ES_OK;
}

int pq_span_get(pq_span *s, uint32_t a, uint32_t n, const uint8_t **p)
{
    if (n > s->u || a > s->u - n)
        return failf(s, ES_ERR_INTERNAL, "bytes %u..%u of a page of %u", a, a + n, s->u);
    if (reserve(&s->out, &s->out_cap, (size_t)n + 1))
        return failf(s, ES_ERR_NOMEM, "out of memory (%u bytes)", n);
    if (!s->snappy || n == 0) {
        *p = s->out;
        return read_at(s, s->out, n, a);
    }
    uint32_t b = a + n, lo = a;
    size_t j = mark_at(s, b - 1), end = j + 1;
    for (;;) { /* back until the mark holds lo and everything after reads from lo on */
        if (s->marks[j].low < lo)
            lo = s->marks[j].low;
        if (s->marks[j].out <= lo)
            break;
        j--;
    }
    const pq_span_mark *m = &s->marks[j];
    uint32_t in_end = end < s->n_marks ? s->marks[end].in : s->z;
    if (reserve(&s->out, &s->out_cap, (size_t)(b - lo) + 1) ||
        reserve(&s->in, &s->in_cap, (size_t)(in_end - m->in) + 1))
        return failf(s, ES_ERR_NOMEM, "out of memory (%u bytes)", b - lo);
    int rc = read_at(s, s->in, in_end - m->in, m->in);
    if (rc == ES_OK)
        rc = decode(s, m, in_end, lo, b);
    *p = s->out + (a - lo);
    return rc;
}

void pq_span_release(pq_span *s)
{
    free(s->marks);
    free(s->win);
    free(s->in);
    free(s->out);
    memset(s, 0, sizeof *s);
}
