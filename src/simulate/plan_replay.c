/* simulate --plan OUTDIR: a plan's settings and its shard-mode split, read back
 * from the files `equishard plan` wrote (docs/PLAN.md) through es_plan_dir_open,
 * the one reader of an OUTDIR, so the prediction is of
 * the job that trains on them: the same loader settings, and each rank's and
 * worker's entries exactly as equishard.loaders hand them out. */
#include "simulate/plan_replay.h"

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

ES_API int es_simulate_settings_from_plan(es_context *ctx, es_simulate_settings *s,
                                          const char *outdir, es_plan_mode *mode)
{
    es_clear_error(ctx);
    if (!s || !outdir || !mode)
        return es_fail(ctx, ES_ERR_USAGE, "es_simulate_settings_from_plan: invalid arguments");
    es_plan_dir *dir;
    int rc = es_plan_dir_open(ctx, outdir, &dir); /* the one reader of plan.json */
    if (rc != ES_OK)
        return rc;
    es_plan_settings ps;
    es_plan_dir_settings(dir, &ps);
    /* the plan's cost model and filter; which model.json it was is the plan's
     * provenance, not a setting of this run */
    const char *source = s->model.source;
    uint64_t source_digest = s->model.source_digest;
    s->model = ps.model;
    s->model.source = source;
    s->model.source_digest = source_digest;
    s->world_size = ps.world_size;
    s->workers = ps.workers;
    s->max_frames_in_batch = ps.max_frames_in_batch;
    s->batch_size = ps.batch_size;
    s->sort_size = ps.sort_size;
    s->partition = 1;
    *mode = ps.mode;
    s->plan_dir = *mode == ES_PLAN_SHARD ? outdir : NULL;
    es_plan_dir_free(dir);
    return ES_OK;
}

/* ---- the rank lists -------------------------------------------------------------- */

void es_sim_planned_release(es_sim_planned *p)
{
    free(p->items);
    free(p->unit_start);
    memset(p, 0, sizeof *p);
}

/* The checks of the loaders' PlanDir.check: a job of other ranks or workers is
 * refused; then the rank lists plan.json's mode has are there. */
static int check_plan(es_context *ctx, const char *outdir, uint32_t k, uint32_t w,
                      es_plan_dir **out)
{
    es_plan_dir *dir;
    int rc = es_plan_dir_open(ctx, outdir, &dir);
    if (rc != ES_OK)
        return rc;
    es_plan_dir_info in;
    es_plan_dir_get_info(dir, &in);
    if (in.mode != ES_PLAN_SHARD)
        rc = es_fail(ctx, ES_ERR_USAGE, "%s: a %s plan has no per-worker lists to replay (only "
                     "shard plans do)", in.plan_json, es_enum_name(ES_ENUM_PLAN_MODE, (int)in.mode));
    else if (in.world_size != k || in.workers != w)
        rc = es_fail(ctx, ES_ERR_USAGE, "%s: planned for %u rank(s) x %u worker(s), simulating "
                     "%u x %u", in.plan_json, in.world_size, in.workers, k, w);
    else
        rc = es_plan_dir_check_files(ctx, dir);
    if (rc != ES_OK)
        es_plan_dir_free(dir);
    else
        *out = dir;
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

static int read_unit(es_context *ctx, const es_plan_dir *dir, uint32_t r, uint32_t wk,
                     const es_strmap *names, es_sim_planned *p, size_t *cap, size_t *n)
{
    const char *path = es_plan_dir_rank_file(dir, r, (int32_t)wk);
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
    es_plan_dir *dir = NULL;
    int rc = check_plan(ctx, outdir, k, w, &dir);
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
        rc = read_unit(ctx, dir, (uint32_t)(u / w), (uint32_t)(u % w), &map, out, &cap, &n);
        out->unit_start[u + 1] = n;
    }
    es_strmap_release(&map);
    es_plan_dir_free(dir);
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
