/* es_recipe_read and the settings a recipe gives (equishard.h): the file read
 * whole (its digest for plan.json), the overrides applied, then the reader of
 * its kind. */
#include "recipe/recipe_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static int read_file(es_context *ctx, const char *path, char **text, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return es_fail(ctx, ES_ERR_IO, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = ES_OK;
    for (;;) {
        if (n + 4096 > cap) {
            char *grown = realloc(buf, cap = cap ? 2 * cap : 65536);
            if (!grown) {
                rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) {
            if (ferror(fp))
                rc = es_fail(ctx, ES_ERR_IO, "%s: read failed", path);
            break;
        }
    }
    fclose(fp);
    if (rc != ES_OK) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = n;
    return ES_OK;
}

static int read_kind(ry_doc *d, es_recipe *r)
{
    yaml_node_t *pipeline, *conf;
    int rc = ry_top(d, "data_pipeline", &pipeline);
    if (rc == ES_OK && !pipeline)
        rc = ry_top(d, "dataset_conf", &conf);
    if (rc != ES_OK)
        return rc;
    if (pipeline)
        return es_recipe_cosyvoice(d, pipeline, r);
    if (conf)
        return es_recipe_wenet(d, conf, r);
    return es_fail(d->ctx, ES_ERR_FORMAT, "%s: not a training recipe: no data_pipeline "
                                          "(CosyVoice) or dataset_conf (WeNet)", d->path);
}

ES_API int es_recipe_read(es_context *ctx, const char *path, const char *const *sets,
                          size_t n_sets, es_recipe **out)
{
    es_clear_error(ctx);
    if (!out)
        return es_fail(ctx, ES_ERR_USAGE, "es_recipe_read: out is NULL");
    *out = NULL;
    if (!path || (n_sets && !sets))
        return es_fail(ctx, ES_ERR_USAGE, "es_recipe_read: no path");
    char *text = NULL;
    size_t len = 0;
    int rc = read_file(ctx, path, &text, &len);
    if (rc != ES_OK)
        return rc;
    es_recipe *r = calloc(1, sizeof *r);
    ry_doc d;
    rc = r ? ry_load(ctx, &d, path, text, len) : es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    if (r) {
        r->info.digest = XXH3_64bits(text, len);
        es_cost_model_defaults(&r->info.model);
        r->info.tokenizer_note = r->note;
    }
    free(text);
    for (size_t i = 0; rc == ES_OK && i < n_sets; i++)
        rc = ry_set(&d, sets[i]);
    if (rc == ES_OK)
        rc = es_recipe_keep(&d, r, path, &r->info.path);
    if (rc == ES_OK)
        rc = read_kind(&d, r);
    if (r)
        ry_free(&d);
    if (rc != ES_OK) {
        es_recipe_free(r);
        return rc;
    }
    *out = r;
    return ES_OK;
}

ES_API void es_recipe_free(es_recipe *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_strings; i++)
        free(r->strings[i]);
    free(r);
}

ES_API int es_recipe_get_info(const es_recipe *r, es_recipe_info *out)
{
    if (!r || !out)
        return ES_ERR_USAGE;
    *out = r->info;
    return ES_OK;
}

/* The filter, and the frame rate when the recipe says it. */
static void apply_model(const es_recipe *r, es_cost_model *m)
{
    const es_cost_model *f = &r->info.model;
    m->min_length = f->min_length;
    m->max_length = f->max_length;
    m->token_min_length = f->token_min_length;
    m->token_max_length = f->token_max_length;
    m->min_output_input_ratio = f->min_output_input_ratio;
    m->max_output_input_ratio = f->max_output_input_ratio;
    if (f->require_speech_token >= 0)
        m->require_speech_token = f->require_speech_token;
    if (f->frame_rate > 0)
        m->frame_rate = f->frame_rate;
}

ES_API int es_recipe_settings(const es_recipe *r, es_plan_settings *plan,
                              es_simulate_settings *sim, es_validate_data_settings *data)
{
    if (!r || (!plan && !sim && !data))
        return ES_ERR_USAGE;
    if (plan) {
        apply_model(r, &plan->model);
        plan->batch_size = r->info.batch_size;
        if (r->info.max_frames_in_batch)
            plan->max_frames_in_batch = r->info.max_frames_in_batch;
        plan->sort_size = r->info.sort_size;
        plan->recipe = r;
    }
    if (sim) {
        sim->loader = r->info.loader;
        apply_model(r, &sim->model);
        sim->batch_size = r->info.batch_size;
        if (r->info.max_frames_in_batch)
            sim->max_frames_in_batch = r->info.max_frames_in_batch;
        sim->sort_size = r->info.sort_size;
        sim->shuffle_size = r->info.shuffle_size;
    }
    if (data) {
        data->loader = r->info.loader;
        apply_model(r, &data->model);
    }
    return ES_OK;
}
