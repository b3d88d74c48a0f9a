/* NFC as Hugging Face tokenizers computes it (its NFC normalizer, which
 * Qwen2's tokenizer.json names). HF uses the unicode-normalization-alignments
 * crate, whose tables are Unicode 9.0: to it a code point added since has
 * combining class 0 and neither decomposes nor composes. libutf8proc (Unicode
 * 15) knows those code points: it moves a newer combining mark ahead of an
 * older one of a higher class, composes across it (a + U+1DFA + U+0301 → á
 * U+1DFA, where HF keeps a U+1DFA U+0301), and composes U+11935 U+11930 into
 * U+11938. Such a code point is a starter that combines with nothing to HF,
 * so HF's NFC of the text is the NFC of the runs between them, each such code
 * point kept as it is between: what tok_nfc computes, with libutf8proc on each
 * run. The list (nfc_unicode9.inc) is made by tools/gen_nfc_unicode9.py from
 * the Unicode data of libutf8proc's version. */
#include "text/tok_model.h"

#include <stdlib.h>
#include <utf8proc.h>

#include "core/grow.h"

/* nfc_kept[], nfc_kept_pages[] */
#include "text/nfc_unicode9.inc"

static int cmp_cp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Pages are 256 code points (below U+20000): most text, CJK among it, is told
 * apart by one bit test. */
static int kept_as_is(int32_t c)
{
    if (c < nfc_kept[0] || c >= 0x20000 || !(nfc_kept_pages[c >> 14] >> (c >> 8 & 63) & 1))
        return 0;
    return bsearch(&c, nfc_kept, sizeof nfc_kept / sizeof nfc_kept[0], sizeof nfc_kept[0],
                   cmp_cp) != NULL;
}

/* NFC of s[0..n) (valid UTF-8) appended to st->cps at k; the new count, or -1
 * when out of memory. */
static long nfc_run(tok_state *st, size_t k, const uint8_t *s, size_t n)
{
    const int opts = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
    if (n == 0)
        return (long)k;
    for (;;) {
        utf8proc_ssize_t room = (utf8proc_ssize_t)(st->cap_cps - k);
        utf8proc_ssize_t m = utf8proc_decompose(s, (utf8proc_ssize_t)n, st->cps + k, room, opts);
        if (m < 0)
            return -1;
        if (m <= room)
            return (long)(k + (size_t)utf8proc_normalize_utf32(st->cps + k, m, opts));
        void *p = st->cps;
        if (es_grow(&p, &st->cap_cps, k + (size_t)m, sizeof *st->cps, 256))
            return -1;
        st->cps = p;
    }
}

long tok_nfc(tok_state *st, const char *text, size_t n)
{
    const uint8_t *u = (const uint8_t *)text;
    size_t k = 0, run = 0;
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t len = utf8proc_iterate(u + i, (utf8proc_ssize_t)(n - i), &c);
        if (len <= 0)
            return -1; /* the caller checked the text: not reached */
        if (kept_as_is(c)) {
            long r = nfc_run(st, k, u + run, i - run);
            if (r < 0)
                return -1;
            k = (size_t)r;
            void *p = st->cps;
            if (es_grow(&p, &st->cap_cps, k + 1, sizeof *st->cps, 256))
                return -1;
            st->cps = p;
            st->cps[k++] = c;
            run = i + (size_t)len;
        }
        i += (size_t)len;
    }
    return nfc_run(st, k, u + run, n - run);
}
