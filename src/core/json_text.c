#include "core/json_text.h"

#include <stdint.h>
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
