/* Loading a tokenizer: a folder laid out as CosyVoice-BlankEN is (vocab.json,
 * merges.txt, tokenizer_config.json: what transformers' Qwen2Converter turns
 * into the fast tokenizer), or HF's one-file tokenizer.json. Both must describe
 * Qwen2's pipeline (byte-level BPE, NFC, the Qwen2 split); anything else is
 * refused with one line naming the file and what it holds, since ids from a
 * different pipeline would be silently wrong.
 *
 * vocab.json (3 MB) is read by a small parser of its one shape, an object of
 * string → integer, because a general JSON tree of 151 643 members costs more
 * than the whole rest of loading; the small config files and tokenizer.json
 * (whose checks need the tree) go through jansson. */
#include "text/tok_model.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "core/strbuf.h"
#include "text/tok_cache.h"

/* Qwen2's Split pattern, as tokenizer.json spells it. */
static const char qwen2_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* ---- vocab.json: {"string": id, ...} ----------------------------------------- */

typedef struct jp {
    const char *p, *end, *base;
} jp;

static void skip_ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int hex4(const char *p, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

static void put_utf8(es_strbuf *sb, uint32_t c)
{
    char b[4];
    size_t n;
    if (c < 0x80)
        b[0] = (char)c, n = 1;
    else if (c < 0x800)
        b[0] = (char)(0xC0 | c >> 6), b[1] = (char)(0x80 | (c & 63)), n = 2;
    else if (c < 0x10000)
        b[0] = (char)(0xE0 | c >> 12), b[1] = (char)(0x80 | (c >> 6 & 63)),
        b[2] = (char)(0x80 | (c & 63)), n = 3;
    else
        b[0] = (char)(0xF0 | c >> 18), b[1] = (char)(0x80 | (c >> 12 & 63)),
        b[2] = (char)(0x80 | (c >> 6 & 63)), b[3] = (char)(0x80 | (c & 63)), n = 4;
    es_strbuf_append(sb, b, n);
}

/* A JSON string at j->p into sb (reset first). Returns 0 or -1. */
static int vocab_string(jp *j, es_strbuf *sb)
{
    sb->len = 0;
    if (j->p >= j->end || *j->p != '"')
        return -1;
    j->p++;
    while (j->p < j->end && *j->p != '"') {
        const char *s = j->p;
        while (j->p < j->end && *j->p != '"' && *j->p != '\\' && (unsigned char)*j->p >= 0x20)
            j->p++;
        es_strbuf_append(sb, s, (size_t)(j->p - s));
        if (j->p >= j->end || *j->p == '"')
            break;
        if (*j->p != '\\' || j->end - j->p < 2)
            return -1; /* a raw control character */
        char e = j->p[1];
        j->p += 2;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            es_strbuf_putc(sb, "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"]);
            continue;
        }
        uint32_t c, lo;
        if (e != 'u' || j->end - j->p < 4 || hex4(j->p, &c))
            return -1;
        j->p += 4;
        if (c >= 0xDC00 && c < 0xE000)
            return -1;
        if (c >= 0xD800 && c < 0xDC00) {
            if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || hex4(j->p + 2, &lo) ||
                lo < 0xDC00 || lo >= 0xE000)
                return -1;
            j->p += 6;
            c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
        }
        put_utf8(sb, c);
    }
    if (j->p >= j->end || sb->oom)
        return -1;
    j->p++;
    return 0;
}

static int parse_vocab(es_context *ctx, tok_vocab *v, const char *name, const char *data,
                       size_t len)
{
    jp j = {data, data + len, data};
    es_strbuf key = {0};
    int rc = ES_OK;
    /* every entry has a ':': room for all of them up front, no rehash */
    size_t colons = 0;
    for (const char *p = data; (p = memchr(p, ':', (size_t)(data + len - p))); p++)
        colons++;
    if (tok_vocab_reserve(v, colons) != ES_OK)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    skip_ws(&j);
    if (j.p >= j.end || *j.p != '{')
        goto bad;
    j.p++;
    skip_ws(&j);
    if (j.p < j.end && *j.p == '}')
        j.p++;
    else
        for (;;) {
            skip_ws(&j);
            if (vocab_string(&j, &key))
                goto bad;
            skip_ws(&j);
            if (j.p >= j.end || *j.p++ != ':')
                goto bad;
            skip_ws(&j);
            uint64_t id = 0;
            const char *digits = j.p;
            while (j.p < j.end && *j.p >= '0' && *j.p <= '9' && id < TOK_NONE)
                id = id * 10 + (uint64_t)(*j.p++ - '0');
            if (j.p == digits || id >= TOK_NONE || (j.p < j.end && (*j.p == '.' || *j.p == 'e')))
                goto bad;
            if (key.len == 0)
                goto bad;
            if (id >= colons + TOK_ID_SLACK) {
                rc = es_fail(ctx, ES_ERR_FORMAT, "%s: byte %zu: id %llu is beyond the vocab's "
                             "%zu entries (a vocab's ids run 0..n-1; at most n + %u is read)",
                             name, (size_t)(digits - j.base), (unsigned long long)id, colons,
                             TOK_ID_SLACK);
                es_strbuf_release(&key);
                return rc;
            }
            if ((rc = tok_vocab_put(v, key.buf, key.len, (uint32_t)id)) != ES_OK) {
                es_strbuf_release(&key);
                return es_fail(ctx, rc, "%s: out of memory", name);
            }
            skip_ws(&j);
            if (j.p < j.end && *j.p == ',') {
                j.p++;
                continue;
            }
            if (j.p < j.end && *j.p == '}') {
                j.p++;
                break;
            }
            goto bad;
        }
    skip_ws(&j);
    if (j.p != j.end)
        goto bad;
    es_strbuf_release(&key);
    return ES_OK;
bad:
    es_strbuf_release(&key);
    return es_fail(ctx, ES_ERR_FORMAT,
                   "%s: byte %zu: not a vocab (a JSON object of token string to integer id)", name,
                   (size_t)(j.p - j.base));
}

/* ---- merges ------------------------------------------------------------------- */

/* One merge "a b" of the given rank: both parts and the merged token must be
 * in the vocab. In the files HF writes, the merged token of rank r has id
 * 256 + r (the id after the previous merge's), so that id is compared first
 * and the lookup is done only when it is not the one. */
typedef struct merge_ctx {
    tok_model *m;
    const tok_vocab *v;
    const char *name;
    uint32_t last_id; /* the previous merge's token, TOK_NONE before the first */
    es_strbuf tmp;
} merge_ctx;

static int add_merge(es_context *ctx, merge_ctx *mc, size_t line, const char *a, size_t na,
                     const char *b, size_t nb, uint32_t rank)
{
    const tok_vocab *v = mc->v;
    uint32_t l = tok_vocab_get(v, a, na);
    uint32_t r = tok_vocab_get(v, b, nb);
    uint32_t id = mc->last_id == TOK_NONE ? 256 : mc->last_id + 1;
    if (!tok_vocab_is(v, id, a, na, b, nb)) {
        mc->tmp.len = 0;
        es_strbuf_append(&mc->tmp, a, na);
        es_strbuf_append(&mc->tmp, b, nb);
        if (mc->tmp.oom)
            return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", mc->name);
        id = tok_vocab_get(v, mc->tmp.buf, mc->tmp.len);
    }
    if (l == TOK_NONE || r == TOK_NONE || id == TOK_NONE)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: merge %zu: '%.*s %.*s': %s is not in the vocab",
                       mc->name, line, (int)na, a, (int)nb, b,
                       l == TOK_NONE ? "its left part" : r == TOK_NONE ? "its right part"
                                                             : "the merged token");
    tok_merges_put(&mc->m->merges, l, r, rank, id);
    mc->last_id = id;
    return ES_OK;
}

/* merges.txt as the slow Qwen2Tokenizer reads it: a first "#version" line and
 * empty lines skipped, every other line "left right"; rank = merge index. */
static int parse_merges_txt(es_context *ctx, tok_model *m, const tok_vocab *v, const char *name,
                            const char *data, size_t len)
{
    size_t lines = 1;
    for (const char *p = data; (p = memchr(p, '\n', (size_t)(data + len - p))); p++)
        lines++;
    if (tok_merges_reserve(&m->merges, lines) != ES_OK)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    merge_ctx mc = {m, v, name, TOK_NONE, {0}};
    uint32_t rank = 0;
    size_t line = 0;
    int rc = ES_OK;
    for (const char *p = data, *end = data + len; p < end && rc == ES_OK; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end, *s = p;
        p = nl ? nl + 1 : end;
        while (e > s && (e[-1] == '\r' || e[-1] == ' '))
            e--;
        if (e == s || (line == 0 && e - s >= 8 && memcmp(s, "#version", 8) == 0))
            continue;
        const char *sp = memchr(s, ' ', (size_t)(e - s));
        if (!sp || memchr(sp + 1, ' ', (size_t)(e - sp - 1)) || sp == s || sp + 1 == e) {
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: line %zu: not a merge 'left right'", name,
                         line + 1);
            break;
        }
        rc = add_merge(ctx, &mc, line + 1, s, (size_t)(sp - s), sp + 1, (size_t)(e - sp - 1),
                       rank++);
    }
    es_strbuf_release(&mc.tmp);
    return rc;
}

/* ---- added tokens ------------------------------------------------------------- */

static int flag_true(json_t *o, const char *k) { return json_is_true(json_object_get(o, k)); }

static int add_config_token(es_context *ctx, tok_model *m, const char *name, json_t *o,
                            json_int_t id)
{
    json_t *content = json_object_get(o, "content");
    if (!json_is_string(content) || json_string_length(content) == 0 || id < 0 ||
        id >= (json_int_t)TOK_NONE)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: an added token without content or id", name);
    const char *s = json_string_value(content);
    /* HF matches normalized tokens after normalization and strips or checks
     * words around the others; none of Qwen2's or CosyVoice's does either. */
    if (flag_true(o, "normalized") || flag_true(o, "lstrip") || flag_true(o, "rstrip") ||
        flag_true(o, "single_word"))
        return es_fail(ctx, ES_ERR_UNSUPPORTED,
                       "%s: added token %s: normalized, lstrip, rstrip or single_word is set; "
                       "only plain added tokens (Qwen2's) are supported", name, s);
    if (tok_added_add(&m->added, s, json_string_length(content), (uint32_t)id) != ES_OK)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    return ES_OK;
}

/* tokenizer_config.json: added_tokens_decoder, and a class we can stand for. */
static int parse_config(es_context *ctx, tok_model *m, const char *name, const char *data,
                        size_t len)
{
    json_error_t err;
    json_t *root = json_loadb(data, len, 0, &err);
    if (!json_is_object(root)) {
        json_decref(root);
        return es_fail(ctx, ES_ERR_FORMAT, "%s: line %d: not a JSON object: %s", name, err.line,
                       err.text);
    }
    int rc = ES_OK;
    json_t *cls = json_object_get(root, "tokenizer_class");
    const char *c = json_string_value(cls);
    if (c && strcmp(c, "Qwen2Tokenizer") != 0 && strcmp(c, "Qwen2TokenizerFast") != 0)
        rc = es_fail(ctx, ES_ERR_UNSUPPORTED,
                     "%s: tokenizer_class %s: only Qwen2's byte-level BPE (Qwen2Tokenizer) "
                     "is supported", name, c);
    json_t *dec = json_object_get(root, "added_tokens_decoder");
    const char *k;
    json_t *v;
    json_object_foreach(dec, k, v) {
        if (rc != ES_OK)
            break;
        char *end;
        errno = 0;
        long long id = strtoll(k, &end, 10);
        if (*end || errno || !json_is_object(v))
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: added_tokens_decoder: bad entry '%s'", name, k);
        else
            rc = add_config_token(ctx, m, name, v, id);
    }
    json_decref(root);
    return rc;
}

/* ---- tokenizer.json ----------------------------------------------------------- */

static const char *type_of(json_t *o)
{
    const char *t = json_string_value(json_object_get(o, "type"));
    return t ? t : json_is_null(o) || !o ? "none" : "?";
}

/* The pipeline must be Qwen2's: NFC, Split(Qwen2 regex, Isolated), ByteLevel. */
static int check_pipeline(es_context *ctx, const char *name, json_t *root, json_t *model)
{
    json_t *norm = json_object_get(root, "normalizer");
    if (strcmp(type_of(norm), "NFC") != 0)
        return es_fail(ctx, ES_ERR_UNSUPPORTED,
                       "%s: normalizer %s: only Qwen2's (NFC) is supported", name, type_of(norm));
    json_t *pre = json_object_get(root, "pre_tokenizer");
    json_t *seq = json_object_get(pre, "pretokenizers");
    json_t *split = json_array_get(seq, 0), *bl = json_array_get(seq, 1);
    const char *re = json_string_value(json_object_get(json_object_get(split, "pattern"), "Regex"));
    if (strcmp(type_of(pre), "Sequence") != 0 || json_array_size(seq) != 2 ||
        strcmp(type_of(split), "Split") != 0 || !re || strcmp(re, qwen2_pattern) != 0 ||
        strcmp(json_string_value(json_object_get(split, "behavior")) ?: "", "Isolated") != 0 ||
        flag_true(split, "invert") || strcmp(type_of(bl), "ByteLevel") != 0 ||
        flag_true(bl, "add_prefix_space") || flag_true(bl, "use_regex"))
        return es_fail(ctx, ES_ERR_UNSUPPORTED,
                       "%s: pre_tokenizer %s: only Qwen2's (Split with its regex, then "
                       "ByteLevel) is supported", name, type_of(pre));
    const char *cp = json_string_value(json_object_get(model, "continuing_subword_prefix"));
    const char *ew = json_string_value(json_object_get(model, "end_of_word_suffix"));
    if (flag_true(model, "byte_fallback") || flag_true(model, "ignore_merges") ||
        (cp && *cp) || (ew && *ew) || json_is_number(json_object_get(model, "dropout")))
        return es_fail(ctx, ES_ERR_UNSUPPORTED,
                       "%s: BPE with byte_fallback, ignore_merges, dropout or subword affixes: "
                       "only Qwen2's plain byte-level BPE is supported", name);
    return ES_OK;
}

static int json_vocab(es_context *ctx, tok_vocab *vo, const char *name, json_t *vocab)
{
    const char *k;
    json_t *v;
    if (!json_is_object(vocab))
        return es_fail(ctx, ES_ERR_FORMAT, "%s: model.vocab is not an object", name);
    if (tok_vocab_reserve(vo, json_object_size(vocab)) != ES_OK)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    json_object_foreach(vocab, k, v) {
        json_int_t id = json_integer_value(v);
        size_t n = json_object_iter_key_len(json_object_key_to_iter(k));
        if (!json_is_integer(v) || id < 0 || id >= (json_int_t)TOK_NONE || n == 0)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: model.vocab: bad entry '%s'", name, k);
        if ((size_t)id >= json_object_size(vocab) + TOK_ID_SLACK)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: model.vocab: '%s': id %lld is beyond the "
                           "vocab's %zu entries (a vocab's ids run 0..n-1; at most n + %u is "
                           "read)", name, k, (long long)id, json_object_size(vocab), TOK_ID_SLACK);
        if (tok_vocab_put(vo, k, n, (uint32_t)id) != ES_OK)
            return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    }
    return ES_OK;
}

static int json_merges(es_context *ctx, tok_model *m, const tok_vocab *v, const char *name,
                       json_t *merges)
{
    if (!json_is_array(merges) || tok_merges_reserve(&m->merges, json_array_size(merges)))
        return es_fail(ctx, json_is_array(merges) ? ES_ERR_NOMEM : ES_ERR_FORMAT,
                       "%s: model.merges is not a list", name);
    merge_ctx mc = {m, v, name, TOK_NONE, {0}};
    int rc = ES_OK;
    for (size_t i = 0; i < json_array_size(merges) && rc == ES_OK; i++) {
        json_t *e = json_array_get(merges, i);
        const char *a, *b;
        size_t na, nb;
        if (json_is_string(e)) { /* older files: "left right" */
            a = json_string_value(e);
            const char *sp = strchr(a, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                rc = es_fail(ctx, ES_ERR_FORMAT, "%s: merge %zu is not 'left right'", name, i);
                break;
            }
            na = (size_t)(sp - a), b = sp + 1, nb = strlen(b);
        } else if (json_array_size(e) == 2 && json_is_string(json_array_get(e, 0)) &&
                   json_is_string(json_array_get(e, 1))) {
            a = json_string_value(json_array_get(e, 0)), na = json_string_length(json_array_get(e, 0));
            b = json_string_value(json_array_get(e, 1)), nb = json_string_length(json_array_get(e, 1));
        } else {
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: merge %zu is not a pair of strings", name, i);
            break;
        }
        rc = add_merge(ctx, &mc, i, a, na, b, nb, (uint32_t)i);
    }
    es_strbuf_release(&mc.tmp);
    return rc;
}

static int parse_tokenizer_json(es_context *ctx, tok_model *m, tok_vocab *v, const char *name,
                                const char *data, size_t len)
{
    json_error_t err;
    json_t *root = json_loadb(data, len, 0, &err);
    json_t *model = json_object_get(root, "model");
    int rc = ES_OK;
    if (!json_is_object(root))
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: line %d: not JSON: %s", name, err.line, err.text);
    else if (!json_is_object(model))
        rc = es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: no \"model\": not a tokenizer.json", name);
    else if (strcmp(type_of(model), "BPE") != 0)
        rc = es_fail(ctx, ES_ERR_UNSUPPORTED,
                     "%s: model type %s: only BPE (Qwen2's byte-level) is supported", name,
                     type_of(model));
    else
        rc = check_pipeline(ctx, name, root, model);
    if (rc == ES_OK)
        rc = json_vocab(ctx, v, name, json_object_get(model, "vocab"));
    if (rc == ES_OK)
        rc = json_merges(ctx, m, v, name, json_object_get(model, "merges"));
    json_t *added = json_object_get(root, "added_tokens"), *t;
    size_t i;
    json_array_foreach(added, i, t) {
        if (rc != ES_OK)
            break;
        /* json_integer_value is 0 for a missing or quoted id: token 0, silently */
        json_t *id = json_object_get(t, "id");
        if (!json_is_integer(id))
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: added_tokens[%zu]: \"id\" is %s, not an "
                         "integer", name, i, id ? "another type" : "missing");
        else
            rc = add_config_token(ctx, m, name, t, json_integer_value(id));
    }
    json_decref(root);
    return rc;
}

/* ---- the model ------------------------------------------------------------------ */

/* Every byte needs its symbol, or a text could hold a byte BPE cannot start from. */
static int byte_symbols(es_context *ctx, tok_model *m, const tok_vocab *v, const char *name)
{
    for (unsigned b = 0; b < 256; b++) {
        es_strbuf s = {0};
        put_utf8(&s, tok_byte_char(b));
        m->byte_id[b] = s.oom ? TOK_NONE : tok_vocab_get(v, s.buf, s.len);
        es_strbuf_release(&s);
        if (m->byte_id[b] == TOK_NONE)
            return es_fail(ctx, ES_ERR_UNSUPPORTED,
                           "%s: no symbol for byte 0x%02x: not a byte-level BPE vocab", name, b);
    }
    return ES_OK;
}

/* What the model keeps of the vocab once loading is done (tok_model.h). */
static int keep_vocab_facts(es_context *ctx, tok_model *m, const tok_vocab *v)
{
    m->n_vocab = v->n_entries;
    m->n_vocab_ids = v->n_ids;
    m->vocab_ids = calloc(tok_vocab_id_words(v->n_ids), sizeof *m->vocab_ids);
    if (!m->vocab_ids || tok_specials_resolve(m, v) != ES_OK)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (size_t e = 0; e < v->n_all; e++)
        if (v->id[e] != TOK_NONE)
            m->vocab_ids[v->id[e] / 64] |= 1ull << (v->id[e] % 64);
    return ES_OK;
}

int tok_model_from_memory(es_context *ctx, tok_model *m, const char *vocab_json, size_t vlen,
                          const char *merges_txt, size_t mlen, const char *config_json,
                          size_t clen)
{
    const char *vname = "vocab.json";
    tok_vocab v = {0};
    int rc = parse_vocab(ctx, &v, vname, vocab_json, vlen);
    if (rc == ES_OK)
        rc = byte_symbols(ctx, m, &v, vname);
    if (rc == ES_OK)
        rc = parse_merges_txt(ctx, m, &v, "merges.txt", merges_txt, mlen);
    if (rc == ES_OK && config_json)
        rc = parse_config(ctx, m, "tokenizer_config.json", config_json, clen);
    if (rc == ES_OK)
        rc = keep_vocab_facts(ctx, m, &v);
    tok_vocab_release(&v);
    return rc;
}

static char *join(const char *dir, const char *file)
{
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, file);
    return p;
}

static int exists(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int load_json_file(es_context *ctx, tok_model *m, const char *file)
{
    tok_sources src = {{file}, 1, {{0}}};
    tok_sources_stat(&src);
    if (tok_cache_load(m, &src) == 0)
        return ES_OK;
    char *data = NULL;
    size_t len = 0;
    int rc = tok_read_file(ctx, file, &data, &len);
    tok_vocab v = {0};
    if (rc == ES_OK) {
        m->digest = XXH3_64bits(data, len);
        rc = parse_tokenizer_json(ctx, m, &v, file, data, len);
        if (rc == ES_OK)
            rc = byte_symbols(ctx, m, &v, file);
        if (rc == ES_OK)
            rc = keep_vocab_facts(ctx, m, &v);
    }
    tok_vocab_release(&v);
    free(data);
    if (rc == ES_OK && !(m->files = strdup("tokenizer.json")))
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    if (rc == ES_OK)
        tok_cache_store(m, &src);
    return rc;
}

/* vocab.json + merges.txt (+ tokenizer_config.json), each named by its full
 * path in messages. */
static int load_files(es_context *ctx, tok_model *m, const char *dir, tok_sources *src)
{
    tok_sources_stat(src);
    if (tok_cache_load(m, src) == 0)
        return ES_OK;
    const char *config = src->before[2].present ? src->file[2] : NULL;
    char *vd = NULL, *md = NULL, *cd = NULL;
    size_t vl = 0, ml = 0, cl = 0;
    int rc;
    if ((rc = tok_read_file(ctx, src->file[0], &vd, &vl)) == ES_OK &&
        (rc = tok_read_file(ctx, src->file[1], &md, &ml)) == ES_OK &&
        (!config || (rc = tok_read_file(ctx, config, &cd, &cl)) == ES_OK)) {
        XXH3_state_t *h = XXH3_createState();
        if (h) {
            XXH3_64bits_reset(h);
            XXH3_64bits_update(h, vd, vl);
            XXH3_64bits_update(h, md, ml);
            m->digest = XXH3_64bits_digest(h);
            XXH3_freeState(h);
        }
        m->files = strdup(cd ? "vocab.json+merges.txt+tokenizer_config.json"
                             : "vocab.json+merges.txt");
        rc = m->files ? tok_model_from_memory(ctx, m, vd, vl, md, ml, cd, cl)
                      : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        if (rc != ES_OK) {
            /* name the files by their full paths */
            char msg[sizeof ctx->msg];
            snprintf(msg, sizeof msg, "%s", es_errmsg(ctx));
            es_fail(ctx, rc, "%s/%s", dir, msg);
        }
    }
    free(vd), free(md), free(cd);
    if (rc == ES_OK)
        tok_cache_store(m, src);
    return rc;
}

static int load_folder(es_context *ctx, tok_model *m, const char *dir)
{
    char *vocab = join(dir, "vocab.json"), *merges = join(dir, "merges.txt");
    char *config = join(dir, "tokenizer_config.json"), *one = join(dir, "tokenizer.json");
    int rc;
    if (!vocab || !merges || !config || !one)
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    else if (exists(one)) /* what HF's fast tokenizer loads when it is there */
        rc = load_json_file(ctx, m, one);
    else if (!exists(vocab) || !exists(merges))
        rc = es_fail(ctx, ES_ERR_IO,
                     "%s: not a tokenizer folder: no tokenizer.json, and no vocab.json + merges.txt",
                     dir);
    else
        rc = load_files(ctx, m, dir, &(tok_sources){{vocab, merges, config}, 3, {{0}}});
    free(vocab), free(merges), free(config), free(one);
    return rc;
}

int tok_model_load(es_context *ctx, tok_model *m, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", path, strerror(errno));
    if (!(m->path = strdup(path)))
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    return S_ISDIR(st.st_mode) ? load_folder(ctx, m, path) : load_json_file(ctx, m, path);
}

void tok_model_release(tok_model *m)
{
    free(m->special_vocab_id);
    free(m->vocab_ids);
    tok_merges_release(&m->merges);
    tok_added_release(&m->added);
    tok_char_free(m->chr);
    free(m->path);
    free(m->files);
    memset(m, 0, sizeof *m);
}
