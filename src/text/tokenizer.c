/* The encoding pipeline HF runs for CosyVoice's Qwen2 tokenizer, and the public
 * API (es_tokenizer_*). Per text: check UTF-8 (strictly, as Python's decode
 * does: such text never reaches the recipe's tokenizer); cut out added tokens
 * on the raw text; NFC each remaining segment (as HF's, tok_nfc.c); split it with Qwen2's
 * pre-tokenizer; BPE each piece's bytes. */
#include "text/tokenizer.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/grow.h"

/* Length of the valid UTF-8 sequence at s[i] (1..4), or 0: no overlongs, no
 * surrogates, nothing past U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t i, size_t n)
{
    unsigned c = s[i];
    if (c < 0x80)
        return 1;
    size_t k = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!k || n - i < k)
        return 0;
    for (size_t j = 1; j < k; j++)
        if ((s[i + j] & 0xC0) != 0x80)
            return 0;
    unsigned d = s[i + 1];
    if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F) || (c == 0xF0 && d < 0x90) ||
        (c == 0xF4 && d > 0x8F))
        return 0;
    return k;
}

static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
    return es_grow(p, cap, need, size, 256) == 0 ? ES_OK : ES_ERR_NOMEM;
}

/* s[0..n) (valid UTF-8) → st->cps after NFC, st->cls their classes; returns the
 * count, or -1 when out of memory. Text below U+0300 is NFC already (nothing
 * there decomposes or combines), which spares most Latin text the call; for
 * such text *plain is set and st->off holds each code point's byte offset in s
 * (and n at the end), so pieces are cut from s instead of re-encoded. */
static long segment_cps(tok_state *st, const char *s, size_t n, int *plain)
{
    size_t k = 0;
    const unsigned char *u = (const unsigned char *)s;
    void *p = st->cps, *q = st->off, *r = st->cls;
    if (reserve(&p, &st->cap_cps, n + 1, sizeof *st->cps))
        return -1;
    st->cps = p;
    if (reserve(&q, &st->cap_off, n + 1, sizeof *st->off))
        return -1;
    st->off = q;
    if (reserve(&r, &st->cap_cls, n + 1, 1))
        return -1;
    st->cls = r;
    *plain = 1;
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t c = u[i];
        utf8proc_ssize_t len = 1;
        if (c >= 0x80)
            len = utf8proc_iterate(u + i, (utf8proc_ssize_t)(n - i), &c);
        if (c >= 0x300) {
            *plain = 0;
            break;
        }
        st->off[k] = (uint32_t)i;
        st->cls[k] = tok_class(c);
        st->cps[k++] = c;
        i += (size_t)len;
    }
    if (*plain) {
        st->off[k] = (uint32_t)n;
        return (long)k;
    }
    long m = tok_nfc(st, s, n);
    if (m < 0)
        return -1;
    k = (size_t)m;
    r = st->cls;
    if (reserve(&r, &st->cap_cls, k + 1, 1))
        return -1;
    st->cls = r;
    for (size_t i = 0; i < k; i++)
        st->cls[i] = tok_class(st->cps[i]);
    return (long)k;
}

static int encode_segment(const tok_model *m, tok_state *st, const char *s, size_t n)
{
    if (n == 0)
        return ES_OK;
    if (n > UINT32_MAX / 4)
        return ES_ERR_NOMEM;
    int plain;
    long k = segment_cps(st, s, n, &plain);
    if (k < 0)
        return ES_ERR_NOMEM;
    for (size_t i = 0, e; i < (size_t)k; i = e) {
        e = tok_pretok_next(st->cps, st->cls, i, (size_t)k);
        int rc;
        if (plain) {
            rc = tok_bpe_word(m, st, s + st->off[i], st->off[e] - st->off[i]);
        } else {
            void *p = st->piece;
            if (reserve(&p, &st->cap_piece, 4 * (e - i), 1))
                return ES_ERR_NOMEM;
            st->piece = p;
            size_t len = 0;
            for (size_t j = i; j < e; j++)
                len += (size_t)utf8proc_encode_char(st->cps[j], (utf8proc_uint8_t *)st->piece + len);
            rc = tok_bpe_word(m, st, st->piece, len);
        }
        if (rc != ES_OK)
            return rc;
    }
    return ES_OK;
}

int tok_encode(es_context *ctx, const tok_model *m, tok_state *st, const char *text, size_t n)
{
    if (m->chr)
        return tok_char_encode(ctx, m->chr, st, text, n);
    const unsigned char *u = (const unsigned char *)text;
    st->n_ids = 0;
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_seq(u, i, n)))
            return es_fail(ctx, ES_ERR_FORMAT, "text: byte %zu: not valid UTF-8", i);
    size_t seg = 0;
    int rc = ES_OK;
    for (size_t i = 0; i < n && rc == ES_OK;) {
        const tok_added_token *t = m->added.first[u[i]] != m->added.first[u[i] + 1]
                                       ? tok_added_match(&m->added, text, n, i)
                                       : NULL;
        if (!t) {
            i++;
            continue;
        }
        rc = encode_segment(m, st, text + seg, i - seg);
        void *p = st->ids;
        if (rc == ES_OK && (rc = reserve(&p, &st->cap_ids, st->n_ids + 1, sizeof *st->ids)) == ES_OK) {
            st->ids = p;
            st->ids[st->n_ids++] = t->id;
        }
        i += t->len;
        seg = i;
    }
    if (rc == ES_OK)
        rc = encode_segment(m, st, text + seg, n - seg);
    if (rc != ES_OK)
        return es_fail(ctx, rc, "text: out of memory");
    return ES_OK;
}

/* ---- public API ------------------------------------------------------------------ */

ES_API int es_tokenizer_load(es_context *ctx, const char *path, const char *specials,
                             es_tokenizer **out)
{
    es_clear_error(ctx);
    if (!out)
        return es_fail(ctx, ES_ERR_USAGE, "es_tokenizer_load: out is NULL");
    *out = NULL;
    if (!path)
        return es_fail(ctx, ES_ERR_USAGE, "es_tokenizer_load: path is NULL");
    es_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    int rc = tok_model_load(ctx, &t->m, path);
    if (rc == ES_OK)
        rc = tok_add_specials(ctx, &t->m, specials ? specials : "cosyvoice2");
    if (rc != ES_OK) {
        es_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return ES_OK;
}

ES_API int es_tokenizer_load_symbols(es_context *ctx, const char *symbol_table,
                                     const char *non_lang_syms, int split_with_space,
                                     es_tokenizer **out)
{
    es_clear_error(ctx);
    if (!out)
        return es_fail(ctx, ES_ERR_USAGE, "es_tokenizer_load_symbols: out is NULL");
    *out = NULL;
    if (!symbol_table)
        return es_fail(ctx, ES_ERR_USAGE, "es_tokenizer_load_symbols: symbol_table is NULL");
    es_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    int rc = tok_char_load(ctx, &t->m, symbol_table, non_lang_syms, split_with_space);
    if (rc != ES_OK) {
        es_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return ES_OK;
}

ES_API void es_tokenizer_free(es_tokenizer *t)
{
    if (!t)
        return;
    tok_model_release(&t->m);
    tok_state_release(&t->st);
    free(t);
}

ES_API int es_tokenizer_encode(es_context *ctx, es_tokenizer *t, const char *text, size_t len,
                               const uint32_t **ids, size_t *n)
{
    es_clear_error(ctx);
    if (!t || (!text && len) || !n)
        return es_fail(ctx, ES_ERR_USAGE, "es_tokenizer_encode: invalid argument");
    if (ids)
        *ids = NULL;
    *n = 0;
    int rc = tok_encode(ctx, &t->m, &t->st, text ? text : "", len);
    if (rc == ES_OK) {
        if (ids)
            *ids = t->st.ids;
        *n = t->st.n_ids;
    }
    return rc;
}

ES_API int es_tokenizer_get_info(const es_tokenizer *t, es_tokenizer_info *out)
{
    if (!t || !out)
        return ES_ERR_USAGE;
    out->path = t->m.path;
    out->files = t->m.files ? t->m.files : "";
    out->specials = t->m.specials;
    out->vocab_size = t->m.vocab_size;
    out->added_tokens = t->m.chr ? t->m.n_non_lang : t->m.added.n;
    out->digest = t->m.digest;
    out->kind = t->m.chr ? tok_char_kind(t->m.chr) : "qwen2_bpe";
    return ES_OK;
}
