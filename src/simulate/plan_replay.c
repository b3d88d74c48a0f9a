/* simulate --plan OUTDIR: a plan's settings and its shard-mode split, read back
 * from the files `equishard plan` wrote (docs/PLAN.md), so the prediction is of
 * the job that trains on them: the same loader settings, and each rank's and
 * worker's entries exactly as equishard.loaders hand them out. */
#include "simulate/plan_replay.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_stream.h"
#include "core/grow.h"
#include "core/line_reader.h"
#include "core/strmap.h"
#include "loader/py_random.h"

/* ---- plan.json ------------------------------------------------------------------ */

/* OUTDIR/plan.json into *root (its path into path), or an error naming it. */
static int load_plan_json(es_context *ctx, const char *outdir, char *path, size_t cap,
                          json_t **root)
{
    snprintf(path, cap, "%s/plan.json", outdir);
    json_error_t err;
    errno = 0;
    *root = json_load_file(path, 0, &err);
    if (!*root)
        return es_fail(ctx, err.line < 0 ? ES_ERR_IO : ES_ERR_FORMAT, "%s: %s", path, err.text);
    if (!json_is_object(json_object_get(*root, "parameters"))) {
        json_decref(*root);
        *root = NULL;
        return es_fail(ctx, ES_ERR_FORMAT, "%s: no \"parameters\" object (not a plan.json?)", path);
    }
    return ES_OK;
}

/* parameters[.group].key as a number: ES_OK, or the error naming it. */
static int number_at(es_context *ctx, const char *path, json_t *params, const char *group,
                     const char *key, double *out)
{
    json_t *obj = group ? json_object_get(params, group) : params;
    json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        return es_fail(ctx, ES_ERR_FORMAT, "%s: parameters%s%s.%s is not a number", path,
                       group ? "." : "", group ? group : "", key);
    *out = json_number_value(v);
    return ES_OK;
}

static int mode_of(es_context *ctx, const char *path, json_t *params, es_plan_mode *mode)
{
    const char *name = json_string_value(json_object_get(params, "mode"));
    int v;
    if (!name || es_enum_value(ES_ENUM_PLAN_MODE, name, &v) != ES_OK)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: parameters.mode is not shard, batch or reshard",
                       path);
    *mode = (es_plan_mode)v;
    return ES_OK;
}

/* Whole numbers the settings hold as uint32 / uint64. */
static int whole(double v, double max)
{
    return v >= 0 && v <= max && v == (double)(uint64_t)v;
}

ES_API int es_simulate_settings_from_plan(es_context *ctx, es_simulate_settings *s,
                                          const char *outdir, es_plan_mode *mode)
{
    es_clear_error(ctx);
    if (!s || !outdir || !mode)
        return es_fail(ctx, ES_ERR_USAGE, "es_simulate_settings_from_plan: invalid arguments");
    char path[4096];
    json_t *root;
    int rc = load_plan_json(ctx, outdir, path, sizeof path, &root);
    if (rc != ES_OK)
        return rc;
    json_t *p = json_object_get(root, "parameters");
    es_cost_model *m = &s->model;
    double k, w, fr, budget, bs, sort, tmin, tmax, rs = 0;
    static const char *const weights[] = {"w_frames", "w_text", "w_speech_tokens", "w_frames_sq",
                                          "w_missing_emb", "w_overhead"};
    double *weight_fields[] = {&m->w_frames, &m->w_text, &m->w_speech_tokens, &m->w_frames_sq,
                               &m->w_missing_emb, &m->w_overhead};
    struct { const char *group, *key; double *out; } numbers[] = {
        {NULL, "world_size", &k}, {NULL, "workers", &w}, {"cost_model", "frame_rate", &fr},
        {NULL, "max_frames_in_batch", &budget}, {NULL, "batch_size", &bs},
        {NULL, "sort_size", &sort}, {"filter", "min_length", &m->min_length},
        {"filter", "max_length", &m->max_length}, {"filter", "token_min_length", &tmin},
        {"filter", "token_max_length", &tmax},
        {"filter", "min_output_input_ratio", &m->min_output_input_ratio},
        {"filter", "max_output_input_ratio", &m->max_output_input_ratio},
    };
    rc = mode_of(ctx, path, p, mode);
    for (size_t i = 0; rc == ES_OK && i < sizeof numbers / sizeof numbers[0]; i++)
        rc = number_at(ctx, path, p, numbers[i].group, numbers[i].key, numbers[i].out);
    for (size_t i = 0; rc == ES_OK && i < sizeof weights / sizeof weights[0]; i++)
        rc = number_at(ctx, path, p, "cost_model", weights[i], weight_fields[i]);
    if (rc == ES_OK && (!whole(k, UINT32_MAX) || k < 1 || !whole(w, UINT32_MAX) || w < 1 ||
                        !whole(budget, 1e18) || !whole(bs, UINT32_MAX) || !whole(sort, UINT32_MAX) ||
                        !whole(tmin, UINT32_MAX) || !whole(tmax, UINT32_MAX) || !(fr > 0)))
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: a parameter is out of range (world_size, workers, "
                     "frame_rate, batch or filter settings)", path);
    if (rc == ES_OK) {
        /* w_batch: plans from before calibration have none (no per-batch cost) */
        json_t *wb = json_object_get(json_object_get(p, "cost_model"), "w_batch");
        if (json_is_number(wb) && json_number_value(wb) >= 0)
            m->w_batch = json_number_value(wb);
        json_t *req = json_object_get(json_object_get(p, "filter"), "require_speech_token");
        if (json_is_boolean(req))
            rs = json_is_true(req);
        /* what the token filters counted (plan.json's "text_tokens".count) */
        const char *count = json_string_value(
            json_object_get(json_object_get(root, "text_tokens"), "count"));
        if (count)
            m->token_chars = strcmp(count, "text_len") == 0;
        s->world_size = (uint32_t)k;
        s->workers = (uint32_t)w;
        m->frame_rate = fr;
        m->token_min_length = (uint32_t)tmin;
        m->token_max_length = (uint32_t)tmax;
        if (json_is_boolean(req))
            m->require_speech_token = (int)rs;
        s->max_frames_in_batch = (uint64_t)budget;
        s->batch_size = (uint32_t)bs;
        s->sort_size = (uint32_t)sort;
        s->partition = 1;
        s->plan_dir = *mode == ES_PLAN_SHARD ? outdir : NULL;
    }
    json_decref(root);
    return rc;
}

/* ---- the rank lists -------------------------------------------------------------- */

void es_sim_planned_release(es_sim_planned *p)
{
    free(p->items);
    free(p->unit_start);
    memset(p, 0, sizeof *p);
}

/* The checks of the loaders' PlanDir.check: a job of other ranks or workers is refused. */
static int check_plan(es_context *ctx, const char *outdir, uint32_t k, uint32_t w)
{
    char path[4096];
    json_t *root;
    int rc = load_plan_json(ctx, outdir, path, sizeof path, &root);
    if (rc != ES_OK)
        return rc;
    json_t *p = json_object_get(root, "parameters");
    es_plan_mode mode = ES_PLAN_SHARD;
    double pk = 0, pw = 0;
    rc = mode_of(ctx, path, p, &mode);
    if (rc == ES_OK)
        rc = number_at(ctx, path, p, NULL, "world_size", &pk);
    if (rc == ES_OK)
        rc = number_at(ctx, path, p, NULL, "workers", &pw);
    if (rc == ES_OK && mode != ES_PLAN_SHARD)
        rc = es_fail(ctx, ES_ERR_USAGE, "%s: a %s plan has no per-worker lists to replay (only "
                     "shard plans do)", path, es_enum_name(ES_ENUM_PLAN_MODE, (int)mode));
    if (rc == ES_OK && (pk != k || pw != w))
        rc = es_fail(ctx, ES_ERR_USAGE, "%s: planned for %g rank(s) x %g worker(s), simulating "
                     "%u x %u", path, pk, pw, k, w);
    json_decref(root);
    return rc;
}

/* A raw-list line's "key" (the table names raw-list entries by key). */
static const es_strmap_slot *lookup_line(const es_strmap *names, const char *line, size_t len)
{
    const es_strmap_slot *slot = es_strmap_get(names, line, len);
    if (slot || len == 0 || line[0] != '{')
        return slot;
    json_t *obj = json_loadb(line, len, 0, NULL);
    const char *key = json_string_value(json_object_get(obj, "key"));
    if (key)
        slot = es_strmap_get(names, key, strlen(key));
    json_decref(obj);
    return slot;
}

static int read_unit(es_context *ctx, const char *outdir, uint32_t r, uint32_t wk,
                     const es_strmap *names, es_sim_planned *p, size_t *cap, size_t *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%05u.worker-%u.list", outdir, r, wk);
    es_line_reader lr;
    int err = es_line_reader_open(&lr, path);
    if (err)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", path, es_file_stream_strerror(err));
    int rc = ES_OK, got;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) == 1) {
        const es_strmap_slot *slot = lookup_line(names, lr.line, lr.len);
        if (!slot)
            rc = es_fail(ctx, ES_ERR_USAGE, "%s: line %lu: entry '%s' is not in the simulated "
                         "data (a plan of other data?)", path, lr.lineno, lr.line);
        else if (es_grow((void **)&p->items, cap, *n + 1, sizeof *p->items, 1024))
            rc = es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
        else
            p->items[(*n)++] = (uint32_t)((uintptr_t)slot->value - 1);
    }
    if (rc == ES_OK && got < 0)
        rc = es_line_reader_fail(ctx, &lr, path);
    es_line_reader_close(&lr);
    return rc;
}

int es_sim_planned_read(es_context *ctx, const char *outdir, uint32_t k, uint32_t w,
                        const char *const *names, size_t n_names, es_sim_planned *out)
{
    memset(out, 0, sizeof *out);
    int rc = check_plan(ctx, outdir, k, w);
    if (rc != ES_OK)
        return rc;
    es_strmap map = {0};
    for (size_t i = 0; rc == ES_OK && i < n_names; i++)
        if (es_strmap_put(&map, names[i], strlen(names[i]), (const void *)(uintptr_t)(i + 1)))
            rc = es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    out->k = k;
    out->w = w;
    out->unit_start = calloc((size_t)k * w + 1, sizeof *out->unit_start);
    if (rc == ES_OK && !out->unit_start)
        rc = es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    size_t cap = 0, n = 0;
    for (size_t u = 0; rc == ES_OK && u < (size_t)k * w; u++) {
        out->unit_start[u] = n;
        rc = read_unit(ctx, outdir, (uint32_t)(u / w), (uint32_t)(u % w), &map, out, &cap, &n);
        out->unit_start[u + 1] = n;
    }
    es_strmap_release(&map);
    if (rc != ES_OK)
        es_sim_planned_release(out);
    return rc;
}

int es_sim_split_planned(const es_sim_planned *p, int64_t epoch, int shuffle, es_loader_split *out)
{
    size_t units = (size_t)p->k * p->w, n = p->unit_start[units];
    memset(out, 0, sizeof *out);
    out->k = p->k;
    out->w = p->w;
    out->items = malloc((n ? n : 1) * sizeof *out->items);
    out->rank_items = malloc((n ? n : 1) * sizeof *out->rank_items);
    out->worker_start = malloc((units + 1) * sizeof *out->worker_start);
    out->rank_start = malloc(((size_t)p->k + 1) * sizeof *out->rank_start);
    if (!out->items || !out->rank_items || !out->worker_start || !out->rank_start) {
        es_loader_split_release(out);
        return -1;
    }
    memcpy(out->items, p->items, n * sizeof *out->items);
    memcpy(out->worker_start, p->unit_start, (units + 1) * sizeof *out->worker_start);
    for (size_t u = 0; shuffle && epoch >= 0 && u < units; u++) {
        es_pyrandom rng; /* DataList: random.Random(self.epoch).shuffle(entries) */
        es_pyrandom_seed_i64(&rng, epoch);
        es_pyrandom_shuffle_u32(&rng, out->items + p->unit_start[u],
                                p->unit_start[u + 1] - p->unit_start[u]);
    }
    memcpy(out->rank_items, out->items, n * sizeof *out->rank_items);
    for (uint32_t r = 0; r <= p->k; r++)
        out->rank_start[r] = p->unit_start[(size_t)r * p->w];
    return 0;
}
