/* The cost table: in-memory operations, the on-disk format (byte-exact), reading
 * tables from other tools, concatenation, every kind of malformed input, and
 * atomic writes. */
#include "check_helpers.h"
#include "costs/cost_table.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALL_FLAGS 0x3ffu

/* ---- helpers ------------------------------------------------------------------ */

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
    ck_assert_int_eq(fclose(fp), 0);
}

static void write_text(const char *path, const char *text) { write_bytes(path, text, strlen(text)); }

static void run_cmd(const char *fmt, const char *a, const char *b, const char *c)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, fmt, a, b, c);
    ck_assert_msg(system(cmd) == 0, "command failed: %s", cmd);
}

/* Number of entries in dir besides . and ..; *tmp counts names containing ".tmp.". */
static int count_entries(const char *dir, int *tmp)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    *tmp = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        n++;
        if (strstr(e->d_name, ".tmp."))
            (*tmp)++;
    }
    closedir(d);
    return n;
}

static es_cost_row make_row(const char *key, const char *shard, uint64_t pos, const char *spk,
                            uint32_t flags)
{
    es_cost_row r = {0};
    r.key = key;
    r.shard = shard;
    r.pos = pos;
    r.sample_rate = 16000;
    r.channels = 1;
    r.samples = 16000 * (pos + 1);
    r.audio_bytes = 44 + 2 * r.samples;
    r.text_len = (uint32_t)(10 + pos);
    r.speech_tokens = (uint32_t)(25 * (pos + 1));
    r.spk = spk;
    r.flags = flags;
    r.hash = (flags & ES_FLAG_HASHED) ? 0x0123456789abcdefull * (pos + 1) : 0;
    return r;
}

static void assert_row_eq(const es_cost_row *a, const es_cost_row *b)
{
    ck_assert_str_eq(a->key, b->key);
    ck_assert_str_eq(a->shard, b->shard);
    ck_assert_str_eq(a->spk, b->spk);
    ck_assert_uint_eq(a->pos, b->pos);
    ck_assert_uint_eq(a->sample_rate, b->sample_rate);
    ck_assert_uint_eq(a->channels, b->channels);
    ck_assert_uint_eq(a->samples, b->samples);
    ck_assert_uint_eq(a->audio_bytes, b->audio_bytes);
    ck_assert_uint_eq(a->text_len, b->text_len);
    ck_assert_uint_eq(a->speech_tokens, b->speech_tokens);
    ck_assert_uint_eq(a->flags, b->flags);
    ck_assert_uint_eq(a->hash, b->hash);
}

static es_cost_table *read_ok(es_context *ctx, const char *path)
{
    es_cost_table *t = NULL;
    int rc = es_cost_table_read(ctx, path, &t);
    ck_assert_msg(rc == ES_OK, "read %s: %s: %s", path, es_status_name(rc), es_errmsg(ctx));
    ck_assert_ptr_nonnull(t);
    return t;
}

static void assert_tables_eq(const es_cost_table *a, const es_cost_table *b)
{
    ck_assert_uint_eq(es_cost_table_size(a), es_cost_table_size(b));
    for (size_t i = 0; i < es_cost_table_size(a); i++) {
        es_cost_row ra, rb;
        ck_assert_int_eq(es_cost_table_row(a, i, &ra), ES_OK);
        ck_assert_int_eq(es_cost_table_row(b, i, &rb), ES_OK);
        assert_row_eq(&ra, &rb);
    }
}

/* Rows with every awkward value the format must carry. */
static es_cost_table *awkward_table(void)
{
    es_cost_table *t = es_cost_table_new();
    ck_assert_ptr_nonnull(t);
    static const char *keys[] = {
        "plain", "tab\there", "new\nline", "cr\rhere", "back\\slash", "\\t literal",
        "ends with backslash\\", "", "-", "utf8-日本語-ü", "#equishard-costs v1", "key",
        "\t\n\r\\", " spaced ",
    };
    size_t nk = sizeof keys / sizeof keys[0];
    for (size_t i = 0; i < nk; i++) {
        const char *spk = i % 3 == 0 ? "" : (i % 3 == 1 ? "spk\t1" : "说话人");
        es_cost_row r = make_row(keys[i], i < 5 ? "shards/a b\\c.tar" : "shards/\tb.tar", i,
                                 spk, (uint32_t)((i * 37) & ALL_FLAGS));
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    es_cost_row max = make_row("max", "m", UINT64_MAX, "s", ALL_FLAGS);
    max.sample_rate = max.channels = max.text_len = max.speech_tokens = UINT32_MAX;
    max.samples = max.audio_bytes = max.hash = UINT64_MAX;
    ck_assert_int_eq(es_cost_table_append(t, &max), ES_OK);
    es_cost_row zero = {.key = "zero", .shard = "", .spk = ""};
    ck_assert_int_eq(es_cost_table_append(t, &zero), ES_OK);
    return t;
}

/* Writes `text` to dir/name, reads it, and checks the status and that the
 * message names the file, the line and `also`. */
static void expect_bad_bytes(const char *dir, const char *name, const void *data, size_t len,
                             int status, int line, const char *also)
{
    char *path = path_in(dir, name);
    write_bytes(path, data, len);
    es_context *ctx = es_context_new();
    es_cost_table *t = (es_cost_table *)1;
    int rc = es_cost_table_read(ctx, path, &t);
    const char *msg = es_errmsg(ctx);
    ck_assert_msg(rc == status, "%s: expected %s, got %s (%s)", name, es_status_name(status),
                  es_status_name(rc), msg);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(msg, path) != NULL, "%s: message lacks path: %s", name, msg);
    char want[64];
    snprintf(want, sizeof want, ": line %d: ", line);
    ck_assert_msg(strstr(msg, want) != NULL, "%s: message lacks '%s': %s", name, want, msg);
    if (also)
        ck_assert_msg(strstr(msg, also) != NULL, "%s: message lacks '%s': %s", name, also, msg);
    es_context_free(ctx);
    free(path);
}

static void expect_bad(const char *dir, const char *name, const char *text, int status, int line,
                       const char *also)
{
    expect_bad_bytes(dir, name, text, strlen(text), status, line, also);
}

#define MAGIC ES_COSTS_MAGIC_LINE "\n"
#define HEAD ES_COSTS_HEADER "\n"
#define GOOD_ROW "u1\ts.tar\t0\t16000\t1\t16000\t32044\t5\t25\tspk\taudio,text\t-\n"

/* ---- in memory ------------------------------------------------------------------ */

START_TEST(test_flag_names)
{
    static const char *names[] = {"audio", "text", "utt_emb", "spk_emb", "hashed",
                                  "truncated", "estimated", "unsupported", "segment", "item",
                                  "bad_text", "no_tokens"};
    for (unsigned b = 0; b < 12; b++)
        ck_assert_str_eq(es_flag_name(b), names[b]);
    ck_assert_uint_eq(ES_FLAG_BAD_TEXT, 1u << 10);
    ck_assert_uint_eq(ES_FLAG_NO_TOKENS, 1u << 11);
    ck_assert_ptr_null(es_flag_name(12));
    ck_assert_ptr_null(es_flag_name(31));
    ck_assert_ptr_null(es_flag_name(1000));
    ck_assert_uint_eq(ES_FLAG_SEGMENT, 1u << 8);
}
END_TEST

START_TEST(test_flags_format_parse)
{
    char buf[128];
    ck_assert_uint_eq(es_flags_format(0, buf, sizeof buf), 1);
    ck_assert_str_eq(buf, "-");
    es_flags_format(ES_FLAG_AUDIO | ES_FLAG_HASHED | ES_FLAG_SEGMENT, buf, sizeof buf);
    ck_assert_str_eq(buf, "audio,hashed,segment");
    size_t n = es_flags_format(ALL_FLAGS, buf, sizeof buf);
    ck_assert_str_eq(buf,
                     "audio,text,utt_emb,spk_emb,hashed,truncated,estimated,unsupported,segment,item");
    ck_assert_uint_eq(n, strlen(buf));
    /* Unknown bits are not written (they have no name). */
    es_flags_format(ES_FLAG_TEXT | (1u << 20), buf, sizeof buf);
    ck_assert_str_eq(buf, "text");
    /* Short buffers: truncated, terminated, full length returned. */
    char small[6];
    ck_assert_uint_eq(es_flags_format(ES_FLAG_AUDIO | ES_FLAG_TEXT, small, sizeof small), 10);
    ck_assert_str_eq(small, "audio");

    for (uint32_t f = 0; f <= ALL_FLAGS; f++) {
        n = es_flags_format(f, buf, sizeof buf);
        uint32_t back = 0xdead;
        ck_assert_int_eq(es_flags_parse(buf, n, &back), 0);
        ck_assert_uint_eq(back, f);
    }
    uint32_t f;
    ck_assert_int_eq(es_flags_parse("text,audio", 10, &f), 0); /* any order */
    ck_assert_uint_eq(f, ES_FLAG_AUDIO | ES_FLAG_TEXT);
    static const char *bad[] = {"", "bogus", "audio,", ",audio", "audio,,text", "audio,audio",
                                "-,audio", "Audio", "audio ", "--"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(es_flags_parse(bad[i], strlen(bad[i]), &f) == -1, "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(test_append_and_row)
{
    es_cost_table *t = es_cost_table_new();
    ck_assert_uint_eq(es_cost_table_size(t), 0);
    ck_assert_uint_eq(es_cost_table_size(NULL), 0);
    char key[16], shard[32], spk[8];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        snprintf(shard, sizeof shard, "shard%d.tar", i / 1000);
        snprintf(spk, sizeof spk, "s%d", i / 10);
        es_cost_row r = make_row(key, shard, (uint64_t)i, spk, ES_FLAG_AUDIO);
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    /* The caller's buffers are reused: the table must hold its own copies. */
    strcpy(key, "clobbered");
    ck_assert_uint_eq(es_cost_table_size(t), 3000);
    es_cost_row r0, r1, r999, r1000, r2999;
    ck_assert_int_eq(es_cost_table_row(t, 0, &r0), ES_OK);
    ck_assert_int_eq(es_cost_table_row(t, 1, &r1), ES_OK);
    ck_assert_int_eq(es_cost_table_row(t, 999, &r999), ES_OK);
    ck_assert_int_eq(es_cost_table_row(t, 1000, &r1000), ES_OK);
    ck_assert_int_eq(es_cost_table_row(t, 2999, &r2999), ES_OK);
    ck_assert_str_eq(r0.key, "k0");
    ck_assert_str_eq(r2999.key, "k2999");
    ck_assert_str_eq(r1000.shard, "shard1.tar");
    ck_assert_uint_eq(r2999.pos, 2999);
    /* Consecutive rows share one copy of the shard. */
    ck_assert_ptr_eq(r0.shard, r1.shard);
    ck_assert_ptr_eq(r0.shard, r999.shard);
    ck_assert_ptr_ne(r999.shard, r1000.shard);

    es_cost_row out;
    ck_assert_int_eq(es_cost_table_row(t, 3000, &out), ES_ERR_USAGE);
    ck_assert_int_eq(es_cost_table_row(NULL, 0, &out), ES_ERR_USAGE);

    /* NULL strings are stored as "". */
    es_cost_row nulls = {.key = NULL, .shard = NULL, .spk = NULL};
    ck_assert_int_eq(es_cost_table_append(t, &nulls), ES_OK);
    ck_assert_int_eq(es_cost_table_row(t, 3000, &out), ES_OK);
    ck_assert_str_eq(out.key, "");
    ck_assert_str_eq(out.shard, "");
    ck_assert_str_eq(out.spk, "");

    ck_assert_uint_eq(skip_count(t), 0);
    ck_assert_int_eq(es_cost_table_add_skip(t, "a.tar: x.wav: truncated", "a.tar", "x", 0), ES_OK);
    ck_assert_uint_eq(skip_count(t), 1);
    ck_assert_str_eq(es_cost_table_skip(t, 0), "a.tar: x.wav: truncated");
    ck_assert_ptr_null(es_cost_table_skip(t, 1));
    ck_assert_uint_eq(skip_count(NULL), 0);
    es_cost_table_free(t);
    es_cost_table_free(NULL);
}
END_TEST

static es_cost_table *numbered_table(const char *prefix, int n, int skips)
{
    es_cost_table *t = es_cost_table_new();
    char key[64], shard[64], msg[64];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s-key-%d", prefix, i);
        snprintf(shard, sizeof shard, "%s.tar", prefix);
        es_cost_row r = make_row(key, shard, (uint64_t)i, prefix, ES_FLAG_AUDIO);
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    for (int i = 0; i < skips; i++) {
        snprintf(msg, sizeof msg, "%s.tar: m%d: bad", prefix, i);
        ck_assert_int_eq(es_cost_table_add_skip(t, msg, "s.tar", NULL, 0), ES_OK);
    }
    return t;
}

static void check_numbered(const es_cost_table *t, size_t at, const char *prefix, int n)
{
    char key[64], shard[64];
    for (int i = 0; i < n; i++) {
        es_cost_row r;
        ck_assert_int_eq(es_cost_table_row(t, at + (size_t)i, &r), ES_OK);
        snprintf(key, sizeof key, "%s-key-%d", prefix, i);
        snprintf(shard, sizeof shard, "%s.tar", prefix);
        ck_assert_str_eq(r.key, key);
        ck_assert_str_eq(r.shard, shard);
        ck_assert_str_eq(r.spk, prefix);
        ck_assert_uint_eq(r.pos, (uint64_t)i);
    }
}

START_TEST(test_move_into)
{
    es_cost_table *dst = numbered_table("a", 100, 1);
    /* Enough rows to fill several arena blocks. */
    es_cost_table *src = numbered_table("b", 60000, 2);
    ck_assert_int_eq(es_cost_table_move_into(dst, src), ES_OK);
    ck_assert_uint_eq(es_cost_table_size(src), 0);
    ck_assert_uint_eq(skip_count(src), 0);
    /* src stays usable after the move. */
    es_cost_row r = make_row("again", "c.tar", 0, "", 0);
    ck_assert_int_eq(es_cost_table_append(src, &r), ES_OK);
    ck_assert_uint_eq(es_cost_table_size(src), 1);
    es_cost_table_free(src);

    ck_assert_uint_eq(es_cost_table_size(dst), 60100);
    check_numbered(dst, 0, "a", 100);
    check_numbered(dst, 100, "b", 60000);
    ck_assert_uint_eq(skip_count(dst), 3);
    ck_assert_str_eq(es_cost_table_skip(dst, 0), "a.tar: m0: bad");
    ck_assert_str_eq(es_cost_table_skip(dst, 1), "b.tar: m0: bad");
    ck_assert_str_eq(es_cost_table_skip(dst, 2), "b.tar: m1: bad");

    /* Appending after the move still interns against the moved rows' shard. */
    es_cost_row last, next;
    r = make_row("after", "b.tar", 9, "b", 0);
    ck_assert_int_eq(es_cost_table_append(dst, &r), ES_OK);
    ck_assert_int_eq(es_cost_table_row(dst, 60099, &last), ES_OK);
    ck_assert_int_eq(es_cost_table_row(dst, 60100, &next), ES_OK);
    ck_assert_ptr_eq(last.shard, next.shard);

    /* Into an empty table, and from an empty one. */
    es_cost_table *empty = es_cost_table_new();
    ck_assert_int_eq(es_cost_table_move_into(empty, dst), ES_OK);
    es_cost_table_free(dst);
    ck_assert_uint_eq(es_cost_table_size(empty), 60101);
    check_numbered(empty, 100, "b", 60000);
    es_cost_table *none = es_cost_table_new();
    ck_assert_int_eq(es_cost_table_move_into(empty, none), ES_OK);
    ck_assert_uint_eq(es_cost_table_size(empty), 60101);
    es_cost_table_free(none);
    ck_assert_int_eq(es_cost_table_move_into(empty, empty), ES_ERR_USAGE);
    check_numbered(empty, 0, "a", 100);
    es_cost_table_free(empty);
}
END_TEST

/* ---- the format ---------------------------------------------------------------- */

START_TEST(test_exact_bytes)
{
    /* This is the format contract: change it only with a new version line. */
    static const char expected[] =
        "#equishard-costs v1\n"
        "key\tshard\tpos\tsample_rate\tchannels\tsamples\taudio_bytes\ttext_len\t"
        "speech_tokens\tspk\tflags\thash\n"
        "utt1\tshards/a.tar\t0\t16000\t1\t48000\t96044\t12\t75\tspk1\taudio,text,hashed\t"
        "0123456789abcdef\n"
        "a\\tb\\\\c\\n\tshards/a.tar\t18446744073709551615\t0\t0\t0\t0\t0\t0\t\t-\t-\n";
    es_cost_table *t = es_cost_table_new();
    es_cost_row r1 = {.key = "utt1", .shard = "shards/a.tar", .pos = 0, .sample_rate = 16000,
                      .channels = 1, .samples = 48000, .audio_bytes = 96044, .text_len = 12,
                      .speech_tokens = 75, .spk = "spk1",
                      .flags = ES_FLAG_AUDIO | ES_FLAG_TEXT | ES_FLAG_HASHED,
                      .hash = 0x0123456789abcdefull};
    /* A hash without the hashed flag is not written. */
    es_cost_row r2 = {.key = "a\tb\\c\n", .shard = "shards/a.tar", .pos = UINT64_MAX, .spk = "",
                      .hash = 42};
    ck_assert_int_eq(es_cost_table_append(t, &r1), ES_OK);
    ck_assert_int_eq(es_cost_table_append(t, &r2), ES_OK);

    const char *dir = test_dir();
    char *path = path_in(dir, "costs.tsv");
    es_context *ctx = es_context_new();
    ck_assert_int_eq(es_cost_table_write(ctx, t, path), ES_OK);
    size_t len;
    unsigned char *got = read_whole_file(path, &len);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(len, sizeof expected - 1);
    ck_assert(memcmp(got, expected, len) == 0);
    free(got);

    /* An empty table is the two header lines. */
    es_cost_table *empty = es_cost_table_new();
    ck_assert_int_eq(es_cost_table_write(ctx, empty, path), ES_OK);
    got = read_whole_file(path, &len);
    ck_assert_uint_eq(len, strlen(MAGIC HEAD));
    ck_assert(memcmp(got, MAGIC HEAD, len) == 0);
    free(got);
    es_cost_table *back = read_ok(ctx, path);
    ck_assert_uint_eq(es_cost_table_size(back), 0);
    es_cost_table_free(back);
    es_cost_table_free(empty);

    es_context_free(ctx);
    es_cost_table_free(t);
    free(path);
}
END_TEST

static void round_trip(const char *name)
{
    const char *dir = test_dir();
    char *path = path_in(dir, name);
    es_context *ctx = es_context_new();
    es_cost_table *t = awkward_table();
    ck_assert_int_eq(es_cost_table_write(ctx, t, path), ES_OK);
    es_cost_table *back = read_ok(ctx, path);
    assert_tables_eq(t, back);
    /* Reading interns the shard too. */
    es_cost_row a, b;
    es_cost_table_row(back, 0, &a);
    es_cost_table_row(back, 1, &b);
    ck_assert_ptr_eq(a.shard, b.shard);
    es_cost_table_free(back);
    es_cost_table_free(t);
    es_context_free(ctx);
    free(path);
}

START_TEST(test_round_trip_plain) { round_trip("costs.tsv"); }
END_TEST

START_TEST(test_round_trip_zstd)
{
    round_trip("costs.tsv.zst");
    /* The .zst file really is zstd, and the plain one is not. */
    const char *dir = test_dir();
    char *z = path_in(dir, "t.zst"), *p = path_in(dir, "t.tsv");
    es_context *ctx = es_context_new();
    es_cost_table *t = awkward_table();
    ck_assert_int_eq(es_cost_table_write(ctx, t, z), ES_OK);
    ck_assert_int_eq(es_cost_table_write(ctx, t, p), ES_OK);
    size_t len;
    unsigned char *b = read_whole_file(z, &len);
    ck_assert(len > 4 && b[0] == 0x28 && b[1] == 0xB5 && b[2] == 0x2F && b[3] == 0xFD);
    free(b);
    b = read_whole_file(p, &len);
    ck_assert(memcmp(b, "#equ", 4) == 0);
    free(b);
    /* Detection is by content: the zstd-compressed file read under another name. */
    char *renamed = path_in(dir, "plain-looking.tsv");
    ck_assert_int_eq(rename(z, renamed), 0);
    es_cost_table *back = read_ok(ctx, renamed);
    assert_tables_eq(t, back);
    /* And the zstd tool agrees it is a valid zstd file with the same content. */
    run_cmd("zstd -q -d -c '%s' | cmp -s - '%s'%s", renamed, p, "");
    es_cost_table_free(back);
    es_cost_table_free(t);
    es_context_free(ctx);
    free(renamed);
    free(z);
    free(p);
}
END_TEST

/* Many rows, so lines straddle the reader's and writer's buffer boundaries, plus
 * one key larger than those buffers; and enough of them (17 MB of rows) that
 * the reader's helper thread prepares the row array's pages while it parses
 * (core/prefault_ahead.h): the rows read back must be the rows written. */
static void big_round_trip(const char *name)
{
    const char *dir = test_dir();
    char *path = path_in(dir, name);
    es_context *ctx = es_context_new();
    es_cost_table *t = es_cost_table_new();
    char key[64], shard[64];
    size_t huge_len = 3u << 20;
    char *huge = malloc(huge_len + 1);
    for (size_t i = 0; i < huge_len; i++)
        huge[i] = "ab\tc\\d\n"[i % 7];
    huge[huge_len] = '\0';
    for (int i = 0; i < 200000; i++) {
        snprintf(key, sizeof key, "utt-%07d-\t", i);
        snprintf(shard, sizeof shard, "data/shard_%05d.tar", i / 1000);
        es_cost_row r = make_row(i == 30000 ? huge : key, shard, (uint64_t)(i % 1000), "spk",
                                 (uint32_t)i & ALL_FLAGS);
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    ck_assert_int_eq(es_cost_table_write(ctx, t, path), ES_OK);
    es_cost_table *back = read_ok(ctx, path);
    assert_tables_eq(t, back);
    es_cost_table_free(back);
    es_cost_table_free(t);
    free(huge);
    es_context_free(ctx);
    free(path);
}

START_TEST(test_big_round_trip_plain) { big_round_trip("big.tsv"); }
END_TEST

START_TEST(test_big_round_trip_zstd) { big_round_trip("big.tsv.zst"); }
END_TEST

/* es_measure_settings.read_progress over two tables given to es_load_inputs
 * (a plain one past 4 MiB, and the same zstd-compressed): done/total bytes,
 * total their sizes as stat gives them, rising, one report inside the plain
 * file at least, the last at the total. */
START_TEST(test_load_inputs_read_progress)
{
    const char *dir = test_dir();
    char *plain = path_in(dir, "progress.tsv"), *zst = path_in(dir, "progress.tsv.zst");
    es_context *ctx = es_context_new();
    es_cost_table *t = es_cost_table_new();
    char key[64], shard[64];
    size_t n = 100000;
    for (size_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "utt-%07zu", i);
        snprintf(shard, sizeof shard, "data/shard_%05zu.tar", i / 1000);
        es_cost_row r = make_row(key, shard, (uint64_t)(i % 1000), "spk", 0);
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    ck_assert_int_eq(es_cost_table_write(ctx, t, plain), ES_OK);
    ck_assert_int_eq(es_cost_table_write(ctx, t, zst), ES_OK);
    struct stat a, b;
    ck_assert_int_eq(stat(plain, &a), 0);
    ck_assert_int_eq(stat(zst, &b), 0);
    ck_assert_int_gt(a.st_size, 4 << 20);
    es_measure_settings s;
    es_measure_defaults(&s);
    progress_seen seen = {0};
    s.read_progress = progress_record;
    s.read_progress_user = &seen;
    const char *inputs[] = {plain, zst};
    es_cost_table *all = NULL;
    ck_assert_msg(es_load_inputs(ctx, &s, inputs, 2, &all) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert_uint_eq(es_cost_table_size(all), 2 * n);
    ck_assert_uint_eq(seen.last_total, (size_t)(a.st_size + b.st_size));
    ck_assert_uint_eq(seen.last_done, (size_t)(a.st_size + b.st_size));
    ck_assert_uint_eq(seen.backwards, 0);
    ck_assert_uint_eq(seen.total_changed, 0);
    ck_assert_uint_ge(seen.before_end, 2); /* inside the plain file, and after it */
    es_cost_table_free(all);
    es_cost_table_free(t);
    es_context_free(ctx);
    free(plain);
    free(zst);
}
END_TEST

/* A table written by hand, as another tool would, and compressed by the zstd CLI. */
START_TEST(test_independent_writer)
{
    const char *dir = test_dir();
    char *path = path_in(dir, "hand.tsv");
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fprintf(fp, "#equishard-costs v1\n");
    fprintf(fp, "key\tshard\tpos\tsample_rate\tchannels\tsamples\taudio_bytes\ttext_len\t"
                "speech_tokens\tspk\tflags\thash\n");
    fprintf(fp, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", "BAC009S0002W0122",
            "/data/aishell/shard_000.tar", 0, 16000, 1, 83200, 166444, 13, 208, "S0002",
            "audio,text,spk_emb,hashed", "ABCDEF0123456789");
    fprintf(fp, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", "x\\ty",
            "/data/aishell/shard_000.tar", 1, 44100, 2, 0, 1234, 0, 0, "", "unsupported", "-");
    /* Leading zeros are tolerated, and the last line has no newline. */
    fprintf(fp, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s", "last", "b.tar", "007", 8000,
            1, 1, 1, 1, 1, "s", "segment,audio", "-");
    ck_assert_int_eq(fclose(fp), 0);

    es_context *ctx = es_context_new();
    es_cost_table *t = read_ok(ctx, path);
    ck_assert_uint_eq(es_cost_table_size(t), 3);
    es_cost_row r;
    es_cost_table_row(t, 0, &r);
    ck_assert_str_eq(r.key, "BAC009S0002W0122");
    ck_assert_str_eq(r.shard, "/data/aishell/shard_000.tar");
    ck_assert_uint_eq(r.samples, 83200);
    ck_assert_uint_eq(r.audio_bytes, 166444);
    ck_assert_uint_eq(r.text_len, 13);
    ck_assert_uint_eq(r.speech_tokens, 208);
    ck_assert_str_eq(r.spk, "S0002");
    ck_assert_uint_eq(r.flags, ES_FLAG_AUDIO | ES_FLAG_TEXT | ES_FLAG_SPK_EMB | ES_FLAG_HASHED);
    ck_assert_uint_eq(r.hash, 0xABCDEF0123456789ull);
    es_cost_table_row(t, 1, &r);
    ck_assert_str_eq(r.key, "x\ty");
    ck_assert_uint_eq(r.channels, 2);
    ck_assert_str_eq(r.spk, "");
    ck_assert_uint_eq(r.flags, ES_FLAG_UNSUPPORTED);
    ck_assert_uint_eq(r.hash, 0);
    es_cost_table_row(t, 2, &r);
    ck_assert_uint_eq(r.pos, 7);
    ck_assert_uint_eq(r.flags, ES_FLAG_AUDIO | ES_FLAG_SEGMENT);

    run_cmd("zstd -q -f '%s' -o '%s.zst'%s", path, path, "");
    char *zpath = path_in(dir, "hand.tsv.zst");
    es_cost_table *z = read_ok(ctx, zpath);
    assert_tables_eq(t, z);
    es_cost_table_free(z);
    /* Multithreaded, checksummed, high-level zstd output as well. */
    run_cmd("zstd -q -f -19 -T2 --check '%s' -o '%s.zst'%s", path, path, "");
    z = read_ok(ctx, zpath);
    assert_tables_eq(t, z);
    es_cost_table_free(z);

    es_cost_table_free(t);
    es_context_free(ctx);
    free(zpath);
    free(path);
}
END_TEST

START_TEST(test_crlf)
{
    const char *dir = test_dir();
    char *path = path_in(dir, "crlf.tsv");
    write_text(path, ES_COSTS_MAGIC_LINE "\r\n" ES_COSTS_HEADER "\r\n"
                     "u1\ts.tar\t0\t16000\t1\t16000\t32044\t5\t25\tspk\taudio,text\t-\r\n"
                     "u2\ts.tar\t1\t16000\t1\t16000\t32044\t5\t25\t\t-\t-\r\n");
    es_context *ctx = es_context_new();
    es_cost_table *t = read_ok(ctx, path);
    ck_assert_uint_eq(es_cost_table_size(t), 2);
    es_cost_row r;
    es_cost_table_row(t, 0, &r);
    ck_assert_str_eq(r.spk, "spk");
    ck_assert_uint_eq(r.flags, ES_FLAG_AUDIO | ES_FLAG_TEXT);
    es_cost_table_row(t, 1, &r);
    ck_assert_str_eq(r.spk, "");
    ck_assert_uint_eq(r.flags, 0);
    es_cost_table_free(t);
    es_context_free(ctx);
    free(path);
}
END_TEST

START_TEST(test_extra_columns)
{
    /* A later v1 writer may append columns; this reader ignores them. */
    const char *dir = test_dir();
    char *path = path_in(dir, "wide.tsv");
    write_text(path, MAGIC ES_COSTS_HEADER "\tloudness\tsnr\n"
                     "u1\ts.tar\t0\t16000\t1\t16000\t32044\t5\t25\tspk\taudio\t-\t-23.5\t30\n");
    es_context *ctx = es_context_new();
    es_cost_table *t = read_ok(ctx, path);
    ck_assert_uint_eq(es_cost_table_size(t), 1);
    es_cost_row r;
    es_cost_table_row(t, 0, &r);
    ck_assert_str_eq(r.spk, "spk");
    ck_assert_uint_eq(r.flags, ES_FLAG_AUDIO);
    es_cost_table_free(t);
    es_context_free(ctx);
    /* Rows must still have every column the header names. */
    expect_bad(dir, "narrow.tsv", MAGIC ES_COSTS_HEADER "\tloudness\n" GOOD_ROW, ES_ERR_FORMAT,
               3, "column 13: missing");
    /* A header whose known part differs is not a header. */
    expect_bad(dir, "renamed.tsv", MAGIC "key\tshard\tposition\n", ES_ERR_FORMAT, 2,
               "expected the column header row");
    expect_bad(dir, "suffix.tsv", MAGIC ES_COSTS_HEADER "x\n", ES_ERR_FORMAT, 2,
               "expected the column header row");
    free(path);
}
END_TEST

START_TEST(test_concatenated)
{
    const char *dir = test_dir();
    char *a = path_in(dir, "a.tsv"), *b = path_in(dir, "b.tsv");
    char *az = path_in(dir, "a.tsv.zst"), *bz = path_in(dir, "b.tsv.zst");
    char *cat = path_in(dir, "cat.tsv"), *catz = path_in(dir, "cat.tsv.zst");
    es_context *ctx = es_context_new();
    es_cost_table *ta = numbered_table("a", 500, 0), *tb = awkward_table();
    ck_assert_int_eq(es_cost_table_write(ctx, ta, a), ES_OK);
    ck_assert_int_eq(es_cost_table_write(ctx, tb, b), ES_OK);
    ck_assert_int_eq(es_cost_table_write(ctx, ta, az), ES_OK);
    ck_assert_int_eq(es_cost_table_write(ctx, tb, bz), ES_OK);

    es_cost_table *want = es_cost_table_new();
    es_cost_table *copy_a = numbered_table("a", 500, 0), *copy_b = awkward_table();
    es_cost_table_move_into(want, copy_a);
    es_cost_table_move_into(want, copy_b);
    es_cost_table_free(copy_a);
    es_cost_table_free(copy_b);

    run_cmd("cat '%s' '%s' > '%s'", a, b, cat);
    es_cost_table *got = read_ok(ctx, cat);
    assert_tables_eq(want, got);
    es_cost_table_free(got);

    /* Two zstd frames, one after the other. */
    run_cmd("cat '%s' '%s' > '%s'", az, bz, catz);
    got = read_ok(ctx, catz);
    assert_tables_eq(want, got);
    es_cost_table_free(got);

    /* A frame of ours followed by one from the zstd tool. */
    run_cmd("zstd -q -c '%s' | cat '%s' - > '%s'", b, az, catz);
    got = read_ok(ctx, catz);
    assert_tables_eq(want, got);
    es_cost_table_free(got);

    /* A header row repeated without a new version line is accepted too. */
    char *rep = path_in(dir, "rep.tsv");
    write_text(rep, MAGIC HEAD GOOD_ROW HEAD GOOD_ROW);
    got = read_ok(ctx, rep);
    ck_assert_uint_eq(es_cost_table_size(got), 2);
    es_cost_table_free(got);

    es_cost_table_free(want);
    es_cost_table_free(ta);
    es_cost_table_free(tb);
    es_context_free(ctx);
    free(rep);
    free(a);
    free(b);
    free(az);
    free(bz);
    free(cat);
    free(catz);
}
END_TEST

/* ---- malformed input ------------------------------------------------------------- */

START_TEST(test_bad_header)
{
    const char *dir = test_dir();
    expect_bad(dir, "empty.tsv", "", ES_ERR_FORMAT, 1, "not an equishard cost table");
    expect_bad(dir, "magic.tsv", "key\tshard\n", ES_ERR_FORMAT, 1,
               "not an equishard cost table (expected #equishard-costs v1)");
    expect_bad(dir, "csv.tsv", "a,b,c\n1,2,3\n", ES_ERR_FORMAT, 1, "not an equishard cost table");
    expect_bad(dir, "v2.tsv", "#equishard-costs v2\n" HEAD GOOD_ROW, ES_ERR_UNSUPPORTED, 1,
               "version");
    expect_bad(dir, "v2later.tsv", MAGIC HEAD GOOD_ROW "#equishard-costs v2\n" HEAD,
               ES_ERR_UNSUPPORTED, 4, "version");
    expect_bad(dir, "nohead.tsv", MAGIC GOOD_ROW, ES_ERR_FORMAT, 2,
               "expected the column header row");
    expect_bad(dir, "onlymagic.tsv", MAGIC, ES_ERR_FORMAT, 2, "missing the column header");
    expect_bad(dir, "catnohead.tsv", MAGIC HEAD GOOD_ROW MAGIC GOOD_ROW, ES_ERR_FORMAT, 5,
               "expected the column header row");
    /* A BOM or leading space is not the magic line. */
    expect_bad(dir, "bom.tsv", "\xEF\xBB\xBF" MAGIC HEAD, ES_ERR_FORMAT, 1, NULL);
}
END_TEST

START_TEST(test_bad_rows)
{
    const char *dir = test_dir();
#define ROW(...) MAGIC HEAD GOOD_ROW __VA_ARGS__ "\n"
    expect_bad(dir, "missing.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\taudio"), ES_ERR_FORMAT,
               4, "column hash: missing");
    expect_bad(dir, "missing2.tsv", ROW("u\ts\t0"), ES_ERR_FORMAT, 4,
               "column sample_rate: missing");
    expect_bad(dir, "extra.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\taudio\t-\tx"),
               ES_ERR_FORMAT, 4, "too many columns");
    expect_bad(dir, "blank.tsv", MAGIC HEAD "\n" GOOD_ROW, ES_ERR_FORMAT, 3, "missing");
    expect_bad(dir, "pos.tsv", ROW("u\ts\tx1\t1\t1\t1\t1\t1\t1\tspk\taudio\t-"), ES_ERR_FORMAT,
               4, "column pos: not a decimal integer: 'x1'");
    expect_bad(dir, "neg.tsv", ROW("u\ts\t-1\t1\t1\t1\t1\t1\t1\tspk\taudio\t-"), ES_ERR_FORMAT,
               4, "column pos: not a decimal integer");
    expect_bad(dir, "plus.tsv", ROW("u\ts\t+1\t1\t1\t1\t1\t1\t1\tspk\taudio\t-"), ES_ERR_FORMAT,
               4, "column pos: not a decimal integer");
    expect_bad(dir, "space.tsv", ROW("u\ts\t1 \t1\t1\t1\t1\t1\t1\tspk\taudio\t-"), ES_ERR_FORMAT,
               4, "column pos: not a decimal integer");
    expect_bad(dir, "emptyint.tsv", ROW("u\ts\t0\t1\t\t1\t1\t1\t1\tspk\taudio\t-"),
               ES_ERR_FORMAT, 4, "column channels: empty");
    expect_bad(dir, "over64.tsv",
               ROW("u\ts\t0\t1\t1\t18446744073709551616\t1\t1\t1\tspk\taudio\t-"), ES_ERR_FORMAT,
               4, "column samples: out of range");
    expect_bad(dir, "over64b.tsv",
               ROW("u\ts\t0\t1\t1\t1\t99999999999999999999999\t1\t1\tspk\taudio\t-"),
               ES_ERR_FORMAT, 4, "column audio_bytes: out of range");
    expect_bad(dir, "over32.tsv", ROW("u\ts\t0\t4294967296\t1\t1\t1\t1\t1\tspk\taudio\t-"),
               ES_ERR_FORMAT, 4, "column sample_rate: out of range");
    expect_bad(dir, "over32b.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t4294967296\tspk\taudio\t-"),
               ES_ERR_FORMAT, 4, "column speech_tokens: out of range");
    expect_bad(dir, "flag.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\taudio,bogus\t-"),
               ES_ERR_FORMAT, 4, "column flags: ");
    expect_bad(dir, "flag2.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\t\t-"), ES_ERR_FORMAT, 4,
               "column flags: ");
    expect_bad(dir, "hash.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\thashed\t0123"),
               ES_ERR_FORMAT, 4, "column hash: ");
    expect_bad(dir, "hash2.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\thashed\t0123456789abcdeg"),
               ES_ERR_FORMAT, 4, "column hash: ");
    expect_bad(dir, "hash3.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\thashed\t-"),
               ES_ERR_FORMAT, 4, "column hash: ");
    expect_bad(dir, "hash4.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\taudio\t0123456789abcdef"),
               ES_ERR_FORMAT, 4, "column hash: must be -");
    expect_bad(dir, "hash5.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\taudio\t"), ES_ERR_FORMAT,
               4, "column hash: ");
    expect_bad(dir, "esc.tsv", ROW("u\\x\ts\t0\t1\t1\t1\t1\t1\t1\tspk\taudio\t-"),
               ES_ERR_FORMAT, 4, "column key: unknown escape");
    expect_bad(dir, "esc2.tsv", ROW("u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\\\taudio\t-"),
               ES_ERR_FORMAT, 4, "column spk: ends with a lone backslash");
    expect_bad(dir, "esc3.tsv", ROW("u\ts\\\t0\t1\t1\t1\t1\t1\t1\tspk\taudio\t-"),
               ES_ERR_FORMAT, 4, "column shard: ");
    static const char nul[] = MAGIC HEAD "u\0v\ts\t0\t1\t1\t1\t1\t1\t1\tspk\taudio\t-\n";
    expect_bad_bytes(dir, "nul.tsv", nul, sizeof nul - 1, ES_ERR_FORMAT, 3, "NUL");
    /* The first bad line is reported, even after many good ones. */
    size_t n = 0, cap = 1 << 22;
    char *many = malloc(cap);
    n += (size_t)snprintf(many + n, cap - n, MAGIC HEAD);
    for (int i = 0; i < 20000; i++)
        n += (size_t)snprintf(many + n, cap - n, GOOD_ROW);
    n += (size_t)snprintf(many + n, cap - n, "u\ts\t0\t1\t1\t1\t1\t1\t1\tspk\taudio\tx\n");
    expect_bad_bytes(dir, "late.tsv", many, n, ES_ERR_FORMAT, 20003, "column hash");
    free(many);
#undef ROW
}
END_TEST

START_TEST(test_bad_zstd)
{
    const char *dir = test_dir();
    char *path = path_in(dir, "t.tsv.zst");
    es_context *ctx = es_context_new();
    es_cost_table *t = numbered_table("z", 2000, 0);
    ck_assert_int_eq(es_cost_table_write(ctx, t, path), ES_OK);
    size_t len;
    unsigned char *data = read_whole_file(path, &len);
    ck_assert(len > 64);
    /* Cut anywhere inside the frame: truncated, whatever was decoded before. */
    expect_bad_bytes(dir, "half.zst", data, len / 2, ES_ERR_FORMAT, 1, "truncated");
    expect_bad_bytes(dir, "short.zst", data, len - 1, ES_ERR_FORMAT, 2003, "truncated");
    expect_bad_bytes(dir, "magiconly.zst", data, 4, ES_ERR_FORMAT, 1, "truncated");
    /* Corrupt bytes inside the frame (the checksum catches what decoding does not). */
    unsigned char *bad = malloc(len);
    memcpy(bad, data, len);
    for (size_t i = len / 2; i < len / 2 + 16; i++)
        bad[i] ^= 0x5a;
    expect_bad_bytes(dir, "corrupt.zst", bad, len, ES_ERR_FORMAT, 1, "zstd");
    /* A frame followed by garbage that is not a frame. */
    unsigned char *tail = malloc(len + 8);
    memcpy(tail, data, len);
    memcpy(tail + len, "garbage!", 8);
    expect_bad_bytes(dir, "tail.zst", tail, len + 8, ES_ERR_FORMAT, 2003, "zstd");
    free(tail);
    free(bad);
    free(data);

    /* Cutting only the checksum: every line was decoded, so the error is after them. */
    es_cost_table *one = numbered_table("q", 3, 0);
    ck_assert_int_eq(es_cost_table_write(ctx, one, path), ES_OK);
    data = read_whole_file(path, &len);
    expect_bad_bytes(dir, "small.zst", data, len - 4, ES_ERR_FORMAT, 6, "truncated");
    free(data);
    es_cost_table_free(one);

    es_cost_table_free(t);
    es_context_free(ctx);
    free(path);
}
END_TEST

START_TEST(test_read_errors)
{
    es_context *ctx = es_context_new();
    es_cost_table *t = (es_cost_table *)1;
    ck_assert_int_eq(es_cost_table_read(ctx, "/nonexistent/costs.tsv", &t), ES_ERR_IO);
    ck_assert_ptr_null(t);
    ck_assert(strstr(es_errmsg(ctx), "/nonexistent/costs.tsv") != NULL);
    /* A directory opens but cannot be read. */
    const char *dir = test_dir();
    t = (es_cost_table *)1;
    ck_assert_int_eq(es_cost_table_read(ctx, dir, &t), ES_ERR_IO);
    ck_assert_ptr_null(t);
    ck_assert(strstr(es_errmsg(ctx), dir) != NULL);
    /* A successful call clears the previous message. */
    char *path = path_in(dir, "ok.tsv");
    write_text(path, MAGIC HEAD GOOD_ROW);
    t = read_ok(ctx, path);
    ck_assert_str_eq(es_errmsg(ctx), "");
    es_cost_table_free(t);
    es_context_free(ctx);
    free(path);
}
END_TEST

START_TEST(test_parse_buffer)
{
    es_context *ctx = es_context_new();
    es_cost_table *t = NULL;
    static const char text[] = MAGIC HEAD GOOD_ROW GOOD_ROW;
    ck_assert_int_eq(es_cost_table_parse_buffer(ctx, "mem", text, sizeof text - 1, 0, &t), ES_OK);
    ck_assert_uint_eq(es_cost_table_size(t), 2);
    es_cost_table_free(t);
    /* The size cap stops a stream that decodes to more than allowed. */
    ck_assert_int_eq(es_cost_table_parse_buffer(ctx, "mem", text, sizeof text - 1, 16, &t),
                     ES_ERR_UNSUPPORTED);
    ck_assert_ptr_null(t);
    ck_assert(strstr(es_errmsg(ctx), "mem: line 1: ") == es_errmsg(ctx));
    ck_assert_int_eq(es_cost_table_parse_buffer(ctx, "mem", "", 0, 0, &t), ES_ERR_FORMAT);
    ck_assert_int_eq(es_cost_table_parse_buffer(ctx, "mem", "\x28\xB5\x2F", 3, 0, &t),
                     ES_ERR_FORMAT);
    es_context_free(ctx);
}
END_TEST

/* ---- atomic writes ------------------------------------------------------------ */

START_TEST(test_write_missing_dir)
{
    const char *dir = test_dir();
    char *path = path_in(dir, "missing/costs.tsv");
    es_context *ctx = es_context_new();
    es_cost_table *t = awkward_table();
    ck_assert_int_eq(es_cost_table_write(ctx, t, path), ES_ERR_IO);
    ck_assert(strstr(es_errmsg(ctx), path) != NULL);
    int tmp;
    ck_assert_int_eq(count_entries(dir, &tmp), 0);
    es_cost_table_free(t);
    es_context_free(ctx);
    free(path);
}
END_TEST

START_TEST(test_write_replaces)
{
    const char *dir = test_dir();
    char *path = path_in(dir, "costs.tsv.zst");
    write_text(path, "previous content\n");
    es_context *ctx = es_context_new();
    es_cost_table *t = awkward_table();
    ck_assert_int_eq(es_cost_table_write(ctx, t, path), ES_OK);
    int tmp;
    ck_assert_int_eq(count_entries(dir, &tmp), 1);
    ck_assert_int_eq(tmp, 0);
    es_cost_table *back = read_ok(ctx, path);
    assert_tables_eq(t, back);
    es_cost_table_free(back);

    /* A failure at rename (the target is a directory) removes the temporary file
     * and leaves the target alone. */
    char *sub = path_in(dir, "sub.tsv");
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    ck_assert_int_eq(es_cost_table_write(ctx, t, sub), ES_ERR_IO);
    ck_assert(strstr(es_errmsg(ctx), sub) != NULL);
    ck_assert_int_eq(count_entries(dir, &tmp), 2);
    ck_assert_int_eq(tmp, 0);
    struct stat st;
    ck_assert_int_eq(stat(sub, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));

    es_cost_table_free(t);
    es_context_free(ctx);
    free(sub);
    free(path);
}
END_TEST

static Suite *cost_table_suite(void)
{
    Suite *s = suite_create("cost_table");
    TCase *mem = tcase_create("memory");
    tcase_add_test(mem, test_flag_names);
    tcase_add_test(mem, test_flags_format_parse);
    tcase_add_test(mem, test_append_and_row);
    tcase_add_test(mem, test_move_into);
    suite_add_tcase(s, mem);

    TCase *fmt = tcase_create("format");
    tcase_add_temp_dir(fmt);
    tcase_add_test(fmt, test_exact_bytes);
    tcase_add_test(fmt, test_round_trip_plain);
    tcase_add_test(fmt, test_round_trip_zstd);
    tcase_add_test(fmt, test_big_round_trip_plain);
    tcase_add_test(fmt, test_big_round_trip_zstd);
    tcase_add_test(fmt, test_load_inputs_read_progress);
    tcase_add_test(fmt, test_independent_writer);
    tcase_add_test(fmt, test_crlf);
    tcase_add_test(fmt, test_extra_columns);
    tcase_add_test(fmt, test_concatenated);
    suite_add_tcase(s, fmt);

    TCase *bad = tcase_create("malformed");
    tcase_add_temp_dir(bad);
    tcase_add_test(bad, test_bad_header);
    tcase_add_test(bad, test_bad_rows);
    tcase_add_test(bad, test_bad_zstd);
    tcase_add_test(bad, test_read_errors);
    tcase_add_test(bad, test_parse_buffer);
    suite_add_tcase(s, bad);

    TCase *atomic = tcase_create("atomic");
    tcase_add_temp_dir(atomic);
    tcase_add_test(atomic, test_write_missing_dir);
    tcase_add_test(atomic, test_write_replaces);
    suite_add_tcase(s, atomic);
    return s;
}

int main(void) { return run_suite(cost_table_suite()); }
