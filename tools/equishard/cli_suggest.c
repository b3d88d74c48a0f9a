/* "did you mean": the known name nearest to what was typed (cli.h). A typo
 * (one letter dropped, doubled, swapped or wrong), '_' for '-' (Python's
 * spelling of --world_size), a different case, or a known name with more
 * after it (--output-dir for --output) all find it; names far from every known
 * one find none, so a suggestion is never a guess at random. */
#include "cli.h"

#include <ctype.h>
#include <string.h>

enum { MAX_NAME = 64 };

static char fold(char c)
{
    return c == '_' ? '-' : (char)tolower((unsigned char)c);
}

/* Optimal string alignment distance (Levenshtein plus the swap of two
 * neighbours as one edit) over folded characters. */
static size_t distance(const char *a, size_t na, const char *b, size_t nb)
{
    size_t d[MAX_NAME + 1][MAX_NAME + 1];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t cost = fold(a[i - 1]) != fold(b[j - 1]);
            size_t best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
                fold(a[i - 2]) == fold(b[j - 1]) && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb];
}

/* How far a name may be: one edit for short names, up to three for long. */
static size_t allowed(size_t n)
{
    return n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

static int starts_with(const char *s, size_t ns, const char *prefix, size_t np)
{
    if (np > ns)
        return 0;
    for (size_t i = 0; i < np; i++)
        if (fold(s[i]) != fold(prefix[i]))
            return 0;
    return 1;
}

const char *cli_suggest(const char *typed, size_t len, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    if (len == 0 || len > MAX_NAME)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        if (nl > MAX_NAME)
            continue;
        size_t d = distance(typed, len, names[i], nl);
        /* a known name with more typed after it, or the start of one */
        int prefix = nl >= 3 && (starts_with(typed, len, names[i], nl) ||
                                 (len >= 3 && starts_with(names[i], nl, typed, len)));
        if (d > allowed(nl) && !prefix)
            continue;
        if (prefix && d > allowed(nl))
            d = allowed(nl) + 1; /* after every typo-near name */
        if (d < best_d)
            best = names[i], best_d = d;
    }
    return best;
}
