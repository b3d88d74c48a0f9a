#include "core/json_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"

/* Any byte of the word that JSON or the surrogateescape rule treats specially:
 * below 0x20, '"', '\\', or 0x80 and above (maybe not UTF-8). The classic
 * has-less / has-zero word tests never miss one; a false alarm only sends the
 * word to the byte loop, which decides. */
static inline int word_special(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t below = (x - ones * 0x20) & ~x, quote = (q - ones) & ~q, slash = (b - ones) & ~b;
    return ((below | quote | slash | x) & high) != 0;
}

static const char hex_lower[] = "0123456789abcdef";

char *es_json_escape(char *w, const char *s, size_t n)
{
    const unsigned char *c = (const unsigned char *)s, *end = c + n;
    *w++ = '"';
    while (c < end) {
        /* runs of plain bytes: eight at a time, then one at a time */
        while (end - c >= 8) {
            uint64_t x;
            memcpy(&x, c, 8);
            if (word_special(x))
                break;
            memcpy(w, &x, 8);
            w += 8;
            c += 8;
        }
        while (c < end && *c >= 0x20 && *c < 0x80 && *c != '"' && *c != '\\')
            *w++ = (char)*c++;
        if (c == end)
            break;
        if (*c < 0x80) {
            if (*c == '"' || *c == '\\') {
                *w++ = '\\';
                *w++ = (char)*c;
            } else {
                memcpy(w, "\\u00", 4);
                w[4] = hex_lower[*c >> 4];
                w[5] = hex_lower[*c & 15];
                w += 6;
            }
            c++;
            continue;
        }
        size_t len = es_utf8_sequence(c, (size_t)(end - c));
        if (len == 0) {
            /* not UTF-8: the byte as Python's surrogateescape decodes it */
            memcpy(w, "\\udc", 4);
            w[4] = hex_lower[*c >> 4];
            w[5] = hex_lower[*c & 15];
            w += 6;
            c++;
        } else {
            memcpy(w, c, len);
            w += len;
            c += len;
        }
    }
    *w++ = '"';
    return w;
}

void es_json_string(es_strbuf *sb, const char *s)
{
    size_t n = strlen(s);
    char *w = es_strbuf_reserve(sb, ES_JSON_ESCAPED_MAX(n));
    if (w)
        es_strbuf_advance(sb, es_json_escape(w, s, n));
}

json_t *es_json_bytes(const char *s)
{
    return s ? json_string_nocheck(s) : NULL;
}

/* jansson's layout: a line break and depth * indent spaces, or one space between
 * items when not indented and not compact. */
static void indent(es_strbuf *sb, size_t flags, int depth, int space)
{
    size_t n = flags & JSON_MAX_INDENT;
    if (n) {
        es_strbuf_putc(sb, '\n');
        for (size_t i = 0; i < n * (size_t)depth; i++)
            es_strbuf_putc(sb, ' ');
    } else if (space && !(flags & JSON_COMPACT)) {
        es_strbuf_putc(sb, ' ');
    }
}

static void put_bytes(es_strbuf *sb, const char *s, size_t n)
{
    char *w = es_strbuf_reserve(sb, ES_JSON_ESCAPED_MAX(n));
    if (w)
        es_strbuf_advance(sb, es_json_escape(w, s, n));
}

/* A real as jansson writes it: %.*g (precision 17 when none is set), ".0" added
 * when that reads as an integer, the exponent without '+' or leading zeros. */
static void put_real(es_strbuf *sb, double v, size_t flags)
{
    int precision = (int)((flags >> 11) & 0x1F);
    char buf[64];
    snprintf(buf, sizeof buf, "%.*g", precision ? precision : 17, v);
    for (char *c = buf; *c; c++)
        if (*c == ',') /* a locale's decimal comma */
            *c = '.';
    char *e = strchr(buf, 'e');
    if (!e && !strchr(buf, '.')) {
        strcat(buf, ".0");
    } else if (e) {
        char *from = e + 1, *to = e + 1;
        if (*from == '-')
            *to++ = *from++;
        else if (*from == '+')
            from++;
        while (*from == '0' && from[1])
            from++;
        memmove(to, from, strlen(from) + 1);
    }
    es_strbuf_puts(sb, buf);
}

static int dump(es_strbuf *sb, const json_t *v, size_t flags, int depth)
{
    if (!v)
        return -1;
    switch (json_typeof(v)) {
    case JSON_NULL:
        es_strbuf_puts(sb, "null");
        return 0;
    case JSON_TRUE:
        es_strbuf_puts(sb, "true");
        return 0;
    case JSON_FALSE:
        es_strbuf_puts(sb, "false");
        return 0;
    case JSON_INTEGER:
        es_strbuf_printf(sb, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return 0;
    case JSON_REAL:
        put_real(sb, json_real_value(v), flags);
        return 0;
    case JSON_STRING:
        put_bytes(sb, json_string_value(v), json_string_length(v));
        return 0;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        es_strbuf_putc(sb, '[');
        if (n)
            indent(sb, flags, depth + 1, 0);
        for (size_t i = 0; i < n; i++) {
            if (dump(sb, json_array_get(v, i), flags, depth + 1))
                return -1;
            if (i + 1 < n) {
                es_strbuf_putc(sb, ',');
                indent(sb, flags, depth + 1, 1);
            } else {
                indent(sb, flags, depth, 0);
            }
        }
        es_strbuf_putc(sb, ']');
        return 0;
    }
    case JSON_OBJECT: {
        void *it = json_object_iter((json_t *)v);
        es_strbuf_putc(sb, '{');
        if (it)
            indent(sb, flags, depth + 1, 0);
        while (it) {
            void *next = json_object_iter_next((json_t *)v, it);
            put_bytes(sb, json_object_iter_key(it), json_object_iter_key_len(it));
            es_strbuf_puts(sb, flags & JSON_COMPACT ? ":" : ": ");
            if (dump(sb, json_object_iter_value(it), flags, depth + 1))
                return -1;
            if (next) {
                es_strbuf_putc(sb, ',');
                indent(sb, flags, depth + 1, 1);
            } else {
                indent(sb, flags, depth, 0);
            }
            it = next;
        }
        es_strbuf_putc(sb, '}');
        return 0;
    }
    }
    return -1;
}

int es_json_dump(es_strbuf *sb, const json_t *v, size_t flags)
{
    return dump(sb, v, flags, 0) || sb->oom ? -1 : 0;
}

/* ---- reading it back ------------------------------------------------------------ */

/* jansson refuses lone surrogates, so es_json_load_bytes hands it a copy where
 * \udcXX (XX 80..ff) is \u0000 followed by the two hex digits XX, and a real
 * \u0000 is \u0000 followed by "00"; loaded with JSON_ALLOW_NUL, every NUL in a
 * string is then such a mark, decoded below. Escapes only occur in strings, so
 * the rewrite needs no parse; a surrogate pair (\ud83d\udc80) is left whole. */

static int hex4(const char *s, size_t n, size_t i, unsigned *v)
{
    if (n - i < 4)
        return 0;
    *v = 0;
    for (size_t k = 0; k < 4; k++) {
        char c = s[i + k];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16;
        if (d == 16)
            return 0;
        *v = *v << 4 | d;
    }
    return 1;
}

static void mark_escapes(es_strbuf *sb, const char *s, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '\\')
            continue;
        unsigned v, w;
        if (s[i + 1] != 'u' || !hex4(s, n, i + 2, &v)) {
            i++; /* \" \\ \n …: the escaped character is not a backslash */
            continue;
        }
        if (v >= 0xD800 && v <= 0xDBFF && n - i >= 12 && s[i + 6] == '\\' && s[i + 7] == 'u' &&
            hex4(s, n, i + 8, &w) && w >= 0xDC00 && w <= 0xDFFF) {
            i += 11; /* a pair: one code point, jansson reads it */
            continue;
        }
        if (v == 0 || (v >= 0xDC80 && v <= 0xDCFF)) {
            es_strbuf_append(sb, s + from, i - from);
            es_strbuf_puts(sb, "\\u0000");
            es_strbuf_putc(sb, hex_lower[v >> 4 & 15]);
            es_strbuf_putc(sb, hex_lower[v & 15]);
            from = i + 6;
        }
        i += 5;
    }
    es_strbuf_append(sb, s + from, n - from);
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c - 'a' + 10;
}

/* v's strings with their marks decoded, in place; -1 when out of memory. */
static int unmark(json_t *v)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (!memchr(s, '\0', n))
            return 0;
        char *out = malloc(n), *w = out;
        if (!out)
            return -1;
        for (size_t i = 0; i < n; i++) {
            if (s[i] != '\0') {
                *w++ = s[i];
                continue;
            }
            *w++ = (char)(hex_digit(s[i + 1]) << 4 | hex_digit(s[i + 2]));
            i += 2;
        }
        int rc = json_string_setn_nocheck(v, out, (size_t)(w - out));
        free(out);
        return rc;
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (unmark(json_array_get(v, i)))
                return -1;
    } else if (json_is_object(v)) {
        for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it))
            if (unmark(json_object_iter_value(it)))
                return -1;
    }
    return 0;
}

json_t *es_json_load_bytes(const char *text, size_t n, size_t flags, json_error_t *err)
{
    es_strbuf sb = {0};
    mark_escapes(&sb, text, n);
    if (sb.oom) {
        es_strbuf_release(&sb);
        if (err)
            snprintf(err->text, sizeof err->text, "out of memory");
        return NULL;
    }
    json_t *v = json_loadb(sb.buf ? sb.buf : "", sb.len, flags | JSON_ALLOW_NUL, err);
    es_strbuf_release(&sb);
    if (v && unmark(v)) {
        json_decref(v);
        v = NULL;
        if (err)
            snprintf(err->text, sizeof err->text, "out of memory");
    }
    return v;
}
