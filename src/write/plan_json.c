#include "write/plan_json.h"

#include <dirent.h>
#include <stdio.h>
#include <errno.h>
#include <stdint.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "config.h"
#include "core/file_digest.h"
#include "core/strbuf.h"
#include "core/utf8.h"
#include "plan/plan_reshard.h"

/* xxh3-64 of a file's bytes; a folder (Kaldi) hashes its files' names and bytes
 * in name order. Returns 0 or an errno. */
static int hash_file_into(XXH3_state_t *st, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return errno;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        XXH3_64bits_update(st, buf, n);
    int bad = ferror(fp);
    fclose(fp);
    return bad ? EIO : 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int hash_dir_into(XXH3_state_t *st, const char *path)
{
    DIR *dir = opendir(path);
    if (!dir)
        return errno;
    /* a Kaldi directory holds a handful of files; 256 is far beyond it */
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) && n < 256)
        if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name)))
            n++;
    closedir(dir);
    qsort(names, n, sizeof *names, cmp_names);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char child[4096];
        struct stat s;
        snprintf(child, sizeof child, "%s/%s", path, names[i]);
        if (!rc && stat(child, &s) == 0 && S_ISREG(s.st_mode)) {
            XXH3_64bits_update(st, names[i], strlen(names[i]) + 1);
            rc = hash_file_into(st, child);
        }
        free(names[i]);
    }
    return rc;
}

/* The "inputs" array: each input's path (es_json_bytes: it need not be UTF-8;
 * such a path was once dropped) and the xxh3 of its bytes. */
static int input_digests(es_context *ctx, const char *const *inputs, size_t n, json_t *out)
{
    int rc = ES_OK;
    for (size_t i = 0; i < n && rc == ES_OK; i++) {
        XXH3_state_t *st = XXH3_createState();
        struct stat s;
        int e = !st ? ENOMEM : stat(inputs[i], &s) != 0 ? errno : 0;
        uint64_t digest = 0;
        /* a table this process read whole and that has not changed since was
         * hashed as it was read (core/file_digest.h) */
        int known = !e && S_ISREG(s.st_mode) && es_file_digest_recall(&s, &digest);
        if (!e && !known) {
            XXH3_64bits_reset(st);
            e = S_ISDIR(s.st_mode) ? hash_dir_into(st, inputs[i]) : hash_file_into(st, inputs[i]);
            digest = XXH3_64bits_digest(st);
        }
        if (e) {
            rc = es_fail(ctx, ES_ERR_IO, "%s: cannot read for its digest: %s", inputs[i],
                         strerror(e));
        } else {
            char hex[17];
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)digest);
            if (json_array_append_new(out, json_pack("{s:o, s:s}", "path", es_json_bytes(inputs[i]),
                                                     "xxh3", hex)))
                rc = es_fail(ctx, ES_ERR_NOMEM, "plan.json: out of memory");
        }
        XXH3_freeState(st);
    }
    return rc;
}

/* The settings' names; es_plan_build rejected values without one. */
static const char *mode_name(es_plan_mode m) { return es_enum_name(ES_ENUM_PLAN_MODE, (int)m); }

static const char *remainder_name(es_remainder r)
{
    return es_enum_name(ES_ENUM_REMAINDER, (int)r);
}

/* Which model.json the weights came from (es_cost_model_read), or null. */
static json_t *model_source(const es_cost_model *m)
{
    if (!m->source)
        return json_null();
    char digest[32];
    snprintf(digest, sizeof digest, "xxh3-64:%016llx", (unsigned long long)m->source_digest);
    json_t *path = es_json_bytes(m->source); /* not UTF-8: written \udcXX */
    return json_pack("{s:o, s:s}", "path", path ? path : json_null(), "digest", digest);
}

/* The training recipe the settings came from (--recipe), or null: its path
 * (bytes that are not UTF-8 written \udcXX), digest and loader, and the
 * lengths it randomises after the filter (WeNet's speed_perturb: docs/PLAN.md
 * says what a plan then guarantees). */
static json_t *recipe_json(const es_recipe *r)
{
    es_recipe_info in;
    if (!r || es_recipe_get_info(r, &in) != ES_OK)
        return json_null();
    char digest[32];
    snprintf(digest, sizeof digest, "xxh3-64:%016llx", (unsigned long long)in.digest);
    json_t *path = es_json_bytes(in.path);
    json_t *speed = in.speed_max > 0
                        ? json_pack("{s:f, s:f}", "min", in.speed_min, "max", in.speed_max)
                        : json_null();
    return json_pack("{s:o, s:s, s:s, s:o}", "path", path ? path : json_null(), "digest", digest,
                     "loader", es_enum_name(ES_ENUM_LOADER, in.loader), "speed_perturb", speed);
}

static json_t *parameters(const es_plan_settings *s)
{
    const es_cost_model *m = &s->model;
    json_t *model = json_pack(
        "{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "frame_rate", m->frame_rate, "w_frames",
        m->w_frames, "w_text", m->w_text, "w_speech_tokens", m->w_speech_tokens, "w_frames_sq",
        m->w_frames_sq, "w_missing_emb", m->w_missing_emb, "w_overhead", m->w_overhead);
    json_object_set_new(model, "w_batch", json_real(m->w_batch));
    json_object_set_new(model, "source", model_source(m));
    json_t *filter = json_pack("{s:f, s:f, s:I, s:I, s:f, s:f, s:b}", "min_length", m->min_length,
                               "max_length", m->max_length, "token_min_length",
                               (json_int_t)m->token_min_length, "token_max_length",
                               (json_int_t)m->token_max_length, "min_output_input_ratio",
                               m->min_output_input_ratio, "max_output_input_ratio",
                               m->max_output_input_ratio, "require_speech_token",
                               m->require_speech_token);
    json_t *params = json_pack("{s:s, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:s, s:I, s:I}", "mode",
                     mode_name(s->mode), "world_size", (json_int_t)s->world_size, "workers",
                     (json_int_t)s->workers, "cost_model", model, "filter", filter,
                     "max_frames_in_batch", (json_int_t)s->max_frames_in_batch, "batch_size",
                     (json_int_t)s->batch_size, "sort_size", (json_int_t)s->sort_size,
                     "remainder", remainder_name(s->remainder), "seed", (json_int_t)s->seed,
                     "epoch", (json_int_t)s->epoch);
    if (params)
        json_object_set_new(params, "recipe", recipe_json(s->recipe));
    return params;
}

static json_t *load_json(const char *id_name, uint32_t id, const es_plan_load *l)
{
    return json_pack("{s:I, s:f, s:I, s:I, s:I}", id_name, (json_int_t)id, "cost", l->cost,
                     "utterances", (json_int_t)l->utterances, "frames", (json_int_t)l->frames,
                     "batches", (json_int_t)l->batches);
}

static json_t *metrics(const es_plan *p)
{
    const es_plan_metrics *m = &p->metrics;
    json_t *filtered = json_object();
    for (size_t r = 1; r < ES_DROP_REASONS; r++)
        json_object_set_new(filtered, es_filter_reason_name((es_filter_reason)r),
                            json_integer((json_int_t)p->filtered[r]));
    json_t *rem = json_pack("{s:s, s:I, s:I}", "policy", remainder_name(p->s.remainder),
                            "batches", (json_int_t)m->remainder_batches, "utterances",
                            (json_int_t)m->remainder_utterances);
    /* what --on-error skip left out of the table (filtered.tsv: unreadable) */
    json_int_t bad_shards = 0, bad_utts = 0;
    for (size_t i = 0; i < p->table->n_skips; i++)
        *(p->table->skips[i].key ? &bad_utts : &bad_shards) += 1;
    json_t *unreadable = json_pack("{s:I, s:I}", "shards", bad_shards, "utterances", bad_utts);
    return json_pack("{s:f, s:f, s:f, s:I, s:f, s:f, s:I, s:o, s:o, s:I, s:I, s:s, s:o}",
                     "imbalance", m->imbalance, "lower_bound", m->lower_bound,
                     "lower_bound_gap", m->lower_bound_gap, "batch_spread",
                     (json_int_t)m->batch_spread, "step_straggler", m->step_straggler,
                     "retention", m->retention, "kept", (json_int_t)m->kept, "filtered",
                     filtered, "unreadable", unreadable, "total_batches", (json_int_t)m->total_batches, "steps",
                     (json_int_t)m->steps, "method", m->method ? m->method : "", "remainder",
                     rem);
}

/* How the token filters counted, and with what tokenizer: the one
 * given to plan, else the one the table was measured with (its "# tokenizer:"
 * line). */
static json_t *text_tokens(const es_plan *p)
{
    json_t *tok = NULL;
    es_tokenizer_info info;
    if (p->s.tokenizer && es_tokenizer_get_info(p->s.tokenizer, &info) == ES_OK) {
        char digest[32];
        snprintf(digest, sizeof digest, "xxh3-64:%016llx", (unsigned long long)info.digest);
        /* the path, and a symbol table's file name, need not be UTF-8 */
        tok = json_pack("{s:s, s:o, s:o, s:I, s:s, s:s}", "kind",
                        info.kind, "path", es_json_bytes(info.path),
                        "files", es_json_bytes(info.files),
                        "vocab_size", (json_int_t)info.vocab_size, "specials", info.specials,
                        "digest", digest);
    }
    return es_token_report(&p->s.model, &p->token_gap, p->token_note, tok, p->table->tokenizer);
}

static json_t *ranks(const es_plan *p)
{
    json_t *arr = json_array();
    for (uint32_t r = 0; r < p->K; r++) {
        es_plan_load l;
        es_plan_rank_load(p, r, -1, &l);
        json_t *rank = load_json("rank", r, &l);
        json_t *workers = json_array();
        for (uint32_t w = 0; w < p->W; w++) {
            es_plan_rank_load(p, r, (int32_t)w, &l);
            json_array_append_new(workers, load_json("worker", w, &l));
        }
        json_object_set_new(rank, "workers", workers);
        json_array_append_new(arr, rank);
    }
    return arr;
}

/* Reshard's keys: parameters "format", "compress", "shards_per_worker";
 * metrics "reshard": {"shards", "shards_per_worker", "shard_cost": {"min",
 * "max", "mean", "max_deviation"}, "permutations", "permutation_max_deviation"}. */
static void reshard_json(const es_plan *p, json_t *parameters, json_t *metrics)
{
    const es_plan_reshard_info *i = &p->reshard->info;
    /* as written: es_reshard_write settled format and compression from the sources */
    json_object_set_new(parameters, "format", json_string(p->reshard->format == ES_RESHARD_PARQUET
                                                              ? "parquet" : "tar"));
    json_object_set_new(parameters, "compress", json_string(es_enum_name(ES_ENUM_COMPRESS, p->reshard->compress)));
    json_object_set_new(parameters, "shards_per_worker", json_integer(i->shards_per_worker));
    json_t *cost = json_pack("{s:f, s:f, s:f, s:f}", "min", i->shard_cost_min, "max",
                             i->shard_cost_max, "mean", i->shard_cost_mean, "max_deviation",
                             i->shard_max_deviation);
    json_object_set_new(metrics, "reshard",
                        json_pack("{s:I, s:I, s:o, s:I, s:f}", "shards", (json_int_t)i->shards,
                                  "shards_per_worker", (json_int_t)i->shards_per_worker,
                                  "shard_cost", cost, "permutations",
                                  (json_int_t)i->permutations, "permutation_max_deviation",
                                  i->permutation_max_deviation));
}

int es_plan_json_write(es_context *ctx, const es_plan *p, FILE *fp, const char *const *inputs,
                       size_t n_inputs)
{
    json_t *in = json_array();
    if (!in)
        return es_fail(ctx, ES_ERR_NOMEM, "plan.json: out of memory");
    int rc = input_digests(ctx, inputs, n_inputs, in);
    if (rc != ES_OK) {
        json_decref(in);
        return rc;
    }
    json_t *root = json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o}", "equishard", ES_VERSION,
                             "format", 1, "inputs", in, "parameters", parameters(&p->s),
                             "metrics", metrics(p), "text_tokens", text_tokens(p), "ranks",
                             ranks(p));
    if (!root)
        return es_fail(ctx, ES_ERR_NOMEM, "plan.json: out of memory");
    if (p->reshard)
        reshard_json(p, json_object_get(root, "parameters"), json_object_get(root, "metrics"));
    if (p->left_out) /* es_plan_build_subset: rows this plan leaves out (a resumed epoch's trained ones) */
        json_object_set_new(json_object_get(root, "metrics"), "left_out",
                            json_integer((json_int_t)p->left_out));
    es_strbuf text = {0};
    if (es_json_dump(&text, root, JSON_INDENT(2) | JSON_REAL_PRECISION(12)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "plan.json: out of memory");
    else if (fwrite(text.buf, 1, text.len, fp) != text.len || fputc('\n', fp) == EOF)
        rc = es_fail(ctx, ES_ERR_IO, "plan.json: write failed");
    json_decref(root);
    es_strbuf_release(&text);
    return rc;
}
