#include "formats/tar/tar_scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads as shard_file.c sizes them: a small one after a jump (a header, a
 * transcript and the next audio header usually fit in it), doubling while
 * reads follow each other (a member read whole: --hash). */
#define MIN_BLOCK (2u << 10)
#define MAX_BLOCK (256u << 10)

int es_tar_scan_init(es_tar_scan *s, int fd, uint64_t size)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->size = size;
    s->want = MIN_BLOCK;
    s->buf = malloc(MAX_BLOCK);
    return s->buf ? 0 : -1;
}

void es_tar_scan_init_mapped(es_tar_scan *s, const void *map, uint64_t size)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->map = map;
    s->size = size;
}

void es_tar_scan_release(es_tar_scan *s)
{
    free(s->buf);
    s->buf = NULL;
}

static ssize_t pread_full(int fd, void *dst, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)dst + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Makes the window start at off, holding at least n bytes where the file has
 * them (n <= MAX_BLOCK). 0, or -1 on a read error. */
static int fill(es_tar_scan *s, uint64_t off, size_t n)
{
    s->want = off == s->buf_off + s->buf_len && s->want < MAX_BLOCK ? s->want * 2 : MIN_BLOCK;
    size_t len = s->want > n ? s->want : n;
    ssize_t got = pread_full(s->fd, s->buf, len, off);
    if (got < 0) {
        s->buf_len = 0;
        return -1;
    }
    s->buf_off = off;
    s->buf_len = (size_t)got;
    return 0;
}

ssize_t es_tar_scan_read(es_tar_scan *s, uint64_t off, void *dst, size_t n)
{
    if (off >= s->size)
        return 0;
    if (n > s->size - off)
        n = (size_t)(s->size - off);
    if (s->map) {
        memcpy(dst, s->map + off, n);
        return (ssize_t)n;
    }
    int inside = off >= s->buf_off && off - s->buf_off <= s->buf_len &&
                 n <= s->buf_len - (off - s->buf_off);
    if (!inside && n > MAX_BLOCK) /* large reads go straight to dst */
        return pread_full(s->fd, dst, n, off);
    if (!inside && fill(s, off, n) != 0)
        return -1;
    size_t at = (size_t)(off - s->buf_off);
    size_t have = s->buf_len - at < n ? s->buf_len - at : n;
    memcpy(dst, s->buf + at, have);
    return (ssize_t)have;
}

ssize_t es_tar_scan_view(es_tar_scan *s, uint64_t off, size_t n, const uint8_t **p)
{
    if (off >= s->size || n == 0)
        return 0;
    if (n > s->size - off)
        n = (size_t)(s->size - off);
    if (s->map) {
        *p = s->map + off;
        return (ssize_t)n;
    }
    int inside = off >= s->buf_off && off - s->buf_off < s->buf_len;
    if (!inside && fill(s, off, n < MAX_BLOCK ? n : MAX_BLOCK) != 0)
        return -1;
    size_t at = (size_t)(off - s->buf_off);
    if (at >= s->buf_len)
        return 0; /* the file ended before its size said */
    *p = s->buf + at;
    return (ssize_t)(s->buf_len - at < n ? s->buf_len - at : n);
}

static int is_octal(uint8_t c) { return c >= '0' && c <= '7'; }

/* A numeric field written the usual way: digits (at least `min` of them, the
 * rest of the field's first len-1 bytes digits too), then NUL or space to the
 * end. libarchive reads other spellings (leading spaces, base-256) its own
 * way; those are left to it. -1 when not usual. */
static int64_t usual_octal(const uint8_t *f, size_t len, size_t min)
{
    uint64_t v = 0;
    size_t i = 0;
    while (i < len && is_octal(f[i]))
        v = v * 8 + (uint64_t)(f[i++] - '0');
    if (i < min)
        return -1;
    for (; i < len; i++)
        if (f[i] != '\0' && f[i] != ' ')
            return -1;
    return (int64_t)v;
}

static int all_zero(const uint8_t *h)
{
    for (size_t i = 0; i < 512; i++)
        if (h[i])
            return 0;
    return 1;
}

/* Whether h is a header this scanner reads exactly as libarchive does; fills
 * s->name and the data's size. */
static int plain_header(es_tar_scan *s, const uint8_t *h, uint64_t *size)
{
    int gnu = memcmp(h + 257, "ustar  \0", 8) == 0;
    int ustar = memcmp(h + 257, "ustar\0" "00", 8) == 0;
    if (!gnu && !ustar)
        return 0;
    if (h[156] != '0' && h[156] != '\0') /* a regular file, nothing else */
        return 0;
    if (ustar && h[345] != '\0') /* a name prefix */
        return 0;
    /* GNU: a sparse map, an extension record or a real size */
    if (gnu && (h[386] != '\0' || h[482] != '\0' || h[483] != '\0'))
        return 0;
    int64_t sum = usual_octal(h + 148, 8, 6);
    int64_t sz = usual_octal(h + 124, 12, 11);
    if (sum < 0 || sz < 0)
        return 0;
    /* every byte summed (a loop the compiler vectorizes), then the checksum
     * field counted as the eight spaces it stands for */
    uint32_t check = 8 * ' ';
    for (size_t i = 0; i < 512; i++)
        check += h[i];
    for (size_t i = 148; i < 156; i++)
        check -= h[i];
    if ((uint64_t)sum != (uint64_t)check)
        return 0;
    size_t n = 0;
    while (n < 100 && h[n]) {
        if (h[n] < 0x20 || h[n] >= 0x7f)
            return 0;
        n++;
    }
    /* empty; a trailing '/' (libarchive makes it a folder); a "._" name
     * (AppleDouble metadata, which libarchive may fold into the next) */
    if (n == 0 || h[n - 1] == '/')
        return 0;
    memcpy(s->name, h, n);
    s->name[n] = '\0';
    const char *base = strrchr(s->name, '/');
    base = base ? base + 1 : s->name;
    if (base[0] == '.' && base[1] == '_')
        return 0;
    *size = (uint64_t)sz;
    return 1;
}

int es_tar_scan_next(es_tar_scan *s)
{
    /* The first header is also where libarchive decides the file is a tar at
     * all: only a plain header with a usual mode field, which it takes for one
     * without doubt, is read here; an empty file or an end mark first is not. */
    int first = s->next == 0;
    if (s->next == s->size && !first)
        return ES_TAR_SCAN_END; /* libarchive: the end at a block boundary */
    uint8_t h[512];
    if (s->next > s->size || s->size - s->next < 512 ||
        es_tar_scan_read(s, s->next, h, 512) != 512)
        return ES_TAR_SCAN_STOP;
    if (h[0] == 0 && all_zero(h))
        return first ? ES_TAR_SCAN_STOP : ES_TAR_SCAN_END; /* one zero block ends it */
    uint64_t size;
    if (!plain_header(s, h, &size) || (first && !is_octal(h[100])))
        return ES_TAR_SCAN_STOP;
    uint64_t data = s->next + 512;
    uint64_t padded = size + (-size & 511);
    if (padded < size || padded > s->size - data)
        return ES_TAR_SCAN_STOP; /* runs past the end: libarchive says how */
    s->data_off = data;
    s->data_size = size;
    s->next = data + padded;
    return ES_TAR_SCAN_MEMBER;
}
