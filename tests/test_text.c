/* The text tokenizer (es_tokenizer_*, src/text/) against truth it did not make:
 *   - every record of ../shared/fixtures/tokenizers/truth.jsonl (Hugging Face's
 *     ids, Oniguruma semantics): `ids` with the cosyvoice2 specials, `ids_cv3`
 *     with cosyvoice3, from the vocab.json + merges.txt folder;
 *   - the one-file tokenizer.json (qwen3-json/) on every truth text holding no
 *     added token of either set;
 *   - the specials' ids against added_tokens_cosyvoice{2,3}.tsv;
 *   - the pre-tokenizer's pieces on hand-made texts (White_Space, case folding,
 *     CRLF runs), BPE order on a tiny vocab, a long word's cost;
 *   - refusals: other model types, other pipelines, missing files, invalid UTF-8;
 *   - the loaded-tokenizer cache: a hit equals a full load; damage and changed
 *     files are misses.
 * The fixture tests SKIP (print and pass) when ../shared is absent. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "check_helpers.h"
#include "text/tokenizer.h"

static const char *tok_fixture(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/../shared/fixtures/tokenizers/%s", getenv("ES_SOURCE_ROOT"), rel);
    return buf;
}

static int have_fixtures(void)
{
    struct stat st;
    if (stat(tok_fixture("truth.jsonl"), &st) == 0)
        return 1;
    printf("SKIP: %s absent\n", tok_fixture("truth.jsonl"));
    return 0;
}

static es_tokenizer *load_ok(const char *path, const char *specials)
{
    es_context *ctx = es_context_new();
    es_tokenizer *t = NULL;
    int rc = es_tokenizer_load(ctx, path, specials, &t);
    ck_assert_msg(rc == ES_OK, "load %s: %s", path, es_errmsg(ctx));
    es_context_free(ctx);
    return t;
}

/* Compares t's ids for text with the JSON list want; prints the first diffs. */
static int same_ids(es_tokenizer *t, json_t *text, json_t *want, const char *id, int *printed)
{
    es_context *ctx = es_context_new();
    const uint32_t *ids;
    size_t n;
    int rc = es_tokenizer_encode(ctx, t, json_string_value(text), json_string_length(text), &ids, &n);
    ck_assert_msg(rc == ES_OK, "%s: %s", id, es_errmsg(ctx));
    es_context_free(ctx);
    int ok = n == json_array_size(want);
    for (size_t i = 0; ok && i < n; i++)
        ok = ids[i] == (uint32_t)json_integer_value(json_array_get(want, i));
    if (!ok && (*printed)++ < 5) {
        printf("%s: got %zu ids:", id, n);
        for (size_t i = 0; i < n && i < 40; i++)
            printf(" %u", ids[i]);
        printf("\n   want %zu:", json_array_size(want));
        for (size_t i = 0; i < json_array_size(want) && i < 40; i++)
            printf(" %lld", (long long)json_integer_value(json_array_get(want, i)));
        printf("\n");
    }
    return ok;
}

typedef struct truth {
    json_t **rec;
    size_t n;
} truth;

static truth read_truth(void)
{
    truth tr = {0};
    FILE *fp = fopen(tok_fixture("truth.jsonl"), "r");
    ck_assert_ptr_nonnull(fp);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, fp) > 0) {
        json_error_t err;
        json_t *r = json_loads(line, JSON_ALLOW_NUL, &err);
        ck_assert_msg(r != NULL, "truth.jsonl: %s", err.text);
        tr.rec = realloc(tr.rec, (tr.n + 1) * sizeof *tr.rec);
        tr.rec[tr.n++] = r;
    }
    free(line);
    fclose(fp);
    return tr;
}

static void free_truth(truth *tr)
{
    for (size_t i = 0; i < tr->n; i++)
        json_decref(tr->rec[i]);
    free(tr->rec);
}

START_TEST(truth_every_record_cosyvoice2_and_3)
{
    if (!have_fixtures())
        return;
    truth tr = read_truth();
    ck_assert_uint_eq(tr.n, 715);
    es_tokenizer *cv2 = load_ok(tok_fixture("qwen2"), "cosyvoice2");
    es_tokenizer *cv3 = load_ok(tok_fixture("qwen2"), "cosyvoice3");
    size_t ok2 = 0, ok3 = 0;
    int printed = 0;
    for (size_t i = 0; i < tr.n; i++) {
        json_t *r = tr.rec[i], *text = json_object_get(r, "text");
        const char *id = json_string_value(json_object_get(r, "id"));
        ok2 += same_ids(cv2, text, json_object_get(r, "ids"), id, &printed);
        ok3 += same_ids(cv3, text, json_object_get(r, "ids_cv3"), id, &printed);
    }
    printf("truth.jsonl: %zu/%zu match (cosyvoice2), %zu/%zu (cosyvoice3)\n", ok2, tr.n, ok3, tr.n);
    ck_assert_uint_eq(ok2, tr.n);
    ck_assert_uint_eq(ok3, tr.n);
    es_tokenizer_free(cv2);
    es_tokenizer_free(cv3);
    free_truth(&tr);
}
END_TEST

/* Does text hold an added token of t (by encoding it: any id past the base vocab)? */
static int holds_added(es_tokenizer *t, json_t *text)
{
    const uint32_t *ids;
    size_t n;
    es_tokenizer_encode(NULL, t, json_string_value(text), json_string_length(text), &ids, &n);
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= 151643)
            return 1;
    return 0;
}

START_TEST(truth_tokenizer_json_without_added_tokens)
{
    if (!have_fixtures())
        return;
    truth tr = read_truth();
    es_tokenizer *js = load_ok(tok_fixture("qwen3-json/tokenizer.json"), "none");
    es_tokenizer *cv3 = load_ok(tok_fixture("qwen2"), "cosyvoice3");
    size_t ok = 0, tried = 0;
    int printed = 0;
    for (size_t i = 0; i < tr.n; i++) {
        json_t *r = tr.rec[i], *text = json_object_get(r, "text");
        if (holds_added(cv3, text) || holds_added(js, text))
            continue;
        tried++;
        ok += same_ids(js, text, json_object_get(r, "ids"), json_string_value(json_object_get(r, "id")),
                       &printed);
    }
    printf("tokenizer.json: %zu/%zu truth texts without added tokens match\n", ok, tried);
    ck_assert_uint_gt(tried, 650);
    ck_assert_uint_eq(ok, tried);
    es_tokenizer_free(js);
    es_tokenizer_free(cv3);
    free_truth(&tr);
}
END_TEST


START_TEST(specials_get_the_ids_hf_gives)
{
    if (!have_fixtures())
        return;
    const char *which[] = {"cosyvoice2", "cosyvoice3"};
    size_t sizes[] = {151663, 151924}, counts[] = {20, 281};
    for (int w = 0; w < 2; w++) {
        es_tokenizer *t = load_ok(tok_fixture("qwen2"), which[w]);
        char name[64];
        snprintf(name, sizeof name, "qwen2/added_tokens_%s.tsv", which[w]);
        FILE *fp = fopen(tok_fixture(name), "r");
        ck_assert_ptr_nonnull(fp);
        char line[256];
        size_t k = 0;
        while (fgets(line, sizeof line, fp)) {
            unsigned id;
            char tok[200];
            ck_assert_int_eq(sscanf(line, "%u\t%199[^\n]", &id, tok), 2);
            const uint32_t *ids;
            size_t n;
            ck_assert_int_eq(es_tokenizer_encode(NULL, t, tok, strlen(tok), &ids, &n), ES_OK);
            ck_assert_msg(n == 1 && ids[0] == id, "%s: %s gives %zu ids, first %u, want %u",
                          which[w], tok, n, n ? ids[0] : 0, id);
            k++;
        }
        fclose(fp);
        ck_assert_uint_eq(k, counts[w]);
        es_tokenizer_info info;
        ck_assert_int_eq(es_tokenizer_get_info(t, &info), ES_OK);
        ck_assert_uint_eq(info.vocab_size, sizes[w]);
        ck_assert_uint_eq(info.added_tokens, counts[w]);
        ck_assert_str_eq(info.specials, which[w]);
        ck_assert_str_eq(info.files, "vocab.json+merges.txt+tokenizer_config.json");
        ck_assert(info.digest != 0);
        es_tokenizer_free(t);
    }
}
END_TEST

/* The pieces of s as the pre-tokenizer cuts them, joined by '|'. */
static const char *pieces(const char *s)
{
    static char out[1024];
    tok_state st = {0};
    tok_model m = {0};
    (void)m;
    size_t n = strlen(s), k = 0, o = 0;
    int32_t cp[256];
    uint8_t cls[256];
    for (size_t i = 0; i < n;) { /* decode (the tests' texts are valid UTF-8) */
        unsigned c = (unsigned char)s[i];
        int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        int32_t v = len == 1 ? (int32_t)c : (int32_t)(c & (0x7F >> len));
        for (int j = 1; j < len; j++)
            v = v << 6 | (s[i + j] & 0x3F);
        cls[k] = tok_class(v);
        cp[k++] = v;
        i += (size_t)len;
    }
    size_t byte = 0, at = 0;
    for (size_t i = 0, e; i < k; i = e) {
        e = tok_pretok_next(cp, cls, i, k);
        if (i)
            out[o++] = '|';
        for (; at < e; at++) { /* copy the bytes of code points i..e */
            unsigned c = (unsigned char)s[byte];
            int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
            memcpy(out + o, s + byte, (size_t)len);
            o += (size_t)len, byte += (size_t)len;
        }
    }
    out[o] = '\0';
    tok_state_release(&st);
    return out;
}

START_TEST(pretokenizer_pieces)
{
    ck_assert_str_eq(pieces("Hello world"), "Hello| world");
    ck_assert_str_eq(pieces("it's It'S we'RE I'll"), "it|'s| It|'S| we|'RE| I|'ll");
    ck_assert_str_eq(pieces("x'\xc5\xbf"), "x|'\xc5\xbf"); /* ſ folds to s */
    ck_assert_str_eq(pieces("x'q"), "x|'q");
    ck_assert_str_eq(pieces("a  b"), "a| | b");
    ck_assert_str_eq(pieces("a \r\n\n  b"), "a| \r\n\n| | b");
    ck_assert_str_eq(pieces("a  "), "a|  ");
    ck_assert_str_eq(pieces("abc123"), "abc|1|2|3");
    ck_assert_str_eq(pieces("...\n\nx"), "...\n\n|x");
    ck_assert_str_eq(pieces("a !!"), "a| !!");
    ck_assert_str_eq(pieces("\t\tword"), "\t|\tword");
    ck_assert_str_eq(pieces("\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96"), /* 你好，世 */
                     "\xe4\xbd\xa0\xe5\xa5\xbd|\xef\xbc\x8c\xe4\xb8\x96");
    /* U+0085 is White_Space (Oniguruma), U+FEFF is not */
    ck_assert_str_eq(pieces("x\xc2\x85\xc2\x85y"), "x|\xc2\x85|\xc2\x85y");
    ck_assert_str_eq(pieces("x\xef\xbb\xbf\xef\xbb\xbf y"), "x|\xef\xbb\xbf\xef\xbb\xbf| y");
}
END_TEST

/* A tiny byte-level model: the 256 byte symbols (ids 0..255 in byte order)
 * plus the tokens the merges make, ids from 256 in merge order. */
static int tiny_model(es_context *ctx, tok_model *m, const char *const *merges, size_t n,
                      const char *config)
{
    es_strbuf v = {0}, mt = {0};
    es_strbuf_puts(&v, "{");
    for (unsigned b = 0; b < 256; b++) {
        uint32_t c = tok_byte_char(b);
        char u[8];
        int k = c < 0x80 ? 1 : 2;
        if (k == 1)
            u[0] = (char)c;
        else
            u[0] = (char)(0xC0 | c >> 6), u[1] = (char)(0x80 | (c & 63));
        es_strbuf_printf(&v, "%s\"%s%.*s\": %u", b ? ", " : "", c == '"' || c == '\\' ? "\\" : "",
                         k, u, b);
    }
    es_strbuf_puts(&mt, "#version: 0.2\n");
    for (size_t i = 0; i < n; i++) {
        char joined[64];
        const char *sp = strchr(merges[i], ' ');
        snprintf(joined, sizeof joined, "%.*s%s", (int)(sp - merges[i]), merges[i], sp + 1);
        es_strbuf_printf(&v, ", \"%s\": %zu", joined, 256 + i);
        es_strbuf_printf(&mt, "%s\n", merges[i]);
    }
    es_strbuf_puts(&v, "}");
    int rc = tok_model_from_memory(ctx, m, v.buf, v.len, mt.buf, mt.len, config,
                                   config ? strlen(config) : 0);
    if (rc == ES_OK)
        rc = tok_add_specials(ctx, m, "none");
    es_strbuf_release(&v);
    es_strbuf_release(&mt);
    return rc;
}

static const char *encode_str(const tok_model *m, tok_state *st, const char *s, size_t n)
{
    static char out[256];
    ck_assert_int_eq(tok_encode(NULL, m, st, s, n), ES_OK);
    size_t o = 0;
    for (size_t i = 0; i < st->n_ids && o < sizeof out - 16; i++)
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%u", i ? " " : "", st->ids[i]);
    out[o] = '\0';
    return out;
}

START_TEST(bpe_lowest_rank_leftmost)
{
    static const char *const merges[] = {"b c", "a b", "a a", "a bc", "aa aa"};
    es_context *ctx = es_context_new();
    tok_model m = {0};
    tok_state st = {0};
    ck_assert_msg(tiny_model(ctx, &m, merges, 5, NULL) == ES_OK, "%s", es_errmsg(ctx));
    /* ids: bc 256, ab 257, aa 258, abc 259, aaaa 260 */
    ck_assert_str_eq(encode_str(&m, &st, "abc", 3), "259");      /* b c first, then a bc */
    ck_assert_str_eq(encode_str(&m, &st, "aaa", 3), "258 97");   /* leftmost of equal ranks */
    ck_assert_str_eq(encode_str(&m, &st, "aaaaa", 5), "260 97");
    ck_assert_str_eq(encode_str(&m, &st, "abab", 4), "257 257");
    ck_assert_str_eq(encode_str(&m, &st, "", 0), "");
    ck_assert_str_eq(encode_str(&m, &st, "a\0b", 3), "97 0 98"); /* NUL is text */
    /* a 200 000-letter word is one piece: n log n, not n² */
    size_t n = 200000;
    char *big = malloc(n);
    memset(big, 'a', n);
    clock_t t0 = clock();
    ck_assert_int_eq(tok_encode(NULL, &m, &st, big, n), ES_OK);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    ck_assert_uint_eq(st.n_ids, n / 4);
    ck_assert_msg(secs < 2, "200 000-letter word took %.2f s", secs);
    free(big);
    tok_state_release(&st);
    tok_model_release(&m);
    es_context_free(ctx);
}
END_TEST

START_TEST(invalid_utf8_is_refused)
{
    static const char *const merges[] = {"a b"};
    es_context *ctx = es_context_new();
    tok_model m = {0};
    tok_state st = {0};
    ck_assert_int_eq(tiny_model(ctx, &m, merges, 1, NULL), ES_OK);
    static const struct { const char *s; size_t n, at; } bad[] = {
        {"ab\xff" "cd", 5, 2}, {"\xed\xa0\x80", 3, 0} /* surrogate */, {"x\xc0\xaf", 3, 1} /* overlong */,
        {"\xe4\xbd", 2, 0} /* truncated */, {"\xf4\x90\x80\x80", 4, 0} /* past U+10FFFF */,
        {"\x80", 1, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(tok_encode(ctx, &m, &st, bad[i].s, bad[i].n), ES_ERR_FORMAT);
        char want[64];
        snprintf(want, sizeof want, "text: byte %zu: not valid UTF-8", bad[i].at);
        ck_assert_str_eq(es_errmsg(ctx), want);
    }
    ck_assert_int_eq(tok_encode(ctx, &m, &st, "\xf4\x8f\xbf\xbf", 4), ES_OK);
    tok_state_release(&st);
    tok_model_release(&m);
    es_context_free(ctx);
}
END_TEST

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(text, fp);
    fclose(fp);
}

/* es_tokenizer_load's error for path, which must contain `want`. */
static void refused(const char *path, const char *specials, int status, const char *want)
{
    es_context *ctx = es_context_new();
    es_tokenizer *t = (es_tokenizer *)1;
    ck_assert_int_eq(es_tokenizer_load(ctx, path, specials, &t), status);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(es_errmsg(ctx), want) != NULL, "'%s' lacks '%s'", es_errmsg(ctx), want);
    ck_assert_ptr_null(strchr(es_errmsg(ctx), '\n'));
    es_context_free(ctx);
}

START_TEST(other_tokenizers_are_refused)
{
    char *dir = make_temp_dir();
    char path[4096];
    refused(dir, NULL, ES_ERR_IO, "not a tokenizer folder: no tokenizer.json, and no vocab.json + merges.txt");
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_file(dir, "tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}");
    refused(path, NULL, ES_ERR_UNSUPPORTED, "tokenizer.json: model type WordPiece: only BPE");
    refused(dir, NULL, ES_ERR_UNSUPPORTED, "model type WordPiece");
    write_file(dir, "tokenizer.json", "{\"model\": {\"type\": \"Unigram\"}}");
    refused(path, NULL, ES_ERR_UNSUPPORTED, "model type Unigram");
    write_file(dir, "tokenizer.json", "{\"model\": {\"type\": \"BPE\"}, \"normalizer\": null, "
               "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}");
    refused(path, NULL, ES_ERR_UNSUPPORTED, "normalizer none: only Qwen2's (NFC)");
    write_file(dir, "tokenizer.json", "{\"model\": {\"type\": \"BPE\"}, \"normalizer\": {\"type\": \"NFC\"}, "
               "\"pre_tokenizer\": {\"type\": \"Metaspace\"}}");
    refused(path, NULL, ES_ERR_UNSUPPORTED, "pre_tokenizer Metaspace: only Qwen2's");
    write_file(dir, "tokenizer.json", "{\"vocab\": 1}");
    refused(path, NULL, ES_ERR_UNSUPPORTED, "no \"model\": not a tokenizer.json");
    write_file(dir, "tokenizer.json", "not json");
    refused(path, NULL, ES_ERR_FORMAT, "tokenizer.json: line 1: not JSON");
    remove(path);
    /* a vocab.json + merges.txt folder */
    write_file(dir, "vocab.json", "{\"a\": 0, \"b\": 1}");
    write_file(dir, "merges.txt", "#version: 0.2\na b\n");
    refused(dir, NULL, ES_ERR_UNSUPPORTED, "vocab.json: no symbol for byte 0x00: not a byte-level BPE vocab");
    write_file(dir, "vocab.json", "[1, 2]");
    refused(dir, NULL, ES_ERR_FORMAT, "vocab.json: byte 0: not a vocab");
    es_context *ctx = es_context_new();
    tok_model m = {0};
    static const char *const merges[] = {"a b"};
    ck_assert_int_eq(tiny_model(ctx, &m, merges, 1, "{\"tokenizer_class\": \"GPT2Tokenizer\"}"),
                     ES_ERR_UNSUPPORTED);
    ck_assert_str_eq(es_errmsg(ctx), "tokenizer_config.json: tokenizer_class GPT2Tokenizer: only "
                                     "Qwen2's byte-level BPE (Qwen2Tokenizer) is supported");
    tok_model_release(&m);
    es_context_free(ctx);
    if (have_fixtures())
        refused(tok_fixture("qwen2"), "cosyvoice4", ES_ERR_USAGE,
                "specials 'cosyvoice4': expected cosyvoice2, cosyvoice3 or none");
    free(dir);
}
END_TEST

/* ---- the loaded-tokenizer cache (tok_cache.c) ---------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "%s", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const char *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_msg(fp != NULL, "%s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
    fclose(fp);
}

/* The one cache file in dir (its path in buf), or "" when there is none. */
static const char *cache_file(const char *dir, char *buf, size_t size)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    buf[0] = '\0';
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, "tokenizer-", 10) == 0 && ++n)
            snprintf(buf, size, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    ck_assert_int_le(n, 1);
    return buf;
}

static void copy_fixture(const char *dir, const char *name)
{
    char from[4096], to[4096];
    size_t len;
    snprintf(from, sizeof from, "%s", tok_fixture("qwen2"));
    snprintf(from + strlen(from), sizeof from - strlen(from), "/%s", name);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    char *data = slurp(from, &len);
    spit(to, data, len);
    free(data);
}

static int every_truth_matches(es_tokenizer *t, const truth *tr)
{
    size_t ok = 0;
    int printed = 0;
    for (size_t i = 0; i < tr->n; i++) {
        json_t *r = tr->rec[i];
        ok += same_ids(t, json_object_get(r, "text"), json_object_get(r, "ids_cv3"),
                       json_string_value(json_object_get(r, "id")), &printed);
    }
    return ok == tr->n;
}

static const char *ids_of(es_tokenizer *t, const char *text, char *buf, size_t size)
{
    const uint32_t *ids;
    size_t n, at = 0;
    size_t count = 0; /* without ids: their number only */
    ck_assert_int_eq(es_tokenizer_encode(NULL, t, text, strlen(text), NULL, &count), ES_OK);
    ck_assert_int_eq(es_tokenizer_encode(NULL, t, text, strlen(text), &ids, &n), ES_OK);
    ck_assert_uint_eq(count, n);
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%u ", ids[i]);
    return buf;
}

/* A hit gives what a full load gives; a corrupt, truncated or foreign cache
 * file and a changed tokenizer file are misses that load in full and rewrite
 * the cache: never a wrong id. */
START_TEST(cache_hit_equals_full_load)
{
    if (!have_fixtures())
        return;
    char *cache = make_temp_dir(), *dir = make_temp_dir(), file[4096];
    setenv("EQUISHARD_CACHE_DIR", cache, 1);
    copy_fixture(dir, "vocab.json");
    copy_fixture(dir, "merges.txt");
    copy_fixture(dir, "tokenizer_config.json");
    truth tr = read_truth();

    es_tokenizer *cold = load_ok(dir, "cosyvoice3");
    ck_assert_ptr_null(cold->m.merges.unmap);
    ck_assert_str_ne(cache_file(cache, file, sizeof file), "");
    es_tokenizer *warm = load_ok(dir, "cosyvoice3");
    ck_assert_ptr_nonnull(warm->m.merges.unmap); /* read from the cache */
    es_tokenizer_info a, b;
    es_tokenizer_get_info(cold, &a);
    es_tokenizer_get_info(warm, &b);
    ck_assert_uint_eq(a.vocab_size, b.vocab_size);
    ck_assert_uint_eq(a.added_tokens, b.added_tokens);
    ck_assert(a.digest == b.digest);
    ck_assert_str_eq(a.files, b.files);
    ck_assert(every_truth_matches(warm, &tr));
    es_tokenizer_free(warm);

    /* a flipped byte, a truncation, another file's bytes: each a miss, then rewritten */
    size_t len;
    char *good = slurp(file, &len);
    for (int damage = 0; damage < 3; damage++) {
        char *bad = malloc(len);
        memcpy(bad, good, len);
        if (damage == 0)
            bad[len / 2] ^= 0x10;
        spit(file, damage == 2 ? "not a cache" : bad, damage == 1 ? len - 100 : damage == 2 ? 11 : len);
        free(bad);
        es_tokenizer *t = load_ok(dir, "cosyvoice3");
        ck_assert_ptr_null(t->m.merges.unmap);
        ck_assert(every_truth_matches(t, &tr));
        es_tokenizer_free(t);
        t = load_ok(dir, "cosyvoice3");
        ck_assert_ptr_nonnull(t->m.merges.unmap);
        es_tokenizer_free(t);
    }
    free(good);

    /* merges.txt without "Ġ t" (rank 2): " the" needs other merges; the cache
     * must not answer with the old table */
    char path[4096], before[256], after[256], fresh[256];
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    char *merges = slurp(path, &len);
    char *cut = strstr(merges, "\n\xC4\xA0 t\n");
    ck_assert_ptr_nonnull(cut);
    memmove(cut, cut + 4, len - (size_t)(cut + 4 - merges) + 1);
    spit(path, merges, strlen(merges));
    free(merges);
    ids_of(cold, " the tree", before, sizeof before);
    es_tokenizer *changed = load_ok(dir, "cosyvoice3");
    ck_assert_ptr_null(changed->m.merges.unmap);
    ids_of(changed, " the tree", after, sizeof after);
    ck_assert_str_ne(before, after);
    setenv("EQUISHARD_CACHE_DIR", "off", 1);
    es_tokenizer *off = load_ok(dir, "cosyvoice3");
    ck_assert_str_eq(ids_of(off, " the tree", fresh, sizeof fresh), after);
    setenv("EQUISHARD_CACHE_DIR", cache, 1);
    es_tokenizer *again = load_ok(dir, "cosyvoice3");
    ck_assert_ptr_nonnull(again->m.merges.unmap);
    ck_assert_str_eq(ids_of(again, " the tree", fresh, sizeof fresh), after);
    es_tokenizer_free(again);
    es_tokenizer_free(off);
    es_tokenizer_free(changed);
    es_tokenizer_free(cold);
    free_truth(&tr);
    free(cache);
    free(dir);
}
END_TEST

/* vocab.json as a JSON object: a string given twice keeps its last id. */
START_TEST(vocab_duplicate_key_keeps_last_id)
{
    es_context *ctx = es_context_new();
    es_strbuf v = {0};
    es_strbuf_puts(&v, "{\"a\": 300, ");
    for (unsigned b = 0; b < 256; b++) {
        char sym[8];
        uint32_t c = tok_byte_char(b);
        size_t n = c < 0x80 ? (sym[0] = (char)c, 1)
                            : (sym[0] = (char)(0xC0 | c >> 6), sym[1] = (char)(0x80 | (c & 63)), 2);
        es_strbuf_putc(&v, '"');
        if (c == '"' || c == '\\')
            es_strbuf_putc(&v, '\\');
        es_strbuf_append(&v, sym, n);
        es_strbuf_printf(&v, "\": %u, ", b == 'a' ? 256u : b);
    }
    v.len -= 2;
    es_strbuf_puts(&v, "}");
    tok_model m = {0};
    ck_assert_int_eq(tok_model_from_memory(ctx, &m, v.buf, v.len, "", 0, NULL, 0), ES_OK);
    ck_assert_uint_eq(m.byte_id['a'], 256);
    ck_assert_uint_eq(m.n_vocab, 256);
    tok_model_release(&m);
    es_strbuf_release(&v);
    es_context_free(ctx);
}
END_TEST

Suite *text_suite(void)
{
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("tokenizer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, truth_every_record_cosyvoice2_and_3);
    tcase_add_test(tc, truth_tokenizer_json_without_added_tokens);
    tcase_add_test(tc, specials_get_the_ids_hf_gives);
    tcase_add_test(tc, pretokenizer_pieces);
    tcase_add_test(tc, bpe_lowest_rank_leftmost);
    tcase_add_test(tc, invalid_utf8_is_refused);
    tcase_add_test(tc, other_tokenizers_are_refused);
    tcase_add_test(tc, cache_hit_equals_full_load);
    tcase_add_test(tc, vocab_duplicate_key_keeps_last_id);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(text_suite());
}
