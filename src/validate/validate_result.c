/* The result object: findings, counts, accessors (public API). */
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "validate/validate_result.h"

es_validate_result *es_vresult_new(void)
{
    es_validate_result *r = calloc(1, sizeof *r);
    if (r)
        r->info.device = ES_DEVICE_CPU;
    return r;
}

static const char *copy(es_validate_result *r, const char *s)
{
    if (!s)
        return NULL;
    const char *c = es_arena_strndup(&r->strings, s, strlen(s));
    if (!c)
        r->oom = 1;
    return c ? c : "";
}

void es_vresult_add(es_validate_result *r, es_check check, es_kind kind, const char *key,
                    size_t row, double value, const char *other, size_t other_row, size_t order)
{
    if (r->n == r->cap) {
        void *p = r->items;
        if (es_grow(&p, &r->cap, r->cap + 1, sizeof *r->items, 64)) {
            r->oom = 1;
            return;
        }
        r->items = p;
    }
    es_vfinding *v = &r->items[r->n];
    v->f.check = check;
    v->f.kind = kind;
    v->f.key = copy(r, key ? key : "");
    v->f.row = row;
    v->f.value = value;
    v->f.other = copy(r, other);
    v->f.other_row = other_row;
    v->order = order;
    v->seq = r->n++;
    v->value2 = 0;
    r->counts[check]++;
}

static int cmp_finding(const void *pa, const void *pb)
{
    const es_vfinding *a = pa, *b = pb;
    if (a->f.check != b->f.check)
        return a->f.check < b->f.check ? -1 : 1;
    if (a->f.kind != b->f.kind)
        return a->f.kind < b->f.kind ? -1 : 1;
    if (a->order != b->order)
        return a->order < b->order ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int es_vresult_finish(es_context *ctx, es_validate_result *r)
{
    if (r->oom)
        return es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    if (r->n)
        qsort(r->items, r->n, sizeof *r->items, cmp_finding);
    return ES_OK;
}

void es_validate_result_free(es_validate_result *r)
{
    if (!r)
        return;
    free(r->items);
    free(r->tokenizer);
    es_arena_release(&r->strings);
    free(r);
}

size_t es_validate_count(const es_validate_result *r, int check)
{
    if (r && check == -1)
        return r->n;
    return r && check >= 0 && check < ES_CHECK_COUNT ? r->counts[check] : 0;
}

int es_validate_finding(const es_validate_result *r, size_t i, es_finding *out)
{
    if (!r || !out || i >= r->n)
        return ES_ERR_USAGE;
    *out = r->items[i].f;
    return ES_OK;
}

int es_validate_result_info(const es_validate_result *r, es_validate_info *out)
{
    if (!r || !out)
        return ES_ERR_USAGE;
    *out = r->info;
    out->token_note = r->token_note;
    return ES_OK;
}

void es_validate_defaults(es_validate_settings *s)
{
    memset(s, 0, sizeof *s);
    s->device = ES_DEVICE_AUTO;
    s->dim = 192;
    s->zero_norm = 1e-6;
    s->norm_ratio = 3.0;
    s->min_cosine = 0.5;
    s->spk_mean_tol = 1e-3;
    s->duplicates = 1;
}

int es_vcheck_settings(es_context *ctx, const es_validate_settings *s)
{
    if (s->device != ES_DEVICE_AUTO && s->device != ES_DEVICE_CPU && s->device != ES_DEVICE_CUDA)
        return es_fail(ctx, ES_ERR_USAGE, "validate: unknown device %d", (int)s->device);
    if (!(s->zero_norm >= 0) || !(s->min_norm >= 0) || !(s->max_norm >= 0) ||
        !(s->norm_ratio >= 0) || !(s->spk_mean_tol >= 0))
        return es_fail(ctx, ES_ERR_USAGE, "validate: thresholds must be non-negative numbers");
    if (s->norm_ratio > 0 && s->norm_ratio < 1)
        return es_fail(ctx, ES_ERR_USAGE, "validate: norm ratio must be >= 1 (or 0: off), got %g",
                       s->norm_ratio);
    if (s->max_norm > 0 && s->max_norm < s->min_norm)
        return es_fail(ctx, ES_ERR_USAGE, "validate: max norm %g is below min norm %g", s->max_norm,
                       s->min_norm);
    if (!(s->min_cosine >= -2 && s->min_cosine <= 1))
        return es_fail(ctx, ES_ERR_USAGE, "validate: min cosine must be in [-1, 1] (or -2: off), got %g",
                       s->min_cosine);
    return ES_OK;
}
