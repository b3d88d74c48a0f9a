/* Growable byte buffer and a string arena.
 *
 * es_strbuf: `buf` is always NUL-terminated once anything was appended;
 * `len` excludes the NUL. Allocation failure sets `oom` and later appends are
 * no-ops, so callers check once at the end.
 *
 * es_arena: bump allocator for the many small strings of a cost table (keys,
 * speakers). Strings never move; the arena frees them all at once. */
#ifndef ES_STRBUF_H
#define ES_STRBUF_H

#include <stddef.h>

typedef struct es_strbuf {
    char *buf;
    size_t len, cap;
    int oom;
    /* When nonzero (a power of two, set before the first append): buf is kept
     * aligned to it, grown by copying instead of realloc (for es_write_whole's
     * O_DIRECT path, core/direct_write.h). */
    size_t align;
} es_strbuf;

void es_strbuf_append(es_strbuf *sb, const char *data, size_t n);
void es_strbuf_puts(es_strbuf *sb, const char *s);
void es_strbuf_putc(es_strbuf *sb, char c);
void es_strbuf_printf(es_strbuf *sb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void es_strbuf_release(es_strbuf *sb);
/* Room for `extra` more bytes (and the NUL): returns where they go, buf + len,
 * or NULL (oom set). The caller writes at most `extra` bytes there and hands the
 * end to es_strbuf_advance, which moves len and writes the NUL. For formatting
 * loops that write straight into the buffer instead of one append per piece. */
char *es_strbuf_reserve(es_strbuf *sb, size_t extra);
void es_strbuf_advance(es_strbuf *sb, char *end);

typedef struct es_arena_block es_arena_block;
typedef struct es_arena {
    es_arena_block *head;
    unsigned char no_huge; /* blocks ask for no huge pages (a context's huge_pages off) */
} es_arena;

/* Copies s[0..n) plus a NUL into the arena; NULL when out of memory. */
char *es_arena_strndup(es_arena *a, const char *s, size_t n);
/* n bytes aligned to 8 (uninitialised); NULL when out of memory. An
 * allocation of more than a quarter block gets a block of its own, placed
 * behind the head, so big values (audio) do not waste the block being filled. */
void *es_arena_alloc(es_arena *a, size_t n);
/* Moves every block of src into dst; src is left empty. */
void es_arena_splice(es_arena *dst, es_arena *src);
void es_arena_release(es_arena *a);

#endif
