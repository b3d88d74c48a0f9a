/* CosyVoice 1/2/3 (hyperpyyaml): what its data_pipeline's stages keep and
 * batch, read stage by stage in the order train.py's Dataset runs them. Each
 * stage is a `!name:` partial of cosyvoice.dataset.processor's function; a
 * keyword it leaves out takes that function's default (processor.py). */
#include "recipe/recipe_internal.h"

#include <stdio.h>
#include <string.h>

/* tokenize's get_tokenizer: CosyVoice 2/3's get_qwen_tokenizer(token_path,
 * skip_special_tokens, version='cosyvoice2'), which equishard counts; CosyVoice
 * 1's whisper tokenizer, which it does not. */
static int tokenizer(ry_doc *d, yaml_node_t *tokenize, es_recipe *r)
{
    yaml_node_t *get;
    const char *allowed = NULL;
    int rc = ry_key(d, tokenize, "get_tokenizer", &get);
    if (rc == ES_OK)
        rc = ry_string(d, tokenize, "allowed_special", NULL, &allowed);
    if (rc == ES_OK)
        rc = es_recipe_keep(d, r, allowed, &r->info.allowed_special);
    if (rc != ES_OK || !get)
        return rc;
    const char *name = ry_function_name(get), *fn = ry_function(get);
    if (!name || strcmp(name, "get_qwen_tokenizer") != 0) {
        snprintf(r->note, sizeof r->note,
                 "%s:%lu: the recipe's tokenizer is %s, which equishard does not count: the "
                 "token filters are not applied", d->path, ry_line(get), fn ? fn : "not a function");
        return ES_OK;
    }
    const char *path = NULL, *version = NULL;
    rc = ry_string(d, get, "token_path", NULL, &path);
    if (rc == ES_OK)
        rc = ry_string(d, get, "version", "cosyvoice2", &version);
    if (rc != ES_OK)
        return rc;
    if (!version || (strcmp(version, "cosyvoice2") != 0 && strcmp(version, "cosyvoice3") != 0))
        return es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: get_qwen_tokenizer.version: %s is not "
                       "cosyvoice2 or cosyvoice3", d->path, ry_line(get), version ? version : "null");
    rc = es_recipe_keep(d, r, version, &r->info.specials);
    if (rc == ES_OK && path && *path)
        return es_recipe_keep(d, r, path, &r->info.tokenizer);
    char ref[128];
    ry_ref_name(d, get, "token_path", ref, sizeof ref);
    r->info.tokenizer_unresolved = 1;
    if (*ref)
        snprintf(r->note, sizeof r->note,
                 "%s:%lu: get_qwen_tokenizer's token_path is <%s>, which the recipe leaves to the "
                 "training script (empty here): give --set %s=DIR (the folder train.py gets, "
                 "e.g. CosyVoice-BlankEN) or --tokenizer DIR", d->path, ry_line(get), ref, ref);
    else
        snprintf(r->note, sizeof r->note,
                 "%s:%lu: get_qwen_tokenizer's token_path is empty: give --tokenizer DIR",
                 d->path, ry_line(get));
    return ES_OK;
}

/* compute_fbank's feat_extractor (matcha's mel_spectrogram): frames a second
 * = sampling_rate / hop_size. Left unknown when it is not that. */
static int frame_rate(ry_doc *d, yaml_node_t *fbank, es_recipe *r)
{
    yaml_node_t *fe;
    int rc = ry_key(d, fbank, "feat_extractor", &fe);
    if (rc != ES_OK || !fe || fe->type != YAML_MAPPING_NODE)
        return rc;
    double rate = 0, hop = 0;
    rc = ry_number(d, fe, "sampling_rate", 0, &rate);
    if (rc == ES_OK)
        rc = ry_number(d, fe, "hop_size", 0, &hop);
    if (rc == ES_OK && rate > 0 && hop > 0)
        r->info.model.frame_rate = rate / hop;
    return rc;
}

static int stage(ry_doc *d, yaml_node_t *f, es_recipe *r)
{
    const char *name = ry_function_name(f);
    es_recipe_info *in = &r->info;
    uint64_t v;
    int rc = ES_OK;
    if (!name)
        return ES_OK;
    if (!strcmp(name, "filter"))
        return es_recipe_filter(d, f, &in->model);
    if (!strcmp(name, "tokenize"))
        return tokenizer(d, f, r);
    if (!strcmp(name, "compute_fbank"))
        return frame_rate(d, f, r);
    if (!strcmp(name, "resample")) {
        rc = ry_whole(d, f, "resample_rate", UINT32_MAX, 22050, &v);
        in->sample_rate = (uint32_t)v;
    } else if (!strcmp(name, "shuffle")) {
        rc = ry_whole(d, f, "shuffle_size", UINT32_MAX, 10000, &v);
        in->shuffle_size = (uint32_t)v;
    } else if (!strcmp(name, "sort")) {
        rc = ry_whole(d, f, "sort_size", UINT32_MAX, 500, &v);
        in->sort_size = (uint32_t)v;
    } else if (!strcmp(name, "batch")) {
        const char *type = NULL;
        rc = ry_string(d, f, "batch_type", "static", &type);
        if (rc == ES_OK && type && !strcmp(type, "dynamic")) {
            rc = ry_whole(d, f, "max_frames_in_batch", 0x1p63 /* 2^63 frames: no limit */, 12000, &v);
            in->max_frames_in_batch = v;
            in->batch_size = 0;
        } else if (rc == ES_OK && type && !strcmp(type, "static")) {
            rc = ry_whole(d, f, "batch_size", UINT32_MAX, 16, &v);
            if (rc == ES_OK && v == 0)
                rc = es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: batch.batch_size: 0", d->path,
                             ry_line(f));
            in->batch_size = (uint32_t)v;
            in->max_frames_in_batch = 0;
        } else if (rc == ES_OK) {
            rc = es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: batch.batch_type: %s is not static or "
                         "dynamic", d->path, ry_line(f), type ? type : "null");
        }
    }
    return rc;
}

int es_recipe_cosyvoice(ry_doc *d, yaml_node_t *pipeline, es_recipe *r)
{
    r->info.loader = ES_LOADER_COSYVOICE;
    r->info.model.frame_rate = 0; /* unknown until compute_fbank says */
    if (pipeline->type != YAML_SEQUENCE_NODE)
        return es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: data_pipeline: not a list of stages",
                       d->path, ry_line(pipeline));
    int rc = ES_OK;
    /* no shuffle or sort stage: none (the fields stay 0) */
    for (yaml_node_item_t *i = pipeline->data.sequence.items.start;
         rc == ES_OK && i < pipeline->data.sequence.items.top; i++) {
        yaml_node_t *f;
        rc = ry_resolve(d, yaml_document_get_node(&d->doc, *i), &f);
        if (rc == ES_OK)
            rc = stage(d, f, r);
    }
    return rc;
}
