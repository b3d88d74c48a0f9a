/* RIFF/WAVE probe: walks the chunks up to `data`, reading only `fmt `, `ds64`
 * and `fact` and skipping everything else, and derives the sample count from
 * the data chunk's size the way `soxi -s` does. The PCM is never read.
 *
 * Handled: RIFF and RIFX (big-endian), RF64/BW64 with a ds64 chunk, PCM of any
 * width, IEEE float, A-law, mu-law, WAVE_FORMAT_EXTENSIBLE, IMA and MS ADPCM and
 * GSM 6.10 (sox's block formulas), other codecs through a `fact` chunk. */
#include "audio/probe_internal.h"

#include <inttypes.h>

enum {
    TAG_PCM = 0x0001,
    TAG_MS_ADPCM = 0x0002,
    TAG_FLOAT = 0x0003,
    TAG_ALAW = 0x0006,
    TAG_MULAW = 0x0007,
    TAG_IMA_ADPCM = 0x0011,
    TAG_GSM610 = 0x0031,
    TAG_EXTENSIBLE = 0xFFFE,
};

/* The size 32-bit writers put in the data chunk when they cannot seek back to
 * fix it (sox writing to a pipe); soxi then reports the length as unknown. */
#define SOX_UNSPEC_SIZE 0x7ffff000u
/* fmt bytes worth keeping: 40 cover WAVE_FORMAT_EXTENSIBLE; ADPCM coefficient
 * tables after that are not needed. */
#define FMT_KEEP 40

typedef struct wav_fmt {
    uint16_t tag;            /* after resolving EXTENSIBLE to its SubFormat */
    uint16_t channels;
    uint32_t rate;
    uint16_t block_align;
    uint16_t bits;
    uint16_t samples_per_block; /* ADPCM/GSM extension; 0 when absent */
    int has_spb;
} wav_fmt;

typedef struct wav_state {
    int big_endian; /* RIFX */
    int rf64;       /* RF64/BW64: 0xFFFFFFFF sizes live in ds64 */
    int have_fmt, have_ds64, have_fact;
    wav_fmt fmt;
    uint64_t ds64_data_size;
    uint32_t fact_samples;
} wav_state;

static uint16_t get16(const uint8_t *p, int be)
{
    return be ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t get32(const uint8_t *p, int be)
{
    return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* ds64 is defined little-endian only (RF64 has no big-endian twin). */
static uint64_t get64le(const uint8_t *p)
{
    return (uint64_t)get32(p + 4, 0) << 32 | get32(p, 0);
}

/* Chunk ids are untrusted bytes; keep error lines printable. */
static void chunk_name(const uint8_t *id, char out[5])
{
    for (int i = 0; i < 4; i++)
        out[i] = id[i] >= 0x20 && id[i] < 0x7f ? (char)id[i] : '?';
    out[4] = '\0';
}

static int io_fail(char *err, size_t errlen)
{
    return probe_fail(err, errlen, ES_PROBE_IO, "read error in WAV header");
}

/* Reads the kept part of a chunk body into buf and skips the rest plus the pad
 * byte. The caller has checked that `padded` bytes are present. */
static int read_chunk_body(probe_src *src, uint8_t *buf, size_t keep, uint32_t size,
                           uint64_t padded, size_t *got, char *err, size_t errlen)
{
    size_t want = size < keep ? size : keep;
    ssize_t r = probe_src_read(src, buf, want);
    if (r < 0)
        return io_fail(err, errlen);
    *got = (size_t)r;
    if ((size_t)r < want)
        return ES_PROBE_OK; /* stream ended early: caller sees the short body */
    int64_t sk = probe_src_skip(src, padded - want);
    if (sk < 0)
        return io_fail(err, errlen);
    return ES_PROBE_OK;
}

static int parse_fmt(wav_state *st, const uint8_t *b, size_t n, uint32_t size,
                     char *err, size_t errlen)
{
    int be = st->big_endian;
    if (size < 16)
        return probe_fail(err, errlen, ES_PROBE_BAD,
                          "WAV fmt chunk is %" PRIu32 " bytes, need at least 16", size);
    if (n < 16)
        return probe_fail(err, errlen, ES_PROBE_BAD, "WAV fmt chunk truncated");
    wav_fmt *f = &st->fmt;
    f->tag = get16(b, be);
    f->channels = get16(b + 2, be);
    f->rate = get32(b + 4, be);
    f->block_align = get16(b + 12, be);
    f->bits = get16(b + 14, be);
    /* ADPCM and GSM keep samples-per-block right after cbSize. */
    f->has_spb = n >= 20;
    f->samples_per_block = f->has_spb ? get16(b + 18, be) : 0;
    if (f->tag == TAG_EXTENSIBLE) {
        /* The real codec is the first two bytes of the SubFormat GUID (offset
         * 24); the container bit width stays in wBitsPerSample, as sox uses it. */
        if (size < 40)
            return probe_fail(err, errlen, ES_PROBE_BAD,
                              "WAV extensible fmt chunk is %" PRIu32 " bytes, need 40", size);
        if (n < 40)
            return probe_fail(err, errlen, ES_PROBE_BAD, "WAV fmt chunk truncated");
        f->tag = get16(b + 24, be);
        f->has_spb = 0;
        f->samples_per_block = 0;
        if (f->tag == TAG_EXTENSIBLE)
            return probe_fail(err, errlen, ES_PROBE_BAD,
                              "WAV extensible fmt names itself as its SubFormat");
    }
    if (f->channels == 0)
        return probe_fail(err, errlen, ES_PROBE_BAD, "WAV has 0 channels");
    if (f->rate == 0)
        return probe_fail(err, errlen, ES_PROBE_BAD, "WAV sample rate is 0");
    st->have_fmt = 1;
    return ES_PROBE_OK;
}

static int parse_ds64(wav_state *st, const uint8_t *b, size_t n, uint32_t size,
                      char *err, size_t errlen)
{
    /* riffSize(8) dataSize(8) sampleCount(8): only dataSize is used; the
     * sample count is often left 0 by writers and soxi ignores it too. */
    if (size < 24 || n < 24)
        return probe_fail(err, errlen, ES_PROBE_BAD,
                          "RF64 ds64 chunk is %" PRIu32 " bytes, need at least 24", size);
    st->ds64_data_size = get64le(b + 8);
    st->have_ds64 = 1;
    return ES_PROBE_OK;
}

/* a * b, or 0 with *ovf set when it does not fit (sizes are untrusted). */
static uint64_t mul_u64(uint64_t a, uint64_t b, int *ovf)
{
    if (a != 0 && b > UINT64_MAX / a) {
        *ovf = 1;
        return 0;
    }
    return a * b;
}

/* sox's lsx_ima_samples_in: whole blocks, plus what a partial last block
 * decodes to (4-byte header per channel holding one sample, then 8 samples per
 * 4 bytes per channel). */
static uint64_t ima_samples(uint64_t len, uint32_t ch, uint32_t align, uint32_t spb, int *ovf)
{
    uint64_t n = mul_u64(len / align, spb, ovf);
    uint64_t m = len % align;
    if (m >= 4u * ch) {
        m = 8 * ((m - 4u * ch) / (4u * ch)) + 1;
        n += m > spb ? spb : m;
    }
    return n;
}

/* sox's lsx_ms_adpcm_samples_in: 7-byte header per channel holding two
 * samples, then two samples per byte spread over the channels. */
static uint64_t ms_adpcm_samples(uint64_t len, uint32_t ch, uint32_t align, uint32_t spb,
                                 int *ovf)
{
    uint64_t n = mul_u64(len / align, spb, ovf);
    uint64_t m = len % align;
    if (m >= 7u * ch) {
        m = 2 * (m - 7u * ch) / ch + 2;
        n += m > spb ? spb : m;
    }
    return n;
}

/* The bytes one block needs for spb samples (sox's *_bytes_per_block); sox
 * refuses files whose block_align is smaller. */
static uint64_t ima_block_bytes(uint32_t ch, uint32_t spb)
{
    return (uint64_t)(spb + 14u) / 8 * 4 * ch;
}

static uint64_t ms_block_bytes(uint32_t ch, uint32_t spb)
{
    uint64_t n = 7u * (uint64_t)ch;
    if (spb > 2)
        n += ((uint64_t)(spb - 2) * ch + 1) / 2;
    return n;
}

/* Checks the ADPCM/GSM fields the block formulas divide by. */
static int check_blocks(const wav_fmt *f, const char *name, char *err, size_t errlen)
{
    if (f->block_align == 0)
        return probe_fail(err, errlen, ES_PROBE_BAD, "WAV %s block_align is 0", name);
    if (!f->has_spb || f->samples_per_block == 0)
        return probe_fail(err, errlen, ES_PROBE_BAD,
                          "WAV %s fmt chunk has no samples-per-block", name);
    return ES_PROBE_OK;
}

static const char *tag_name(uint16_t tag)
{
    switch (tag) {
    case 0x0055: return "MPEG layer 3";
    case 0x0050: return "MPEG";
    case 0x0022: return "TrueSpeech";
    case 0x0010: return "OKI ADPCM";
    case 0x0040: return "G.721 ADPCM";
    case 0x0014: return "G.723 ADPCM";
    default: return "unknown codec";
    }
}

/* Samples per channel held by `bytes` of data, following soxi: PCM-like codecs
 * count whole frames of channels * ceil(bits/8) bytes (sox ignores block_align
 * there, and so do we); block codecs use sox's block formulas. */
static int samples_for(const wav_state *st, uint64_t bytes, uint64_t *samples,
                       uint32_t *flags, char *err, size_t errlen)
{
    const wav_fmt *f = &st->fmt;
    uint32_t ch = f->channels;
    int ovf = 0, rc;
    switch (f->tag) {
    case TAG_PCM:
        if (f->bits == 0 || f->bits > 64)
            return probe_fail(err, errlen, ES_PROBE_BAD,
                              "WAV PCM with %u bits per sample", (unsigned)f->bits);
        *samples = bytes / ((uint64_t)ch * ((f->bits + 7u) / 8));
        return ES_PROBE_OK;
    case TAG_FLOAT:
        if (f->bits != 32 && f->bits != 64)
            return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED,
                              "WAV float with %u bits per sample", (unsigned)f->bits);
        *samples = bytes / ((uint64_t)ch * (f->bits / 8u));
        return ES_PROBE_OK;
    case TAG_ALAW:
    case TAG_MULAW:
        if (f->bits != 8)
            return probe_fail(err, errlen, ES_PROBE_BAD, "WAV %s with %u bits per sample",
                              f->tag == TAG_ALAW ? "A-law" : "mu-law", (unsigned)f->bits);
        *samples = bytes / ch;
        return ES_PROBE_OK;
    case TAG_IMA_ADPCM:
        if ((rc = check_blocks(f, "IMA ADPCM", err, errlen)) != ES_PROBE_OK)
            return rc;
        if (ima_block_bytes(ch, f->samples_per_block) > f->block_align)
            return probe_fail(err, errlen, ES_PROBE_BAD,
                              "WAV IMA ADPCM samples-per-block %u does not fit block_align %u",
                              (unsigned)f->samples_per_block, (unsigned)f->block_align);
        *samples = ima_samples(bytes, ch, f->block_align, f->samples_per_block, &ovf);
        break;
    case TAG_MS_ADPCM:
        if ((rc = check_blocks(f, "MS ADPCM", err, errlen)) != ES_PROBE_OK)
            return rc;
        if (ms_block_bytes(ch, f->samples_per_block) > f->block_align)
            return probe_fail(err, errlen, ES_PROBE_BAD,
                              "WAV MS ADPCM samples-per-block %u does not fit block_align %u",
                              (unsigned)f->samples_per_block, (unsigned)f->block_align);
        *samples = ms_adpcm_samples(bytes, ch, f->block_align, f->samples_per_block, &ovf);
        break;
    case TAG_GSM610:
        if ((rc = check_blocks(f, "GSM 6.10", err, errlen)) != ES_PROBE_OK)
            return rc;
        /* Only sox's 65-byte, 320-sample WAV49 framing is decodable. */
        if (f->block_align != 65 || f->samples_per_block != 320)
            return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED,
                              "WAV GSM 6.10 with block_align %u and %u samples per block",
                              (unsigned)f->block_align, (unsigned)f->samples_per_block);
        *samples = mul_u64(bytes / 65, 320, &ovf);
        break;
    default:
        /* No formula without decoding: the writer's count is the best we have. */
        if (!st->have_fact)
            return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED,
                              "WAV format tag 0x%04x (%s) without a fact chunk",
                              (unsigned)f->tag, tag_name(f->tag));
        *samples = st->fact_samples;
        if (*flags & ES_AUDIO_TRUNCATED)
            *flags |= ES_AUDIO_ESTIMATED;
        return ES_PROBE_OK;
    }
    if (ovf)
        return probe_fail(err, errlen, ES_PROBE_BAD, "WAV sample count overflows");
    return ES_PROBE_OK;
}

/* The data chunk header has just been read: settles how many data bytes count
 * and turns them into samples. */
static int finish(wav_state *st, probe_src *src, uint32_t size, es_audio_info *out,
                  char *err, size_t errlen)
{
    if (!st->have_fmt)
        return probe_fail(err, errlen, ES_PROBE_BAD, "WAV data chunk comes before the fmt chunk");
    uint64_t claimed = size;
    if (st->rf64 && size == 0xFFFFFFFFu) {
        if (!st->have_ds64)
            return probe_fail(err, errlen, ES_PROBE_BAD,
                              "RF64 data chunk size is in a ds64 chunk, but there is none");
        claimed = st->ds64_data_size;
    }
    uint64_t left = probe_src_left(src);
    uint64_t bytes = claimed;
    uint32_t flags = 0;
    /* Streaming writers leave 0, 0xFFFFFFFF or sox's placeholder in the size:
     * the data runs to the end of the object, as far as anyone can tell. */
    int unknown = (claimed == 0 && left > 0) || (!st->rf64 && size == 0xFFFFFFFFu) ||
                  (size == SOX_UNSPEC_SIZE && claimed > left);
    if (unknown) {
        bytes = left;
        flags |= ES_AUDIO_ESTIMATED;
    } else if (claimed > left) {
        bytes = left;
        flags |= ES_AUDIO_TRUNCATED;
    }
    uint64_t samples = 0;
    int rc = samples_for(st, bytes, &samples, &flags, err, errlen);
    if (rc != ES_PROBE_OK)
        return rc;
    out->format = ES_AUDIO_WAV;
    out->sample_rate = st->fmt.rate;
    out->channels = st->fmt.channels;
    out->samples = samples;
    out->flags = flags;
    return ES_PROBE_OK;
}

int es_probe_wav(const uint8_t *head, size_t head_len, es_byte_stream *s,
                 es_audio_info *out, char *err, size_t errlen)
{
    probe_src src;
    probe_src_init(&src, head, head_len, s);
    memset(out, 0, sizeof *out);
    wav_state st;
    memset(&st, 0, sizeof st);

    uint8_t hdr[12];
    ssize_t r = probe_src_read(&src, hdr, sizeof hdr);
    if (r < 0)
        return io_fail(err, errlen);
    if (r < 12)
        return probe_fail(err, errlen, ES_PROBE_BAD, "WAV header truncated");
    if (!memcmp(hdr, "RIFX", 4))
        st.big_endian = 1;
    else if (!memcmp(hdr, "RF64", 4) || !memcmp(hdr, "BW64", 4))
        st.rf64 = 1;
    else if (memcmp(hdr, "RIFF", 4))
        return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED, "not a RIFF file");
    if (memcmp(hdr + 8, "WAVE", 4))
        return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED, "RIFF file is not WAVE");
    /* The RIFF size is not used: soxi ignores it and writers often get it wrong. */

    for (;;) {
        uint8_t ck[8];
        r = probe_src_read(&src, ck, sizeof ck);
        if (r < 0)
            return io_fail(err, errlen);
        if (r < 8)
            return probe_fail(err, errlen, ES_PROBE_BAD,
                              st.have_fmt ? "WAV has no data chunk" : "WAV has no fmt chunk");
        uint32_t size = get32(ck + 4, st.big_endian);
        if (!memcmp(ck, "data", 4))
            return finish(&st, &src, size, out, err, errlen);

        /* Every chunk before data must lie inside the object: checking first
         * avoids skipping (maybe decompressing) gigabytes for a bogus size. */
        uint64_t padded = (uint64_t)size + (size & 1u);
        uint64_t left = probe_src_left(&src);
        char name[5];
        chunk_name(ck, name);
        if (padded > left)
            return probe_fail(err, errlen, ES_PROBE_BAD,
                              "WAV chunk '%s' claims %" PRIu32 " bytes, only %" PRIu64
                              " left in the object", name, size, left);

        uint8_t body[FMT_KEEP];
        size_t got = 0;
        int rc = ES_PROBE_OK;
        int is_fmt = !memcmp(ck, "fmt ", 4) && !st.have_fmt;
        int is_ds64 = !memcmp(ck, "ds64", 4) && st.rf64 && !st.have_ds64;
        int is_fact = !memcmp(ck, "fact", 4) && !st.have_fact;
        if (is_fmt || is_ds64 || is_fact) {
            rc = read_chunk_body(&src, body, sizeof body, size, padded, &got, err, errlen);
            if (rc != ES_PROBE_OK)
                return rc;
        }
        if (is_fmt)
            rc = parse_fmt(&st, body, got, size, err, errlen);
        else if (is_ds64)
            rc = parse_ds64(&st, body, got, size, err, errlen);
        else if (is_fact) {
            if (got >= 4) {
                st.fact_samples = get32(body, st.big_endian);
                st.have_fact = 1;
            }
        } else {
            int64_t sk = probe_src_skip(&src, padded);
            if (sk < 0)
                return io_fail(err, errlen);
            if ((uint64_t)sk < padded)
                return probe_fail(err, errlen, ES_PROBE_BAD, "WAV ends inside chunk '%s'", name);
        }
        if (rc != ES_PROBE_OK)
            return rc;
    }
}
