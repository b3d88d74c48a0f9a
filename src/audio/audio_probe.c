/* Dispatcher: sniffs the first bytes of an audio object and hands them, with
 * the rest of the stream, to the WAV, FLAC or libsndfile probe. */
#include "audio/probe_internal.h"

#include <stdlib.h>

/* Enough for "RIFF" size "WAVE" and for an ID3v2 header. */
#define SNIFF_LEN 12

static int is_wave(const uint8_t *h, size_t n)
{
    return n >= 12 &&
           (!memcmp(h, "RIFF", 4) || !memcmp(h, "RIFX", 4) || !memcmp(h, "RF64", 4) ||
            !memcmp(h, "BW64", 4)) &&
           !memcmp(h + 8, "WAVE", 4);
}

/* Size of the ID3v2 tag starting at h (header, body and footer), or 0 when h
 * does not hold a well-formed ID3v2 header. */
static uint64_t id3v2_len(const uint8_t *h, size_t n)
{
    if (n < 10 || memcmp(h, "ID3", 3) || (h[6] | h[7] | h[8] | h[9]) & 0x80)
        return 0;
    uint64_t body = (uint64_t)h[6] << 21 | (uint64_t)h[7] << 14 | (uint64_t)h[8] << 7 | h[9];
    return 10 + body + ((h[5] & 0x10) ? 10 : 0);
}

/* An ID3v2 tag leads both FLAC and mp3 files; what follows the tag decides.
 * When the object fits the buffer, the tag is read (libsndfile needs it all
 * anyway for mp3); otherwise it is skipped, and only FLAC can still be probed. */
static int probe_after_id3(const uint8_t *head, size_t n, uint64_t tag_len, es_byte_stream *s,
                           size_t max_buffer, es_audio_info *out, char *err, size_t errlen)
{
    uint64_t want = tag_len + 4; /* the tag and the next magic */
    if (s->size > max_buffer) {
        int rc = es_probe_flac(head, n, s, out, err, errlen);
        if (rc == ES_PROBE_UNSUPPORTED)
            return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED,
                              "audio object of %llu bytes exceeds probe buffer of %zu bytes",
                              (unsigned long long)s->size, max_buffer);
        return rc;
    }
    if (want > s->size) /* a bogus tag size: let libsndfile judge the bytes */
        return es_probe_sndfile(head, n, s, max_buffer, out, err, errlen);
    uint8_t *buf = malloc((size_t)want);
    if (!buf)
        return probe_fail(err, errlen, ES_PROBE_IO, "out of memory for an ID3v2 tag");
    memcpy(buf, head, n);
    ssize_t r = es_stream_read_full(s, buf + n, (size_t)want - n);
    int rc;
    if (r < 0)
        rc = probe_fail(err, errlen, ES_PROBE_IO, "read error in audio object");
    else if ((size_t)r == want - n && !memcmp(buf + want - 4, "fLaC", 4))
        rc = es_probe_flac(buf, (size_t)want, s, out, err, errlen);
    else
        rc = es_probe_sndfile(buf, n + (size_t)r, s, max_buffer, out, err, errlen);
    free(buf);
    return rc;
}

int es_audio_probe(es_byte_stream *s, size_t max_buffer, es_audio_info *out,
                   char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    uint8_t head[SNIFF_LEN];
    ssize_t n = es_stream_read_full(s, head, sizeof head);
    if (n < 0)
        return probe_fail(err, errlen, ES_PROBE_IO, "read error in audio object");
    if (n == 0)
        return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED, "audio object is empty");
    size_t len = (size_t)n;
    if (is_wave(head, len))
        return es_probe_wav(head, len, s, out, err, errlen);
    if (len >= 4 && !memcmp(head, "fLaC", 4))
        return es_probe_flac(head, len, s, out, err, errlen);
    uint64_t tag_len = id3v2_len(head, len);
    if (tag_len)
        return probe_after_id3(head, len, tag_len, s, max_buffer, out, err, errlen);
    return es_probe_sndfile(head, len, s, max_buffer, out, err, errlen);
}

const char *es_audio_format_name(es_audio_format f)
{
    switch (f) {
    case ES_AUDIO_WAV: return "wav";
    case ES_AUDIO_FLAC: return "flac";
    case ES_AUDIO_OTHER: return "other";
    default: return "unknown";
    }
}
