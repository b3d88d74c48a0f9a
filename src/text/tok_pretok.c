/* Qwen2's pre-tokenizer, HF's Split(Isolated) with the regex
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 *
 * as a scanner: at each position the first alternative that matches wins, as
 * in Oniguruma, and the next piece starts where it ended (every code point is
 * matched by some alternative, so no gaps). Oniguruma's semantics, not JS's:
 * \s is Unicode White_Space (U+0085 in, U+FEFF out), and (?i:) case-folds, so
 * ſ (U+017F) matches s. Classes come from libutf8proc's general categories. */
#include "text/tok_model.h"

#include <utf8proc.h>

uint8_t tok_class(int32_t c)
{
    if (c < 0x80) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            return TOK_L;
        if (c >= '0' && c <= '9')
            return TOK_N;
        if (c == '\r' || c == '\n')
            return TOK_WS | TOK_CRLF;
        return (c == ' ' || (c >= '\t' && c <= '\r')) ? TOK_WS : 0;
    }
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
        return TOK_L;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return TOK_N;
    /* White_Space = Zs, Zl, Zp, plus the controls 9..13 and U+0085 */
    case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
        return TOK_WS;
    default:
        return c == 0x85 ? TOK_WS : 0;
    }
}

/* The letter a pattern character of the contractions matches, case-folded:
 * s also matches ſ (U+017F, whose simple case fold is s); no other non-ASCII
 * character folds to one of s t r e v m l d. */
static int folds_to(int32_t c, char want)
{
    if (c == want || c == want - 'a' + 'A')
        return 1;
    return want == 's' && c == 0x17F;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at i (cp[i] == '\''): end, or 0. */
static size_t contraction(const int32_t *cp, size_t i, size_t n)
{
    if (i + 1 >= n)
        return 0;
    int32_t a = cp[i + 1], b = i + 2 < n ? cp[i + 2] : 0;
    if (folds_to(a, 's') || folds_to(a, 't') || folds_to(a, 'm') || folds_to(a, 'd'))
        return i + 2;
    if ((folds_to(a, 'r') || folds_to(a, 'v')) && i + 2 < n && folds_to(b, 'e'))
        return i + 3;
    if (folds_to(a, 'l') && i + 2 < n && folds_to(b, 'l'))
        return i + 3;
    return 0;
}

static size_t run_of(const uint8_t *cls, size_t i, size_t n, uint8_t want)
{
    while (i < n && (cls[i] & want))
        i++;
    return i;
}

/* [^\s\p{L}\p{N}] */
static int is_other(uint8_t k) { return !(k & (TOK_L | TOK_N | TOK_WS)); }

size_t tok_pretok_next(const int32_t *cp, const uint8_t *cls, size_t i, size_t n)
{
    size_t e;
    if (cp[i] == '\'' && (e = contraction(cp, i, n)))
        return e;
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (cls[i] & TOK_L)
        return run_of(cls, i, n, TOK_L);
    if (!(cls[i] & (TOK_L | TOK_N | TOK_CRLF)) && i + 1 < n && (cls[i + 1] & TOK_L))
        return run_of(cls, i + 1, n, TOK_L);
    if (cls[i] & TOK_N)
        return i + 1;
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    size_t j = (cp[i] == ' ' && i + 1 < n && is_other(cls[i + 1])) ? i + 1 : i;
    if (is_other(cls[j])) {
        while (j < n && is_other(cls[j]))
            j++;
        return run_of(cls, j, n, TOK_CRLF);
    }
    /* cp[i] is white space from here on. \s*[\r\n]+: the greedy \s* backs off
     * to the run's last \r or \n, which [\r\n]+ takes (nothing after it in the
     * run is \r or \n). */
    e = run_of(cls, i, n, TOK_WS);
    for (size_t k = e; k > i; k--)
        if (cls[k - 1] & TOK_CRLF)
            return k;
    /* \s+(?!\S): the whole run at the end of the text, else all but its last
     * character (which then starts the next piece); a single space before a
     * non-space falls through to \s+. */
    if (e < n && e - i >= 2)
        return e - 1;
    return e;
}
