/* Reading step logs: one JSON object a line, {"rank", "step", "keys": [...],
 * "<time_field>"}; other keys are ignored, blank lines skipped. Each step's
 * keys are joined to the cost table's rows and turned into the batch's padded
 * terms (es_cost_batch_terms) right away, so nothing but numbers is kept.
 * Every problem names the file and line: a step that cannot be read is never
 * guessed at or skipped silently. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "calibrate/calibrate_internal.h"
#include "core/context.h"
#include "core/file_stream.h"
#include "core/grow.h"
#include "core/line_reader.h"
#include "core/strmap.h"
#include "costs/cost_table.h"
#include "loader/cost_model.h"

typedef struct reader {
    es_calibration *c;
    const es_cost_table *t;
    es_strmap keys;          /* key → row + 1 */
    size_t *rows;
    size_t cap_rows;
    const char *path;
    unsigned long line;
} reader;

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
        const es_strmap_slot *slot =
            es_strmap_get(&r->keys, json_string_value(key), json_string_length(key));
        if (!slot)
            return es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: key '%s' is not in the cost table",
                           r->path, r->line, json_string_value(key));
        r->rows[i] = (size_t)(uintptr_t)slot->value - 1;
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
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) == 1) {
        r->line = lr.lineno;
        XXH3_64bits_update(h, lr.line, lr.len);
        XXH3_64bits_update(h, "\n", 1);
        size_t skip = strspn(lr.line, " \t\r");
        if (skip == lr.len)
            continue;
        json_error_t err;
        json_t *o = json_loadb(lr.line, lr.len, 0, &err);
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
    int rc = ES_OK;
    for (size_t i = 0; i < t->n && rc == ES_OK; i++)
        if (es_strmap_put(&r.keys, t->rows[i].key, strlen(t->rows[i].key), (void *)(uintptr_t)(i + 1)))
            rc = es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
    for (size_t i = 0; i < n_logs && rc == ES_OK; i++) {
        if (!(c->logs[i].path = strdup(logs[i])))
            rc = es_fail(ctx, ES_ERR_NOMEM, "calibrate: out of memory");
        else
            rc = read_log(ctx, &r, (uint32_t)i);
    }
    es_strmap_release(&r.keys);
    free(r.rows);
    return rc;
}
