/* Audio probes against soxi ground truth (fixtures and tests/data/audio), plus
 * malformed, truncated and hostile inputs. */
#include "audio/audio_probe.h"
#include "check_helpers.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUFFER (16u << 20)

/* ---- streams ------------------------------------------------------------ */

/* A file-backed stream, like the readers hand the probes: read with fread,
 * skip with fseek. */
typedef struct file_src {
    FILE *fp;
    uint64_t off, size;
} file_src;

static ssize_t file_read(void *opaque, void *buf, size_t n)
{
    file_src *f = opaque;
    size_t r = fread(buf, 1, n, f->fp);
    if (r == 0 && ferror(f->fp))
        return -1;
    f->off += r;
    return (ssize_t)r;
}

static int64_t file_skip(void *opaque, uint64_t n)
{
    file_src *f = opaque;
    uint64_t left = f->size > f->off ? f->size - f->off : 0;
    if (n > left)
        n = left;
    if (fseeko(f->fp, (off_t)n, SEEK_CUR) != 0)
        return -1;
    f->off += n;
    return (int64_t)n;
}

/* Probes the file at path; fails the test if it cannot be opened. */
static int probe_file(const char *path, size_t max_buffer, es_audio_info *info, char *err,
                      size_t errlen)
{
    file_src f = { fopen(path, "rb"), 0, 0 };
    ck_assert_msg(f.fp != NULL, "cannot open %s", path);
    fseeko(f.fp, 0, SEEK_END);
    f.size = (uint64_t)ftello(f.fp);
    rewind(f.fp);
    es_byte_stream s = { file_read, file_skip, &f, f.size, 0 };
    int rc = es_audio_probe(&s, max_buffer, info, err, errlen);
    fclose(f.fp);
    return rc;
}

static int probe_mem(const void *data, size_t len, es_audio_info *info, char *err,
                     size_t errlen)
{
    es_byte_stream s;
    es_mem_stream m;
    es_byte_stream_from_memory(&s, &m, data, len);
    err[0] = '\0';
    return es_audio_probe(&s, MAX_BUFFER, info, err, errlen);
}

/* Counts what the probe pulls through `read` versus `skip`. */
typedef struct counting {
    es_mem_stream mem;
    es_byte_stream inner;
    uint64_t read_bytes, skipped_bytes;
    uint64_t fail_after; /* read fails once this many bytes were read; 0 = never */
} counting;

static ssize_t count_read(void *opaque, void *buf, size_t n)
{
    counting *c = opaque;
    if (c->fail_after && c->read_bytes + n > c->fail_after)
        return -1;
    ssize_t r = c->inner.read(c->inner.opaque, buf, n);
    if (r > 0)
        c->read_bytes += (uint64_t)r;
    return r;
}

static int64_t count_skip(void *opaque, uint64_t n)
{
    counting *c = opaque;
    int64_t r = c->inner.skip(c->inner.opaque, n);
    if (r > 0)
        c->skipped_bytes += (uint64_t)r;
    return r;
}

static void counting_init(counting *c, es_byte_stream *s, const void *data, size_t len)
{
    memset(c, 0, sizeof *c);
    es_byte_stream_from_memory(&c->inner, &c->mem, data, len);
    s->read = count_read;
    s->skip = count_skip;
    s->opaque = c;
    s->size = len;
    s->consumed = 0;
}

/* ---- truth tables ------------------------------------------------------- */

#define MAX_COLS 16

typedef struct tsv {
    FILE *fp;
    char line[8192];
    char *col[MAX_COLS];
    int ncol;
    char *names[MAX_COLS];
    char header[8192];
    int nnames;
} tsv;

static int split(char *line, char **col)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < MAX_COLS;) {
        col[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

static void tsv_open(tsv *t, const char *path)
{
    t->fp = fopen(path, "r");
    ck_assert_msg(t->fp != NULL, "cannot open %s", path);
    ck_assert(fgets(t->header, sizeof t->header, t->fp) != NULL);
    t->nnames = split(t->header, t->names);
}

static int tsv_next(tsv *t)
{
    if (!fgets(t->line, sizeof t->line, t->fp))
        return 0;
    t->ncol = split(t->line, t->col);
    ck_assert_int_eq(t->ncol, t->nnames);
    return 1;
}

static const char *tsv_get(const tsv *t, const char *name)
{
    for (int i = 0; i < t->nnames; i++)
        if (!strcmp(t->names[i], name))
            return t->col[i];
    ck_abort_msg("no column %s", name);
    return NULL;
}

static uint64_t num(const char *s)
{
    return strtoull(s, NULL, 10);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Probes `path` and asserts the exact soxi truth. */
static void expect_exact(const char *path, const char *format, uint64_t rate, uint64_t ch,
                         uint64_t samples)
{
    es_audio_info info;
    char err[256] = "";
    int rc = probe_file(path, MAX_BUFFER, &info, err, sizeof err);
    ck_assert_msg(rc == ES_PROBE_OK, "%s: rc %d: %s", path, rc, err);
    ck_assert_msg(info.sample_rate == rate && info.channels == ch && info.samples == samples,
                  "%s: got %u Hz %u ch %llu samples, soxi says %llu Hz %llu ch %llu", path,
                  info.sample_rate, info.channels, (unsigned long long)info.samples,
                  (unsigned long long)rate, (unsigned long long)ch, (unsigned long long)samples);
    ck_assert_msg(info.flags == 0, "%s: flags %u", path, info.flags);
    ck_assert_str_eq(es_audio_format_name(info.format), format);
}

/* ---- against soxi ------------------------------------------------------- */

START_TEST(corpus_a_matches_soxi)
{
    tsv t;
    tsv_open(&t, fixture_path("corpus_a/truth.tsv"));
    char base[4096];
    snprintf(base, sizeof base, "%s", fixture_path("corpus_a"));
    int n = 0;
    while (tsv_next(&t)) {
        const char *rel = tsv_get(&t, "path");
        const char *fmt = ends_with(rel, ".wav") ? "wav" : ends_with(rel, ".flac") ? "flac" : NULL;
        if (!fmt)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", base, rel);
        expect_exact(path, fmt, num(tsv_get(&t, "sample_rate")), num(tsv_get(&t, "channels")),
                     num(tsv_get(&t, "num_samples")));
        n++;
    }
    fclose(t.fp);
    ck_assert_int_eq(n, 60); /* 55 WAV + 5 FLAC */
}
END_TEST

START_TEST(real_files_match_soxi)
{
    tsv t;
    tsv_open(&t, fixture_path("real/audio-truth.tsv"));
    char base[4096];
    snprintf(base, sizeof base, "%s", fixture_path("real"));
    int exact = 0, mp3 = 0;
    while (tsv_next(&t)) {
        const char *fmt = tsv_get(&t, "format");
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", base, tsv_get(&t, "path"));
        uint64_t rate = num(tsv_get(&t, "sample_rate")), ch = num(tsv_get(&t, "channels"));
        if (!strcmp(fmt, "wav") || !strcmp(fmt, "flac")) {
            expect_exact(path, fmt, rate, ch, num(tsv_get(&t, "num_samples")));
            exact++;
            continue;
        }
        ck_assert_str_eq(fmt, "mp3");
        /* soxi's mp3 count is a header estimate; only rate and channels are
         * exact, and the probe must say its count is an estimate. */
        es_audio_info info;
        char err[256] = "";
        int rc = probe_file(path, MAX_BUFFER, &info, err, sizeof err);
        ck_assert_msg(rc == ES_PROBE_OK, "%s: %s", path, err);
        ck_assert_uint_eq(info.sample_rate, rate);
        ck_assert_uint_eq(info.channels, ch);
        ck_assert(info.flags & ES_AUDIO_ESTIMATED);
        ck_assert_int_eq(info.format, ES_AUDIO_OTHER);
        ck_assert(info.samples > 0);
        mp3++;
    }
    fclose(t.fp);
    ck_assert_int_eq(exact, 41);
    ck_assert_int_eq(mp3, 9);
}
END_TEST

START_TEST(edge_cases_match_soxi)
{
    tsv t;
    tsv_open(&t, testdata_path("audio/truth.tsv"));
    char base[4096];
    snprintf(base, sizeof base, "%s", testdata_path("audio"));
    int n = 0;
    while (tsv_next(&t)) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", base, tsv_get(&t, "file"));
        expect_exact(path, tsv_get(&t, "format"), num(tsv_get(&t, "sample_rate")),
                     num(tsv_get(&t, "channels")), num(tsv_get(&t, "samples")));
        n++;
    }
    fclose(t.fp);
    ck_assert_int_ge(n, 30);
}
END_TEST

/* ---- synthetic WAV headers ---------------------------------------------- */

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        ck_assert(b->p != NULL);
    }
    if (d)
        memcpy(b->p + b->len, d, n);
    else
        memset(b->p + b->len, 0, n);
    b->len += n;
}

static void put16(buf *b, uint16_t v)
{
    uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    put(b, x, 2);
}

static void put32(buf *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    put(b, x, 4);
}

static void put_chunk_hdr(buf *b, const char *id, uint32_t size)
{
    put(b, id, 4);
    put32(b, size);
}

static void put_riff(buf *b)
{
    put(b, "RIFF", 4);
    put32(b, 0); /* unused by the probe, like soxi */
    put(b, "WAVE", 4);
}

/* A 16-byte fmt chunk. */
static void put_fmt(buf *b, uint16_t tag, uint16_t ch, uint32_t rate, uint16_t align,
                    uint16_t bits)
{
    put_chunk_hdr(b, "fmt ", 16);
    put16(b, tag);
    put16(b, ch);
    put32(b, rate);
    put32(b, rate * align);
    put16(b, align);
    put16(b, bits);
}

/* RIFF + fmt + data header + `payload` zero bytes; data size as given. */
static buf make_wav(uint16_t tag, uint16_t ch, uint32_t rate, uint16_t align, uint16_t bits,
                    uint32_t data_size, size_t payload)
{
    buf b = { 0 };
    put_riff(&b);
    put_fmt(&b, tag, ch, rate, align, bits);
    put_chunk_hdr(&b, "data", data_size);
    put(&b, NULL, payload);
    return b;
}

static int probe_buf(const buf *b, es_audio_info *info, char *err, size_t errlen)
{
    return probe_mem(b->p, b->len, info, err, errlen);
}

/* Asserts ES_PROBE_BAD with a message containing `needle`. */
static void expect_bad(const buf *b, const char *needle)
{
    es_audio_info info;
    char err[256];
    int rc = probe_buf(b, &info, err, sizeof err);
    ck_assert_msg(rc == ES_PROBE_BAD, "rc %d (%s), expected BAD with '%s'", rc, err, needle);
    ck_assert_msg(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
    ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line");
}

START_TEST(truncated_real_wav)
{
    /* A real 16-bit mono file with a 44-byte header, cut in memory: the header
     * still claims the full data chunk. */
    size_t len;
    uint8_t *d = read_whole_file(fixture_path("real/speechbrain__speechbrain/tests/samples/ASR/spk1_snt1.wav"), &len);
    ck_assert(d != NULL && len > 44 + 4000);
    size_t cuts[] = { 44, 45, 46, 44 + 1001, 44 + 4000, len - 1 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        es_audio_info info;
        char err[256];
        int rc = probe_mem(d, cuts[i], &info, err, sizeof err);
        ck_assert_msg(rc == ES_PROBE_OK, "cut %zu: %s", cuts[i], err);
        ck_assert_uint_eq(info.samples, (cuts[i] - 44) / 2);
        ck_assert(info.flags & ES_AUDIO_TRUNCATED);
        ck_assert_uint_eq(info.sample_rate, 16000);
    }
    /* Whole file: exact and not truncated. */
    es_audio_info info;
    char err[256];
    ck_assert_int_eq(probe_mem(d, len, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, (len - 44) / 2);
    ck_assert_uint_eq(info.flags, 0);
    /* Cut inside the header: malformed, never a crash. */
    for (size_t cut = 12; cut < 44; cut++)
        ck_assert_int_eq(probe_mem(d, cut, &info, err, sizeof err), ES_PROBE_BAD);
    free(d);
}
END_TEST

START_TEST(malformed_wav_headers)
{
    buf b = { 0 };
    /* fmt chunk too short. */
    put_riff(&b);
    put_chunk_hdr(&b, "fmt ", 12);
    put(&b, NULL, 12);
    put_chunk_hdr(&b, "data", 4);
    put(&b, NULL, 4);
    expect_bad(&b, "fmt chunk is 12 bytes, need at least 16");
    free(b.p);

    b = make_wav(1, 0, 16000, 2, 16, 100, 100);
    expect_bad(&b, "0 channels");
    free(b.p);
    b = make_wav(1, 1, 0, 2, 16, 100, 100);
    expect_bad(&b, "sample rate is 0");
    free(b.p);
    b = make_wav(1, 1, 16000, 2, 0, 100, 100);
    expect_bad(&b, "PCM with 0 bits");
    free(b.p);

    /* No data chunk, and no fmt chunk. */
    b = (buf){ 0 };
    put_riff(&b);
    put_fmt(&b, 1, 1, 16000, 2, 16);
    put_chunk_hdr(&b, "LIST", 4);
    put(&b, "INFO", 4);
    expect_bad(&b, "no data chunk");
    free(b.p);
    b = (buf){ 0 };
    put_riff(&b);
    expect_bad(&b, "no fmt chunk");
    free(b.p);

    /* A chunk before data whose size runs far past the object. */
    b = (buf){ 0 };
    put_riff(&b);
    put_fmt(&b, 1, 1, 16000, 2, 16);
    put_chunk_hdr(&b, "LIST", 0xFFFFFFF0u);
    put(&b, NULL, 64);
    put_chunk_hdr(&b, "data", 100);
    put(&b, NULL, 100);
    expect_bad(&b, "claims 4294967280 bytes");
    free(b.p);
    /* The same with an odd size: size + pad must not wrap. */
    b = (buf){ 0 };
    put_riff(&b);
    put_chunk_hdr(&b, "JUNK", 0xFFFFFFFFu);
    put(&b, NULL, 64);
    expect_bad(&b, "claims 4294967295 bytes");
    free(b.p);

    /* data before fmt. */
    b = (buf){ 0 };
    put_riff(&b);
    put_chunk_hdr(&b, "data", 4);
    put(&b, NULL, 4);
    put_fmt(&b, 1, 1, 16000, 2, 16);
    expect_bad(&b, "before the fmt chunk");
    free(b.p);

    /* Block codecs divide by block_align: 0 is malformed there. */
    b = (buf){ 0 };
    put_riff(&b);
    put_chunk_hdr(&b, "fmt ", 20);
    put16(&b, 0x11), put16(&b, 1), put32(&b, 8000), put32(&b, 4000), put16(&b, 0);
    put16(&b, 4), put16(&b, 2), put16(&b, 505);
    put_chunk_hdr(&b, "data", 512);
    put(&b, NULL, 512);
    expect_bad(&b, "block_align is 0");
    free(b.p);

    /* EXTENSIBLE needs its 40-byte fmt. */
    b = (buf){ 0 };
    put_riff(&b);
    put_chunk_hdr(&b, "fmt ", 18);
    put16(&b, 0xFFFE), put16(&b, 2), put32(&b, 8000), put32(&b, 32000), put16(&b, 4);
    put16(&b, 16), put16(&b, 0);
    put_chunk_hdr(&b, "data", 16);
    put(&b, NULL, 16);
    expect_bad(&b, "extensible fmt chunk is 18 bytes");
    free(b.p);

    /* RF64 whose data size points at a missing ds64. */
    b = make_wav(1, 1, 16000, 2, 16, 0xFFFFFFFFu, 100);
    memcpy(b.p, "RF64", 4);
    expect_bad(&b, "ds64");
    free(b.p);
}
END_TEST

START_TEST(block_align_and_odd_widths)
{
    es_audio_info info;
    char err[256];
    /* soxi ignores block_align for PCM (frames are channels * bits/8), so a
     * zero or wrong value still gives soxi's count. */
    buf b = make_wav(1, 2, 8000, 0, 16, 400, 400);
    ck_assert_int_eq(probe_buf(&b, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 100);
    free(b.p);
    /* 12-bit PCM in 2-byte containers: counted per container (1600 here, as
     * libsndfile does). soxi -s says 2133 (bytes*8/12), but sox cannot decode
     * such a file at all, so its count is not a truth. */
    b = make_wav(1, 1, 16000, 2, 12, 3200, 3200);
    ck_assert_int_eq(probe_buf(&b, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 1600);
    free(b.p);
    /* Unknown codec: the fact chunk's count, else unsupported. */
    b = make_wav(0x55, 1, 16000, 1, 0, 300, 300);
    ck_assert_int_eq(probe_buf(&b, &info, err, sizeof err), ES_PROBE_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "0x0055"));
    free(b.p);
    b = (buf){ 0 };
    put_riff(&b);
    put_fmt(&b, 0x55, 1, 16000, 1, 0);
    put_chunk_hdr(&b, "fact", 4);
    put32(&b, 12345);
    put_chunk_hdr(&b, "data", 300);
    put(&b, NULL, 300);
    ck_assert_int_eq(probe_buf(&b, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 12345);
    free(b.p);
}
END_TEST

START_TEST(unknown_data_size)
{
    es_audio_info info;
    char err[256];
    /* Streaming writers: 0, 0xFFFFFFFF, or sox's 0x7ffff000 placeholder. The
     * count comes from the bytes present and is flagged as an estimate. */
    uint32_t sizes[] = { 0, 0xFFFFFFFFu, 0x7ffff000u };
    for (size_t i = 0; i < 3; i++) {
        buf b = make_wav(3, 2, 16000, 8, 32, sizes[i], 8000);
        ck_assert_int_eq(probe_buf(&b, &info, err, sizeof err), ES_PROBE_OK);
        ck_assert_uint_eq(info.samples, 1000);
        ck_assert_uint_eq(info.flags, ES_AUDIO_ESTIMATED);
        free(b.p);
    }
    /* A genuinely empty data chunk at the end: exactly 0. */
    buf b = make_wav(1, 1, 16000, 2, 16, 0, 0);
    ck_assert_int_eq(probe_buf(&b, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 0);
    ck_assert_uint_eq(info.flags, 0);
    free(b.p);
}
END_TEST

START_TEST(flac_truncated_and_streaming)
{
    size_t len;
    uint8_t *d = read_whole_file(testdata_path("audio/flac_s16_8k.flac"), &len);
    ck_assert(d != NULL && len > 42);
    es_audio_info info;
    char err[256];
    /* Cut inside STREAMINFO (4 magic + 4 block header + 34). */
    for (size_t cut = 8; cut < 42; cut++) {
        ck_assert_int_eq(probe_mem(d, cut, &info, err, sizeof err), ES_PROBE_BAD);
        ck_assert_str_eq(err, "FLAC STREAMINFO truncated");
    }
    ck_assert_int_eq(probe_mem(d, 42, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 400);
    /* Total samples 0: the encoder did not know; flagged, not invented. */
    d[8 + 13] &= 0xf0;
    memset(d + 8 + 14, 0, 4);
    ck_assert_int_eq(probe_mem(d, len, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 0);
    ck_assert_uint_eq(info.flags, ES_AUDIO_ESTIMATED);
    /* First block not STREAMINFO. */
    d[4] = 4;
    ck_assert_int_eq(probe_mem(d, len, &info, err, sizeof err), ES_PROBE_BAD);
    free(d);
}
END_TEST

START_TEST(id3_tag_with_small_buffer)
{
    /* Object larger than the buffer: the ID3 tag is skipped, FLAC still works;
     * an mp3 cannot be buffered and says so. */
    es_audio_info info;
    char err[256];
    ck_assert_int_eq(probe_file(testdata_path("audio/id3v23_before.flac"), 64, &info, err,
                                sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 400);
    ck_assert_int_eq(info.format, ES_AUDIO_FLAC);
    int rc = probe_file(fixture_path("real/coqui-ai__TTS/tests/data/ljspeech/wavs/LJ001-0002.mp3"),
                        1000, &info, err, sizeof err);
    ck_assert_int_eq(rc, ES_PROBE_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "exceeds probe buffer"));
    rc = probe_file(testdata_path("audio/vorbis_16k.ogg"), 1000, &info, err, sizeof err);
    ck_assert_int_eq(rc, ES_PROBE_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "exceeds probe buffer"));
}
END_TEST

START_TEST(garbage_and_empty)
{
    es_audio_info info;
    char err[256];
    ck_assert_int_eq(probe_mem("", 0, &info, err, sizeof err), ES_PROBE_UNSUPPORTED);
    ck_assert(err[0] != '\0');
    /* Random bytes: unsupported, with a message. */
    uint8_t rnd[4096];
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int seed = 0; seed < 20; seed++) {
        for (size_t i = 0; i < sizeof rnd; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            rnd[i] = (uint8_t)x;
        }
        ck_assert_int_eq(probe_mem(rnd, sizeof rnd, &info, err, sizeof err), ES_PROBE_UNSUPPORTED);
        ck_assert_str_eq(err, "unrecognised audio format");
    }
    /* Every prefix of a WAV and of a FLAC header: an error, never a crash. */
    size_t len;
    uint8_t *d = read_whole_file(testdata_path("audio/list_junk_before_data.wav"), &len);
    ck_assert(d != NULL);
    for (size_t cut = 1; cut < 200; cut++)
        ck_assert_int_ne(probe_mem(d, cut, &info, err, sizeof err), ES_PROBE_OK);
    free(d);
    d = read_whole_file(testdata_path("audio/id3v24_footer.flac"), &len);
    ck_assert(d != NULL);
    for (size_t cut = 1; cut < 140; cut++)
        ck_assert_int_ne(probe_mem(d, cut, &info, err, sizeof err), ES_PROBE_OK);
    free(d);
}
END_TEST

START_TEST(does_not_read_pcm)
{
    /* A 10 MB WAV with a 64 KB LIST chunk before data: the probe may skip, but
     * must read only the header through `read`. */
    size_t data = 10u << 20;
    buf b = { 0 };
    put_riff(&b);
    put_fmt(&b, 1, 2, 48000, 4, 16);
    put_chunk_hdr(&b, "LIST", 65536);
    put(&b, NULL, 65536);
    put_chunk_hdr(&b, "data", (uint32_t)data);
    put(&b, NULL, data);
    counting c;
    es_byte_stream s;
    counting_init(&c, &s, b.p, b.len);
    es_audio_info info;
    char err[256];
    ck_assert_int_eq(es_audio_probe(&s, MAX_BUFFER, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, data / 4);
    ck_assert_uint_eq(info.flags, 0);
    ck_assert_msg(c.read_bytes < 256, "read %llu bytes", (unsigned long long)c.read_bytes);
    ck_assert_uint_eq(c.skipped_bytes, 65536); /* the LIST body; data is not even skipped */

    /* FLAC: STREAMINFO only. */
    size_t len;
    uint8_t *d = read_whole_file(testdata_path("audio/flac_s24_48k.flac"), &len);
    ck_assert(d != NULL);
    counting_init(&c, &s, d, len);
    ck_assert_int_eq(es_audio_probe(&s, MAX_BUFFER, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(c.read_bytes, 42);
    free(d);
    free(b.p);
}
END_TEST

START_TEST(read_errors_are_io)
{
    buf b = make_wav(1, 1, 16000, 2, 16, 100, 100);
    es_audio_info info;
    char err[256];
    for (uint64_t fail = 1; fail < 44; fail += 7) {
        counting c;
        es_byte_stream s;
        counting_init(&c, &s, b.p, b.len);
        c.fail_after = fail;
        ck_assert_int_eq(es_audio_probe(&s, MAX_BUFFER, &info, err, sizeof err), ES_PROBE_IO);
    }
    free(b.p);
}
END_TEST

START_TEST(direct_probe_entry_points)
{
    /* es_probe_wav / es_probe_flac with no head: the stream is the object. */
    size_t len;
    uint8_t *d = read_whole_file(testdata_path("audio/rf64_s16_stereo.wav"), &len);
    ck_assert(d != NULL);
    es_byte_stream s;
    es_mem_stream m;
    es_byte_stream_from_memory(&s, &m, d, len);
    es_audio_info info;
    char err[256];
    ck_assert_int_eq(es_probe_wav(NULL, 0, &s, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 1323);
    es_byte_stream_from_memory(&s, &m, d, len);
    ck_assert_int_eq(es_probe_flac(NULL, 0, &s, &info, err, sizeof err), ES_PROBE_UNSUPPORTED);
    free(d);
    d = read_whole_file(testdata_path("audio/id3v24_footer.flac"), &len);
    ck_assert(d != NULL);
    es_byte_stream_from_memory(&s, &m, d, len);
    m.off = 5; /* head and stream together form the object */
    ck_assert_int_eq(es_probe_flac(d, 5, &s, &info, err, sizeof err), ES_PROBE_OK);
    ck_assert_uint_eq(info.samples, 400);
    free(d);
}
END_TEST

START_TEST(format_names)
{
    ck_assert_str_eq(es_audio_format_name(ES_AUDIO_WAV), "wav");
    ck_assert_str_eq(es_audio_format_name(ES_AUDIO_FLAC), "flac");
    ck_assert_str_eq(es_audio_format_name(ES_AUDIO_OTHER), "other");
    ck_assert_str_eq(es_audio_format_name(ES_AUDIO_UNKNOWN), "unknown");
}
END_TEST

START_TEST(concurrent_libsndfile_probes)
{
    /* Probes run under OpenMP: libsndfile opens, failures included, must not
     * disturb each other's answers or messages. */
    enum { N = 64 };
    static const char *rel[] = { "audio/vorbis_16k.ogg", "audio/aiff_s16_16k.aiff" };
    size_t len[2];
    uint8_t *d[2];
    for (int i = 0; i < 2; i++) {
        d[i] = read_whole_file(testdata_path(rel[i]), &len[i]);
        ck_assert(d[i] != NULL);
    }
    static const uint8_t junk[64] = { 1, 2, 3, 4, 5 };
    uint64_t got[N];
    char msg[N][64];
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        es_audio_info info;
        char err[64] = "";
        int rc;
        if (i % 3 == 2)
            rc = probe_mem(junk, sizeof junk, &info, err, sizeof err);
        else
            rc = probe_mem(d[i % 3], len[i % 3], &info, err, sizeof err);
        got[i] = rc == ES_PROBE_OK ? info.samples : (uint64_t)-1;
        memcpy(msg[i], err, sizeof err);
    }
    for (int i = 0; i < N; i++) {
        if (i % 3 == 2) {
            ck_assert_uint_eq(got[i], (uint64_t)-1);
            ck_assert_str_eq(msg[i], "unrecognised audio format");
        } else {
            ck_assert_uint_eq(got[i], i % 3 == 0 ? 3200 : 480);
        }
    }
    free(d[0]);
    free(d[1]);
}
END_TEST

static Suite *audio_suite(void)
{
    Suite *s = suite_create("audio");
    TCase *tc = tcase_create("probe");
    tcase_add_test(tc, corpus_a_matches_soxi);
    tcase_add_test(tc, real_files_match_soxi);
    tcase_add_test(tc, edge_cases_match_soxi);
    tcase_add_test(tc, truncated_real_wav);
    tcase_add_test(tc, malformed_wav_headers);
    tcase_add_test(tc, block_align_and_odd_widths);
    tcase_add_test(tc, unknown_data_size);
    tcase_add_test(tc, flac_truncated_and_streaming);
    tcase_add_test(tc, id3_tag_with_small_buffer);
    tcase_add_test(tc, garbage_and_empty);
    tcase_add_test(tc, does_not_read_pcm);
    tcase_add_test(tc, read_errors_are_io);
    tcase_add_test(tc, direct_probe_entry_points);
    tcase_add_test(tc, format_names);
    tcase_add_test(tc, concurrent_libsndfile_probes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(audio_suite());
}
