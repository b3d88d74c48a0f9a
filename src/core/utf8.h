/* UTF-8 helpers for transcript lengths (text length in Unicode code points, as
 * Python's len(str) counts them, since the recipes' filters use that). */
#ifndef ES_UTF8_H
#define ES_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Counts code points in s[0..n): every byte that is not a continuation byte
 * (10xxxxxx) starts one. Matches len(b.decode('utf-8')) for valid UTF-8; invalid
 * bytes count one each, as errors='replace' would. */
size_t es_utf8_length(const char *s, size_t n);

/* Length of the well-formed UTF-8 sequence at s[0..n) (1 to 4), or 0 when the
 * bytes there are not one: a stray continuation byte, a truncated sequence, an
 * overlong form, a surrogate (U+D800-DFFF) or a code point over U+10FFFF —
 * what Python's strict UTF-8 decoder refuses. */
size_t es_utf8_sequence(const unsigned char *s, size_t n);

/* Trims Python-str.strip() whitespace (ASCII space, \t \n \v \f \r, and the
 * separators \x1c-\x1f) from both ends; returns the new length, *s advanced. */
size_t es_strip(const char **s, size_t n);

#endif
