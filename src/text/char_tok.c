/* WeNet's CharTokenizer (wenet/text/char_tokenizer.py, with
 * wenet/utils/file_utils.py's read_symbol_table / read_non_lang_symbols), whose
 * ids are the `label` WeNet's processor.filter counts. Per text, as
 * text2tokens + tokens2ids do it:
 *
 *   line = line.strip()                         Python str.strip() whitespace
 *   with non_lang_syms (a file was given):
 *     parts = re.split(r"(\[[^\[\]]+\]|<[^<>]+>|{[^{}]+})", line.upper())
 *     parts = [w.strip() for w in parts if w.strip()]
 *   else parts = [line]                         (even when line is empty)
 *   a part listed in non_lang_syms is one token; else, with split_with_space,
 *   each of part.split(" ") is one (empty words too); else each code point is
 *   one, ' ' spelled '▁'.
 *   A token in the symbol table gives its id; any other gives <unk>'s id when
 *   the table has "<unk>", else nothing.
 *
 * str.upper() is Unicode's full upper-casing: libutf8proc's one-to-one mapping
 * plus py_upper_special.inc (generated from Python) for the 102 code points
 * that become several. str.strip() / str.split() whitespace is Python's
 * definition: bidirectional class WS, B or S, or general category Zs. */
#include "text/tok_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include <xxhash.h>

#include "core/grow.h"
#include "core/strmap.h"
#include "core/utf8.h"

struct tok_char {
    es_strmap symbols;   /* symbol (UTF-8) → id + 1, as a pointer-sized integer */
    es_strmap non_lang;  /* the non_lang_syms list (value unused) */
    int pattern;         /* a non_lang_syms file was given: split and upper-case */
    int split_with_space;
    uint32_t unk;        /* <unk>'s id, or TOK_NONE */
};

static const struct { int32_t cp, n, up[3]; } special_upper[] = {
#include "text/py_upper_special.inc"
};

int tok_py_space(int32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
    const utf8proc_property_t *p = utf8proc_get_property(c);
    return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
           p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

/* Python's str.upper() of one code point into out[0..3); returns the count. */
static int py_upper(int32_t c, int32_t out[3])
{
    size_t lo = 0, hi = sizeof special_upper / sizeof special_upper[0];
    if (c >= 0xDF) {
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (special_upper[mid].cp < c)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < sizeof special_upper / sizeof special_upper[0] && special_upper[lo].cp == c) {
            memcpy(out, special_upper[lo].up, sizeof special_upper[lo].up);
            return special_upper[lo].n;
        }
    }
    out[0] = c < 0x80 ? (c >= 'a' && c <= 'z' ? c - 32 : c) : utf8proc_toupper(c);
    return 1;
}

static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
    return es_grow(p, cap, need, size, 256) == 0 ? ES_OK : ES_ERR_NOMEM;
}

/* ---- encoding ----------------------------------------------------------------- */

/* Appends the id of token cp[0..n) (UTF-8 encoded), <unk>'s, or nothing. */
static int emit(const tok_char *c, tok_state *st, const int32_t *cp, size_t n)
{
    void *p = st->piece;
    if (reserve(&p, &st->cap_piece, 4 * n + 1, 1))
        return ES_ERR_NOMEM;
    st->piece = p;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)utf8proc_encode_char(cp[i], (utf8proc_uint8_t *)st->piece + len);
    const es_strmap_slot *s = es_strmap_get(&c->symbols, st->piece, len);
    uint32_t id = s ? (uint32_t)((uintptr_t)s->value - 1) : c->unk;
    if (id == TOK_NONE)
        return ES_OK;
    p = st->ids;
    if (reserve(&p, &st->cap_ids, st->n_ids + 1, sizeof *st->ids))
        return ES_ERR_NOMEM;
    st->ids = p;
    st->ids[st->n_ids++] = id;
    return ES_OK;
}

static int in_non_lang(const tok_char *c, tok_state *st, const int32_t *cp, size_t n)
{
    void *p = st->piece;
    if (reserve(&p, &st->cap_piece, 4 * n + 1, 1))
        return -1;
    st->piece = p;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)utf8proc_encode_char(cp[i], (utf8proc_uint8_t *)st->piece + len);
    return es_strmap_get(&c->non_lang, st->piece, len) != NULL;
}

/* One part: a non-linguistic symbol, words split at ' ', or characters. */
static int emit_part(const tok_char *c, tok_state *st, const int32_t *cp, size_t n)
{
    int rc = ES_OK;
    if (c->pattern) {
        int hit = in_non_lang(c, st, cp, n);
        if (hit)
            return hit < 0 ? ES_ERR_NOMEM : emit(c, st, cp, n);
    }
    if (c->split_with_space) {
        size_t w = 0;
        for (size_t i = 0; i <= n && rc == ES_OK; i++)
            if (i == n || cp[i] == ' ') {
                rc = emit(c, st, cp + w, i - w);
                w = i + 1;
            }
        return rc;
    }
    static const int32_t lower_one_eighth_block = 0x2581; /* '▁' */
    for (size_t i = 0; i < n && rc == ES_OK; i++)
        rc = emit(c, st, cp[i] == ' ' ? &lower_one_eighth_block : cp + i, 1);
    return rc;
}

static void strip(const int32_t *cp, size_t *a, size_t *b)
{
    while (*a < *b && tok_py_space(cp[*a]))
        (*a)++;
    while (*b > *a && tok_py_space(cp[*b - 1]))
        (*b)--;
}

/* End of the non_lang_syms pattern's match at u[i] (an alternative per opening
 * bracket: at least one code point that is neither bracket, then the closing
 * one), or 0 when there is none. */
static size_t match_at(const int32_t *u, size_t i, size_t n)
{
    int32_t open = u[i], close = open == '[' ? ']' : open == '<' ? '>' : open == '{' ? '}' : 0;
    if (!close)
        return 0;
    size_t j = i + 1;
    while (j < n && u[j] != open && u[j] != close)
        j++;
    return j < n && u[j] == close && j > i + 1 ? j + 1 : 0;
}

/* With non_lang_syms: upper-case, split at the pattern, strip and emit each part. */
static int encode_pattern(const tok_char *c, tok_state *st, const int32_t *cp, size_t n)
{
    void *p = st->up;
    if (reserve(&p, &st->cap_up, 3 * n + 1, sizeof *st->up))
        return ES_ERR_NOMEM;
    st->up = p;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (size_t)py_upper(cp[i], st->up + k);
    const int32_t *u = st->up;
    int rc = ES_OK;
    size_t seg = 0;
    for (size_t i = 0; i < k && rc == ES_OK;) {
        size_t e = match_at(u, i, k);
        if (!e) {
            i++;
            continue;
        }
        size_t a = seg, b = i;
        strip(u, &a, &b);
        if (a < b)
            rc = emit_part(c, st, u + a, b - a);
        a = i, b = e;
        strip(u, &a, &b);
        if (rc == ES_OK && a < b)
            rc = emit_part(c, st, u + a, b - a);
        seg = i = e;
    }
    size_t a = seg, b = k;
    strip(u, &a, &b);
    if (rc == ES_OK && a < b)
        rc = emit_part(c, st, u + a, b - a);
    return rc;
}

int tok_char_encode(es_context *ctx, const tok_char *c, tok_state *st, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    st->n_ids = 0;
    void *p = st->cps;
    if (reserve(&p, &st->cap_cps, n + 1, sizeof *st->cps))
        return es_fail(ctx, ES_ERR_NOMEM, "text: out of memory");
    st->cps = p;
    size_t k = 0;
    for (size_t i = 0, len; i < n; i += len) {
        if (!(len = es_utf8_sequence(s + i, n - i)))
            return es_fail(ctx, ES_ERR_FORMAT, "text: byte %zu: not valid UTF-8", i);
        utf8proc_int32_t cp;
        utf8proc_iterate(s + i, (utf8proc_ssize_t)len, &cp);
        st->cps[k++] = cp;
    }
    size_t a = 0, b = k;
    strip(st->cps, &a, &b);
    int rc = c->pattern ? encode_pattern(c, st, st->cps + a, b - a)
                        : emit_part(c, st, st->cps + a, b - a);
    return rc == ES_OK ? ES_OK : es_fail(ctx, rc, "text: out of memory");
}

/* ---- loading -------------------------------------------------------------------- */

/* Python's text-mode lines (universal newlines: \n, \r\n and \r end a line),
 * each decoded and stripped into st->cps[*a..*b). Returns 1 for a line, 0 at
 * the end, -1 for bytes that are not UTF-8 (*bad = their offset). */
typedef struct lines {
    const char *data;
    size_t len, pos, no;
} lines;

static int next_line(lines *l, tok_state *st, size_t *a, size_t *b, size_t *bad)
{
    if (l->pos >= l->len)
        return 0;
    size_t i = l->pos, e = i;
    while (e < l->len && l->data[e] != '\n' && l->data[e] != '\r')
        e++;
    l->pos = e + (e < l->len) + (e + 1 < l->len && l->data[e] == '\r' && l->data[e + 1] == '\n');
    l->no++;
    void *p = st->cps;
    if (reserve(&p, &st->cap_cps, e - i + 1, sizeof *st->cps))
        return -2;
    st->cps = p;
    size_t k = 0;
    for (size_t j = i, n; j < e; j += n) {
        if (!(n = es_utf8_sequence((const unsigned char *)l->data + j, e - j))) {
            *bad = j;
            return -1;
        }
        utf8proc_int32_t cp;
        utf8proc_iterate((const utf8proc_uint8_t *)l->data + j, (utf8proc_ssize_t)n, &cp);
        st->cps[k++] = cp;
    }
    *a = 0;
    *b = k;
    strip(st->cps, a, b);
    return 1;
}

static int line_error(es_context *ctx, const char *path, lines *l, int r, size_t bad)
{
    if (r == -2)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    return es_fail(ctx, ES_ERR_FORMAT, "%s: line %zu: byte %zu: not valid UTF-8", path, l->no,
                   bad);
}

static char *utf8_of(tok_state *st, const int32_t *cp, size_t n, size_t *len)
{
    void *p = st->piece;
    if (reserve(&p, &st->cap_piece, 4 * n + 1, 1))
        return NULL;
    st->piece = p;
    *len = 0;
    for (size_t i = 0; i < n; i++)
        *len += (size_t)utf8proc_encode_char(cp[i], (utf8proc_uint8_t *)st->piece + *len);
    return st->piece;
}

/* ID: what Python's int() reads in the ids we keep (0 .. 2^32-2, ASCII digits). */
static int parse_id(const int32_t *cp, size_t n, uint32_t *id)
{
    uint64_t v = 0;
    size_t i = n > 0 && cp[0] == '+';
    if (i == n)
        return 0;
    for (; i < n; i++) {
        if (cp[i] < '0' || cp[i] > '9' || (v = v * 10 + (uint64_t)(cp[i] - '0')) >= TOK_NONE)
            return 0;
    }
    *id = (uint32_t)v;
    return 1;
}

/* read_symbol_table: every line is "SYMBOL ID" (line.strip().split() of two). */
static int load_symbols(es_context *ctx, tok_char *c, tok_state *st, const char *path,
                        const char *data, size_t len, size_t *distinct)
{
    lines l = {data, len, 0, 0};
    size_t a, b, bad = 0;
    int r;
    es_strmap ids = {0};
    int rc = ES_OK;
    while (rc == ES_OK && (r = next_line(&l, st, &a, &b, &bad)) == 1) {
        const int32_t *cp = st->cps;
        size_t e1 = a;
        while (e1 < b && !tok_py_space(cp[e1]))
            e1++;
        size_t s2 = e1;
        while (s2 < b && tok_py_space(cp[s2]))
            s2++;
        size_t e2 = s2;
        while (e2 < b && !tok_py_space(cp[e2]))
            e2++;
        uint32_t id;
        if (a == e1 || s2 == b || e2 != b)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: line %zu: expected \"SYMBOL ID\" (two fields), "
                         "as WeNet's read_symbol_table asserts", path, l.no);
        else if (!parse_id(cp + s2, b - s2, &id))
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: line %zu: id is not an integer from 0 to %u",
                         path, l.no, TOK_NONE - 1);
        else {
            size_t sl;
            const char *sym = utf8_of(st, cp + a, e1 - a, &sl);
            if (!sym || es_strmap_put(&c->symbols, sym, sl, (void *)((uintptr_t)id + 1)))
                rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
        }
    }
    if (rc == ES_OK && r < 0)
        rc = line_error(ctx, path, &l, r, bad);
    if (rc == ES_OK && c->symbols.n == 0)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: no symbols (expected lines \"SYMBOL ID\")", path);
    /* vocab_size() is len({v: k for k, v in table.items()}): distinct ids */
    for (size_t i = 0; rc == ES_OK && i < c->symbols.cap; i++) {
        char idbuf[24];
        int il = snprintf(idbuf, sizeof idbuf, "%zu", (size_t)(uintptr_t)c->symbols.slots[i].value);
        if (c->symbols.slots[i].key && es_strmap_put(&ids, idbuf, (size_t)il, NULL))
            rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    }
    *distinct = ids.n;
    es_strmap_release(&ids);
    return rc;
}

/* read_non_lang_symbols: one per line, each {xxx}, <xxx> or [xxx]. */
static int load_non_lang(es_context *ctx, tok_char *c, tok_state *st, const char *path,
                         const char *data, size_t len)
{
    lines l = {data, len, 0, 0};
    size_t a, b, bad = 0;
    int r, rc = ES_OK;
    while (rc == ES_OK && (r = next_line(&l, st, &a, &b, &bad)) == 1) {
        size_t sl;
        const char *sym;
        if (a == b || match_at(st->cps, a, b) != b)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: line %zu: a non-linguistic symbol is {xxx}, "
                         "<xxx> or [xxx] (WeNet's read_non_lang_symbols refuses others)", path,
                         l.no);
        else if (!(sym = utf8_of(st, st->cps + a, b - a, &sl)) ||
                 es_strmap_put(&c->non_lang, sym, sl, NULL))
            rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    }
    if (rc == ES_OK && r < 0)
        rc = line_error(ctx, path, &l, r, bad);
    return rc;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int tok_char_load(es_context *ctx, tok_model *m, const char *symbol_table,
                  const char *non_lang_syms, int split_with_space)
{
    tok_char *c = calloc(1, sizeof *c);
    if (!c || !(m->path = strdup(symbol_table))) {
        free(c);
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    m->chr = c;
    c->pattern = non_lang_syms != NULL;
    c->split_with_space = split_with_space != 0;
    m->specials = "none";
    tok_state st = {0};
    char *sd = NULL, *nd = NULL;
    size_t sl = 0, nl = 0, distinct = 0;
    int rc = tok_read_file(ctx, symbol_table, &sd, &sl);
    if (rc == ES_OK)
        rc = load_symbols(ctx, c, &st, symbol_table, sd, sl, &distinct);
    if (rc == ES_OK && non_lang_syms && (rc = tok_read_file(ctx, non_lang_syms, &nd, &nl)) == ES_OK)
        rc = load_non_lang(ctx, c, &st, non_lang_syms, nd, nl);
    if (rc == ES_OK) {
        const es_strmap_slot *u = es_strmap_get(&c->symbols, "<unk>", 5);
        c->unk = u ? (uint32_t)((uintptr_t)u->value - 1) : TOK_NONE;
        m->vocab_size = distinct; /* len(char_dict): distinct ids */
        m->n_non_lang = c->non_lang.n;
        XXH3_state_t *h = XXH3_createState();
        es_strbuf files = {0};
        es_strbuf_puts(&files, base_name(symbol_table));
        if (non_lang_syms) {
            es_strbuf_putc(&files, '+');
            es_strbuf_puts(&files, base_name(non_lang_syms));
        }
        if (!h || files.oom) {
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
            es_strbuf_release(&files);
        } else {
            XXH3_64bits_reset(h);
            XXH3_64bits_update(h, sd, sl);
            XXH3_64bits_update(h, nd ? nd : "", nl);
            m->digest = XXH3_64bits_digest(h);
            m->files = files.buf;
        }
        XXH3_freeState(h);
    }
    free(sd);
    free(nd);
    tok_state_release(&st);
    return rc;
}

const char *tok_char_kind(const tok_char *c)
{
    return c->split_with_space ? "wenet_char_split_with_space" : "wenet_char";
}

void tok_char_free(tok_char *c)
{
    if (!c)
        return;
    es_strmap_release(&c->symbols);
    es_strmap_release(&c->non_lang);
    free(c);
}
