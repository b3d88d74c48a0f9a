/* WeNet raw lists (`data.list` in raw mode): one JSON object per line,
 * {"key": …, "wav": path, "txt": transcript}, optionally "start"/"end" in
 * seconds. The transcript is counted as the loader keeps it (not stripped). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "core/file_stream.h"
#include "core/line_reader.h"
#include "core/utf8.h"
#include "readers/manifest.h"

static const char *string_field(json_t *obj, const char *name, size_t *len)
{
    json_t *v = json_object_get(obj, name);
    if (!json_is_string(v))
        return NULL;
    *len = json_string_length(v);
    return json_string_value(v);
}

/* Optional number field: 1 when present and numeric, 0 when absent, -1 when wrong. */
static int number_field(json_t *obj, const char *name, double *out)
{
    json_t *v = json_object_get(obj, name);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 1;
}

static const char *fill_item(es_manifest *m, es_manifest_item *it, json_t *obj)
{
    size_t klen, wlen, tlen;
    const char *key = string_field(obj, "key", &klen);
    const char *wav = string_field(obj, "wav", &wlen);
    const char *txt = string_field(obj, "txt", &tlen);
    if (key && !(it->key = es_manifest_strdup(m, key, klen)))
        return "out of memory";
    if (!key)
        return "no string field \"key\"";
    if (!wav)
        return "no string field \"wav\"";
    if (!(it->audio = es_manifest_strdup(m, wav, wlen)))
        return "out of memory";
    if (txt) {
        it->has_text = 1;
        it->text_len = (uint32_t)es_utf8_length(txt, tlen);
        if (!(it->text = es_manifest_strdup(m, txt, tlen)))
            return "out of memory";
        it->text_bytes = (uint32_t)tlen;
    }
    int s = number_field(obj, "start", &it->start);
    int e = number_field(obj, "end", &it->end);
    if (s < 0 || e < 0)
        return "\"start\"/\"end\" must be numbers (seconds)";
    if (s > 0 || e > 0) {
        it->has_segment = 1;
        if (it->start < 0 || (e > 0 && it->end < it->start))
            return "\"start\"/\"end\" out of order or negative";
        if (e == 0)
            it->end = -1;
    }
    return NULL;
}

/* Offset of the first byte that is not valid UTF-8, or n. */
static size_t utf8_error(const char *s, size_t n)
{
    size_t i = 0, k;
    while (i < n && (k = es_utf8_sequence((const unsigned char *)s + i, n - i)))
        i += k;
    return i;
}

/* The first object of a list with neither "key" nor "wav" is no WeNet raw
 * list at all (a NeMo manifest has "audio_filepath"): the whole file is
 * refused, naming what is read, rather than every line left out. */
static int refuse_other_json(es_context *ctx, const es_manifest *m, const es_line_reader *lr,
                             json_t *obj)
{
    if (json_object_get(obj, "key") || json_object_get(obj, "wav"))
        return ES_OK;
    const char *what = json_object_get(obj, "audio_filepath")
                           ? " (\"audio_filepath\": a NeMo manifest)" : "";
    return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: line %lu: a JSON object without \"key\" and "
                   "\"wav\"%s is not a WeNet raw list; %s", m->file, lr->lineno, what,
                   ES_INPUT_FORMATS);
}

static int parse_line(es_context *ctx, es_manifest *m, const es_line_reader *lr)
{
    if (m->n == 0) { /* the first object decides what the file is */
        json_error_t jerr;
        json_t *obj = lr->has_nul ? NULL : json_loadb(lr->line, lr->len, 0, &jerr);
        int rc = json_is_object(obj) ? refuse_other_json(ctx, m, lr, obj) : ES_OK;
        json_decref(obj);
        if (rc != ES_OK)
            return rc;
    }
    es_manifest_item *it = es_manifest_add(m);
    if (!it)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", m->file);
    it->pos = lr->lineno - 1;
    json_error_t jerr;
    size_t bad = utf8_error(lr->line, lr->len);
    json_t *obj = lr->has_nul || bad < lr->len ? NULL : json_loadb(lr->line, lr->len, 0, &jerr);
    if (bad < lr->len) {
        /* not a dropped utterance: WeNet reads the list as text, and the
         * UnicodeDecodeError ends its data pipeline */
        char msg[160];
        int n = snprintf(msg, sizeof msg, "byte %zu: not valid UTF-8 (WeNet's loader fails reading "
                         "this list with UnicodeDecodeError)", bad);
        it->problem = es_manifest_strdup(m, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        if (!it->problem)
            it->problem = "out of memory";
    } else if (!obj) {
        char msg[256];
        int n = snprintf(msg, sizeof msg, "invalid JSON: %s",
                         lr->has_nul ? "NUL byte in line" : jerr.text);
        it->problem = es_manifest_strdup(m, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        if (!it->problem)
            it->problem = "out of memory";
    } else if (!json_is_object(obj)) {
        it->problem = "not a JSON object";
    } else {
        it->problem = fill_item(m, it, obj);
    }
    json_decref(obj);
    if (it->problem && strcmp(it->problem, "out of memory") == 0)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", m->file);
    return ES_OK;
}

int es_rawlist_parse(es_context *ctx, const char *path, es_manifest **out)
{
    *out = NULL;
    es_line_reader lr;
    int e = es_line_reader_open(&lr, path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(e));
    es_manifest *m = es_manifest_new(path);
    if (m) {
        m->pos_label = "line";
        m->pos_base = 1;
    }
    int rc = m ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    int got;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) > 0) {
        const char *p = lr.line;
        if (es_strip(&p, lr.len) == 0)
            continue; /* blank lines carry no utterance */
        rc = parse_line(ctx, m, &lr);
    }
    if (rc == ES_OK && got < 0)
        rc = es_line_reader_fail(ctx, &lr, path);
    es_line_reader_close(&lr);
    if (rc != ES_OK) {
        es_manifest_free(m);
        return rc;
    }
    *out = m;
    return ES_OK;
}

/* Text whose first non-blank character is '{' (a JSON object a line). */
static int rawlist_bid(int is_dir, const uint8_t *head, size_t n)
{
    if (is_dir || memchr(head, '\0', n))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (head[i] != ' ' && head[i] != '\t' && head[i] != '\r' && head[i] != '\n')
            return head[i] == '{' ? 10 : 0;
    return 0;
}

const es_manifest_ops es_manifest_rawlist = {"rawlist", rawlist_bid, es_rawlist_parse};
