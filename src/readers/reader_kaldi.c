/* Kaldi data directories: wav.scp (required), text, utt2spk, segments (all
 * optional; spk2utt, utt2dur and the rest are not needed to measure).
 *
 * Without `segments`, every wav.scp entry is an utterance. With it, every
 * segments line is one (utt reco start end, end -1 = to the end) cut from
 * wav.scp[reco]. Transcripts are counted as CosyVoice's prepare scripts keep them:
 * ' '.join(line.split()[1:]). wav.scp entries that are commands ("… |") are
 * reported as unsupported: equishard reads files, it does not run pipelines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_stream.h"
#include "core/line_reader.h"
#include "core/strmap.h"
#include "core/utf8.h"
#include "readers/manifest.h"

typedef struct kaldi {
    es_context *ctx;
    const char *dir;
    es_manifest *m;
    es_strmap wav, text, spk; /* key → manifest string or text length */
} kaldi;

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Splits a line into its first field and the rest (both trimmed). */
static void split_key(const char *line, size_t len, const char **key, size_t *klen,
                      const char **rest, size_t *rlen)
{
    size_t i = 0;
    while (i < len && is_space(line[i]))
        i++;
    *key = line + i;
    while (i < len && !is_space(line[i]))
        i++;
    *klen = (size_t)(line + i - *key);
    const char *r = line + i;
    *rlen = es_strip(&r, len - i);
    *rest = r;
}

/* ' '.join(rest.split()) into out (room for n bytes): words, one space between
 * each. Returns its length in bytes. */
static size_t join_words(const char *s, size_t n, char *out)
{
    size_t len = 0, i = 0;
    while (i < n) {
        while (i < n && is_space(s[i]))
            i++;
        size_t start = i;
        while (i < n && !is_space(s[i]))
            i++;
        if (i > start) {
            if (len)
                out[len++] = ' ';
            memcpy(out + len, s + start, i - start);
            len += i - start;
        }
    }
    return len;
}

typedef int (*line_fn)(kaldi *k, const char *key, size_t klen, const char *rest,
                       size_t rlen, unsigned long lineno);

/* Reads dir/name line by line. A missing optional file is not an error. */
static int read_file(kaldi *k, const char *name, int required, line_fn fn)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", k->dir, name);
    es_line_reader lr;
    int e = es_line_reader_open(&lr, path);
    if (e == ENOENT && !required)
        return ES_OK;
    if (e)
        return es_fail(k->ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(e));
    int rc = ES_OK, got;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) > 0) {
        const char *key, *rest;
        size_t klen, rlen;
        if (lr.has_nul) {
            rc = es_fail(k->ctx, ES_ERR_FORMAT, "%s: line %lu: NUL byte; not a text file", path,
                         lr.lineno);
            break;
        }
        split_key(lr.line, lr.len, &key, &klen, &rest, &rlen);
        if (klen)
            rc = fn(k, key, klen, rest, rlen, lr.lineno);
    }
    if (rc == ES_OK && got < 0)
        rc = es_line_reader_fail(k->ctx, &lr, path);
    es_line_reader_close(&lr);
    return rc;
}

static int nomem(kaldi *k) { return es_fail(k->ctx, ES_ERR_NOMEM, "%s: out of memory", k->dir); }

static int on_wav(kaldi *k, const char *key, size_t klen, const char *rest, size_t rlen,
                  unsigned long lineno)
{
    const char *v = es_manifest_strdup(k->m, rest, rlen);
    if (!v)
        return nomem(k);
    int existed;
    es_strmap_slot *slot = es_strmap_insert(&k->wav, key, klen, &existed);
    if (!slot)
        return nomem(k);
    if (existed)
        return es_fail(k->ctx, ES_ERR_FORMAT, "%s/wav.scp: line %lu: duplicate key %.*s", k->dir,
                       lineno, (int)klen, key);
    slot->value = v;
    return ES_OK;
}

static int on_text(kaldi *k, const char *key, size_t klen, const char *rest, size_t rlen,
                   unsigned long lineno)
{
    (void)lineno; /* a line-table callback: not every file needs the line number */
    /* Stored as its byte length (uint32) followed by the joined text and a NUL. */
    uint32_t *t = es_arena_alloc(&k->m->strings, sizeof *t + rlen + 1);
    if (!t)
        return nomem(k);
    char *s = (char *)(t + 1);
    *t = (uint32_t)join_words(rest, rlen, s);
    s[*t] = '\0';
    return es_strmap_put(&k->text, key, klen, t) ? nomem(k) : ES_OK;
}

static int on_spk(kaldi *k, const char *key, size_t klen, const char *rest, size_t rlen,
                  unsigned long lineno)
{
    (void)lineno;
    const char *v = es_manifest_strdup(k->m, rest, rlen);
    if (!v)
        return nomem(k);
    return es_strmap_put(&k->spk, key, klen, v) ? nomem(k) : ES_OK;
}

/* Fills what every item shares: key, audio (from wav.scp[reco]), text, speaker. */
static int fill_item(kaldi *k, es_manifest_item *it, const char *key, size_t klen,
                     const char *reco, size_t rlen)
{
    if (!(it->key = es_manifest_strdup(k->m, key, klen)))
        return nomem(k);
    const es_strmap_slot *w = es_strmap_get(&k->wav, reco, rlen);
    const es_strmap_slot *t = es_strmap_get(&k->text, key, klen);
    const es_strmap_slot *s = es_strmap_get(&k->spk, key, klen);
    if (t) {
        it->has_text = 1;
        const uint32_t *len = t->value;
        it->text = (const char *)(len + 1);
        it->text_bytes = *len;
        it->text_len = (uint32_t)es_utf8_length(it->text, *len);
        for (size_t i = 0, k; i < *len; i += k)
            if (!(k = es_utf8_sequence((const unsigned char *)it->text + i, *len - i))) {
                /* not a dropped utterance: the data prep reads `text` as UTF-8 and stops */
                it->problem = "transcript in text is not valid UTF-8 (CosyVoice's "
                              "make_parquet_list.py reads the file as UTF-8 and fails: "
                              "UnicodeDecodeError)";
                return ES_OK;
            }
    }
    if (s)
        it->spk = s->value;
    if (!w) {
        it->problem = "recording not in wav.scp";
        return ES_OK;
    }
    const char *audio = w->value;
    size_t alen = strlen(audio);
    if (alen == 0)
        it->problem = "wav.scp entry has no path";
    else if (audio[alen - 1] == '|')
        it->problem = "wav.scp entry is a command (ends with '|'); unsupported: equishard reads "
                      "audio files, it does not run pipelines";
    it->audio = audio;
    return ES_OK;
}

static int on_segment(kaldi *k, const char *key, size_t klen, const char *rest, size_t rlen,
                      unsigned long lineno)
{
    es_manifest_item *it = es_manifest_add(k->m);
    if (!it)
        return nomem(k);
    it->pos = k->m->n - 1;
    char buf[512];
    if (rlen >= sizeof buf)
        return es_fail(k->ctx, ES_ERR_FORMAT, "%s/segments: line %lu: line too long", k->dir, lineno);
    memcpy(buf, rest, rlen);
    buf[rlen] = '\0';
    char reco[256];
    double start, end;
    char extra;
    if (sscanf(buf, "%255s %lf %lf %c", reco, &start, &end, &extra) != 3 || start < 0 ||
        (end >= 0 && end <= start))
        return es_fail(k->ctx, ES_ERR_FORMAT,
                       "%s/segments: line %lu: expected \"utt reco start end\" with 0 <= start < end",
                       k->dir, lineno);
    it->has_segment = 1;
    it->start = start;
    it->end = end < 0 ? -1 : end;
    return fill_item(k, it, key, klen, reco, strlen(reco));
}

/* Without segments, wav.scp is read a second time for its order (the map has none). */
static int on_wav_item(kaldi *k, const char *key, size_t klen, const char *rest, size_t rlen,
                       unsigned long lineno)
{
    (void)rest, (void)rlen, (void)lineno; /* a line-table callback that needs only the key */
    es_manifest_item *it = es_manifest_add(k->m);
    if (!it)
        return nomem(k);
    it->pos = k->m->n - 1;
    return fill_item(k, it, key, klen, key, klen);
}

int es_kaldi_parse(es_context *ctx, const char *dir, es_manifest **out)
{
    *out = NULL;
    kaldi k = {ctx, dir, es_manifest_new(dir), {0}, {0}, {0}};
    if (!k.m)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", dir);
    int rc = read_file(&k, "wav.scp", 1, on_wav);
    if (rc == ES_OK)
        rc = read_file(&k, "text", 0, on_text);
    if (rc == ES_OK)
        rc = read_file(&k, "utt2spk", 0, on_spk);
    if (rc == ES_OK) {
        char seg[4096];
        snprintf(seg, sizeof seg, "%s/segments", dir);
        /* stat, not open: opening a FIFO named segments would wait for a writer
         * (read_file refuses it) */
        struct stat st;
        int has_segments = stat(seg, &st) == 0;
        rc = has_segments ? read_file(&k, "segments", 1, on_segment)
                          : read_file(&k, "wav.scp", 1, on_wav_item);
    }
    es_strmap_release(&k.wav);
    es_strmap_release(&k.text);
    es_strmap_release(&k.spk);
    if (rc != ES_OK) {
        es_manifest_free(k.m);
        return rc;
    }
    *out = k.m;
    return ES_OK;
}

/* Any directory: es_kaldi_parse says what a Kaldi directory lacks. */
static int kaldi_bid(int is_dir, const uint8_t *head, size_t n)
{
    (void)head, (void)n; /* a manifest callback: a directory has no head */
    return is_dir ? 10 : 0;
}

const es_manifest_ops es_manifest_kaldi = {"kaldi", kaldi_bid, es_kaldi_parse};
