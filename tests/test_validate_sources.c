/* Embedding sources: torch .pt (zip + strict unpickler), plain pickles, .npy,
 * key lists, utt2spk and CosyVoice parquet columns. Expected values come from
 * Python's standard library reading the same bytes (tests/validate_cases.py:
 * zipfile, pickle, struct), from the fixture README and truth.tsv, never from
 * equishard's own output. Hostile and malformed inputs are refused with a
 * clear message. */
#include "check_helpers.h"
#include "validate/sources/emb_set.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *cases_dir;

/* Two rotating buffers, so that two paths can be arguments of one call. */
static const char *case_path(const char *name)
{
    static char buf[2][4096];
    static int k;
    k = !k;
    snprintf(buf[k], sizeof buf[k], "%s/%s", cases_dir, name);
    return buf[k];
}

static const char *script(void)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/tests/validate_cases.py", getenv("ES_SOURCE_ROOT"));
    return buf;
}

static es_emb_set *load_ok(const char *path, const char *keys, int speakers)
{
    es_context *ctx = es_context_new();
    es_emb_set *s = NULL;
    int rc = es_emb_set_load(ctx, path, keys, speakers, &s);
    ck_assert_msg(rc == ES_OK, "%s: %s", path, es_errmsg(ctx));
    es_context_free(ctx);
    return s;
}

/* Loads a source expected to fail; returns the message (static). */
static const char *load_fails(const char *path, const char *keys, int want_status)
{
    static char msg[1024];
    es_context *ctx = es_context_new();
    es_emb_set *s = NULL;
    int rc = es_emb_set_load(ctx, path, keys, 0, &s);
    snprintf(msg, sizeof msg, "%s", es_errmsg(ctx));
    ck_assert_msg(rc == want_status, "%s: status %s, expected %s (%s)", path, es_status_name(rc),
                  es_status_name(want_status), msg);
    ck_assert_ptr_null(s);
    ck_assert_msg(strchr(msg, '\n') == NULL && strstr(msg, path) != NULL, "message: %s", msg);
    es_context_free(ctx);
    return msg;
}

static void hex32(float f, char out[9])
{
    unsigned char b[4];
    memcpy(b, &f, 4);
    snprintf(out, 9, "%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
}

/* Every entry of set equals Python's dump of the file (same order, same bits). */
static void assert_equals_python(const es_emb_set *s, const char *mode, const char *path, int ints)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "python3 '%s' %s '%s'", script(), mode, path);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 20, i = 0;
    char *line = malloc(cap);
    while (fgets(line, (int)cap, p)) {
        ck_assert_msg(i < s->n, "%s: python has more entries than %zu", path, s->n);
        char *save, *key = strtok_r(line, " \n", &save);
        size_t len = strtoul(strtok_r(NULL, " \n", &save), NULL, 10);
        if (strcmp(mode, "dump-pt") == 0)
            ck_assert_str_eq(s->keys[i], key);
        ck_assert_uint_eq(s->len[i], len);
        for (size_t j = 0; j < len; j++) {
            const char *want = strtok_r(NULL, " \n", &save);
            ck_assert_ptr_nonnull(want);
            float v = s->vals[s->off[i] + j];
            if (ints) {
                ck_assert_msg(v == strtod(want, NULL), "%s %s[%zu]", path, key, j);
            } else {
                char got[9];
                hex32(v, got);
                ck_assert_msg(!strcmp(got, want), "%s: %s[%zu] is %s, python says %s", path, key, j, got, want);
            }
        }
        i++;
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_msg(i == s->n, "%s: python read %zu entries, we read %zu", path, i, s->n);
    free(line);
}

/* ---- the fixtures ---------------------------------------------------------------- */

START_TEST(test_fixture_utt2embedding)
{
    const char *path = strdup(fixture_path("corpus_a/kaldi/utt2embedding.pt"));
    es_emb_set *s = load_ok(path, NULL, 0);
    ck_assert_uint_eq(s->n, 60); /* README: 60 utterances, 192-d */
    for (size_t i = 0; i < s->n; i++)
        ck_assert_uint_eq(s->len[i], 192);
    ck_assert(s->has_floats && !s->has_ints);
    assert_equals_python(s, "dump-pt", path, 0);
    es_emb_set_free(s);
    free((char *)path);
}
END_TEST

START_TEST(test_fixture_spk2embedding)
{
    const char *path = strdup(fixture_path("corpus_a/kaldi/spk2embedding.pt"));
    es_emb_set *s = load_ok(path, NULL, 1);
    ck_assert_uint_eq(s->n, 6); /* README: 6 speakers A01..A06 */
    for (int k = 1; k <= 6; k++) {
        char name[8];
        snprintf(name, sizeof name, "A0%d", k);
        ck_assert_int_ge(es_emb_set_find(s, name), 0);
    }
    assert_equals_python(s, "dump-pt", path, 0);
    es_emb_set_free(s);
    free((char *)path);
}
END_TEST

/* Token counts equal truth.tsv's speech_tokens column (round(duration × 25)). */
START_TEST(test_fixture_speech_tokens)
{
    const char *path = strdup(fixture_path("corpus_a/kaldi/utt2speech_token.pt"));
    es_emb_set *s = load_ok(path, NULL, 0);
    ck_assert(s->has_ints && !s->has_floats);
    assert_equals_python(s, "dump-pt", path, 1);
    FILE *fp = fopen(fixture_path("corpus_a/truth.tsv"), "r");
    ck_assert_ptr_nonnull(fp);
    char line[4096];
    size_t rows = 0;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, fp)); /* header */
    while (fgets(line, sizeof line, fp)) {
        char *f[8], *save;
        f[0] = strtok_r(line, "\t", &save);
        for (int k = 1; k < 8; k++)
            f[k] = strtok_r(NULL, "\t", &save);
        ptrdiff_t e = es_emb_set_find(s, f[0]);
        ck_assert_int_ge(e, 0);
        ck_assert_uint_eq(s->len[e], strtoul(f[7], NULL, 10));
        for (uint32_t j = 0; j < s->len[e]; j++) {
            float t = s->vals[s->off[e] + j];
            ck_assert(t >= 0 && t < 6561 && t == (float)(int)t); /* README: [0, 6561) */
        }
        rows++;
    }
    fclose(fp);
    ck_assert_uint_eq(rows, 60);
    es_emb_set_free(s);
    free((char *)path);
}
END_TEST

START_TEST(test_fixture_npy)
{
    const char *path =
        strdup(fixture_path("real/speechbrain__speechbrain/tests/samples/TTS/speakers/LJ050-0131.npy"));
    es_emb_set *s = load_ok(path, NULL, 0);
    ck_assert_uint_eq(s->n, 1);
    ck_assert_str_eq(s->keys[0], "LJ050-0131"); /* a 1-D vector is named by its file */
    ck_assert_uint_eq(s->len[0], 192);
    assert_equals_python(s, "dump-npy", path, 0);
    es_emb_set_free(s);
    free((char *)path);
}
END_TEST

START_TEST(test_fixture_utt2spk)
{
    es_context *ctx = es_context_new();
    es_utt2spk u;
    ck_assert_int_eq(es_utt2spk_read(ctx, fixture_path("corpus_a/kaldi/utt2spk"), &u), ES_OK);
    ck_assert_uint_eq(u.n, 60);
    FILE *fp = fopen(fixture_path("corpus_a/truth.tsv"), "r");
    char line[4096];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
    while (fgets(line, sizeof line, fp)) {
        char *save, *key = strtok_r(line, "\t", &save), *spk = strtok_r(NULL, "\t", &save);
        ck_assert_str_eq(es_utt2spk_get(&u, key), spk);
    }
    fclose(fp);
    es_utt2spk_release(&u);
    es_context_free(ctx);
}
END_TEST

/* The parquet shards' embedding columns hold the .pt files' values (README:
 * utt_embedding = utt2embedding[key], spk_embedding = spk2embedding[spk]). */
START_TEST(test_fixture_parquet)
{
    ck_assert_int_eq(chdir(fixture_path("corpus_a")), 0);
    es_emb_set *pt = load_ok("kaldi/utt2embedding.pt", NULL, 0);
    es_emb_set *pq = load_ok("parquet/data.list", NULL, 0);
    ck_assert_uint_eq(pq->n, 60);
    ck_assert_uint_eq(pq->n_absent, 0);
    ck_assert_ptr_nonnull(pq->spk);
    for (size_t i = 0; i < pq->n; i++) {
        ptrdiff_t e = es_emb_set_find(pt, pq->keys[i]);
        ck_assert_int_ge(e, 0);
        ck_assert_uint_eq(pq->len[i], pt->len[e]);
        ck_assert(!memcmp(pq->vals + pq->off[i], pt->vals + pt->off[e], pt->len[e] * sizeof(float)));
        ck_assert_int_eq(strncmp(pq->spk[i], pq->keys[i], 3), 0); /* keys are <spk>_<nnnn> */
    }
    es_emb_set *spt = load_ok("kaldi/spk2embedding.pt", NULL, 1);
    es_emb_set *spq = load_ok("parquet/parquet_000000002.tar", NULL, 1);
    ck_assert_uint_ge(spq->n, 1);
    for (size_t i = 0; i < spq->n; i++) {
        ptrdiff_t e = es_emb_set_find(spt, spq->keys[i]);
        ck_assert_int_ge(e, 0);
        ck_assert(!memcmp(spq->vals + spq->off[i], spt->vals + spt->off[e], 192 * sizeof(float)));
    }
    es_emb_set_free(pt);
    es_emb_set_free(pq);
    es_emb_set_free(spt);
    es_emb_set_free(spq);
}
END_TEST

/* ---- pickles written by Python's pickle module ---------------------------------- */

static void assert_good(const es_emb_set *s)
{
    ck_assert_uint_eq(s->n, 300);
    for (size_t i = 0; i < 300; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%03zu", i);
        ck_assert_str_eq(s->keys[i], key);
        ck_assert_uint_eq(s->len[i], 4);
        const float *v = s->vals + s->off[i];
        ck_assert(v[0] == (float)(i / 8.0) && v[1] == (float)(-(double)i / 4) && v[2] == (float)i &&
                  v[3] == (float)(1e-3 * i));
    }
}

START_TEST(test_pickle_protocols)
{
    const char *names[] = {"good_p2.pt", "good_p4.pkl", "good_p5.pkl"};
    for (int k = 0; k < 3; k++) {
        es_emb_set *s = load_ok(case_path(names[k]), NULL, 0);
        assert_good(s);
        es_emb_set_free(s);
    }
}
END_TEST

START_TEST(test_pickle_shapes)
{
    es_emb_set *s = load_ok(case_path("tokens.pt"), NULL, 0); /* BININT, BININT2, LONG1, negatives */
    ck_assert_uint_eq(s->n, 4);
    for (size_t i = 0; i < 4; i++) {
        size_t n = 3 * (i + 1);
        ck_assert_uint_eq(s->len[i], n + 3);
        for (size_t j = 0; j < n; j++)
            ck_assert(s->vals[s->off[i] + j] == (float)(i + 1 + j));
        ck_assert(s->vals[s->off[i] + n] == 70000.0f && s->vals[s->off[i] + n + 1] == -5.0f &&
                  s->vals[s->off[i] + n + 2] == 1099511627776.0f);
    }
    es_emb_set_free(s);
    /* a set that only counts (speech tokens): lengths and offsets, no values
     * stored, nothing allocated for them (the unpickler's up-front room too) */
    es_context *ctx = es_context_new();
    s = es_emb_set_new("tokens.pt");
    s->lengths_only = 1;
    ck_assert_int_eq(es_torch_load(ctx, case_path("tokens.pt"), s), ES_OK);
    ck_assert(s->n == 4 && s->vals == NULL);
    for (size_t i = 0; i < 4; i++)
        ck_assert_uint_eq(s->len[i], 3 * (i + 1) + 3);
    es_emb_set_free(s);
    es_context_free(ctx);
    s = load_ok(case_path("shared.pt"), NULL, 0); /* one list under two keys (BINGET) */
    ck_assert_uint_eq(s->n, 2);
    ck_assert(s->len[0] == 2 && s->len[1] == 2 && s->vals[s->off[1]] == 1.5f && s->vals[s->off[1] + 1] == 2.5f);
    es_emb_set_free(s);
    s = load_ok(case_path("single.pt"), NULL, 0); /* SETITEM and APPEND (one item each) */
    ck_assert(s->n == 1 && s->len[0] == 1 && s->vals[s->off[0]] == 0.25f);
    es_emb_set_free(s);
    s = load_ok(case_path("empty_list.pt"), NULL, 0);
    ck_assert(s->n == 1 && s->len[0] == 0);
    es_emb_set_free(s);
}
END_TEST

START_TEST(test_pickle_refused)
{
    const char *m = load_fails(case_path("ordereddict.pt"), NULL, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "GLOBAL collections.OrderedDict refused") && strstr(m, "archive/data.pkl"), "%s", m);
    m = load_fails(case_path("evil_reduce.pkl"), NULL, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "GLOBAL posix.system refused") || strstr(m, "GLOBAL nt.system refused"), "%s", m);
    ck_assert_msg(strstr(m, "nothing is imported or called"), "%s", m);
    m = load_fails(case_path("str_value.pt"), NULL, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "value of key 'a' is a str, not a list of numbers"), "%s", m);
    m = load_fails(case_path("int_key.pt"), NULL, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "a dict key is a number"), "%s", m);
    m = load_fails(case_path("nested.pt"), NULL, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "a list holds a list") || strstr(m, "APPEND"), "%s", m);
    m = load_fails(case_path("top_list.pt"), NULL, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "not a dict"), "%s", m);
    m = load_fails(case_path("float_value.pt"), NULL, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "is a number, not a list"), "%s", m);
    m = load_fails(case_path("none_value.pt"), NULL, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "opcode NONE ('N') refused"), "%s", m);
    m = load_fails(case_path("no_pkl.zip"), NULL, ES_ERR_FORMAT);
    ck_assert_msg(strstr(m, "not a torch.save file"), "%s", m);
}
END_TEST

/* A byte string literal and its length (it may contain NULs). */
#define B(s) s, sizeof(s) - 1

/* Hand-made pickles: every code-running opcode is refused by name. */
START_TEST(test_pickle_opcodes_refused)
{
    static const struct { const char *bytes; size_t len; const char *name; } cases[] = {
        {B("\x80\x02}R."), "REDUCE ('R')"},
        {B("\x80\x02}b."), "BUILD ('b')"},
        {B("\x80\x02}io\nx\n."), "INST ('i')"},
        {B("\x80\x02}o."), "OBJ ('o')"},
        {B("\x80\x02}\x81."), "NEWOBJ (0x81)"},
        {B("\x80\x04}\x93."), "STACK_GLOBAL (0x93)"},
        {B("\x80\x02}Q."), "BINPERSID ('Q')"},
        {B("\x80\x02}\x82\x01."), "EXT1 (0x82)"},
        {B("\x80\x02}ctorch._utils\n_rebuild_tensor_v2\n."), "GLOBAL torch._utils._rebuild_tensor_v2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        es_context *ctx = es_context_new();
        es_emb_set *s = es_emb_set_new("x.pkl");
        int rc = es_torch_load_memory(ctx, "x.pkl", cases[i].bytes, cases[i].len, s);
        ck_assert_int_eq(rc, ES_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(es_errmsg(ctx), cases[i].name) && strstr(es_errmsg(ctx), "refused"),
                      "%s", es_errmsg(ctx));
        ck_assert_msg(!strncmp(es_errmsg(ctx), "x.pkl: byte 3: ", 15), "%s", es_errmsg(ctx));
        if (i == sizeof cases / sizeof cases[0] - 1)
            ck_assert(strstr(es_errmsg(ctx), "holds tensors"));
        es_emb_set_free(s);
        es_context_free(ctx);
    }
    /* legacy torch serialization, duplicate keys, memo misuse, truncation */
    static const struct { const char *bytes; size_t len; int status; const char *msg; } bad[] = {
        {B("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"), ES_ERR_UNSUPPORTED, "legacy torch format"},
        {B("\x80\x02}(X\x01\x00\x00\x00" "a]X\x01\x00\x00\x00" "a]u."), ES_ERR_FORMAT, "'a' appears twice"},
        {B("\x80\x02}h\x05."), ES_ERR_FORMAT, "memo index not defined"},
        {B("\x80\x02}q\x07."), ES_ERR_UNSUPPORTED, "memo index out of sequence"},
        /* a run of MEMOIZE (each a new memo entry for one object): once grew past 8 GB */
        {B("\x80\x02}\x94\x94\x94."), ES_ERR_FORMAT, "more memo entries than objects (1)"},
        {B("\x80\x02}q\x00q\x01."), ES_ERR_FORMAT, "more memo entries than objects"},
        {B("\x80\x02}(X\x05\x00\x00\x00" "ab"), ES_ERR_FORMAT, "truncated"},
        {B("\x80\x02}(X\x01\x00\x00\x00" "a]G\x3f\xf0"), ES_ERR_FORMAT, "truncated"},
        {B("\x80\x02}u."), ES_ERR_FORMAT, "SETITEMS without a MARK"},
        {B("\x80\x02}}."), ES_ERR_UNSUPPORTED, "a second dict"},
        {B("\x80\x09}."), ES_ERR_UNSUPPORTED, "protocol"},
        {B("\x80\x02\xff"), ES_ERR_FORMAT, "unknown opcode 0xff"},
        {B("\x80\x02}X\xff\xff\xff\x7f"), ES_ERR_UNSUPPORTED, "longer than 1 MiB"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        es_context *ctx = es_context_new();
        es_emb_set *s = es_emb_set_new("y.pkl");
        int rc = es_torch_load_memory(ctx, "y.pkl", bad[i].bytes, bad[i].len, s);
        ck_assert_msg(rc == bad[i].status && strstr(es_errmsg(ctx), bad[i].msg), "case %zu: %s: %s", i,
                      es_status_name(rc), es_errmsg(ctx));
        es_emb_set_free(s);
        es_context_free(ctx);
    }
}
END_TEST

/* A run of BINFLOATs (an embedding's values, decoded in one loop) still names the
 * byte of the one that fails: here the one that takes the stack past its 2^20
 * entries (the dict and the list hold two of them), float k at byte 4 + 9k. */
START_TEST(test_binfloat_run_errors_name_their_byte)
{
    size_t floats = (1u << 20) - 1, len = 4 + 9 * floats + 1;
    unsigned char *p = malloc(len);
    memcpy(p, "\x80\x02}]", 4);
    for (size_t k = 0; k < floats; k++) {
        unsigned char *f = p + 4 + 9 * k;
        f[0] = 'G';
        memcpy(f + 1, "\x3f\xf0\x00\x00\x00\x00\x00\x00", 8); /* 1.0, big-endian */
    }
    p[len - 1] = '.';
    es_context *ctx = es_context_new();
    es_emb_set *s = es_emb_set_new("run.pkl");
    ck_assert_int_eq(es_torch_load_memory(ctx, "run.pkl", p, len, s), ES_ERR_UNSUPPORTED);
    char want[64];
    snprintf(want, sizeof want, "run.pkl: byte %zu: stack deeper than", (size_t)4 + 9 * ((1u << 20) - 2));
    ck_assert_msg(!strncmp(es_errmsg(ctx), want, strlen(want)), "%s", es_errmsg(ctx));
    es_emb_set_free(s);
    es_context_free(ctx);
    free(p);
}
END_TEST

/* Every prefix of a real .pt fails cleanly (no crash, an error naming the file). */
START_TEST(test_truncated_zip)
{
    size_t len;
    unsigned char *data = read_whole_file(fixture_path("corpus_a/kaldi/spk2embedding.pt"), &len);
    ck_assert_ptr_nonnull(data);
    size_t cuts[] = {0, 3, 30, 64, 100, 1000, 5000, len / 2, len - 2000, len - 100, len - 22, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        es_context *ctx = es_context_new();
        es_emb_set *s = es_emb_set_new("cut.pt");
        int rc = es_torch_load_memory(ctx, "cut.pt", data, cuts[i], s);
        /* A cut inside the central directory leaves data.pkl whole: streaming
         * reads it, as torch's reader would not; that is the only success. */
        if (rc == ES_OK)
            ck_assert_msg(cuts[i] > 10466 && s->n == 6, "cut %zu", cuts[i]);
        else
            ck_assert_msg(rc == ES_ERR_FORMAT && !strncmp(es_errmsg(ctx), "cut.pt: ", 8), "cut %zu: %s %s",
                          cuts[i], es_status_name(rc), es_errmsg(ctx));
        es_emb_set_free(s);
        es_context_free(ctx);
    }
    free(data);
}
END_TEST

/* A zip member named "archiv\n/data.pkl" (found by fuzz_torch_pt): the member
 * name is shown escaped, so the error is still one line naming the file. */
START_TEST(test_member_name_with_newline_stays_one_line)
{
    static const unsigned char zip[] = {
        0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x82,
        0x5d, 0x70, 0x8e, 0x78, 0xe3, 0x6d, 0x12, 0x00, 0x00, 0x00, 0x12, 0x00,
        0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x61, 0x72, 0x63, 0x68, 0x69, 0x76,
        0x0a, 0x2f, 0x64, 0x61, 0x74, 0x61, 0x2e, 0x70, 0x6b, 0x6c, 0x80, 0x02,
        0x7d, 0x71, 0x00, 0x58, 0x01, 0x00, 0x00, 0x00, 0x65, 0x71, 0x01, 0x5d,
        0x71, 0x02, 0x2a, 0x2e,
    };
    es_context *ctx = es_context_new();
    es_emb_set *s = es_emb_set_new("nl.pt");
    int rc = es_torch_load_memory(ctx, "nl.pt", zip, sizeof zip, s);
    const char *msg = es_errmsg(ctx);
    ck_assert_int_ne(rc, ES_OK);
    ck_assert_msg(!strncmp(msg, "nl.pt: archiv", 13) && strchr(msg, '\n') == NULL, "%s", msg);
    es_emb_set_free(s);
    es_context_free(ctx);
}
END_TEST

/* ---- .npy ----------------------------------------------------------------------------- */

START_TEST(test_npy_variants)
{
    es_emb_set *s = load_ok(case_path("v1_f4.npy"), case_path("keys3.txt"), 0);
    ck_assert_uint_eq(s->n, 3);
    ck_assert_str_eq(s->keys[0], "r0");
    ck_assert_str_eq(s->keys[2], "r2");
    for (size_t i = 0; i < 12; i++)
        ck_assert(s->vals[i] == 0.5f * (float)i - 3);
    ck_assert(s->off[2] == 8 && s->len[2] == 4);
    es_emb_set_free(s);
    s = load_ok(case_path("v2_f8.npy"), case_path("keys2.txt"), 0);
    ck_assert(s->n == 2 && s->len[0] == 3 && s->vals[0] == 0.1f && s->vals[2] == 0.3f);
    ck_assert(s->vals[3] == INFINITY && s->vals[4] == -2.5f); /* 1e39 overflows float32 */
    es_emb_set_free(s);
    s = load_ok(case_path("v3_be.npy"), case_path("keys2.txt"), 0);
    ck_assert(s->vals[0] == 1 && s->vals[1] == 2 && s->vals[3] == 4);
    es_emb_set_free(s);
    /* past the reader's 4 MiB reads: read into room taken at once */
    s = load_ok(case_path("big_f4.npy"), case_path("keys_big.txt"), 0);
    ck_assert(s->n == 11000 && s->len[10999] == 100 && s->off[10999] == 1099900);
    for (size_t i = 0; i < 1100000; i += 997)
        ck_assert_msg(s->vals[i] == (float)(i % 1000) / 4 - 100, "value %zu: %g", i, s->vals[i]);
    ck_assert(s->vals[1099999] == 999.0f / 4 - 100);
    es_emb_set_free(s);
    s = load_ok(case_path("vector.npy"), NULL, 0);
    ck_assert(s->n == 1 && s->len[0] == 5 && !strcmp(s->keys[0], "vector") && s->vals[4] == 5);
    es_emb_set_free(s);
    const char *one = strdup(case_path("f2.npy"));
    FILE *k = fopen(case_path("key1.txt"), "w");
    fputs("h\n", k);
    fclose(k);
    s = load_ok(one, case_path("key1.txt"), 0);
    ck_assert(s->vals[0] == 1 && s->vals[1] == -2 && s->vals[2] == 0.5f && s->vals[3] == 65504);
    es_emb_set_free(s);
    free((char *)one);
}
END_TEST

START_TEST(test_npy_refused)
{
    char keys[4096];
    snprintf(keys, sizeof keys, "%s", case_path("keys2.txt"));
    const char *m = load_fails(case_path("fortran.npy"), keys, ES_ERR_UNSUPPORTED);
    ck_assert(strstr(m, "Fortran-order"));
    m = load_fails(case_path("int.npy"), keys, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "dtype '<i8'"), "%s", m);
    m = load_fails(case_path("object.npy"), keys, ES_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m, "dtype '|O'"), "%s", m);
    m = load_fails(case_path("three_d.npy"), keys, ES_ERR_UNSUPPORTED);
    ck_assert(strstr(m, "3-D"));
    m = load_fails(case_path("truncated.npy"), NULL, ES_ERR_FORMAT);
    ck_assert_msg(strstr(m, "truncated") && strstr(m, "3 x 4"), "%s", m);
    /* a short file is read as it goes: 1048576 values in the first read, the
     * rest of its 1098999.5 after (the last half value is no value) */
    m = load_fails(case_path("big_truncated.npy"), NULL, ES_ERR_FORMAT);
    ck_assert_msg(strstr(m, "truncated") && strstr(m, "11000 x 100") && strstr(m, "holds 1098999"),
                  "%s", m);
    m = load_fails(case_path("v1_f4.npy"), NULL, ES_ERR_USAGE);
    ck_assert(strstr(m, "needs a key list"));
    char dup[4096];
    snprintf(dup, sizeof dup, "%s", case_path("keys_dup.txt"));
    es_context *ctx = es_context_new();
    es_emb_set *s = NULL;
    ck_assert_int_eq(es_emb_set_load(ctx, case_path("v1_f4.npy"), dup, 0, &s), ES_ERR_FORMAT);
    ck_assert_msg(strstr(es_errmsg(ctx), "line 3: key 'r0' appears twice"), "%s", es_errmsg(ctx));
    ck_assert_int_eq(es_emb_set_load(ctx, case_path("v1_f4.npy"), keys, 0, &s), ES_ERR_FORMAT);
    ck_assert_msg(strstr(es_errmsg(ctx), "2 keys for the 3 rows"), "%s", es_errmsg(ctx));
    ck_assert_int_eq(es_emb_set_load(ctx, case_path("good_p4.pkl"), keys, 0, &s), ES_ERR_USAGE);
    ck_assert_int_eq(es_emb_set_load(ctx, case_path("missing.npy"), NULL, 0, &s), ES_ERR_IO);
    es_context_free(ctx);
}
END_TEST

/* es_validate_settings.progress: bytes of the source files (their sizes from
 * stat), rising and ending at the total, with a report inside a file larger
 * than the 4 MiB the readers report by (.npy values, a plain pickle, a torch
 * zip's data.pkl), and none after the total. */
static size_t size_of(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (size_t)st.st_size;
}

START_TEST(test_validate_progress_in_bytes)
{
    const char *const sources[][2] = {{"big_f4.npy", "keys_big.txt"}, {"big.pkl", NULL},
                                      {"big.pt", NULL}};
    const size_t dims[] = {100, 192, 192};
    es_context *ctx = es_context_new();
    for (int i = 0; i < 3; i++) {
        char emb[4096], keys[4096];
        snprintf(emb, sizeof emb, "%s", case_path(sources[i][0]));
        snprintf(keys, sizeof keys, "%s", sources[i][1] ? case_path(sources[i][1]) : "");
        es_emb_sources src = {0};
        src.utt_emb = emb;
        src.utt_keys = sources[i][1] ? keys : NULL;
        es_validate_settings s;
        es_validate_defaults(&s);
        s.device = ES_DEVICE_CPU;
        s.dim = dims[i];
        progress_seen seen = {0};
        s.progress = progress_record;
        s.progress_user = &seen;
        es_validate_result *r = NULL;
        ck_assert_msg(es_validate(ctx, &s, &src, NULL, &r) == ES_OK, "%s", es_errmsg(ctx));
        size_t total = size_of(emb) + (sources[i][1] ? size_of(keys) : 0);
        ck_assert_uint_eq(seen.last_total, total);
        ck_assert_uint_eq(seen.last_done, total);
        ck_assert_uint_eq(seen.backwards, 0);
        ck_assert_uint_eq(seen.total_changed, 0);
        ck_assert_msg(seen.before_end >= 1, "%s: no report inside the file", sources[i][0]);
        es_validate_info info;
        es_validate_result_info(r, &info);
        ck_assert_uint_eq(info.utt_rows, i == 0 ? 11000 : 3000);
        es_validate_result_free(r);
    }
    es_context_free(ctx);
}
END_TEST

static void setup(void)
{
    cases_dir = make_temp_dir();
    ck_assert_ptr_nonnull(cases_dir);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "python3 '%s' cases '%s'", script(), cases_dir);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

static void teardown(void)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cases_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", cases_dir);
    free(cases_dir);
}

int main(void)
{
    Suite *s = suite_create("validate_sources");
    TCase *f = tcase_create("fixtures");
    tcase_add_test(f, test_fixture_utt2embedding);
    tcase_add_test(f, test_fixture_spk2embedding);
    tcase_add_test(f, test_fixture_speech_tokens);
    tcase_add_test(f, test_fixture_npy);
    tcase_add_test(f, test_fixture_utt2spk);
    tcase_add_test(f, test_fixture_parquet);
    suite_add_tcase(s, f);
    TCase *c = tcase_create("cases");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_add_test(c, test_pickle_protocols);
    tcase_add_test(c, test_pickle_shapes);
    tcase_add_test(c, test_pickle_refused);
    tcase_add_test(c, test_pickle_opcodes_refused);
    tcase_add_test(c, test_truncated_zip);
    tcase_add_test(c, test_member_name_with_newline_stays_one_line);
    tcase_add_test(c, test_binfloat_run_errors_name_their_byte);
    tcase_add_test(c, test_npy_variants);
    tcase_add_test(c, test_npy_refused);
    tcase_add_test(c, test_validate_progress_in_bytes);
    suite_add_tcase(s, c);
    return run_suite(s);
}
