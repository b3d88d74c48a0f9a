/* Reading step logs: one JSON object a line, {"rank", "step", "keys": [...],
 * "<time_field>"}; other keys are ignored, blank lines skipped. Each step's
 * keys are joined to the cost table's rows and turned into the batch's padded
 * terms (es_cost_batch_terms) right away, so nothing but numbers is kept.
 * Every problem names the file and line: a step that cannot be read is never
 * guessed at or skipped silently, and a key the table names twice (two rows)
 * is refused where a step uses it, not joined to either.
 *
 * Keys that are not UTF-8: the table holds the bytes; Python's json.dumps
 * writes the string tarfile and os make of them (surrogateescape) with a
 * lone-surrogate escape \udcXX for each byte XX >= 0x80 (equishard.loaders'
 * step log, like batches.jsonl), which jansson refuses. Each such escape is
 * rewritten before parsing to \u0000 and the byte's two hex digits, and a
 * real \u0000 to \u0000 "00"; a key is then decoded back to bytes (NUL and
 * two hex digits → that byte). Table keys never hold a NUL, so nothing else
 * can decode to one of theirs. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "calibrate/calibrate_internal.h"
#include "core/context.h"
#include "core/file_stream.h"
#include "core/grow.h"
#include "core/line_reader.h"
#include "core/strmap.h"
#include "costs/cost_table.h"
#include "loader/cost_model.h"

/* A key's map value: row + 1, with AMBIGUOUS set when a later row has the
 * same key (the pair is in reader.dups). */
#define AMBIGUOUS ((uintptr_t)1 << (sizeof(uintptr_t) * 8 - 1))

typedef struct reader {
    es_calibration *c;
    const es_cost_table *t;
    es_strmap keys;          /* key → row + 1, | AMBIGUOUS */
    size_t (*dups)[2];       /* (first row, second row) of each ambiguous key */
    size_t n_dups, cap_dups;
    size_t *rows;
    size_t cap_rows;
    char *text, *key;        /* the line rewritten (see the top), a key decoded */
    size_t cap_text, cap_key;
    const char *path;
    unsigned long line;
    uint64_t read_before, read_total; /* settings' progress: bytes of the logs before
                                         this one, of all (their sizes) */
} reader;

enum { PROGRESS_BYTES = 4 << 20 };

static uint64_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

/* The settings' progress: `bytes` of the log being read (held at its size). */
static void report_bytes(const reader *r, uint64_t bytes, uint64_t size)
{
    const es_calibrate_settings *s = &r->c->s;
    if (s->progress)
        s->progress(s->progress_user, (size_t)(r->read_before + (bytes < size ? bytes : size)),
                    (size_t)r->read_total);
}

static int hexval(int ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0'
         : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* The code unit of the escape \uXXXX at s (n bytes left), or -1. */
static long escape_unit(const char *s, size_t n)
{
    if (n < 6 || s[0] != '\\' || s[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int h = hexval((unsigned char)s[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* r->text = the line with \udcXX (XX >= 80, not the low half of a pair) and
 * \u0000 rewritten inside strings (see the top); its length. */
static size_t rewrite_line(reader *r, const char *s, size_t n, int *nomem)
{
    if (es_grow((void **)&r->text, &r->cap_text, 2 * n + 1, 1, 256)) {
        *nomem = 1;
        return 0;
    }
    char *w = r->text;
    int in_string = 0;
    for (size_t i = 0; i < n;) {
        char ch = s[i];
        if (!in_string || ch != '\\') {
            in_string ^= ch == '"';
            *w++ = s[i++];
            continue;
        }
        long v = escape_unit(s + i, n - i);
        if (v >= 0xD800 && v <= 0xDBFF) { /* a high surrogate: keep it and its pair whole */
            long lo = escape_unit(s + i + 6, n - i - 6);
            size_t k = lo >= 0xDC00 && lo <= 0xDFFF ? 12 : 6;
            memcpy(w, s + i, k), w += k, i += k;
        } else if ((v >= 0xDC80 && v <= 0xDCFF) || v == 0) {
            w += sprintf(w, "\\u0000%02x", (unsigned)(v & 0xFF));
            i += 6;
        } else { /* any other escape: its two bytes as they are */
            size_t k = i + 1 < n ? 2 : 1;
            memcpy(w, s + i, k), w += k, i += k;
        }
    }
    *w = '\0';
    return (size_t)(w - r->text);
}

/* r->key = the bytes key s (n bytes, rewritten as above) stands for; its length. */
static size_t decode_key(reader *r, const char *s, size_t n, int *nomem)
{
    if (es_grow((void **)&r->key, &r->cap_key, n + 1, 1, 256)) {
        *nomem = 1;
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\0' && i + 2 < n && hexval((unsigned char)s[i + 1]) >= 0 &&
            hexval((unsigned char)s[i + 2]) >= 0) {
            r->key[k++] = (char)(hexval((unsigned char)s[i + 1]) * 16 +
                                 hexval((unsigned char)s[i + 2]));
            i += 2;
        } else {
            r->key[k++] = s[i];
        }
    }
    r->key[k] = '\0';
    return k;
}

static int bad(es_context *ctx, const reader *r, const char *what)
{
    return es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: %s", r->path, r->line, what);
}

static int integer_field(es_context *ctx, const reader *r, json_t *o, const char *name, int64_t *v)
{
    json_t *f = json_object_get(o, name);
    if (!json_is_integer(f))
        return es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: %s \"%s\" (a whole number)", r->path, r->line,
                       f ? "bad" : "missing", name);
    *v = json_integer_value(f);
    return ES_OK;
}

/* The rows of the step's keys, in r->rows; *n of them. */
static int step_rows(es_context *ctx, reader *r, json_t *keys, size_t *n)
{
    if (!json_is_array(keys) || json_array_size(keys) == 0)
        return bad(ctx, r, keys ? "\"keys\" is not a non-empty list of strings" : "missing \"keys\"");
    size_t k = json_array_size(keys);
    if (es_grow((void **)&r->rows, &r->cap_rows, k, sizeof *r->rows, 64))
        return es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    for (size_t i = 0; i < k; i++) {
        json_t *key = json_array_get(keys, i);
        if (!json_is_string(key))
            return bad(ctx, r, "\"keys\" holds something that is not a string");
        int nomem = 0;
        size_t len = decode_key(r, json_string_value(key), json_string_length(key), &nomem);
        if (nomem)
            return es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
        const es_strmap_slot *slot = es_strmap_get(&r->keys, r->key, len);
        if (!slot)
            return es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: key '%s' is not in the cost table",
                           r->path, r->line, r->key);
        uintptr_t v = (uintptr_t)slot->value;
        size_t row = (size_t)(v & ~AMBIGUOUS) - 1;
        for (size_t d = 0; (v & AMBIGUOUS) && d < r->n_dups; d++) {
            if (r->dups[d][0] != row)
                continue;
            const es_cost_row *a = &r->t->rows[row], *b = &r->t->rows[r->dups[d][1]];
            return es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: key '%s' names two rows of the cost "
                           "table (%s pos %llu and %s pos %llu): the step cannot be joined "
                           "(make the keys unique, or calibrate with one corpus's table)",
                           r->path, r->line, r->key, a->shard, (unsigned long long)a->pos,
                           b->shard, (unsigned long long)b->pos);
        }
        r->rows[i] = row;
    }
    *n = k;
    return ES_OK;
}

static int add_step(es_context *ctx, reader *r, uint32_t log, json_t *o)
{
    es_calibration *c = r->c;
    cal_step st = {.log = log, .line = r->line};
    int rc = integer_field(ctx, r, o, "rank", &st.rank);
    if (rc == ES_OK)
        rc = integer_field(ctx, r, o, "step", &st.step);
    if (rc != ES_OK)
        return rc;
    json_t *secs = json_object_get(o, c->time_field);
    if (!json_is_number(secs))
        return es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: %s \"%s\" (seconds, a number)", r->path,
                       r->line, secs ? "bad" : "missing", c->time_field);
    st.seconds = json_number_value(secs);
    if (!(st.seconds > 0) || !isfinite(st.seconds))
        return es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: \"%s\" is %g: a step takes a positive time",
                       r->path, r->line, c->time_field, st.seconds);
    size_t n = 0;
    if ((rc = step_rows(ctx, r, json_object_get(o, "keys"), &n)) != ES_OK)
        return rc;
    es_cost_batch_terms(&c->s.model, r->t, r->rows, n, st.x);
    for (size_t i = 0; i < n; i++)
        st.frames_sum += es_row_frames(&c->s.model, &r->t->rows[r->rows[i]]);
    if (es_grow((void **)&c->steps, &c->cap_steps, c->n_steps + 1, sizeof *c->steps, 1024))
        return es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    c->steps[c->n_steps++] = st;
    return ES_OK;
}

/* The longest step-log line read: 64 MiB (about a million keys). */
#define ES_STEP_LINE_MAX ((size_t)64 << 20)

static int read_log(es_context *ctx, reader *r, uint32_t log)
{
    cal_log *l = &r->c->logs[log];
    es_line_reader lr;
    int e = es_line_reader_open(&lr, l->path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", l->path, es_file_stream_strerror(e));
    /* A step's line lists its batch's keys: thousands of short utterances of long
     * keys can pass a list line's 1 MiB. */
    lr.max_len = ES_STEP_LINE_MAX;
    XXH3_state_t *h = XXH3_createState();
    int rc = h ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    if (h)
        XXH3_64bits_reset(h);
    r->path = l->path;
    int got;
    uint64_t bytes = 0, size = r->c->s.progress ? size_of(l->path) : 0;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) == 1) {
        r->line = lr.lineno;
        uint64_t before = bytes;
        bytes += lr.len + 1; /* the line and its newline */
        if (before / PROGRESS_BYTES != bytes / PROGRESS_BYTES)
            report_bytes(r, bytes, size);
        XXH3_64bits_update(h, lr.line, lr.len);
        XXH3_64bits_update(h, "\n", 1);
        size_t skip = strspn(lr.line, " \t\r");
        if (skip == lr.len)
            continue;
        json_error_t err;
        int nomem = 0;
        size_t len = rewrite_line(r, lr.line, lr.len, &nomem);
        if (nomem) {
            rc = es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
            break;
        }
        json_t *o = json_loadb(r->text, len, JSON_ALLOW_NUL, &err);
        if (!json_is_object(o))
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: not a JSON object%s%s", l->path, r->line,
                         o ? "" : ": ", o ? "" : err.text);
        else
            rc = add_step(ctx, r, log, o);
        json_decref(o);
        l->lines++;
    }
    if (rc == ES_OK && got < 0)
        rc = es_line_reader_fail(ctx, &lr, l->path);
    if (h) {
        l->digest = XXH3_64bits_digest(h);
        XXH3_freeState(h);
    }
    es_line_reader_close(&lr);
    if (rc == ES_OK) {
        report_bytes(r, size, size);
        r->read_before += size;
    }
    return rc;
}

int es_cal_read_logs(es_context *ctx, es_calibration *c, const es_cost_table *t,
                     const char *const *logs, size_t n_logs)
{
    reader r = {.c = c, .t = t};
    c->logs = calloc(n_logs, sizeof *c->logs);
    if (!c->logs)
        return es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    c->n_logs = n_logs;
    for (size_t i = 0; c->s.progress && i < n_logs; i++)
        r.read_total += size_of(logs[i]);
    int rc = ES_OK;
    for (size_t i = 0; i < t->n && rc == ES_OK; i++) {
        int existed;
        es_strmap_slot *slot = es_strmap_insert(&r.keys, t->rows[i].key, strlen(t->rows[i].key),
                                                &existed);
        if (!slot) {
            rc = es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
        } else if (!existed) {
            slot->value = (void *)(uintptr_t)(i + 1);
        } else if (!((uintptr_t)slot->value & AMBIGUOUS)) { /* the first two rows are named */
            if (es_grow((void **)&r.dups, &r.cap_dups, r.n_dups + 1, sizeof *r.dups, 16)) {
                rc = es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
                break;
            }
            r.dups[r.n_dups][0] = (uintptr_t)slot->value - 1;
            r.dups[r.n_dups++][1] = i;
            slot->value = (void *)((uintptr_t)slot->value | AMBIGUOUS);
        }
    }
    for (size_t i = 0; i < n_logs && rc == ES_OK; i++) {
        if (!(c->logs[i].path = strdup(logs[i])))
            rc = es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
        else
            rc = read_log(ctx, &r, (uint32_t)i);
    }
    es_strmap_release(&r.keys);
    free(r.rows);
    free(r.dups);
    free(r.text);
    free(r.key);
    return rc;
}
