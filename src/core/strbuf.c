#include "core/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/prefault.h"

/* Growth for an aligned buffer: realloc would not keep the alignment. */
static int grow_aligned(es_strbuf *sb, size_t need)
{
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        if (cap > SIZE_MAX / 2)
            return -1;
        else
            cap *= 2;
    cap = (cap + sb->align - 1) & ~(sb->align - 1); /* aligned_alloc wants a multiple */
    char *p = aligned_alloc(sb->align, cap);
    if (!p)
        return -1;
    if (sb->buf)
        memcpy(p, sb->buf, sb->len);
    p[sb->len] = '\0';
    free(sb->buf);
    sb->buf = p;
    sb->cap = cap;
    return 0;
}

static int reserve(es_strbuf *sb, size_t extra)
{
    if (sb->oom)
        return 0;
    if (sb->len + extra + 1 <= sb->cap)
        return 1;
    if (sb->align) {
        if (extra >= SIZE_MAX - sb->len - 1 || grow_aligned(sb, sb->len + extra + 1)) {
            sb->oom = 1;
            return 0;
        }
        return 1;
    }
    void *p = sb->buf;
    if (extra >= SIZE_MAX - sb->len || es_grow(&p, &sb->cap, sb->len + extra + 1, 1, 64)) {
        sb->oom = 1;
        return 0;
    }
    sb->buf = p;
    return 1;
}

void es_strbuf_append(es_strbuf *sb, const char *data, size_t n)
{
    if (!reserve(sb, n))
        return;
    if (n) /* data may be NULL when n is 0 (an empty buffer's contents) */
        memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

char *es_strbuf_reserve(es_strbuf *sb, size_t extra)
{
    return reserve(sb, extra) ? sb->buf + sb->len : NULL;
}

void es_strbuf_advance(es_strbuf *sb, char *end)
{
    sb->len = (size_t)(end - sb->buf);
    *end = '\0';
}

void es_strbuf_puts(es_strbuf *sb, const char *s) { es_strbuf_append(sb, s, strlen(s)); }

void es_strbuf_putc(es_strbuf *sb, char c) { es_strbuf_append(sb, &c, 1); }

void es_strbuf_printf(es_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->oom = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        es_strbuf_append(sb, small, (size_t)n);
        return;
    }
    if (!reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void es_strbuf_release(es_strbuf *sb)
{
    size_t align = sb->align;
    free(sb->buf);
    memset(sb, 0, sizeof *sb);
    sb->align = align; /* still asked for if the buffer is used again */
}

/* Blocks double from 1 MiB to 16 MiB: a small arena stays one small block,
 * and a big one (a cost table's strings, a GB at 50 M rows) gets blocks large
 * enough for huge pages (core/prefault.h), which 1 MiB blocks never are. At
 * most one block, 16 MiB, is mapped beyond what is used. */
enum { ARENA_BLOCK = 1 << 20, ARENA_BLOCK_MAX = 16 << 20 };

struct es_arena_block {
    es_arena_block *next;
    size_t used, cap;
    char data[];
};

/* The size of the next block: twice the head's, within the bounds above (a
 * head holding one oversized string counts as a full-sized block). */
static size_t next_block(const es_arena_block *head)
{
    if (!head)
        return ARENA_BLOCK;
    if (head->cap >= ARENA_BLOCK_MAX / 2)
        return ARENA_BLOCK_MAX;
    return head->cap < ARENA_BLOCK ? ARENA_BLOCK : 2 * head->cap;
}

char *es_arena_strndup(es_arena *a, const char *s, size_t n)
{
    es_arena_block *b = a->head;
    if (!b || b->cap - b->used < n + 1) {
        size_t block = next_block(b);
        size_t cap = n + 1 > block ? n + 1 : block;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        /* A second block means a big arena (a cost table's strings): map it in
         * one call (core/prefault.h). Small arenas keep faulting lazily. */
        if (a->head)
            es_prefault_write(b->data, cap, !a->no_huge);
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    char *p = b->data + b->used;
    memcpy(p, s, n);
    p[n] = '\0';
    b->used += n + 1;
    return p;
}

static size_t pad8(const char *p)
{
    return (size_t)(-(uintptr_t)p & 7u);
}

void *es_arena_alloc(es_arena *a, size_t n)
{
    es_arena_block *b = a->head;
    if (b && b->cap - b->used >= n + pad8(b->data + b->used)) {
        b->used += pad8(b->data + b->used);
        void *p = b->data + b->used;
        b->used += n;
        return p;
    }
    if (n > SIZE_MAX - sizeof *b - 8)
        return NULL;
    int own = n > ARENA_BLOCK / 4 && b;
    size_t block = next_block(b);
    size_t cap = n + 8 > block || own ? n + 8 : block;
    es_arena_block *nb = malloc(sizeof *nb + cap);
    if (!nb)
        return NULL;
    nb->used = pad8(nb->data) + n;
    nb->cap = cap;
    if (own) {
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = a->head;
        a->head = nb;
    }
    return nb->data + pad8(nb->data);
}

void es_arena_splice(es_arena *dst, es_arena *src)
{
    if (!src->head)
        return;
    /* Put src's blocks behind dst's current head so dst keeps filling its own block. */
    es_arena_block *tail = src->head;
    while (tail->next)
        tail = tail->next;
    if (dst->head) {
        tail->next = dst->head->next;
        dst->head->next = src->head;
    } else {
        dst->head = src->head;
    }
    src->head = NULL;
}

void es_arena_release(es_arena *a)
{
    es_arena_block *b = a->head;
    while (b) {
        es_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}
