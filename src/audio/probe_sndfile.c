/* Fallback probe through libsndfile (ogg/vorbis, opus, mp3, aiff, w64, caf, …).
 *
 * libsndfile wants to seek, and these containers keep their length at the end
 * (ogg granule positions) or need a scan (mp3), so the whole object is copied
 * into memory, bounded by max_buffer, and opened with sf_open_virtual.
 *
 * Thread safety: probes run concurrently. libsndfile keeps the reason for a
 * failed open in a process-wide variable, so it is never read here; every
 * message comes from this file and all state lives on the stack or heap. */
#include "audio/probe_internal.h"

#include <inttypes.h>
#include <sndfile.h>
#include <stdlib.h>

/* SF_FORMAT_MPEG (libsndfile >= 1.1.0), spelled out so older headers build. */
#define MAJOR_MPEG 0x230000

typedef struct mem_file {
    const uint8_t *data;
    sf_count_t len, pos;
} mem_file;

static sf_count_t vio_len(void *user)
{
    return ((mem_file *)user)->len;
}

static sf_count_t vio_seek(sf_count_t offset, int whence, void *user)
{
    mem_file *m = user;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->len;
    /* Offsets come from parsed headers: refuse to go out of [0, len]. */
    if ((offset < 0 && offset < -base) || (offset > 0 && offset > m->len - base))
        return -1;
    m->pos = base + offset;
    return m->pos;
}

static sf_count_t vio_read(void *ptr, sf_count_t count, void *user)
{
    mem_file *m = user;
    if (count <= 0)
        return 0;
    sf_count_t left = m->len - m->pos;
    if (count > left)
        count = left;
    memcpy(ptr, m->data + m->pos, (size_t)count);
    m->pos += count;
    return count;
}

static sf_count_t vio_write(const void *ptr, sf_count_t count, void *user)
{
    (void)ptr, (void)count, (void)user;
    return 0; /* opened read-only */
}

static sf_count_t vio_tell(void *user)
{
    return ((mem_file *)user)->pos;
}

/* Copies the object into a fresh buffer: prefix first, then the stream up to
 * the declared size. Sets *truncated when the stream ends before that. */
static int load_object(const uint8_t *prefix, size_t prefix_len, es_byte_stream *s,
                       size_t max_buffer, uint8_t **buf, size_t *len, int *truncated,
                       char *err, size_t errlen)
{
    uint64_t total = s->size > prefix_len ? s->size : prefix_len;
    if (total > max_buffer)
        return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED,
                          "audio object of %" PRIu64 " bytes exceeds probe buffer of %zu bytes",
                          total, max_buffer);
    uint8_t *b = malloc(total ? (size_t)total : 1);
    if (!b)
        return probe_fail(err, errlen, ES_PROBE_IO, "out of memory for a %" PRIu64 "-byte probe",
                          total);
    if (prefix_len)
        memcpy(b, prefix, prefix_len);
    ssize_t r = es_stream_read_full(s, b + prefix_len, (size_t)total - prefix_len);
    if (r < 0) {
        free(b);
        return probe_fail(err, errlen, ES_PROBE_IO, "read error in audio object");
    }
    *buf = b;
    *len = prefix_len + (size_t)r;
    *truncated = *len < total;
    return ES_PROBE_OK;
}

int es_probe_sndfile(const uint8_t *prefix, size_t prefix_len, es_byte_stream *s,
                     size_t max_buffer, es_audio_info *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint8_t *buf = NULL;
    size_t len = 0;
    int truncated = 0;
    int rc = load_object(prefix, prefix_len, s, max_buffer, &buf, &len, &truncated, err, errlen);
    if (rc != ES_PROBE_OK)
        return rc;

    mem_file m = { buf, (sf_count_t)len, 0 };
    SF_VIRTUAL_IO vio = { vio_len, vio_seek, vio_read, vio_write, vio_tell };
    SF_INFO info;
    memset(&info, 0, sizeof info); /* format 0: let libsndfile sniff */
    SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &info, &m);
    if (!sf) {
        free(buf);
        return probe_fail(err, errlen, ES_PROBE_UNSUPPORTED, "unrecognised audio format");
    }
    sf_close(sf);
    free(buf);

    if (info.samplerate <= 0 || info.channels <= 0)
        return probe_fail(err, errlen, ES_PROBE_BAD, "audio header has rate %d and %d channels",
                          info.samplerate, info.channels);
    out->format = ES_AUDIO_OTHER;
    out->sample_rate = (uint32_t)info.samplerate;
    out->channels = (uint32_t)info.channels;
    /* libsndfile reports an unknown length as SF_COUNT_MAX (or negative). */
    if (info.frames < 0 || info.frames == SF_COUNT_MAX) {
        out->samples = 0;
        out->flags |= ES_AUDIO_ESTIMATED;
    } else {
        out->samples = (uint64_t)info.frames;
    }
    /* An mp3 frame count depends on who counts encoder delay and padding (soxi
     * reads the header estimate, libsndfile the LAME tag): not exact. */
    if ((info.format & SF_FORMAT_TYPEMASK) == MAJOR_MPEG)
        out->flags |= ES_AUDIO_ESTIMATED;
    if (truncated)
        out->flags |= ES_AUDIO_TRUNCATED;
    return ES_PROBE_OK;
}
