/* Fuzzes the audio probes on arbitrary bytes through a memory stream, as the
 * readers call them: a clean result or error, never a crash, hang or leak.
 * Also drives the WAV and FLAC probes directly (no dispatcher sniffing) and
 * with a declared size that disagrees with the bytes present. */
#include <stdint.h>
#include <string.h>

#include "audio/audio_probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* LeakSanitizer reads this. libsndfile and its codec libraries leak on some
 * failed opens of crafted files (libsndfile#1013, xiph/vorbis#125); those
 * leaks are theirs. Allocations made by the probes themselves stay checked. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libsndfile.so\n"
           "leak:libvorbis.so\n"
           "leak:libvorbisfile.so\n"
           "leak:libogg.so\n"
           "leak:libopus.so\n"
           "leak:libFLAC.so\n"
           "leak:libmpg123.so\n"
           "leak:libmp3lame.so\n";
}

/* Checks the invariants every answer must keep. */
static void check(int rc, const es_audio_info *info, const char *err)
{
    if (rc == ES_PROBE_OK) {
        if (info->sample_rate == 0 || info->channels == 0 || info->format == ES_AUDIO_UNKNOWN)
            __builtin_trap();
    } else if (rc != ES_PROBE_BAD && rc != ES_PROBE_UNSUPPORTED && rc != ES_PROBE_IO) {
        __builtin_trap();
    } else if (err[0] == '\0' || strchr(err, '\n')) {
        __builtin_trap(); /* every failure says why, on one line */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    es_byte_stream s;
    es_mem_stream m;
    es_audio_info info;
    char err[256];

    es_byte_stream_from_memory(&s, &m, data, size);
    err[0] = '\0';
    int rc = es_audio_probe(&s, 1u << 20, &info, err, sizeof err);
    check(rc, &info, err);

    /* The container may declare more than the stream holds (a cut tar member). */
    es_byte_stream_from_memory(&s, &m, data, size);
    s.size = (uint64_t)size * 3 + 7;
    err[0] = '\0';
    rc = es_audio_probe(&s, 1u << 20, &info, err, sizeof err);
    check(rc, &info, err);

    /* The native probes on their own, with part of the input as head. */
    size_t head = size < 12 ? size : 12;
    es_byte_stream_from_memory(&s, &m, data, size);
    m.off = head;
    err[0] = '\0';
    rc = es_probe_wav(data, head, &s, &info, err, sizeof err);
    check(rc, &info, err);
    es_byte_stream_from_memory(&s, &m, data, size);
    err[0] = '\0';
    rc = es_probe_flac(NULL, 0, &s, &info, err, sizeof err);
    check(rc, &info, err);
    return 0;
}
