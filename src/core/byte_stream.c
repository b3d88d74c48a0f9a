#include "core/byte_stream.h"

#include <string.h>

ssize_t es_stream_read_full(es_byte_stream *s, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = s->read(s->opaque, (uint8_t *)buf + got, n - got);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    s->consumed += got;
    return (ssize_t)got;
}

int64_t es_stream_skip(es_byte_stream *s, uint64_t n)
{
    if (s->skip) {
        int64_t r = s->skip(s->opaque, n);
        if (r > 0)
            s->consumed += (uint64_t)r;
        return r;
    }
    uint8_t scratch[16384];
    uint64_t done = 0;
    while (done < n) {
        size_t want = n - done < sizeof scratch ? (size_t)(n - done) : sizeof scratch;
        ssize_t r = s->read(s->opaque, scratch, want);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        done += (uint64_t)r;
    }
    s->consumed += done;
    return (int64_t)done;
}

static ssize_t mem_read(void *opaque, void *buf, size_t n)
{
    es_mem_stream *m = opaque;
    size_t left = m->len - m->off;
    if (n > left)
        n = left;
    memcpy(buf, m->data + m->off, n);
    m->off += n;
    return (ssize_t)n;
}

static int64_t mem_skip(void *opaque, uint64_t n)
{
    es_mem_stream *m = opaque;
    size_t left = m->len - m->off;
    if (n > left)
        n = left;
    m->off += (size_t)n;
    return (int64_t)n;
}

void es_byte_stream_from_memory(es_byte_stream *s, es_mem_stream *m,
                                const void *data, size_t len)
{
    m->data = data;
    m->len = len;
    m->off = 0;
    s->read = mem_read;
    s->skip = mem_skip;
    s->opaque = m;
    s->size = len;
    s->consumed = 0;
}
