/* FLAC probe: rate, channels and total samples from STREAMINFO, the mandatory
 * first metadata block, optionally after an ID3v2 tag (which libFLAC, and so
 * soxi, skip too). The frames are never read. */
#include "audio/probe_internal.h"

#include <inttypes.h>

#define STREAMINFO_LEN 34

static int io_fail(char *err, size_t errlen)
{
    return probe_fail(err, errlen, ES_PROBE_IO, "read error in FLAC header");
}

/* Skips an ID3v2 tag whose 10-byte header is in h. Returns ES_PROBE_OK or an
 * error; a tag that cannot be skipped means we cannot tell what follows. */
static int skip_id3v2(probe_src *src, const uint8_t h[10], char *err, size_t errlen)
{
    /* Size is "syncsafe": 4 bytes of 7 bits; the footer flag adds a 10-byte
     * copy of the header after the tag body. */
    for (int i = 6; i < 10; i++)
        if (h[i] & 0x80)
            return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED, "ID3v2 tag size is not syncsafe");
    uint64_t body = (uint64_t)h[6] << 21 | (uint64_t)h[7] << 14 | (uint64_t)h[8] << 7 | h[9];
    if (h[5] & 0x10)
        body += 10;
    if (body > probe_src_left(src))
        return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED,
                          "ID3v2 tag of %" PRIu64 " bytes runs past the end of the object", body);
    int64_t sk = probe_src_skip(src, body);
    if (sk < 0)
        return io_fail(err, errlen);
    if ((uint64_t)sk < body)
        return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED, "ID3v2 tag truncated");
    return ES_PROBE_OK;
}

int es_probe_flac(const uint8_t *head, size_t head_len, es_byte_stream *s,
                  es_audio_info *out, char *err, size_t errlen)
{
    probe_src src;
    probe_src_init(&src, head, head_len, s);
    memset(out, 0, sizeof *out);

    uint8_t b[STREAMINFO_LEN];
    ssize_t r = probe_src_read(&src, b, 4);
    if (r < 0)
        return io_fail(err, errlen);
    if (r == 4 && !memcmp(b, "ID3", 3)) {
        r = probe_src_read(&src, b + 4, 6);
        if (r < 0)
            return io_fail(err, errlen);
        if (r < 6)
            return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED, "ID3v2 header truncated");
        int rc = skip_id3v2(&src, b, err, errlen);
        if (rc != ES_PROBE_OK)
            return rc;
        r = probe_src_read(&src, b, 4);
        if (r < 0)
            return io_fail(err, errlen);
        if (r < 4 || memcmp(b, "fLaC", 4))
            return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED,
                              "ID3v2 tag is not followed by a FLAC stream");
    } else if (r < 4 || memcmp(b, "fLaC", 4)) {
        return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED, "not a FLAC stream");
    }

    /* Metadata block header: last-flag(1) type(7) length(24). */
    r = probe_src_read(&src, b, 4);
    if (r < 0)
        return io_fail(err, errlen);
    if (r < 4)
        return probe_fail(err, errlen, ES_PROBE_BAD, "FLAC STREAMINFO truncated");
    unsigned type = b[0] & 0x7f;
    uint32_t len = (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    if (type != 0)
        return probe_fail(err, errlen, ES_PROBE_BAD,
                          "FLAC first metadata block is type %u, not STREAMINFO", type);
    if (len < STREAMINFO_LEN)
        return probe_fail(err, errlen, ES_PROBE_BAD,
                          "FLAC STREAMINFO is %" PRIu32 " bytes, need %d", len, STREAMINFO_LEN);
    r = probe_src_read(&src, b, STREAMINFO_LEN);
    if (r < 0)
        return io_fail(err, errlen);
    if (r < STREAMINFO_LEN)
        return probe_fail(err, errlen, ES_PROBE_BAD, "FLAC STREAMINFO truncated");

    /* After min/max block size (2+2) and min/max frame size (3+3): sample rate
     * 20 bits, channels-1 3 bits, bits-per-sample-1 5 bits, total samples 36. */
    uint32_t rate = (uint32_t)b[10] << 12 | (uint32_t)b[11] << 4 | b[12] >> 4;
    uint32_t channels = ((b[12] >> 1) & 7u) + 1;
    uint64_t total = (uint64_t)(b[13] & 0x0f) << 32 | (uint64_t)b[14] << 24 |
                     (uint64_t)b[15] << 16 | (uint64_t)b[16] << 8 | b[17];
    if (rate == 0)
        return probe_fail(err, errlen, ES_PROBE_BAD, "FLAC sample rate is 0");

    out->format = ES_AUDIO_FLAC;
    out->sample_rate = rate;
    out->channels = channels;
    out->samples = total;
    /* 0 means the encoder did not know the length (a stream); only decoding
     * would tell. */
    out->flags = total == 0 ? ES_AUDIO_ESTIMATED : 0;
    return ES_PROBE_OK;
}
