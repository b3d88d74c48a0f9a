#include "core/utf8.h"

size_t es_utf8_length(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += ((unsigned char)s[i] & 0xC0) != 0x80;
    return count;
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
