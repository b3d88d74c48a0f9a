#include "readers/audio_object.h"

#include <stdio.h>
#include <xxhash.h>

#include "audio/audio_probe.h"

/* A stream that hashes what passes through it, so the probe's reads count too. */
typedef struct hashing {
    es_byte_stream *inner;
    XXH3_state_t *state;
} hashing;

static ssize_t hashing_read(void *opaque, void *buf, size_t n)
{
    hashing *h = opaque;
    ssize_t r = h->inner->read(h->inner->opaque, buf, n);
    if (r > 0)
        XXH3_64bits_update(h->state, buf, (size_t)r);
    return r;
}

static int drain(es_byte_stream *s)
{
    uint8_t buf[65536];
    ssize_t r;
    while ((r = s->read(s->opaque, buf, sizeof buf)) > 0)
        ;
    return r < 0 ? -1 : 0;
}

static int probe_into_row(es_byte_stream *s, const es_reader_opts *opts, int strict,
                          es_cost_row *row, char *err, size_t errlen)
{
    es_audio_info info;
    int rc = es_audio_probe(s, opts->probe_buffer, &info, err, errlen);
    row->audio_bytes = s->size;
    if (rc == ES_PROBE_IO)
        return ES_AUDIO_OBJ_IO;
    if (rc == ES_PROBE_UNSUPPORTED && !strict) {
        row->flags |= ES_FLAG_UNSUPPORTED;
        return ES_AUDIO_OBJ_OK;
    }
    if (rc != ES_PROBE_OK)
        return ES_AUDIO_OBJ_BAD;
    row->flags |= ES_FLAG_AUDIO;
    row->sample_rate = info.sample_rate;
    row->channels = info.channels;
    row->samples = info.samples;
    if (info.flags & ES_AUDIO_TRUNCATED)
        row->flags |= ES_FLAG_TRUNCATED;
    if (info.flags & ES_AUDIO_ESTIMATED)
        row->flags |= ES_FLAG_ESTIMATED;
    return ES_AUDIO_OBJ_OK;
}

int es_audio_object_measure(es_byte_stream *s, const es_reader_opts *opts, int strict,
                            es_cost_row *row, char *err, size_t errlen)
{
    if (!opts->hash)
        return probe_into_row(s, opts, strict, row, err, errlen);

    XXH3_state_t *state = XXH3_createState();
    if (!state) {
        snprintf(err, errlen, "out of memory");
        return ES_AUDIO_OBJ_BAD;
    }
    XXH3_64bits_reset(state);
    hashing h = {s, state};
    es_byte_stream hs = {hashing_read, NULL, &h, s->size, 0};
    int rc = probe_into_row(&hs, opts, strict, row, err, errlen);
    if (rc != ES_AUDIO_OBJ_IO && drain(&hs) < 0)
        rc = ES_AUDIO_OBJ_IO;
    if (rc == ES_AUDIO_OBJ_OK) {
        row->hash = XXH3_64bits_digest(state);
        row->flags |= ES_FLAG_HASHED;
    }
    XXH3_freeState(state);
    return rc;
}
