#include "readers/manifest.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_stream.h"
#include "core/grow.h"
#include "readers/audio_object.h"

es_manifest *es_manifest_new(const char *file)
{
    es_manifest *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->file = es_arena_strndup(&m->strings, file, strlen(file));
    m->shard = m->file;
    m->pos_label = "entry";
    if (!m->file) {
        free(m);
        return NULL;
    }
    return m;
}

es_manifest_item *es_manifest_add(es_manifest *m)
{
    if (m->n == m->cap) {
        void *p = m->items;
        if (es_grow(&p, &m->cap, m->cap + 1, sizeof *m->items, 256))
            return NULL;
        m->items = p;
    }
    es_manifest_item *it = &m->items[m->n++];
    memset(it, 0, sizeof *it);
    it->key = it->audio = it->spk = "";
    it->end = -1;
    return it;
}

const char *es_manifest_strdup(es_manifest *m, const char *s, size_t n)
{
    return es_arena_strndup(&m->strings, s, n);
}

void es_manifest_free(es_manifest *m)
{
    if (!m)
        return;
    free(m->items);
    es_arena_release(&m->strings);
    free(m);
}

/* Python's int(t * rate) for t >= 0: the loaders' frame offset of a time. */
static uint64_t seconds_to_samples(double t, uint32_t rate)
{
    double v = t * (double)rate;
    return v <= 0 ? 0 : (uint64_t)v;
}

/* Narrows row->samples to the item's segment, as WeNet's raw loader reads it
 * (torchaudio.load(frame_offset=int(start*sr), num_frames=int(end*sr)-int(start*sr))). */
static int apply_segment(es_context *ctx, const es_manifest *m, const es_manifest_item *it,
                         es_cost_row *row)
{
    if (!it->has_segment || !(row->flags & ES_FLAG_AUDIO))
        return ES_NEXT_RECORD;
    uint64_t first = seconds_to_samples(it->start, row->sample_rate);
    uint64_t last = it->end < 0 ? row->samples : seconds_to_samples(it->end, row->sample_rate);
    if (last > row->samples)
        row->flags |= ES_FLAG_TRUNCATED; /* the segment ends past the audio */
    if (last > row->samples)
        last = row->samples;
    if (last <= first) {
        es_fail(ctx, ES_ERR_FORMAT, "%s: %s %llu (%s): segment %.3f-%.3f s holds no audio "
                "(the audio has %llu samples)", m->file, m->pos_label,
                (unsigned long long)(it->pos + m->pos_base), it->key, it->start, it->end,
                (unsigned long long)row->samples);
        return ES_NEXT_BAD;
    }
    row->samples = last - first;
    row->flags |= ES_FLAG_SEGMENT;
    return ES_NEXT_RECORD;
}

int es_manifest_measure(es_context *ctx, const es_manifest *m, size_t i, const char *root,
                        const es_reader_opts *opts, es_cost_row *row)
{
    const es_manifest_item *it = &m->items[i];
    memset(row, 0, sizeof *row);
    row->key = it->key;
    row->shard = m->shard;
    row->pos = it->pos;
    row->spk = it->spk;
    row->flags = ES_FLAG_ITEM;
    if (it->has_text)
        es_reader_text(opts, it->text ? it->text : "", it->text_bytes, row);
    if (it->problem) {
        es_fail(ctx, ES_ERR_FORMAT, "%s: %s %llu (%s): %s", m->file, m->pos_label,
                (unsigned long long)(it->pos + m->pos_base), it->key, it->problem);
        return ES_NEXT_BAD;
    }
    char buf[4096];
    const char *path = es_resolve_path(root, it->audio, buf, sizeof buf);
    es_byte_stream s;
    es_file_stream f;
    int e = es_file_stream_open(&s, &f, path);
    if (e) {
        char hint[600] = "", where[560];
        if (e == ENOENT && it->audio[0] != '/') /* say where it was looked for */
            snprintf(hint, sizeof hint, " (%s)", es_root_hint(root, where, sizeof where));
        es_fail(ctx, ES_ERR_IO, "%s: %s %llu (%s): cannot open audio %s: %s%s", m->file,
                m->pos_label, (unsigned long long)(it->pos + m->pos_base), it->key, path,
                es_file_stream_strerror(e), hint);
        return ES_NEXT_BAD;
    }
    const char *dot = strrchr(it->audio, '.');
    int strict = dot && (strcmp(dot, ".wav") == 0 || strcmp(dot, ".flac") == 0);
    char err[256];
    int rc = es_audio_object_measure(&s, opts, strict, row, err, sizeof err);
    if (rc == ES_AUDIO_OBJ_IO)
        snprintf(err, sizeof err, "read error: %s", strerror(f.err));
    es_file_stream_close(&f);
    if (rc != ES_AUDIO_OBJ_OK) {
        es_fail(ctx, ES_ERR_FORMAT, "%s: %s %llu (%s): audio %s: %s", m->file, m->pos_label,
                (unsigned long long)(it->pos + m->pos_base), it->key, path, err);
        return ES_NEXT_BAD;
    }
    return apply_segment(ctx, m, it, row);
}
