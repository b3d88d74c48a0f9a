/* es_plan_dir: the one reader of a plan OUTDIR, the counterpart of plan_json.c
 * (docs/PLAN.md's schema). plan.json is read whole with es_json_load_bytes (an
 * input path need not be UTF-8: written \udcXX, read back as its bytes), its
 * schema version checked, and every key the readers use copied into plain C
 * values, so report, simulate --plan and equishard.loaders (ctypes) see the same
 * numbers and the same refusals. A key that is absent takes es_plan_defaults'
 * value (plan.json files from before a key was added, hand-written ones); a
 * key that is there with the wrong type is an error naming it. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/context.h"
#include "core/json_text.h"

struct es_plan_dir {
    es_plan_dir_info info;
    es_plan_settings settings;
    es_plan_metrics metrics;
    es_plan_reshard_info reshard;
    uint64_t filtered[64];
    char *outdir, *plan_json, *equishard, *method, *model_source, *token_note, *recipe;
    char **inputs;         /* n_inputs paths */
    uint64_t *digests;     /* their xxh3 */
    es_plan_load *loads;   /* n_ranks × (1 + W): a rank's, then its workers' */
    char **files;          /* K × (1 + W) rank files (shard), K (batch), none */
    size_t n_files;
};

typedef struct reader {
    es_context *ctx;
    const char *path;
    int rc;
} reader;

static int bad(reader *r, const char *where, const char *what)
{
    if (r->rc == ES_OK)
        r->rc = es_fail(r->ctx, ES_ERR_FORMAT, "%s: %s is not %s", r->path, where, what);
    return r->rc;
}

/* obj.key as a number into *out when present; *out untouched when absent. */
static void number(reader *r, json_t *obj, const char *where, const char *key, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return;
    char name[128];
    snprintf(name, sizeof name, "%s%s%s", where, *where ? "." : "", key);
    if (!json_is_number(v))
        bad(r, name, "a number");
    else
        *out = json_number_value(v);
}

/* A whole number in [0, max] (a count, a size) into *out when present. */
static void whole(reader *r, json_t *obj, const char *where, const char *key, double max,
                  uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return;
    char name[128];
    snprintf(name, sizeof name, "%s%s%s", where, *where ? "." : "", key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (double)json_integer_value(v) > max)
        bad(r, name, "a whole number in range");
    else
        *out = (uint64_t)json_integer_value(v);
}

static void u32(reader *r, json_t *obj, const char *where, const char *key, uint32_t *out)
{
    uint64_t v = *out;
    whole(r, obj, where, key, UINT32_MAX, &v);
    *out = (uint32_t)v;
}

/* obj.key as a string (NULL when absent); a non-string is an error. */
static const char *string(reader *r, json_t *obj, const char *where, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (v && !json_is_string(v)) {
        char name[128];
        snprintf(name, sizeof name, "%s%s%s", where, *where ? "." : "", key);
        bad(r, name, "a string");
    }
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* An object-valued key: NULL when absent or null, an error when another type. */
static json_t *object(reader *r, json_t *obj, const char *name, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (v && !json_is_null(v) && !json_is_object(v))
        bad(r, name, "an object");
    return json_is_object(v) ? v : NULL;
}

static void enum_value(reader *r, json_t *obj, const char *name, const char *key, es_enum e,
                       int *out)
{
    const char *s = string(r, obj, "parameters", key);
    if (s && es_enum_value(e, s, out) != ES_OK)
        bad(r, name, "a known name");
}

static char *dup_or_fail(reader *r, const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d && r->rc == ES_OK)
        r->rc = es_fail(r->ctx, ES_ERR_NOMEM, "%s: out of memory", r->path);
    return d;
}

static void read_model(reader *r, es_plan_dir *d, json_t *params, json_t *root)
{
    es_cost_model *m = &d->settings.model;
    json_t *cm = object(r, params, "parameters.cost_model", "cost_model");
    static const char *const keys[] = {"frame_rate", "w_frames", "w_text", "w_speech_tokens",
                                       "w_frames_sq", "w_missing_emb", "w_overhead", "w_batch"};
    double *fields[] = {&m->frame_rate, &m->w_frames, &m->w_text, &m->w_speech_tokens,
                        &m->w_frames_sq, &m->w_missing_emb, &m->w_overhead, &m->w_batch};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        number(r, cm, "parameters.cost_model", keys[i], fields[i]);
    json_t *src = object(r, cm, "parameters.cost_model.source", "source");
    const char *path = string(r, src, "parameters.cost_model.source", "path");
    const char *digest = string(r, src, "parameters.cost_model.source", "digest");
    if (path) {
        m->source = d->model_source = dup_or_fail(r, path);
        unsigned long long v = 0;
        if (digest && sscanf(digest, "xxh3-64:%16llx", &v) == 1)
            m->source_digest = v;
    }
    json_t *f = object(r, params, "parameters.filter", "filter");
    number(r, f, "parameters.filter", "min_length", &m->min_length);
    number(r, f, "parameters.filter", "max_length", &m->max_length);
    u32(r, f, "parameters.filter", "token_min_length", &m->token_min_length);
    u32(r, f, "parameters.filter", "token_max_length", &m->token_max_length);
    number(r, f, "parameters.filter", "min_output_input_ratio", &m->min_output_input_ratio);
    number(r, f, "parameters.filter", "max_output_input_ratio", &m->max_output_input_ratio);
    json_t *req = json_object_get(f, "require_speech_token");
    if (req && !json_is_boolean(req))
        bad(r, "parameters.filter.require_speech_token", "true or false");
    else if (req)
        m->require_speech_token = json_is_true(req);
    /* what the token filters counted: text_tokens.count */
    json_t *tt = object(r, root, "text_tokens", "text_tokens");
    const char *count = string(r, tt, "text_tokens", "count");
    if (count)
        m->token_chars = strcmp(count, "text_len") == 0;
    /* es_plan_metrics.token_note, as plan.json records it ("" without one) */
    d->token_note = dup_or_fail(r, string(r, tt, "text_tokens", "note"));
    whole(r, tt, "text_tokens", "rows_without", (double)UINT64_MAX, &d->info.rows_without_tokens);
    /* the recipe it was made from, for the loaders' "plan with --recipe" hint */
    json_t *recipe = object(r, params, "parameters.recipe", "recipe");
    d->info.recipe = d->recipe = dup_or_fail(r, string(r, recipe, "parameters.recipe", "path"));
    if (!(m->frame_rate > 0))
        bad(r, "parameters.cost_model.frame_rate", "a number above 0");
}

static void read_parameters(reader *r, es_plan_dir *d, json_t *root)
{
    es_plan_settings *s = &d->settings;
    json_t *p = object(r, root, "parameters", "parameters");
    const char *mode = string(r, p, "parameters", "mode");
    int v;
    if (r->rc != ES_OK)
        return;
    if (!p || !mode || !json_object_get(p, "world_size") || !json_object_get(p, "workers")) {
        r->rc = es_fail(r->ctx, ES_ERR_FORMAT, "%s: no parameters.mode, world_size and workers "
                        "(not a plan.json?)", r->path);
        return;
    }
    if (es_enum_value(ES_ENUM_PLAN_MODE, mode, &v) != ES_OK) {
        bad(r, "parameters.mode", "shard, batch or reshard");
        return;
    }
    s->mode = (es_plan_mode)v;
    u32(r, p, "parameters", "world_size", &s->world_size);
    u32(r, p, "parameters", "workers", &s->workers);
    if (r->rc == ES_OK && (s->world_size < 1 || s->workers < 1))
        bad(r, "parameters.world_size or workers", "at least 1");
    whole(r, p, "parameters", "max_frames_in_batch", 1e18, &s->max_frames_in_batch);
    u32(r, p, "parameters", "batch_size", &s->batch_size);
    u32(r, p, "parameters", "sort_size", &s->sort_size);
    u32(r, p, "parameters", "shards_per_worker", &s->shards_per_worker);
    v = (int)s->remainder;
    enum_value(r, p, "parameters.remainder", "remainder", ES_ENUM_REMAINDER, &v);
    s->remainder = (es_remainder)v;
    v = (int)s->compress;
    enum_value(r, p, "parameters.compress", "compress", ES_ENUM_COMPRESS, &v);
    s->compress = (es_compress)v;
    json_t *seed = json_object_get(p, "seed"), *epoch = json_object_get(p, "epoch");
    if (seed && !json_is_integer(seed))
        bad(r, "parameters.seed", "a whole number");
    else if (seed) /* written as a signed 64-bit integer: 2^63.. read back negative */
        s->seed = (uint64_t)json_integer_value(seed);
    if (epoch && !json_is_integer(epoch))
        bad(r, "parameters.epoch", "a whole number");
    else if (epoch)
        s->epoch = (int64_t)json_integer_value(epoch);
    read_model(r, d, p, root);
}

static void read_metrics(reader *r, es_plan_dir *d, json_t *root)
{
    es_plan_metrics *m = &d->metrics;
    json_t *mj = object(r, root, "metrics", "metrics");
    number(r, mj, "metrics", "imbalance", &m->imbalance);
    number(r, mj, "metrics", "lower_bound", &m->lower_bound);
    number(r, mj, "metrics", "lower_bound_gap", &m->lower_bound_gap);
    number(r, mj, "metrics", "step_straggler", &m->step_straggler);
    number(r, mj, "metrics", "retention", &m->retention);
    whole(r, mj, "metrics", "batch_spread", 1e19, &m->batch_spread);
    whole(r, mj, "metrics", "total_batches", 1e19, &m->total_batches);
    whole(r, mj, "metrics", "steps", 1e19, &m->steps);
    whole(r, mj, "metrics", "kept", 1e19, &m->kept);
    whole(r, mj, "metrics", "left_out", 1e19, &d->info.left_out);
    json_t *rem = object(r, mj, "metrics.remainder", "remainder");
    whole(r, rem, "metrics.remainder", "batches", 1e19, &m->remainder_batches);
    whole(r, rem, "metrics.remainder", "utterances", 1e19, &m->remainder_utterances);
    json_t *un = object(r, mj, "metrics.unreadable", "unreadable");
    whole(r, un, "metrics.unreadable", "shards", 1e19, &d->info.unreadable_shards);
    whole(r, un, "metrics.unreadable", "utterances", 1e19, &d->info.unreadable_utterances);
    json_t *filtered = object(r, mj, "metrics.filtered", "filtered");
    size_t nr = es_enum_size(ES_ENUM_FILTER_REASON);
    for (size_t i = 1; i < nr && i < 64; i++) {
        whole(r, filtered, "metrics.filtered", es_enum_name(ES_ENUM_FILTER_REASON, (int)i), 1e19, &d->filtered[i]);
        m->filtered += d->filtered[i];
    }
    const char *method = string(r, mj, "metrics", "method");
    m->method = d->method = dup_or_fail(r, method);
    json_t *rs = object(r, mj, "metrics.reshard", "reshard");
    if (rs) {
        es_plan_reshard_info *i = &d->reshard;
        d->info.has_reshard = 1;
        u32(r, rs, "metrics.reshard", "shards", &i->shards);
        u32(r, rs, "metrics.reshard", "shards_per_worker", &i->shards_per_worker);
        u32(r, rs, "metrics.reshard", "permutations", &i->permutations);
        number(r, rs, "metrics.reshard", "permutation_max_deviation",
               &i->permutation_max_deviation);
        json_t *c = object(r, rs, "metrics.reshard.shard_cost", "shard_cost");
        number(r, c, "metrics.reshard.shard_cost", "min", &i->shard_cost_min);
        number(r, c, "metrics.reshard.shard_cost", "max", &i->shard_cost_max);
        number(r, c, "metrics.reshard.shard_cost", "mean", &i->shard_cost_mean);
        number(r, c, "metrics.reshard.shard_cost", "max_deviation", &i->shard_max_deviation);
    }
}

static void read_load(reader *r, json_t *obj, const char *where, es_plan_load *l)
{
    number(r, obj, where, "cost", &l->cost);
    whole(r, obj, where, "utterances", 1e19, &l->utterances);
    whole(r, obj, where, "frames", 1e19, &l->frames);
    whole(r, obj, where, "batches", 1e19, &l->batches);
}

/* "ranks": K entries in rank order, each with W workers (a plan.json without
 * them has no loads: n_ranks 0). */
static void read_ranks(reader *r, es_plan_dir *d, json_t *root)
{
    json_t *ranks = json_object_get(root, "ranks");
    size_t K = d->settings.world_size, W = d->settings.workers;
    if (!ranks || r->rc != ES_OK)
        return;
    if (!json_is_array(ranks) || json_array_size(ranks) != K)
        return (void)bad(r, "ranks", "an array of world_size entries");
    d->loads = calloc(K * (1 + W), sizeof *d->loads);
    if (!d->loads)
        return (void)(r->rc = es_fail(r->ctx, ES_ERR_NOMEM, "%s: out of memory", r->path));
    for (size_t k = 0; k < K && r->rc == ES_OK; k++) {
        json_t *rank = json_array_get(ranks, k), *workers = json_object_get(rank, "workers");
        char where[64];
        snprintf(where, sizeof where, "ranks[%zu]", k);
        if (!json_is_object(rank))
            return (void)bad(r, where, "an object");
        uint64_t id = k;
        whole(r, rank, where, "rank", 1e19, &id);
        if (id != k)
            return (void)bad(r, where, "in rank order");
        read_load(r, rank, where, &d->loads[k * (1 + W)]);
        if (workers && (!json_is_array(workers) || json_array_size(workers) != W))
            return (void)bad(r, where, "a rank with an array of `workers` entries");
        for (size_t w = 0; workers && w < W; w++) {
            snprintf(where, sizeof where, "ranks[%zu].workers[%zu]", k, w);
            read_load(r, json_array_get(workers, w), where, &d->loads[k * (1 + W) + 1 + w]);
        }
    }
    d->info.n_ranks = K;
}

static void read_inputs(reader *r, es_plan_dir *d, json_t *root)
{
    json_t *in = json_object_get(root, "inputs");
    if (!in || r->rc != ES_OK)
        return;
    if (!json_is_array(in))
        return (void)bad(r, "inputs", "an array");
    size_t n = json_array_size(in);
    d->inputs = calloc(n + 1, sizeof *d->inputs);
    d->digests = calloc(n + 1, sizeof *d->digests);
    if (!d->inputs || !d->digests)
        return (void)(r->rc = es_fail(r->ctx, ES_ERR_NOMEM, "%s: out of memory", r->path));
    for (size_t i = 0; i < n && r->rc == ES_OK; i++) {
        json_t *e = json_array_get(in, i), *path = json_object_get(e, "path");
        char where[64];
        snprintf(where, sizeof where, "inputs[%zu]", i);
        const char *hex = string(r, e, where, "xxh3");
        if (!json_is_string(path))
            return (void)bad(r, where, "an object with a \"path\" string");
        /* the path's bytes: \udcXX was read back as byte XX, so no strdup of a
         * NUL-cut prefix can differ from what plan was given (paths hold no NUL) */
        d->inputs[i] = dup_or_fail(r, json_string_value(path));
        unsigned long long v = 0;
        if (hex && sscanf(hex, "%16llx", &v) == 1)
            d->digests[i] = v;
        d->info.n_inputs = i + 1;
    }
}

/* The rank files' paths, made once: shard K × (list + W worker lists), batch K. */
static void name_files(reader *r, es_plan_dir *d)
{
    size_t K = d->settings.world_size, W = d->settings.workers;
    size_t per = d->settings.mode == ES_PLAN_SHARD ? 1 + W : d->settings.mode == ES_PLAN_BATCH;
    if (r->rc != ES_OK || !per)
        return;
    d->files = calloc(K * per, sizeof *d->files);
    if (!d->files)
        return (void)(r->rc = es_fail(r->ctx, ES_ERR_NOMEM, "%s: out of memory", r->path));
    size_t cap = strlen(d->outdir) + 64;
    for (size_t k = 0; k < K && r->rc == ES_OK; k++)
        for (size_t w = 0; w < per && r->rc == ES_OK; w++) {
            char *p = malloc(cap);
            if (!p)
                return (void)(r->rc = es_fail(r->ctx, ES_ERR_NOMEM, "%s: out of memory", r->path));
            if (d->settings.mode == ES_PLAN_BATCH)
                snprintf(p, cap, "%s/rank-%05zu.batches.jsonl", d->outdir, k);
            else if (w == 0)
                snprintf(p, cap, "%s/rank-%05zu.list", d->outdir, k);
            else
                snprintf(p, cap, "%s/rank-%05zu.worker-%zu.list", d->outdir, k, w - 1);
            d->files[d->n_files++] = p;
        }
}

/* plan.json's bytes, or an error naming it. */
static int slurp(es_context *ctx, const char *path, char **text, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            char *b = realloc(buf, cap = cap ? 2 * cap : 65536);
            if (!b) {
                free(buf), fclose(fp);
                return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = b;
        }
        got = fread(buf + n, 1, cap - n, fp);
        n += got;
    } while (got > 0);
    int e = ferror(fp) ? errno : 0;
    fclose(fp);
    if (e) {
        free(buf);
        return es_fail(ctx, ES_ERR_IO, "%s: %s", path, strerror(e ? e : EIO));
    }
    *text = buf;
    *len = n;
    return ES_OK;
}

static int load(reader *r, es_plan_dir *d)
{
    char *text = NULL;
    size_t len = 0;
    int rc = slurp(r->ctx, d->plan_json, &text, &len);
    if (rc != ES_OK)
        return rc;
    json_error_t err;
    json_t *root = es_json_load_bytes(text, len, 0, &err);
    free(text);
    if (!root && err.line > 0)
        return es_fail(r->ctx, ES_ERR_FORMAT, "%s: line %d: %s", d->plan_json, err.line, err.text);
    if (!root)
        return es_fail(r->ctx, ES_ERR_FORMAT, "%s: %s", d->plan_json, err.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return es_fail(r->ctx, ES_ERR_FORMAT, "%s: not a JSON object (not a plan.json?)",
                       d->plan_json);
    }
    /* the schema version first: a newer plan.json's other keys may mean other things */
    uint64_t format = 1;
    whole(r, root, "", "format", UINT32_MAX, &format);
    d->info.format = (uint32_t)format;
    if (r->rc == ES_OK && format > ES_PLAN_FORMAT)
        r->rc = es_fail(r->ctx, ES_ERR_FORMAT, "%s: schema version %u is newer than this "
                        "equishard (%d); upgrade", d->plan_json, d->info.format, ES_PLAN_FORMAT);
    const char *version = string(r, root, "", "equishard");
    d->info.equishard = d->equishard = dup_or_fail(r, version);
    if (r->rc == ES_OK)
        read_parameters(r, d, root);
    if (r->rc == ES_OK)
        read_metrics(r, d, root);
    read_ranks(r, d, root);
    read_inputs(r, d, root);
    name_files(r, d);
    json_decref(root);
    return r->rc;
}

ES_API int es_plan_dir_open(es_context *ctx, const char *outdir, es_plan_dir **out)
{
    es_clear_error(ctx);
    if (!outdir || !out)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_dir_open: invalid arguments");
    *out = NULL;
    es_plan_dir *d = calloc(1, sizeof *d);
    size_t n = strlen(outdir) + sizeof "/plan.json";
    if (d) {
        d->outdir = strdup(outdir);
        d->plan_json = malloc(n);
    }
    if (!d || !d->outdir || !d->plan_json) {
        es_plan_dir_free(d);
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", outdir);
    }
    snprintf(d->plan_json, n, "%s/plan.json", outdir);
    es_plan_defaults(&d->settings);
    reader r = {ctx, d->plan_json, ES_OK};
    int rc = load(&r, d);
    if (rc != ES_OK) {
        es_plan_dir_free(d);
        return rc;
    }
    d->info.mode = d->settings.mode;
    d->info.world_size = d->settings.world_size;
    d->info.workers = d->settings.workers;
    d->info.seed = d->settings.seed;
    d->info.epoch = d->settings.epoch;
    d->info.outdir = d->outdir;
    d->info.plan_json = d->plan_json;
    *out = d;
    return ES_OK;
}

ES_API void es_plan_dir_free(es_plan_dir *d)
{
    if (!d)
        return;
    for (size_t i = 0; d->inputs && i < d->info.n_inputs; i++)
        free(d->inputs[i]);
    for (size_t i = 0; i < d->n_files; i++)
        free(d->files[i]);
    free(d->inputs), free(d->digests), free(d->loads), free(d->files);
    free(d->outdir), free(d->plan_json), free(d->equishard), free(d->method);
    free(d->model_source), free(d->token_note), free(d->recipe);
    free(d);
}

ES_API int es_plan_dir_get_info(const es_plan_dir *d, es_plan_dir_info *out)
{
    if (!d || !out)
        return ES_ERR_USAGE;
    *out = d->info;
    return ES_OK;
}

ES_API int es_plan_dir_settings(const es_plan_dir *d, es_plan_settings *out)
{
    if (!d || !out)
        return ES_ERR_USAGE;
    *out = d->settings;
    return ES_OK;
}

ES_API int es_plan_dir_metrics(const es_plan_dir *d, es_plan_metrics *out)
{
    if (!d || !out)
        return ES_ERR_USAGE;
    *out = d->metrics;
    out->filtered_by_reason = d->filtered;
    out->token_note = d->token_note ? d->token_note : "";
    return ES_OK;
}

ES_API int es_plan_dir_reshard_info(const es_plan_dir *d, es_plan_reshard_info *out)
{
    if (!d || !out || !d->info.has_reshard)
        return ES_ERR_USAGE;
    *out = d->reshard;
    return ES_OK;
}

ES_API const char *es_plan_dir_input(const es_plan_dir *d, size_t i, uint64_t *xxh3)
{
    if (!d || i >= d->info.n_inputs)
        return NULL;
    if (xxh3)
        *xxh3 = d->digests[i];
    return d->inputs[i];
}

ES_API int es_plan_dir_rank_load(const es_plan_dir *d, uint32_t rank, int32_t worker,
                                 es_plan_load *out)
{
    if (!d || !out || rank >= d->info.n_ranks ||
        (worker >= 0 && (uint32_t)worker >= d->info.workers))
        return ES_ERR_USAGE;
    /* per rank: its own load, then its workers' */
    *out = d->loads[(size_t)rank * (1 + d->info.workers) + (worker < 0 ? 0 : 1 + (uint32_t)worker)];
    return ES_OK;
}

ES_API const char *es_plan_dir_rank_file(const es_plan_dir *d, uint32_t rank, int32_t worker)
{
    if (!d || !d->n_files || rank >= d->info.world_size)
        return NULL;
    if (d->info.mode == ES_PLAN_BATCH)
        return worker < 0 ? d->files[rank] : NULL;
    if (worker >= 0 && (uint32_t)worker >= d->info.workers)
        return NULL;
    return d->files[(size_t)rank * (1 + d->info.workers) + (size_t)(worker + 1)];
}

ES_API int es_plan_dir_check_files(es_context *ctx, const es_plan_dir *d)
{
    es_clear_error(ctx);
    if (!d)
        return es_fail(ctx, ES_ERR_USAGE, "es_plan_dir_check_files: invalid arguments");
    for (size_t i = 0; i < d->n_files; i++) {
        struct stat st;
        int there = stat(d->files[i], &st) == 0;
        if (!there || !S_ISREG(st.st_mode))
            return es_fail(ctx, ES_ERR_FORMAT, "%s: %s (%s plans %u rank(s) x %u worker(s) of "
                           "%s mode; write the plan again)", d->files[i],
                           there ? "not a file" : "missing",
                           d->plan_json, d->info.world_size, d->info.workers,
                           es_enum_name(ES_ENUM_PLAN_MODE, (int)d->info.mode));
    }
    return ES_OK;
}
