/* WeNet: dataset_conf as wenet/dataset/dataset.py reads it (conf.get with its
 * defaults), and the tokenizer its init_tokenizer builds from the top-level
 * `tokenizer` and `tokenizer_conf`. */
#include "recipe/recipe_internal.h"

#include <stdio.h>
#include <string.h>

/* A sub-mapping of dataset_conf ("filter_conf"); *out NULL when absent. */
static int conf_map(ry_doc *d, yaml_node_t *conf, const char *key, yaml_node_t **out)
{
    int rc = ry_key(d, conf, key, out);
    if (rc == ES_OK && *out && (*out)->type != YAML_MAPPING_NODE)
        rc = es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: dataset_conf.%s: not a mapping", d->path,
                     ry_line(*out), key);
    return rc;
}

/* A buffer that dataset.py indexes (shuffle_conf['shuffle_size']): required
 * when its stage is on. */
static int buffer(ry_doc *d, yaml_node_t *conf, const char *on, const char *sub,
                  const char *key, uint32_t *out)
{
    int enabled;
    yaml_node_t *m;
    uint64_t v = 0;
    int rc = ry_bool(d, conf, on, 1, &enabled);
    if (rc == ES_OK)
        rc = conf_map(d, conf, sub, &m);
    if (rc != ES_OK || !enabled) {
        *out = 0;
        return rc;
    }
    yaml_node_t *n = NULL;
    if (m)
        rc = ry_key(d, m, key, &n);
    if (rc == ES_OK && !n)
        return es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: dataset_conf.%s.%s: missing (WeNet's "
                       "dataset.py requires it when %s is on)", d->path, ry_line(m ? m : conf),
                       sub, key, on);
    if (rc == ES_OK)
        rc = ry_whole(d, m, key, UINT32_MAX, 0, &v);
    *out = (uint32_t)v;
    return rc;
}

static int batching(ry_doc *d, yaml_node_t *conf, es_recipe_info *in)
{
    yaml_node_t *b;
    const char *type = "static";
    uint64_t v;
    int rc = conf_map(d, conf, "batch_conf", &b);
    if (rc == ES_OK && b)
        rc = ry_string(d, b, "batch_type", "static", &type);
    if (rc != ES_OK)
        return rc;
    if (type && !strcmp(type, "static")) {
        rc = ry_whole(d, b, "batch_size", UINT32_MAX, 16, &v);
        if (rc == ES_OK && v == 0)
            rc = es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: batch_conf.batch_size: 0", d->path,
                         ry_line(b));
        in->batch_size = (uint32_t)v;
        in->max_frames_in_batch = 0;
    } else if (type && !strcmp(type, "dynamic")) {
        rc = ry_whole(d, b, "max_frames_in_batch", 0x1p63 /* 2^63 frames: no limit */, 12000, &v);
        in->max_frames_in_batch = v;
        in->batch_size = 0;
    } else {
        rc = es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: batch_conf.batch_type: %s has no planned "
                     "equivalent (static batch_size or dynamic max_frames_in_batch)", d->path,
                     ry_line(b ? b : conf), type ? type : "null");
    }
    return rc;
}

/* Frames a second of the features the batcher counts: fbank/mfcc frame_shift
 * (ms, default 10), log_mel_spectrogram resample_rate / hop_length (160). */
static int features(ry_doc *d, yaml_node_t *conf, es_recipe_info *in)
{
    const char *feats = "fbank";
    yaml_node_t *m;
    double shift = 10, hop = 160;
    int rc = ry_string(d, conf, "feats_type", "fbank", &feats);
    if (rc != ES_OK)
        return rc;
    if (feats && (!strcmp(feats, "fbank") || !strcmp(feats, "mfcc"))) {
        char key[32];
        snprintf(key, sizeof key, "%s_conf", feats);
        rc = conf_map(d, conf, key, &m);
        if (rc == ES_OK && m)
            rc = ry_number(d, m, "frame_shift", 10, &shift);
        if (rc == ES_OK && shift <= 0)
            rc = es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: %s.frame_shift: not positive", d->path,
                         ry_line(m), key);
        in->model.frame_rate = 1000.0 / shift;
    } else if (feats && !strcmp(feats, "log_mel_spectrogram")) {
        rc = conf_map(d, conf, "log_mel_spectrogram_conf", &m);
        if (rc == ES_OK && m)
            rc = ry_number(d, m, "hop_length", 160, &hop);
        if (rc == ES_OK && hop <= 0)
            rc = es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: log_mel_spectrogram_conf.hop_length: "
                         "not positive", d->path, ry_line(m));
        in->model.frame_rate = in->sample_rate / hop;
    } else {
        rc = es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: dataset_conf.feats_type: %s is not fbank, "
                     "mfcc or log_mel_spectrogram", d->path, ry_line(conf), feats ? feats : "null");
    }
    return rc;
}

/* `tokenizer: char` with tokenizer_conf: WeNet's CharTokenizer, which
 * equishard counts (--symbol-table); another kind is noted. */
static int tokenizer(ry_doc *d, es_recipe *r)
{
    yaml_node_t *kind_node, *tc;
    int rc = ry_top(d, "tokenizer", &kind_node);
    if (rc == ES_OK)
        rc = ry_top(d, "tokenizer_conf", &tc);
    if (rc != ES_OK || !kind_node)
        return rc;
    const char *kind = ry_scalar(kind_node);
    if (!kind || strcmp(kind, "char") != 0) {
        snprintf(r->note, sizeof r->note, "%s:%lu: the recipe's tokenizer is %s, which "
                 "equishard does not count: the token filters count characters", d->path,
                 ry_line(kind_node), kind ? kind : "null");
        return ES_OK;
    }
    const char *table = NULL, *syms = NULL;
    if (tc && tc->type == YAML_MAPPING_NODE) {
        rc = ry_string(d, tc, "symbol_table_path", NULL, &table);
        if (rc == ES_OK)
            rc = ry_string(d, tc, "non_lang_syms_path", NULL, &syms);
        if (rc == ES_OK)
            rc = ry_bool(d, tc, "split_with_space", 0, &r->info.split_with_space);
    }
    if (rc == ES_OK)
        rc = es_recipe_keep(d, r, syms, &r->info.non_lang_syms);
    if (rc == ES_OK && table && *table)
        return es_recipe_keep(d, r, table, &r->info.symbol_table);
    if (rc == ES_OK) {
        r->info.tokenizer_unresolved = 1;
        snprintf(r->note, sizeof r->note, "%s:%lu: tokenizer_conf.symbol_table_path is not "
                 "given: give --symbol-table FILE", d->path, ry_line(tc ? tc : kind_node));
    }
    return rc;
}

int es_recipe_wenet(ry_doc *d, yaml_node_t *conf, es_recipe *r)
{
    es_recipe_info *in = &r->info;
    in->loader = ES_LOADER_WENET;
    in->model.require_speech_token = 0; /* WeNet's filter has no speech tokens */
    if (conf->type != YAML_MAPPING_NODE)
        return es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: dataset_conf: not a mapping", d->path,
                       ry_line(conf));
    yaml_node_t *filter, *resample;
    uint64_t rate = 16000;
    int perturb = 0;
    int rc = conf_map(d, conf, "filter_conf", &filter);
    if (rc == ES_OK)
        rc = es_recipe_filter(d, filter, &in->model);
    if (rc == ES_OK)
        rc = conf_map(d, conf, "resample_conf", &resample);
    if (rc == ES_OK && resample)
        rc = ry_whole(d, resample, "resample_rate", UINT32_MAX, 16000, &rate);
    in->sample_rate = (uint32_t)rate;
    if (rc == ES_OK)
        rc = ry_bool(d, conf, "speed_perturb", 0, &perturb);
    if (perturb) { /* processor.speed_perturb's speeds, one drawn per utterance */
        in->speed_min = 0.9;
        in->speed_max = 1.1;
    }
    if (rc == ES_OK)
        rc = buffer(d, conf, "shuffle", "shuffle_conf", "shuffle_size", &in->shuffle_size);
    if (rc == ES_OK)
        rc = buffer(d, conf, "sort", "sort_conf", "sort_size", &in->sort_size);
    if (rc == ES_OK)
        rc = batching(d, conf, in);
    if (rc == ES_OK)
        rc = features(d, conf, in);
    if (rc == ES_OK)
        rc = tokenizer(d, r);
    return rc;
}
