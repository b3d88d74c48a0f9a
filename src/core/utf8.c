#include "core/utf8.h"

size_t es_utf8_length(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += ((unsigned char)s[i] & 0xC0) != 0x80;
    return count;
}

size_t es_utf8_sequence(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
                 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (len == 0 || n < len)
        return 0;
    /* the second byte's range excludes overlongs, surrogates and > U+10FFFF */
    unsigned char lo = s[0] == 0xE0 ? 0xA0 : s[0] == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = s[0] == 0xED ? 0x9F : s[0] == 0xF4 ? 0x8F : 0xBF;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

static int is_py_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

size_t es_strip(const char **s, size_t n)
{
    const char *p = *s;
    while (n > 0 && is_py_space((unsigned char)p[0])) {
        p++;
        n--;
    }
    while (n > 0 && is_py_space((unsigned char)p[n - 1]))
        n--;
    *s = p;
    return n;
}
