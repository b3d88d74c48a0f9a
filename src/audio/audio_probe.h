/* Audio probes: sample rate, channels and exact samples per channel from an
 * audio object's header, without decoding PCM (frames are what an utterance costs).
 *
 * Native probes: RIFF/WAVE (PCM 8/16/24/32, IEEE float, WAVE_FORMAT_EXTENSIBLE,
 * RF64/BW64 with ds64, any chunks before `data`, odd-size chunk padding) and FLAC
 * (STREAMINFO, optionally after an ID3v2 tag). Other containers (ogg/opus, mp3, …)
 * go through libsndfile on the object's bytes; their counts may be estimates.
 *
 * The answer must equal `soxi -s` for every WAV and FLAC file. A header that
 * claims more data than the object holds is not trusted: `samples` is what the
 * bytes actually hold and ES_AUDIO_TRUNCATED is set. */
#ifndef ES_AUDIO_PROBE_H
#define ES_AUDIO_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "core/byte_stream.h"

enum {
    ES_AUDIO_TRUNCATED = 1u << 0,  /* header claims more data than present */
    ES_AUDIO_ESTIMATED = 1u << 1,  /* count is an estimate (mp3, unknown-size wav, FLAC total 0) */
};

typedef enum es_audio_format {
    ES_AUDIO_UNKNOWN = 0,
    ES_AUDIO_WAV,
    ES_AUDIO_FLAC,
    ES_AUDIO_OTHER, /* probed through libsndfile */
} es_audio_format;

typedef struct es_audio_info {
    es_audio_format format;
    uint32_t sample_rate;
    uint32_t channels;
    uint64_t samples;   /* per channel */
    uint32_t flags;     /* ES_AUDIO_* */
} es_audio_info;

/* Probe result codes. On failure `err` holds a one-line reason without file name
 * (the caller prefixes file and member), e.g. "WAV fmt chunk is 12 bytes, need 16". */
enum {
    ES_PROBE_OK = 0,
    ES_PROBE_BAD = -1,         /* recognised container, malformed header */
    ES_PROBE_UNSUPPORTED = -2, /* not an audio format we can read */
    ES_PROBE_IO = -3,          /* the stream's read failed */
};

/* Probes the stream from its current position (the object's first byte). Reads
 * only what the header needs; except for libsndfile formats, which need the whole
 * object and read it into memory (bounded by `max_buffer` bytes; larger objects
 * are ES_PROBE_UNSUPPORTED). On return the stream may be positioned anywhere. */
int es_audio_probe(es_byte_stream *s, size_t max_buffer, es_audio_info *out,
                   char *err, size_t errlen);

/* Individual probes, exposed for tests and fuzzers. `head`/`head_len` are the
 * bytes the dispatcher already read from the stream start to sniff the magic;
 * the stream continues after them. */
int es_probe_wav(const uint8_t *head, size_t head_len, es_byte_stream *s,
                 es_audio_info *out, char *err, size_t errlen);
int es_probe_flac(const uint8_t *head, size_t head_len, es_byte_stream *s,
                  es_audio_info *out, char *err, size_t errlen);

const char *es_audio_format_name(es_audio_format f);

#endif
