/* es_measure end to end on the shared fixtures (tests/fixtures, copied from
 * ../shared/fixtures): every utterance of corpus A in every format the recipes
 * use must match truth.tsv (soxi's counts, Python's len() of the text), and
 * WeNet's own test shard and lists must measure as its files say. */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_helpers.h"
#include "equishard/equishard.h"

typedef struct truth_row {
    char key[64], spk[16];
    unsigned rate, channels;
    unsigned long long samples;
    unsigned text_chars;
    unsigned speech_tokens;
} truth_row;

static truth_row truth[64];
static size_t n_truth;

static void load_truth(void)
{
    if (n_truth)
        return;
    FILE *fp = fopen(fixture_path("corpus_a/truth.tsv"), "r");
    ck_assert_ptr_nonnull(fp);
    char line[1024];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, fp)); /* header */
    while (fgets(line, sizeof line, fp)) {
        truth_row *t = &truth[n_truth];
        double dur;
        ck_assert_int_eq(sscanf(line, "%63s %15s %u %u %llu %lf %u %u", t->key, t->spk, &t->rate,
                                &t->channels, &t->samples, &dur, &t->text_chars, &t->speech_tokens),
                         8);
        n_truth++;
    }
    fclose(fp);
    ck_assert_uint_eq(n_truth, 60);
}

static es_cost_table *measure(const char *input, const char *root, int threads, int skip,
                              int expect_status, char *err, size_t errlen)
{
    es_context *ctx = es_context_new();
    es_measure_settings s;
    es_measure_defaults(&s);
    s.threads = threads;
    s.root = root;
    s.on_error = skip ? ES_ON_ERROR_SKIP : ES_ON_ERROR_FAIL;
    const char *inputs[] = {input};
    es_cost_table *t = NULL;
    int rc = es_measure(ctx, &s, inputs, 1, &t);
    if (rc != expect_status)
        ck_abort_msg("es_measure(%s) = %s, expected %s: %s", input, es_status_name(rc),
                     es_status_name(expect_status), es_errmsg(ctx));
    if (err)
        snprintf(err, errlen, "%s", es_errmsg(ctx));
    es_context_free(ctx);
    return t;
}

/* Rows of corpus A must be the truth, in truth (= wav.scp = shard) order. */
static void check_corpus_a(es_cost_table *t, int has_spk)
{
    load_truth();
    ck_assert_uint_eq(es_cost_table_size(t), n_truth);
    for (size_t i = 0; i < n_truth; i++) {
        es_cost_row r;
        ck_assert_int_eq(es_cost_table_row(t, i, &r), ES_OK);
        ck_assert_str_eq(r.key, truth[i].key);
        ck_assert_uint_eq(r.sample_rate, truth[i].rate);
        ck_assert_uint_eq(r.channels, truth[i].channels);
        ck_assert_uint_eq(r.samples, truth[i].samples);
        ck_assert_uint_eq(r.text_len, truth[i].text_chars);
        ck_assert_uint_eq(r.flags & (ES_FLAG_AUDIO | ES_FLAG_TEXT), ES_FLAG_AUDIO | ES_FLAG_TEXT);
        ck_assert_uint_eq(r.flags & (ES_FLAG_TRUNCATED | ES_FLAG_UNSUPPORTED), 0);
        if (has_spk)
            ck_assert_str_eq(r.spk, truth[i].spk);
    }
}

static void check_tar_list(const char *list, const char *suffix)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_cost_table *t = measure(fixture_path(list), root, 2, 0, ES_OK, NULL, 0);
    check_corpus_a(t, 0);
    /* 4 shards of 16, 16, 16, 12 utterances; pos counts utterances in a shard */
    es_cost_row r;
    es_cost_table_row(t, 17, &r);
    char want[64];
    snprintf(want, sizeof want, "%s/shards_000000001.%s", list[9] == '/' ? "shards" : list + 9,
             suffix);
    *strchr(want, '/') = '\0';
    snprintf(want + strlen(want), sizeof want - strlen(want), "/shards_000000001.%s", suffix);
    ck_assert_str_eq(r.shard, want);
    ck_assert_uint_eq(r.pos, 1);
    es_cost_table_free(t);
}

START_TEST(corpus_a_tar_plain) { check_tar_list("corpus_a/shards/shards.list", "tar"); }
END_TEST
START_TEST(corpus_a_tar_gz) { check_tar_list("corpus_a/shards-gz/shards.list", "tar.gz"); }
END_TEST
START_TEST(corpus_a_tar_zst) { check_tar_list("corpus_a/shards-zst/shards.list", "tar.zst"); }
END_TEST

START_TEST(corpus_a_raw_list)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_cost_table *t = measure(fixture_path("corpus_a/raw.list"), root, 2, 0, ES_OK, NULL, 0);
    check_corpus_a(t, 0);
    es_cost_row r;
    es_cost_table_row(t, 59, &r);
    ck_assert_uint_eq(r.pos, 59); /* line index */
    es_cost_table_free(t);
}
END_TEST

START_TEST(corpus_a_kaldi_dir)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_cost_table *t = measure(fixture_path("corpus_a/kaldi"), root, 2, 0, ES_OK, NULL, 0);
    check_corpus_a(t, 1);
    es_cost_table_free(t);
}
END_TEST

/* --speech-tokens: utt2speech_token.pt's list lengths are truth.tsv's speech
 * tokens; the counts tell rows without a list and keys the table lacks. */
static void set_tokens(es_cost_table *t, const char *src, int want, es_speech_token_stats *st)
{
    es_context *ctx = es_context_new();
    int rc = es_cost_table_set_speech_tokens(ctx, t, fixture_path(src), st);
    if (rc != want)
        ck_abort_msg("set_speech_tokens(%s) = %s: %s", src, es_status_name(rc), es_errmsg(ctx));
    es_context_free(ctx);
}

static void check_tokens(es_cost_table *t, size_t first_truth)
{
    for (size_t i = 0; i < es_cost_table_size(t); i++) {
        es_cost_row r;
        es_cost_table_row(t, i, &r);
        ck_assert_str_eq(r.key, truth[first_truth + i].key);
        ck_assert_uint_eq(r.speech_tokens, truth[first_truth + i].speech_tokens);
    }
}

START_TEST(corpus_a_speech_tokens)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    load_truth();
    es_speech_token_stats st;
    /* Kaldi (no tokens measured): every row set */
    es_cost_table *t = measure(fixture_path("corpus_a/kaldi"), root, 2, 0, ES_OK, NULL, 0);
    set_tokens(t, "corpus_a/kaldi/utt2speech_token.pt", ES_OK, &st);
    ck_assert(st.rows_set == 60 && st.rows_without == 0 && st.unknown_keys == 0);
    check_tokens(t, 0);
    es_cost_table_free(t);
    /* parquet measures speech_token itself: the source replaces, never adds */
    t = measure(fixture_path("corpus_a/parquet/data.list"), root, 2, 0, ES_OK, NULL, 0);
    check_tokens(t, 0);
    set_tokens(t, "corpus_a/kaldi/utt2speech_token.pt", ES_OK, NULL);
    check_tokens(t, 0);
    es_cost_table_free(t);
    /* one shard of 16: the other 44 keys are unknown to the table */
    t = measure(fixture_path("corpus_a/shards/shards_000000000.tar"), root, 1, 0, ES_OK, NULL, 0);
    set_tokens(t, "corpus_a/kaldi/utt2speech_token.pt", ES_OK, &st);
    ck_assert(st.rows_set == 16 && st.rows_without == 0 && st.unknown_keys == 44);
    check_tokens(t, 0);
    /* embeddings are not token lists; a failed call leaves the rows as they were */
    set_tokens(t, "corpus_a/kaldi/utt2embedding.pt", ES_ERR_FORMAT, &st);
    check_tokens(t, 0);
    es_cost_table_free(t);
}
END_TEST

/* WeNet's own test data: list paths are relative to the repository root. */
static void check_wenet(const char *input)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("real/wenet-e2e__wenet"));
    char in[4096];
    snprintf(in, sizeof in, "%s", input[0] == '/' ? input : fixture_path(input));
    es_cost_table *t = measure(in, root, 1, 0, ES_OK, NULL, 0);
    ck_assert_uint_eq(es_cost_table_size(t), 2);
    es_cost_row r;
    es_cost_table_row(t, 0, &r);
    ck_assert_str_eq(r.key, "test/resources/dataset/aishell-BAC009S0724W0121");
    ck_assert_uint_eq(r.samples, 68496); /* audio-truth.tsv (soxi -s) */
    ck_assert_uint_eq(r.sample_rate, 16000);
    ck_assert_uint_eq(r.text_len, 12); /* python3: len('广州市房地产中介协会分析') */
    es_cost_table_row(t, 1, &r);
    ck_assert_str_eq(r.key, "test/resources/dataset/librispeech-1995-1837-0001");
    ck_assert_uint_eq(r.samples, 139680);
    ck_assert_uint_eq(r.text_len, 143);
    es_cost_table_free(t);
}

START_TEST(wenet_shard_list) { check_wenet("real/wenet-e2e__wenet/test/resources/dataset/data.shards.list"); }
END_TEST
/* In the fixture copy, dataset/ WAVs are git symlinks checked out as plain files
 * holding the link text ("../aishell-….wav"), as on a checkout without symlink
 * support: the lists that point at them must fail clearly, naming the file. */
static void check_wenet_unresolved_symlink(const char *input)
{
    char root[4096], in[4096], err[1024];
    snprintf(root, sizeof root, "%s", fixture_path("real/wenet-e2e__wenet"));
    snprintf(in, sizeof in, "%s", fixture_path(input));
    measure(in, root, 1, 0, ES_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "dataset/aishell-BAC009S0724W0121.wav") &&
                      strstr(err, "(test/resources/dataset/aishell-BAC009S0724W0121)"), "%s", err);
}

START_TEST(wenet_raw_list)
{
    check_wenet_unresolved_symlink("real/wenet-e2e__wenet/test/resources/dataset/data.list");
}
END_TEST
START_TEST(wenet_kaldi)
{
    check_wenet_unresolved_symlink("real/wenet-e2e__wenet/test/resources/dataset");
}
END_TEST

/* The same lists pointing at the real files (one directory up) measure exactly. */
START_TEST(wenet_lists_with_real_audio)
{
    char *dir = make_temp_dir();
    char in[4096], buf[8192];
    snprintf(in, sizeof in, "%s", fixture_path("real/wenet-e2e__wenet/test/resources/dataset/data.list"));
    size_t len;
    char *text = (char *)read_whole_file(in, &len);
    ck_assert_ptr_nonnull(text);
    /* "wav": "test/resources/dataset/x.wav" -> "wav": "test/resources/x.wav" */
    static const char from[] = "\"wav\": \"test/resources/dataset/";
    static const char to[] = "\"wav\": \"test/resources/";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (i + sizeof from - 1 <= len && !memcmp(text + i, from, sizeof from - 1)) {
            memcpy(buf + o, to, sizeof to - 1);
            o += sizeof to - 1;
            i += sizeof from - 2;
            continue;
        }
        buf[o++] = text[i];
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/data.list", dir);
    FILE *fp = fopen(path, "wb");
    fwrite(buf, 1, o, fp);
    fclose(fp);
    check_wenet(path);
    free(text);
    free(dir);
}
END_TEST

/* Lhotse's mini_librispeech wav.scp holds `sox … |` commands. */
START_TEST(kaldi_commands_are_unsupported)
{
    const char *dir = "real/lhotse-speech__lhotse/test/fixtures/mini_librispeech";
    char err[1024];
    measure(fixture_path(dir), NULL, 2, 0, ES_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "lbi-1272-135031-0000") && strstr(err, "command"), "%s", err);
    es_cost_table *t = measure(fixture_path(dir), NULL, 2, 1, ES_OK, NULL, 0);
    ck_assert_uint_eq(es_cost_table_size(t), 0);
    ck_assert_uint_eq(skip_count(t), 38); /* 38 lines in segments */
    es_cost_table_free(t);
}
END_TEST

/* Lhotse Shar placeholders: no audio member at all. */
START_TEST(tar_without_audio_members)
{
    char err[1024];
    measure(fixture_path("real/lhotse-speech__lhotse/test/fixtures/lsmix/recording.000000.tar"),
            NULL, 1, 0, ES_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "recording.000000.tar") &&
                      strstr(err, "24a97854-afcd-492f-85b7-0870994e9829") && strstr(err, "no audio"),
                  "%s", err);
}
END_TEST

static char *write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
    fclose(fp);
    return path;
}

/* A Kaldi wav.scp naming a key twice is refused with its line (Kaldi's own
 * validate_data_dir.sh refuses it too); the first line's key is what repeats. */
START_TEST(kaldi_duplicate_wav_key)
{
    char *dir = make_temp_dir();
    char *wav = write_file(dir, "wav.scp", "u1 /x/a.wav\nu2 /x/b.wav\nu1 /x/c.wav\n", 36);
    char *text = write_file(dir, "text", "u1 a\nu2 b\n", 10);
    char err[1024];
    measure(dir, NULL, 1, 0, ES_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "wav.scp: line 3: duplicate key u1"), "%s", err);
    free(wav);
    free(text);
    free(dir);
}
END_TEST


/* A shard cut in the middle of a member: one line naming the file, exit status
 * FORMAT; with skip, that shard is left out and the others are kept. */
START_TEST(truncated_shard)
{
    char *dir = make_temp_dir();
    size_t len;
    unsigned char *tar = read_whole_file(fixture_path("corpus_a/shards/shards_000000002.tar"), &len);
    ck_assert_ptr_nonnull(tar);
    char *cut = write_file(dir, "cut.tar", tar, len / 2);
    char list[8192];
    int n = snprintf(list, sizeof list, "shards/shards_000000000.tar\n%s\nshards/shards_000000003.tar\n", cut);
    char *list_path = write_file(dir, "data.list", list, (size_t)n);
    char root[4096], err[1024];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    measure(list_path, root, 2, 0, ES_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "cut.tar") && strstr(err, "runcated") && !strchr(err, '\n'), "%s", err);
    es_cost_table *t = measure(list_path, root, 2, 1, ES_OK, NULL, 0);
    ck_assert_uint_eq(es_cost_table_size(t), 16 + 12);
    ck_assert_uint_eq(skip_count(t), 1);
    ck_assert_ptr_nonnull(strstr(es_cost_table_skip(t, 0), "cut.tar"));
    es_cost_table_free(t);
    free(tar);
    free(cut);
    free(list_path);
    free(dir);
}
END_TEST

START_TEST(missing_shard)
{
    char *dir = make_temp_dir();
    char *list_path = write_file(dir, "data.list", "shards/shards_000000000.tar\nshards/nope.tar\n", 44);
    char root[4096], err[1024];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    measure(list_path, root, 2, 0, ES_ERR_IO, err, sizeof err);
    ck_assert_msg(strstr(err, "shards/nope.tar") && strstr(err, "No such file"), "%s", err);
    es_cost_table *t = measure(list_path, root, 2, 1, ES_OK, NULL, 0);
    ck_assert_uint_eq(es_cost_table_size(t), 16);
    ck_assert_uint_eq(skip_count(t), 1);
    es_cost_table_free(t);
    free(list_path);
    free(dir);
}
END_TEST

/* Writes a tar with libarchive (an independent writer) holding given members. */
static char *write_tar(const char *dir, const char *name, const char *const *names,
                       const void *const *data, const size_t *sizes, size_t n)
{
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    struct archive *a = archive_write_new();
    archive_write_set_format_ustar(a);
    ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_size(e, (la_int64_t)sizes[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
        ck_assert_int_eq(archive_write_data(a, data[i], sizes[i]), (la_ssize_t)sizes[i]);
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    return path;
}

/* A member whose WAV header is garbage names the member; a WAV whose data chunk
 * claims more than the member holds is flagged, with the samples actually there. */
START_TEST(bad_and_truncated_members)
{
    char *dir = make_temp_dir();
    size_t wav_len;
    unsigned char *wav = read_whole_file(fixture_path("corpus_a/wav/A01/A01_0001.wav"), &wav_len);
    ck_assert_uint_eq(wav_len, 29650); /* 44-byte header + 14803 * 2 */
    static const unsigned char junk[64] = "RIFF\x10\0\0\0WAVEfmt \x02\0\0\0";
    const char *names[] = {"u1.txt", "u1.wav", "u2.wav", "u2.txt", "u3.wav"};
    const void *data[] = {"hello", wav, junk, "x", wav};
    size_t sizes[] = {5, wav_len, sizeof junk, 1, 44 + 1000};
    char *tar = write_tar(dir, "t.tar", names, data, sizes, 5);
    char err[1024];
    measure(tar, NULL, 1, 0, ES_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "t.tar") && strstr(err, "member u2.wav"), "%s", err);
    es_cost_table *t = measure(tar, NULL, 1, 1, ES_OK, NULL, 0);
    ck_assert_uint_eq(es_cost_table_size(t), 2);
    ck_assert_uint_eq(skip_count(t), 1);
    es_cost_row r;
    es_cost_table_row(t, 0, &r);
    ck_assert_str_eq(r.key, "u1");
    ck_assert_uint_eq(r.samples, 14803);
    ck_assert_uint_eq(r.text_len, 5);
    ck_assert_uint_eq(r.audio_bytes, wav_len);
    es_cost_table_row(t, 1, &r);
    ck_assert_str_eq(r.key, "u3");
    ck_assert_uint_eq(r.pos, 2);
    ck_assert_uint_eq(r.samples, 500); /* 1000 bytes of 16-bit mono */
    ck_assert(r.flags & ES_FLAG_TRUNCATED);
    ck_assert(!(r.flags & ES_FLAG_TEXT));
    es_cost_table_free(t);
    free(wav);
    free(tar);
    free(dir);
}
END_TEST

/* Kaldi segments and raw-list start/end cut the audio as WeNet's loader does:
 * int(end * sr) - int(start * sr) samples. */
START_TEST(segments)
{
    char *dir = make_temp_dir();
    char wav_abs[4096];
    snprintf(wav_abs, sizeof wav_abs, "%s", fixture_path("corpus_a/wav/A01/A01_0002.wav"));
    char buf[8192];
    int n = snprintf(buf, sizeof buf, "rec1 %s\n", wav_abs);
    free(write_file(dir, "wav.scp", buf, (size_t)n));
    n = snprintf(buf, sizeof buf, "s1 rec1 0.5 1.25\ns2 rec1 1.0 -1\ns3 rec1 0.0 9.0\n");
    free(write_file(dir, "segments", buf, (size_t)n));
    free(write_file(dir, "text", "s1  two   words \n", 17));
    es_cost_table *t = measure(dir, NULL, 1, 0, ES_OK, NULL, 0);
    ck_assert_uint_eq(es_cost_table_size(t), 3);
    es_cost_row r;
    es_cost_table_row(t, 0, &r);
    ck_assert_uint_eq(r.samples, 16537); /* python3: int(1.25*22050) - int(0.5*22050) */
    ck_assert_uint_eq(r.text_len, 9);    /* python3: len(' '.join('two   words '.split())) */
    ck_assert(r.flags & ES_FLAG_SEGMENT);
    es_cost_table_row(t, 1, &r);
    ck_assert_uint_eq(r.samples, 36386 - 22050); /* to the end: soxi -s minus int(1.0*22050) */
    es_cost_table_row(t, 2, &r);
    ck_assert_uint_eq(r.samples, 36386); /* ends past the audio: clipped and flagged */
    ck_assert(r.flags & ES_FLAG_TRUNCATED);

    n = snprintf(buf, sizeof buf,
                 "{\"key\": \"a\", \"wav\": \"%s\", \"txt\": \"x\", \"start\": 0.5, \"end\": 1.25}\n"
                 "\n{\"key\": \"b\", \"wav\": 7}\n", wav_abs);
    char *raw = write_file(dir, "raw.list", buf, (size_t)n);
    char err[1024];
    measure(raw, NULL, 1, 0, ES_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "raw.list: line 3 (b)") && strstr(err, "\"wav\""), "%s", err);
    es_cost_table_free(t);
    t = measure(raw, NULL, 1, 1, ES_OK, NULL, 0);
    ck_assert_uint_eq(es_cost_table_size(t), 1);
    es_cost_table_row(t, 0, &r);
    ck_assert_uint_eq(r.samples, 16537);
    es_cost_table_free(t);
    free(raw);
    free(dir);
}
END_TEST

/* Same inputs, any thread count: byte-identical tables (hash on, all formats). */
START_TEST(identical_for_any_thread_count)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    const char *inputs[] = {"corpus_a/shards/shards.list", "corpus_a/shards-zst/shards.list",
                            "corpus_a/raw.list", "corpus_a/kaldi"};
    char *dir = make_temp_dir();
    unsigned char *first = NULL;
    size_t first_len = 0;
    for (int threads = 1; threads <= 4; threads++) {
        es_context *ctx = es_context_new();
        es_measure_settings s;
        es_measure_defaults(&s);
        s.threads = threads;
        s.hash = 1;
        s.root = root;
        char paths[4][4096];
        const char *in[4];
        for (int i = 0; i < 4; i++) {
            snprintf(paths[i], sizeof paths[i], "%s", fixture_path(inputs[i]));
            in[i] = paths[i];
        }
        es_cost_table *t = NULL;
        ck_assert_int_eq(es_measure(ctx, &s, in, 4, &t), ES_OK);
        ck_assert_uint_eq(es_cost_table_size(t), 240);
        char out[4200];
        snprintf(out, sizeof out, "%s/costs-%d.tsv", dir, threads);
        ck_assert_int_eq(es_cost_table_write(ctx, t, out), ES_OK);
        size_t len;
        unsigned char *bytes = read_whole_file(out, &len);
        if (!first) {
            first = bytes;
            first_len = len;
        } else {
            ck_assert_uint_eq(len, first_len);
            ck_assert_int_eq(memcmp(bytes, first, len), 0);
            free(bytes);
        }
        es_cost_table_free(t);
        es_context_free(ctx);
    }
    free(first);
    free(dir);
}
END_TEST

/* --hash: xxh3-64 of the whole audio member, the same from tar, raw list and Kaldi. */
START_TEST(hash_is_the_same_from_every_format)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    const char *inputs[] = {"corpus_a/shards-gz/shards.list", "corpus_a/kaldi"};
    uint64_t hashes[2][60];
    for (int k = 0; k < 2; k++) {
        es_context *ctx = es_context_new();
        es_measure_settings s;
        es_measure_defaults(&s);
        s.hash = 1;
        s.root = root;
        char path[4096];
        snprintf(path, sizeof path, "%s", fixture_path(inputs[k]));
        const char *in[] = {path};
        es_cost_table *t = NULL;
        ck_assert_int_eq(es_measure(ctx, &s, in, 1, &t), ES_OK);
        for (size_t i = 0; i < 60; i++) {
            es_cost_row r;
            es_cost_table_row(t, i, &r);
            ck_assert(r.flags & ES_FLAG_HASHED);
            hashes[k][i] = r.hash;
        }
        es_cost_table_free(t);
        es_context_free(ctx);
    }
    ck_assert_int_eq(memcmp(hashes[0], hashes[1], sizeof hashes[0]), 0);
    ck_assert(hashes[0][0] != hashes[0][1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("measure");
    TCase *tc = tcase_create("fixtures");
    tcase_add_test(tc, corpus_a_tar_plain);
    tcase_add_test(tc, corpus_a_tar_gz);
    tcase_add_test(tc, corpus_a_tar_zst);
    tcase_add_test(tc, corpus_a_raw_list);
    tcase_add_test(tc, corpus_a_kaldi_dir);
    tcase_add_test(tc, corpus_a_speech_tokens);
    tcase_add_test(tc, wenet_shard_list);
    tcase_add_test(tc, wenet_raw_list);
    tcase_add_test(tc, wenet_kaldi);
    tcase_add_test(tc, wenet_lists_with_real_audio);
    tcase_add_test(tc, kaldi_commands_are_unsupported);
    tcase_add_test(tc, kaldi_duplicate_wav_key);
    tcase_add_test(tc, tar_without_audio_members);
    suite_add_tcase(s, tc);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, truncated_shard);
    tcase_add_test(errors, missing_shard);
    tcase_add_test(errors, bad_and_truncated_members);
    tcase_add_test(errors, segments);
    suite_add_tcase(s, errors);
    TCase *det = tcase_create("determinism");
    tcase_add_test(det, identical_for_any_thread_count);
    tcase_add_test(det, hash_is_the_same_from_every_format);
    suite_add_tcase(s, det);
    return run_suite(s);
}
