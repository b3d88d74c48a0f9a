/* src/core: the string map, UTF-8 lengths and strip, the line reader, es_grow,
 * the string buffer and arena, and atomic files — each against values worked
 * out by hand or by Python (len(b.decode()), s.strip()), as the comments say. */
#include "check_helpers.h"
#include "core/atomic_file.h"
#include "core/direct_write.h"
#include "core/file_digest.h"
#include "core/grow.h"
#include "core/json_text.h"
#include "core/line_reader.h"
#include "core/bigarray.h"
#include "core/prefault.h"
#include "core/prefault_ahead.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "core/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
    ck_assert_int_eq(fclose(fp), 0);
}

/* Deterministic bytes, every value 0..255 (a newline-free text would hide an
 * offset error less well). */
static void fill_bytes(unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char)(seed >> 16);
    }
}

/* ---- strmap ------------------------------------------------------------------ */

START_TEST(test_strmap_put_get_replace)
{
    es_strmap m = {0};
    ck_assert_ptr_null(es_strmap_get(&m, "a", 1)); /* empty map */
    ck_assert_int_eq(es_strmap_put(&m, "utt1", 4, (const void *)(uintptr_t)11), 0);
    ck_assert_int_eq(es_strmap_put(&m, "utt2", 4, (const void *)(uintptr_t)22), 0);
    /* the length counts, not the NUL: "utt1x" with len 4 is "utt1" */
    ck_assert_int_eq(es_strmap_put(&m, "utt1x", 4, (const void *)(uintptr_t)33), 0);
    ck_assert_uint_eq(m.n, 2);
    const es_strmap_slot *s = es_strmap_get(&m, "utt1", 4);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq((uintptr_t)s->value, 33);
    ck_assert_uint_eq(s->key_len, 4);
    ck_assert_str_eq(s->key, "utt1"); /* copied into the arena, NUL-terminated */
    ck_assert_uint_eq((uintptr_t)es_strmap_get(&m, "utt2", 4)->value, 22);
    ck_assert_ptr_null(es_strmap_get(&m, "utt", 3));
    ck_assert_ptr_null(es_strmap_get(&m, "utt3", 4));
    /* an empty key and keys with bytes past ASCII are keys like any other */
    ck_assert_int_eq(es_strmap_put(&m, "", 0, (const void *)(uintptr_t)1), 0);
    ck_assert_int_eq(es_strmap_put(&m, "\xe4\xb8\xad", 3, (const void *)(uintptr_t)2), 0);
    ck_assert_uint_eq((uintptr_t)es_strmap_get(&m, "", 0)->value, 1);
    ck_assert_uint_eq((uintptr_t)es_strmap_get(&m, "\xe4\xb8\xad", 3)->value, 2);
    ck_assert_uint_eq(m.n, 4);
    ck_assert_uint_eq(m.cap, 64);
    es_strmap_release(&m);
    ck_assert_ptr_null(m.slots);
}
END_TEST

START_TEST(test_strmap_many_keys)
{
    es_strmap m = {0};
    char key[32];
    const char *first = NULL;
    for (uintptr_t i = 0; i < 20000; i++) {
        int n = snprintf(key, sizeof key, "spk%05u", (unsigned)i);
        ck_assert_int_eq(es_strmap_put(&m, key, (size_t)n, (const void *)(i + 1)), 0);
        if (i == 0)
            first = es_strmap_get(&m, "spk00000", 8)->key;
    }
    ck_assert_uint_eq(m.n, 20000);
    ck_assert_uint_eq(m.cap, 32768); /* doubled from 64 while more than 3/4 full */
    for (uintptr_t i = 0; i < 20000; i++) {
        int n = snprintf(key, sizeof key, "spk%05u", (unsigned)i);
        const es_strmap_slot *s = es_strmap_get(&m, key, (size_t)n);
        ck_assert_ptr_nonnull(s);
        ck_assert_uint_eq((uintptr_t)s->value, i + 1);
    }
    /* keys live in the arena: growing the table does not move them */
    ck_assert_ptr_eq(es_strmap_get(&m, "spk00000", 8)->key, first);
    ck_assert_ptr_null(es_strmap_get(&m, "spk20000", 8));
    es_strmap_release(&m);
}
END_TEST

/* ---- utf8 -------------------------------------------------------------------- */

START_TEST(test_utf8_length)
{
    /* Python: len(b.decode("utf-8")) */
    ck_assert_uint_eq(es_utf8_length("", 0), 0);
    ck_assert_uint_eq(es_utf8_length("hello", 5), 5);
    ck_assert_uint_eq(es_utf8_length("h\xc3\xa9llo", 6), 5);                  /* héllo */
    ck_assert_uint_eq(es_utf8_length("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 9), 3); /* 日本語 */
    ck_assert_uint_eq(es_utf8_length("a\xf0\x9f\x98\x80z", 6), 3);            /* a😀z */
    ck_assert_uint_eq(es_utf8_length("a\0b", 3), 3);                          /* NUL counts */
    ck_assert_uint_eq(es_utf8_length("abc", 2), 2);                           /* only n bytes */
    /* invalid lead bytes count one each (errors="replace": "\ufffd\ufffd") */
    ck_assert_uint_eq(es_utf8_length("\xff\xfe", 2), 2);
    /* a truncated sequence counts one (errors="replace": one "\ufffd") */
    ck_assert_uint_eq(es_utf8_length("x\xe6\x97", 3), 2);
}
END_TEST

START_TEST(test_strip)
{
    /* Python: s.strip() */
    const char *s = " \t\n\v\f\r hi there \x1c\x1d\x1e\x1f";
    const char *p = s;
    size_t n = es_strip(&p, strlen(s));
    ck_assert_uint_eq(n, 8);
    ck_assert_int_eq(memcmp(p, "hi there", 8), 0);
    ck_assert_ptr_eq(p, s + 7);
    p = "   ";
    ck_assert_uint_eq(es_strip(&p, 3), 0);
    p = "x";
    ck_assert_uint_eq(es_strip(&p, 1), 1);
    ck_assert_int_eq(p[0], 'x');
    p = "\xc2\xa0x"; /* U+00A0 is not stripped byte-wise: only ASCII whitespace */
    ck_assert_uint_eq(es_strip(&p, 3), 3);
}
END_TEST

/* ---- line reader ------------------------------------------------------------- */

START_TEST(test_line_reader)
{
    const char *path = test_path("lines.txt");
    static const char text[] = "a\r\nbb\n\n\rc\rd\nx\0y\nlast";
    write_file(path, text, sizeof text - 1);
    es_line_reader lr;
    ck_assert_int_eq(es_line_reader_open(&lr, path), 0);
    static const struct {
        const char *line;
        size_t len;
        int nul;
    } want[] = {{"a", 1, 0}, {"bb", 2, 0}, {"", 0, 0}, {"\rc\rd", 4, 0}, {"x\0y", 3, 1},
                {"last", 4, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ck_assert_int_eq(es_line_reader_next(&lr), 1);
        ck_assert_uint_eq(lr.lineno, i + 1);
        ck_assert_uint_eq(lr.len, want[i].len);
        ck_assert_int_eq(memcmp(lr.line, want[i].line, want[i].len), 0);
        ck_assert_int_eq(lr.line[lr.len], '\0');
        ck_assert_int_eq(lr.has_nul, want[i].nul);
    }
    ck_assert_int_eq(es_line_reader_next(&lr), 0);
    ck_assert_int_eq(es_line_reader_next(&lr), 0);
    ck_assert_uint_eq(lr.lineno, 6);
    es_line_reader_close(&lr);
    ck_assert_int_eq(lr.fd, -1);
    es_line_reader_close(&lr); /* twice is harmless */
}
END_TEST

START_TEST(test_line_reader_long_and_missing)
{
    const char *path = test_path("long.txt");
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'k', n);
    big[n] = '\n';
    write_file(path, big, n + 1);
    es_line_reader lr;
    ck_assert_int_eq(es_line_reader_open(&lr, path), 0);
    ck_assert_int_eq(es_line_reader_next(&lr), 1);
    ck_assert_uint_eq(lr.len, n);
    ck_assert_int_eq(memcmp(lr.line, big, n), 0);
    ck_assert_int_eq(es_line_reader_next(&lr), 0);
    es_line_reader_close(&lr);
    free(big);
    ck_assert_int_eq(es_line_reader_open(&lr, test_path("nope.txt")), ENOENT);
    es_line_reader_close(&lr);
}
END_TEST

/* One byte past ES_LINE_MAX (1 MiB, the line above) is refused on that line,
 * with its number; no list line is that long. */
START_TEST(test_line_reader_too_long)
{
    const char *path = test_path("longer.txt");
    size_t n = ((size_t)1 << 20) + 1;
    char *big = malloc(n + 3);
    ck_assert_ptr_nonnull(big);
    memcpy(big, "a\n", 2);
    memset(big + 2, 'k', n);
    big[n + 2] = '\n';
    write_file(path, big, n + 3);
    free(big);
    es_line_reader lr;
    ck_assert_int_eq(es_line_reader_open(&lr, path), 0);
    ck_assert_int_eq(es_line_reader_next(&lr), 1);
    ck_assert_int_eq(es_line_reader_next(&lr), -1);
    es_context *ctx = es_context_new();
    ck_assert_int_eq(es_line_reader_fail(ctx, &lr, "L"), ES_ERR_FORMAT);
    ck_assert_str_eq(es_errmsg(ctx), "L: line 2: longer than 1048576 bytes, the most a line may be");
    es_context_free(ctx);
    ck_assert_uint_le(lr.cap, ((size_t)1 << 20) + 1); /* never more than the limit */
    es_line_reader_close(&lr);
}
END_TEST

/* Running out of memory mid-line is an error, never the end of the file (getline's
 * ENOMEM read as end of file made a list shorter, exit 0): a 256 MiB line of a
 * sparse file, the limit raised past it, under an address-space limit 64 MiB above
 * what the process has. ASan reserves terabytes of shadow memory: no limit there. */
START_TEST(test_line_reader_out_of_memory)
{
#if defined(__SANITIZE_ADDRESS__)
    return;
#endif
    const char *path = test_path("sparse.txt");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)256 << 20), 0);
    close(fd);
    es_context *ctx = es_context_new();
    es_line_reader lr;
    ck_assert_int_eq(es_line_reader_open(&lr, path), 0);
    lr.max_len = (size_t)1 << 30;
    unsigned long pages = 0;
    FILE *st = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(fscanf(st, "%lu", &pages), 1);
    fclose(st);
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)64 << 20);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
    int got = es_line_reader_next(&lr);
    int err = lr.err;
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
    ck_assert_int_eq(got, -1);
    ck_assert_int_eq(err, ENOMEM);
    ck_assert_int_eq(es_line_reader_fail(ctx, &lr, "L"), ES_ERR_NOMEM);
    ck_assert_str_eq(es_errmsg(ctx), "L: line 1: out of memory");
    es_line_reader_close(&lr);
    es_context_free(ctx);
}
END_TEST

/* ---- JSON text ------------------------------------------------------------------- */

/* es_json_dump lays a document out byte for byte as jansson's json_dumps does
 * (jansson is the oracle), for the flags the outputs use; a string that is not
 * UTF-8, as a value or a key, is written \udcXX, as Python writes
 * json.dumps(b.decode("utf-8", "surrogateescape")). */
START_TEST(test_json_dump)
{
    json_t *doc = json_pack("{s:s, s:i, s:I, s:b, s:n, s:[], s:{}, s:[f, f, f, f, f, f, f, f, f], "
                            "s:{s:[i, {s:s}], s:s}, s:s}",
                            "name", "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" \\ /x", "int", -7,
                            "big", (json_int_t)9007199254740993LL, "yes", 1, "none", "empty",
                            "obj", "reals", 0.1, 1e20, 1e-7, 123456789.123, 1.0, 100.0, 1e300,
                            -2.5e-5, 5e-324, "nested", "a", 1, "k", "v", "s", "t", "last", "");
    ck_assert_ptr_nonnull(doc);
    const size_t flags[] = {JSON_INDENT(1) | JSON_REAL_PRECISION(10),
                            JSON_INDENT(2) | JSON_REAL_PRECISION(12),
                            JSON_INDENT(1) | JSON_REAL_PRECISION(15),
                            JSON_INDENT(2) | JSON_REAL_PRECISION(17), JSON_INDENT(2), JSON_COMPACT, 0};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char *want = json_dumps(doc, flags[i]);
        es_strbuf got = {0};
        ck_assert_int_eq(es_json_dump(&got, doc, flags[i]), 0);
        ck_assert_str_eq(got.buf, want);
        free(want);
        es_strbuf_release(&got);
    }
    json_decref(doc);
    /* python3 -c 'import json; print(json.dumps({b"k\xff".decode("utf-8", "surrogateescape"):
     *     b"a\xe9\xc3\"b".decode("utf-8", "surrogateescape")}, separators=(",", ":")))' */
    doc = json_object();
    ck_assert_int_eq(json_object_set_new_nocheck(doc, "k\xff", es_json_bytes("a\xe9\xc3\"b")), 0);
    es_strbuf got = {0};
    ck_assert_int_eq(es_json_dump(&got, doc, JSON_COMPACT), 0);
    ck_assert_str_eq(got.buf, "{\"k\\udcff\":\"a\\udce9\\udcc3\\\"b\"}");
    es_strbuf_release(&got);
    json_decref(doc);
    ck_assert_ptr_null(es_json_bytes(NULL));
}
END_TEST

/* es_json_load_bytes reads what Python's json.dumps writes for strings that
 * were bytes decoded with surrogateescape; the bytes expected are Python's
 * [x.encode("utf-8", "surrogateescape") for x in json.loads(text)["p"]]. Text
 * jansson refuses stays refused (a lone \udc41 is no byte). */
START_TEST(test_json_load_bytes)
{
    static const char text[] = "{\"p\": [\"a\\udce9\\udcc3\\\"b\", \"x\\u0000y\", "
                               "\"\\ud83d\\udc80\\udcff\", \"\\\\\\\\udcff\"], \"n\": 1.5}";
    static const struct {
        const char *bytes;
        size_t len;
    } want[] = {{"a\xe9\xc3\"b", 5}, {"x\0y", 3}, {"\xf0\x9f\x92\x80\xff", 5}, {"\\\\udcff", 7}};
    json_t *doc = es_json_load_bytes(text, sizeof text - 1, JSON_REJECT_DUPLICATES, NULL);
    ck_assert_ptr_nonnull(doc);
    json_t *p = json_object_get(doc, "p");
    ck_assert_int_eq(json_array_size(p), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *s = json_array_get(p, i);
        ck_assert_uint_eq(json_string_length(s), want[i].len);
        ck_assert_mem_eq(json_string_value(s), want[i].bytes, want[i].len);
    }
    ck_assert(json_real_value(json_object_get(doc, "n")) == 1.5);
    /* and written back as it was read (es_json_dump's \u0000 for NUL) */
    es_strbuf got = {0};
    ck_assert_int_eq(es_json_dump(&got, p, JSON_COMPACT), 0);
    ck_assert_str_eq(got.buf, "[\"a\\udce9\\udcc3\\\"b\",\"x\\u0000y\",\"\xf0\x9f\x92\x80\\udcff\","
                              "\"\\\\\\\\udcff\"]");
    es_strbuf_release(&got);
    json_decref(doc);
    static const char *const bad[] = {"[\"\\udc41\"]", "[\"\\udcff\"", "{\"a\": 1, \"a\": 2}"};
    for (size_t i = 0; i < 3; i++)
        ck_assert_ptr_null(
            es_json_load_bytes(bad[i], strlen(bad[i]), JSON_REJECT_DUPLICATES, NULL));
}
END_TEST

/* ---- grow -------------------------------------------------------------------- */

START_TEST(test_grow)
{
    int *a = NULL;
    size_t cap = 0;
    ck_assert_int_eq(es_grow((void **)&a, &cap, 0, sizeof *a, 4), 0); /* nothing needed */
    ck_assert_ptr_null(a);
    ck_assert_uint_eq(cap, 0);
    ck_assert_int_eq(es_grow((void **)&a, &cap, 1, sizeof *a, 4), 0);
    ck_assert_uint_eq(cap, 4);
    a[3] = 7;
    ck_assert_int_eq(es_grow((void **)&a, &cap, 4, sizeof *a, 4), 0); /* fits */
    ck_assert_uint_eq(cap, 4);
    ck_assert_int_eq(es_grow((void **)&a, &cap, 5, sizeof *a, 4), 0);
    ck_assert_uint_eq(cap, 8);
    ck_assert_int_eq(es_grow((void **)&a, &cap, 100, sizeof *a, 4), 0);
    ck_assert_uint_eq(cap, 128);
    ck_assert_int_eq(a[3], 7); /* contents kept */
    int *before = a;
    ck_assert_int_eq(es_grow((void **)&a, &cap, SIZE_MAX / 2, sizeof *a, 4), -1);
    ck_assert_ptr_eq(a, before); /* unchanged on failure */
    ck_assert_uint_eq(cap, 128);
    free(a);

    /* first = 0 starts at 1 */
    char *c = NULL;
    size_t ccap = 0;
    ck_assert_int_eq(es_grow((void **)&c, &ccap, 1, 1, 0), 0);
    ck_assert_uint_eq(ccap, 1);
    ck_assert_int_eq(es_grow((void **)&c, &ccap, 3, 1, 0), 0);
    ck_assert_uint_eq(ccap, 4);
    free(c);
}
END_TEST

/* ---- strbuf and arena -------------------------------------------------------- */

START_TEST(test_strbuf)
{
    es_strbuf sb = {0};
    es_strbuf_puts(&sb, "key");
    es_strbuf_putc(&sb, '\t');
    es_strbuf_printf(&sb, "%d:%s", 42, "x");
    es_strbuf_append(&sb, "abcdef", 3);
    ck_assert_str_eq(sb.buf, "key\t42:xabc");
    ck_assert_uint_eq(sb.len, 11);
    ck_assert_int_eq(sb.oom, 0);
    for (int i = 0; i < 10000; i++)
        es_strbuf_printf(&sb, "%04d", i % 10000);
    ck_assert_uint_eq(sb.len, 11 + 40000);
    ck_assert_int_eq(memcmp(sb.buf + sb.len - 8, "99989999", 8), 0);
    ck_assert_int_eq(sb.buf[sb.len], '\0');
    es_strbuf_release(&sb);
    ck_assert_ptr_null(sb.buf);
}
END_TEST

START_TEST(test_arena)
{
    es_arena a = {0}, b = {0};
    char *first = es_arena_strndup(&a, "speaker-1xyz", 9);
    ck_assert_str_eq(first, "speaker-1");
    char *ptrs[5000];
    char want[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(want, sizeof want, "utt-%d", i);
        ptrs[i] = es_arena_strndup(i % 2 ? &a : &b, want, (size_t)n);
        ck_assert_ptr_nonnull(ptrs[i]);
    }
    ck_assert_str_eq(es_arena_strndup(&a, "", 0), "");
    es_arena_splice(&a, &b); /* b's strings now belong to a, and did not move */
    ck_assert_ptr_null(b.head);
    ck_assert_str_eq(first, "speaker-1");
    for (int i = 0; i < 5000; i++) {
        snprintf(want, sizeof want, "utt-%d", i);
        ck_assert_str_eq(ptrs[i], want);
    }
    es_arena_release(&a);
    es_arena_release(&b);
}
END_TEST

/* A big arena (blocks doubling from 1 MiB to 16 MiB, core/strbuf.c) keeps
 * every string where it was put and intact: ~60 MB of strings of 1 to 400
 * bytes, with strings larger than any block and big es_arena_alloc values
 * (blocks of their own) among them. Under ASan a block sized too small for
 * what is put in it is an overflow. */
static void arena_pattern(char *buf, size_t n, size_t i)
{
    for (size_t k = 0; k < n; k++)
        buf[k] = (char)('!' + (i * 31 + k) % 90);
}

START_TEST(test_arena_grows_across_blocks)
{
    enum { N = 300000, BIG = 20u << 20, OWN = 3u << 20 };
    es_arena a = {0};
    char **ptrs = malloc(N * sizeof *ptrs);
    char *buf = malloc(BIG);
    ck_assert(ptrs && buf);
    for (size_t i = 0; i < N; i++) {
        size_t n = i % 100000 == 99999 ? BIG : 1 + (i * 7919) % 400;
        arena_pattern(buf, n, i);
        if (i % 100000 == 50000) { /* a value of its own, behind the head */
            char *v = es_arena_alloc(&a, OWN);
            ck_assert_ptr_nonnull(v);
            ck_assert_uint_eq((uintptr_t)v % 8, 0);
            memset(v, 0x5a, OWN);
        }
        ptrs[i] = es_arena_strndup(&a, buf, n);
        ck_assert_ptr_nonnull(ptrs[i]);
    }
    for (size_t i = 0; i < N; i++) {
        size_t n = i % 100000 == 99999 ? BIG : 1 + (i * 7919) % 400;
        arena_pattern(buf, n, i);
        ck_assert_msg(memcmp(ptrs[i], buf, n) == 0 && ptrs[i][n] == '\0', "string %zu changed", i);
    }
    es_arena_release(&a);
    free(buf);
    free(ptrs);
}
END_TEST

/* Whether the kernel marked the mapping holding p for huge pages: "hg" in its
 * VmFlags in /proc/self/smaps (set by MADV_HUGEPAGE whatever THP's mode).
 * -1 when smaps cannot tell (no such file, no VmFlags line). */
static int vma_huge_flag(const void *p)
{
    FILE *fp = fopen("/proc/self/smaps", "r");
    if (!fp)
        return -1;
    char line[512];
    int in = 0, found = -1;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, fp)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a >= lo && a < hi;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(fp);
    return found;
}

/* A big array's pages are marked for huge pages (the kernel's own record of
 * it, smaps) over their 2 MiB-aligned part, and ES_FILL_NO_HUGE (a context's
 * huge_pages setting off) leaves them unmarked; the library reads no
 * EQUISHARD_HUGE_PAGES itself (the CLI maps it). Skipped where the kernel has
 * no transparent huge pages. */
START_TEST(test_advise_huge_and_its_switch)
{
    const size_t mib = 1u << 20, n = 8 * mib;
    for (int off = 0; off < 2; off++) {
        char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ck_assert(m != MAP_FAILED);
        if (madvise(m, n, MADV_NOHUGEPAGE) != 0) { /* no THP in this kernel */
            munmap(m, n);
            return;
        }
        char *aligned = (char *)(((uintptr_t)m + 2 * mib - 1) & ~(uintptr_t)(2 * mib - 1));
        setenv("EQUISHARD_HUGE_PAGES", "0", 1);
        es_bigarray_col col = {aligned, 1};
        es_bigarray_writer w;
        es_bigarray_begin(&w, ES_FILL_MAP | (off ? ES_FILL_NO_HUGE : 0), &col, 1, 4 * mib);
        es_bigarray_end(&w);
        unsetenv("EQUISHARD_HUGE_PAGES");
        int flag = vma_huge_flag(aligned);
        munmap(m, n);
        if (flag < 0)
            return; /* smaps does not say */
        ck_assert_int_eq(flag, !off);
    }
}
END_TEST

/* ---- atomic file ------------------------------------------------------------- */

static int entries(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "exit $(ls -A '%s' | wc -l)", dir);
    return WEXITSTATUS(system(cmd));
}

/* An aligned es_strbuf stays aligned through every growth (realloc would not
 * keep it) and holds what an ordinary one holds. */
START_TEST(test_strbuf_aligned)
{
    es_strbuf plain = {0}, aligned = {.align = ES_DIRECT_ALIGN};
    for (int i = 0; i < 200000; i++) {
        char *before = aligned.buf;
        es_strbuf_printf(&plain, "%d,", i);
        es_strbuf_printf(&aligned, "%d,", i);
        if (aligned.buf != before)
            ck_assert_uint_eq((uintptr_t)aligned.buf % ES_DIRECT_ALIGN, 0);
    }
    ck_assert_int_eq(aligned.oom, 0);
    ck_assert_uint_eq(aligned.len, plain.len);
    ck_assert_int_eq(memcmp(aligned.buf, plain.buf, plain.len + 1), 0);
    ck_assert_uint_eq(aligned.cap % ES_DIRECT_ALIGN, 0);
    es_strbuf_release(&aligned);
    ck_assert_uint_eq(aligned.align, ES_DIRECT_ALIGN); /* kept for reuse */
    es_strbuf_append(&aligned, "x", 1);
    ck_assert_uint_eq((uintptr_t)aligned.buf % ES_DIRECT_ALIGN, 0);
    ck_assert_str_eq(aligned.buf, "x");
    es_strbuf_release(&aligned);
    es_strbuf_release(&plain);
}
END_TEST

/* es_write_whole writes exactly the buffer after whatever the file held, for
 * lengths around the block size, aligned or not, at aligned and unaligned
 * offsets, and leaves the descriptor's flags as they were. */
static void check_write_whole(const char *path)
{
    static const size_t lens[] = {0, 1, 4095, 4096, 4097, 12288, 300001, (1u << 20) + 123};
    static const size_t pres[] = {0, 10, 8192};
    size_t max = (1u << 20) + 123 + 1;
    unsigned char *buf = aligned_alloc(ES_DIRECT_ALIGN, (max + ES_DIRECT_ALIGN) / ES_DIRECT_ALIGN *
                                                            ES_DIRECT_ALIGN);
    unsigned char pre[8192];
    fill_bytes(pre, sizeof pre, 7);
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
        for (size_t q = 0; q < sizeof pres / sizeof *pres; q++)
            for (size_t shift = 0; shift < 2; shift++) {
                unsigned char *data = buf + shift;
                fill_bytes(data, lens[l], (uint32_t)(l * 31 + q));
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(write(fd, pre, pres[q]), (ssize_t)pres[q]);
                int flags = fcntl(fd, F_GETFL);
                ck_assert_int_eq(es_write_whole(fd, data, lens[l], 0), 0);
                ck_assert_int_eq(fcntl(fd, F_GETFL), flags);
                ck_assert_int_eq(close(fd), 0);
                size_t len;
                unsigned char *got = read_whole_file(path, &len);
                ck_assert_uint_eq(len, pres[q] + lens[l]);
                ck_assert_int_eq(memcmp(got, pre, pres[q]), 0);
                ck_assert_int_eq(memcmp(got + pres[q], data, lens[l]), 0);
                free(got);
            }
    free(buf);
}

START_TEST(test_write_whole_bytes)
{
    check_write_whole(test_path("direct.bin"));
    /* tmpfs: O_DIRECT since Linux 6.6, refused before; the same bytes either way */
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
        char shm[64];
        snprintf(shm, sizeof shm, "/dev/shm/equishard-test-%ld.bin", (long)getpid());
        check_write_whole(shm);
        unlink(shm);
    }
}
END_TEST

/* Whether the first page of path is in the page cache (mincore). */
static int first_page_cached(const char *path)
{
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    void *m = mmap(NULL, ES_DIRECT_ALIGN, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    unsigned char vec = 0;
    ck_assert_int_eq(mincore(m, ES_DIRECT_ALIGN, &vec), 0);
    munmap(m, ES_DIRECT_ALIGN);
    close(fd);
    return vec & 1;
}

/* The point of it: where the file system takes O_DIRECT, the blocks written
 * do not pass through the page cache (a buffered write leaves them there, and
 * so does es_write_whole given SIZE_MAX, as its callers do for a context
 * whose direct_io setting is off). */
START_TEST(test_write_whole_skips_page_cache)
{
    const char *path = test_path("direct.bin");
    size_t n = 1u << 20;
    unsigned char *buf = aligned_alloc(ES_DIRECT_ALIGN, n);
    fill_bytes(buf, n, 3);
    /* A file system may take O_DIRECT and still go through the page cache
     * (btrfs on compressed files, for one): nothing to check there. */
    int probe = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    int bypasses = probe >= 0 && write(probe, buf, ES_DIRECT_ALIGN) == ES_DIRECT_ALIGN;
    if (probe >= 0)
        close(probe);
    if (!bypasses || first_page_cached(path)) {
        fprintf(stderr, "SKIP: %s: O_DIRECT does not bypass the page cache here\n", path);
        free(buf);
        return;
    }
    for (int way = 0; way < 2; way++) { /* buffered, direct */
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(es_write_whole(fd, buf, n, way ? ES_DIRECT_ALIGN : SIZE_MAX), 0);
        ck_assert_int_eq(close(fd), 0);
        ck_assert_int_eq(first_page_cached(path), way != 1);
    }
    size_t len;
    unsigned char *got = read_whole_file(path, &len);
    ck_assert_uint_eq(len, n);
    ck_assert_int_eq(memcmp(got, buf, n), 0);
    free(got);
    free(buf);
}
END_TEST

START_TEST(test_atomic_commit_and_abort)
{
    char path[4200];
    snprintf(path, sizeof path, "%s", test_path("out.txt"));
    es_context *ctx = es_context_new();
    es_atomic_file f;
    ck_assert_int_eq(es_atomic_open(ctx, &f, path), ES_OK);
    fputs("first\n", f.fp);
    ck_assert_int_eq(access(path, F_OK), -1); /* not there before the commit */
    ck_assert_int_eq(entries(test_dir()), 1);  /* only the temporary file */
    ck_assert_int_eq(es_atomic_commit(ctx, &f), ES_OK);
    ck_assert_ptr_null(f.fp);
    size_t len;
    unsigned char *got = read_whole_file(path, &len);
    ck_assert_uint_eq(len, 6);
    ck_assert_int_eq(memcmp(got, "first\n", 6), 0);
    free(got);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    mode_t mask = umask(0);
    umask(mask);
    ck_assert_uint_eq(st.st_mode & 0777, 0666 & ~mask); /* not mkstemp's 0600 */

    /* aborted: the previous file stays, the temporary one goes */
    ck_assert_int_eq(es_atomic_open(ctx, &f, path), ES_OK);
    fputs("second, never seen\n", f.fp);
    es_atomic_abort(&f);
    got = read_whole_file(path, &len);
    ck_assert_uint_eq(len, 6);
    ck_assert_int_eq(memcmp(got, "first\n", 6), 0);
    free(got);
    ck_assert_int_eq(entries(test_dir()), 1);

    /* a replacement is whole */
    ck_assert_int_eq(es_atomic_open(ctx, &f, path), ES_OK);
    fputs("third\n", f.fp);
    ck_assert_int_eq(es_atomic_commit(ctx, &f), ES_OK);
    got = read_whole_file(path, &len);
    ck_assert_uint_eq(len, 6);
    ck_assert_int_eq(memcmp(got, "third\n", 6), 0);
    free(got);
    ck_assert_int_eq(entries(test_dir()), 1);
    es_context_free(ctx);
}
END_TEST

START_TEST(test_atomic_missing_dir)
{
    char path[4200], want[4300];
    snprintf(path, sizeof path, "%s", test_path("no/such/out.txt"));
    es_context *ctx = es_context_new();
    es_atomic_file f;
    ck_assert_int_eq(es_atomic_open(ctx, &f, path), ES_ERR_IO);
    snprintf(want, sizeof want, "%s: cannot create: No such file or directory", path);
    ck_assert_str_eq(es_errmsg(ctx), want);
    ck_assert_ptr_null(f.fp);
    ck_assert_ptr_null(f.temp_path);
    es_context_free(ctx);
}
END_TEST

/* core/prefault_ahead.h: arrays written in step while a helper prepares
 * their pages. What must hold whatever the timing: every element the writer
 * wrote reads back, bytes it never wrote keep their contents (the helper's
 * touch changes nothing), every window the writer reached was prepared by
 * exactly one side, and the helper stays within its lead. */
enum { AHEAD_N = 3u << 20 }; /* 24 MiB of uint64_t: 6 windows of 4 MiB */

static void sleep_ms(long ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

START_TEST(test_prefault_ahead_writer_in_step)
{
    uint64_t *wide = malloc(AHEAD_N * sizeof *wide);
    uint32_t *mid = malloc(AHEAD_N * sizeof *mid);
    unsigned char *narrow = malloc(AHEAD_N);
    ck_assert(wide && mid && narrow);
    /* bytes the writer never writes: must come out as they went in */
    memset(wide, 0xA5, AHEAD_N * sizeof *wide);
    memset(mid, 0x5A, AHEAD_N * sizeof *mid);
    memset(narrow, 0x3C, AHEAD_N);
    es_ahead_array arrays[3] = {{wide, 8}, {mid, 4}, {narrow, 1}};
    es_ahead_cursor c = {es_prefault_ahead_start(arrays, 3, AHEAD_N, 8u << 20, 1, 1), 0};
    ck_assert_ptr_nonnull(c.a);
    /* a slow start, so the helper gets ahead; the writer stops at 5/6 */
    sleep_ms(200);
    size_t stop_at = AHEAD_N / 6 * 5;
    for (size_t i = 0; i < stop_at; i++) {
        es_ahead_reach(&c, i + 1);
        ck_assert(c.ready >= i + 1);
        wide[i] = i * 3;
        mid[i] = (uint32_t)i ^ 0x1234567u;
        if (i % 2)
            narrow[i] = (unsigned char)i;
    }
    size_t by_helper, by_writer, windows;
    es_prefault_ahead_counts(c.a, &by_helper, &by_writer, &windows);
    es_prefault_ahead_stop(c.a);
    ck_assert_uint_eq(windows, 6);
    /* the writer reached windows 0..4: each prepared by one side; the helper,
     * which starts two windows out, got ahead during the sleep, and no more
     * than its lead (at least 4 windows) beyond the writer's last */
    ck_assert_uint_ge(by_helper, 1);
    ck_assert_uint_ge(by_writer, 2);
    ck_assert_uint_le(by_helper + by_writer, 6);
    ck_assert_uint_ge(by_helper + by_writer, 5);
    for (size_t i = 0; i < AHEAD_N; i++) {
        uint64_t w = 0xA5A5A5A5A5A5A5A5u;
        uint32_t m = 0x5A5A5A5Au;
        unsigned char b = 0x3C;
        if (i < stop_at) {
            w = i * 3;
            m = (uint32_t)i ^ 0x1234567u;
            b = i % 2 ? (unsigned char)i : 0x3C;
        }
        if (wide[i] != w || mid[i] != m || narrow[i] != b)
            ck_abort_msg("element %zu: %llx %x %x", i, (unsigned long long)wide[i], mid[i],
                         narrow[i]);
    }
    free(wide), free(mid), free(narrow);
}
END_TEST

/* Writes in a scattered order (as a grouping pass of an unsorted table does):
 * reaching an index prepares everything before it. */
START_TEST(test_prefault_ahead_scattered_writes)
{
    enum { N = 1u << 22 };
    uint64_t *a = malloc(N * sizeof *a);
    ck_assert_ptr_nonnull(a);
    memset(a, 0, N * sizeof *a);
    es_ahead_array arr = {a, sizeof *a};
    es_ahead_cursor c = {es_prefault_ahead_start(&arr, 1, N, 64u << 20, 1, 1), 0};
    ck_assert_ptr_nonnull(c.a);
    /* i → i * 40503 mod n visits every index once (40503 is odd, n a power of 2) */
    for (size_t i = 0; i < N; i++) {
        size_t at = i * 40503u % N;
        es_ahead_reach(&c, at + 1);
        a[at] = at + 1;
    }
    size_t by_helper, by_writer, windows;
    es_prefault_ahead_counts(c.a, &by_helper, &by_writer, &windows);
    es_prefault_ahead_stop(c.a);
    ck_assert_uint_eq(windows, 8);
    ck_assert_uint_eq(by_helper + by_writer, windows); /* all reached */
    for (size_t i = 0; i < N; i++)
        if (a[i] != i + 1)
            ck_abort_msg("element %zu: %llu", i, (unsigned long long)a[i]);
    free(a);
}
END_TEST

/* core/bigarray.h's policies, by the kernel's own record of which pages are
 * mapped (mincore): ES_FILL_FAULT maps nothing, ES_FILL_MAP everything at
 * once, ES_FILL_WINDOWS the 4 MiB from the element reached and not the rest;
 * a helper-backed writer (ES_FILL_AHEAD) leaves exactly what was written; an
 * allocation whose size overflows is refused. Skipped where the kernel has no
 * MADV_POPULATE_WRITE (then the policies are only faults). */
static size_t resident_pages(const char *p, size_t from, size_t to)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 0;
    unsigned char *vec = malloc((to - from) / page + 1);
    ck_assert_int_eq(mincore((void *)(p + from), to - from, vec), 0);
    for (size_t i = 0; i < (to - from) / page; i++)
        n += vec[i] & 1;
    free(vec);
    return n;
}

START_TEST(test_bigarray_policies)
{
    const size_t mib = 1u << 20, bytes = 32 * mib, n = bytes / sizeof(uint64_t);
    ck_assert_ptr_null(es_bigarray_alloc(SIZE_MAX / 2, 4, ES_FILL_MAP));
    for (int fill = ES_FILL_FAULT; fill <= ES_FILL_WINDOWS; fill++) {
        char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ck_assert(m != MAP_FAILED);
#ifdef MADV_POPULATE_WRITE
        int populate = madvise(m, 4096, MADV_POPULATE_WRITE) == 0;
#else
        int populate = 0;
#endif
        if (!populate) {
            munmap(m, bytes);
            return;
        }
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        es_bigarray_col col = {m, sizeof(uint64_t)};
        es_bigarray_writer w;
        es_bigarray_begin(&w, (es_fill)fill, &col, 1, n);
        if (fill == ES_FILL_FAULT) {
            ck_assert_uint_le(resident_pages(m, 0, bytes), 1); /* the probe's page */
        } else if (fill == ES_FILL_MAP) {
            ck_assert_uint_eq(resident_pages(m, 0, bytes), bytes / page);
        } else {
            es_bigarray_reach(&w, n / 4); /* 8 MiB in: [8, 12) MiB mapped */
            ck_assert_uint_eq(resident_pages(m, 8 * mib, 12 * mib), 4 * mib / page);
            /* huge pages may round the window's ends out to 2 MiB */
            ck_assert_uint_eq(resident_pages(m, 14 * mib, bytes), 0);
            ck_assert_uint_eq(resident_pages(m, 2 * mib, 6 * mib), 0);
        }
        es_bigarray_end(&w);
        es_bigarray_end(&w); /* twice: ignored */
        munmap(m, bytes);
    }
    uint64_t *a = malloc(bytes);
    ck_assert_ptr_nonnull(a);
    es_bigarray_col col = {a, sizeof *a};
    es_bigarray_writer w;
    es_bigarray_begin(&w, ES_FILL_AHEAD | ES_FILL_WINDOWS, &col, 1, n);
    for (size_t i = 0; i < n; i++) {
        es_bigarray_reach(&w, i);
        a[i] = i * 3;
    }
    es_bigarray_end(&w);
    for (size_t i = 0; i < n; i++)
        if (a[i] != i * 3)
            ck_abort_msg("element %zu is %llu", i, (unsigned long long)a[i]);
    free(a);
}
END_TEST

START_TEST(test_prefault_ahead_small_or_stopped_early)
{
    /* under min_bytes: nothing started, and the cursor lets everything through */
    uint32_t small[1000];
    es_ahead_array arr = {small, sizeof small[0]};
    es_ahead_cursor c = {es_prefault_ahead_start(&arr, 1, 1000, 1 << 20, sizeof small + 1, 1), 0};
    ck_assert_ptr_null(c.a);
    es_ahead_reach(&c, 1000);
    ck_assert_uint_eq(c.ready, SIZE_MAX);
    es_prefault_ahead_stop(NULL);
    /* no arrays, or an impossible size: refused */
    ck_assert_ptr_null(es_prefault_ahead_start(&arr, 0, 1000, 1 << 20, 1, 1));
    es_ahead_array huge = {small, SIZE_MAX / 2};
    ck_assert_ptr_null(es_prefault_ahead_start(&huge, 1, 3, 1 << 20, 1, 1));
    /* stopped before the writer wrote anything: joins, changes nothing */
    size_t bytes = AHEAD_N * sizeof(uint64_t); /* 6 windows: the helper takes 2..5 */
    unsigned char *big = malloc(bytes);
    ck_assert_ptr_nonnull(big);
    memset(big, 7, bytes);
    es_ahead_array b = {big, 1};
    es_prefault_ahead *a = es_prefault_ahead_start(&b, 1, bytes, 64u << 20, 1, 1);
    ck_assert_ptr_nonnull(a);
    sleep_ms(100);
    size_t by_helper, by_writer, windows;
    es_prefault_ahead_counts(a, &by_helper, &by_writer, &windows);
    es_prefault_ahead_stop(a);
    ck_assert_uint_eq(by_writer, 0);
    ck_assert_uint_le(by_helper, 4);
    for (size_t i = 0; i < bytes; i++)
        if (big[i] != 7)
            ck_abort_msg("byte %zu changed", i);
    free(big);
}
END_TEST

/* core/file_digest.h: a remembered digest is found only for the same,
 * unchanged file; a rewrite (even to the same size) or a touch hides it. */
START_TEST(test_file_digest_identity)
{
    char path[4200], other[4200];
    snprintf(path, sizeof path, "%s", test_path("table.tsv"));
    snprintf(other, sizeof other, "%s", test_path("other.tsv"));
    write_file(path, "abc\n", 4);
    write_file(other, "abc\n", 4);
    struct stat st, st2;
    ck_assert_int_eq(stat(path, &st), 0);
    uint64_t d = 0;
    ck_assert_int_eq(es_file_digest_recall(&st, &d), 0);
    es_file_digest_remember(&st, 0x1234);
    ck_assert_int_eq(stat(path, &st2), 0);
    ck_assert_int_eq(es_file_digest_recall(&st2, &d), 1);
    ck_assert_uint_eq(d, 0x1234);
    /* another file with the same bytes: another inode */
    ck_assert_int_eq(stat(other, &st2), 0);
    ck_assert_int_eq(es_file_digest_recall(&st2, &d), 0);
    /* rewritten to the same size: the change time moves (wait out coarse clocks) */
    struct timespec pause = {0, 20 * 1000000L};
    nanosleep(&pause, NULL);
    write_file(path, "xyz\n", 4);
    ck_assert_int_eq(stat(path, &st2), 0);
    ck_assert_int_eq(st2.st_size, st.st_size);
    ck_assert_int_eq(es_file_digest_recall(&st2, &d), 0);
    /* remembered again, then only touched */
    es_file_digest_remember(&st2, 0x5678);
    ck_assert_int_eq(es_file_digest_recall(&st2, &d), 1);
    ck_assert_uint_eq(d, 0x5678);
    ck_assert_int_eq(es_file_digest_recall(&st, &d), 0); /* the old identity is gone */
    nanosleep(&pause, NULL);
    ck_assert_int_eq(utimensat(AT_FDCWD, path, NULL, 0), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(es_file_digest_recall(&st, &d), 0);
}
END_TEST

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *mem = tcase_create("memory");
    tcase_add_test(mem, test_strmap_put_get_replace);
    tcase_add_test(mem, test_strmap_many_keys);
    tcase_add_test(mem, test_utf8_length);
    tcase_add_test(mem, test_strip);
    tcase_add_test(mem, test_grow);
    tcase_add_test(mem, test_strbuf);
    tcase_add_test(mem, test_strbuf_aligned);
    tcase_add_test(mem, test_arena);
    tcase_add_test(mem, test_arena_grows_across_blocks);
    tcase_add_test(mem, test_advise_huge_and_its_switch);
    tcase_add_test(mem, test_prefault_ahead_writer_in_step);
    tcase_add_test(mem, test_prefault_ahead_scattered_writes);
    tcase_add_test(mem, test_prefault_ahead_small_or_stopped_early);
    tcase_add_test(mem, test_bigarray_policies);
    suite_add_tcase(s, mem);

    TCase *files = tcase_create("files");
    tcase_add_temp_dir(files);
    tcase_add_test(files, test_line_reader);
    tcase_add_test(files, test_line_reader_long_and_missing);
    tcase_add_test(files, test_line_reader_too_long);
    tcase_add_test(files, test_line_reader_out_of_memory);
    tcase_add_test(files, test_json_dump);
    tcase_add_test(files, test_json_load_bytes);
    tcase_add_test(files, test_atomic_commit_and_abort);
    tcase_add_test(files, test_atomic_missing_dir);
    tcase_add_test(files, test_file_digest_identity);
    tcase_add_test(files, test_write_whole_bytes);
    tcase_add_test(files, test_write_whole_skips_page_cache);
    suite_add_tcase(s, files);
    return s;
}

int main(void) { return run_suite(core_suite()); }
