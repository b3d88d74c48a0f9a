/* The JSON report of a validation (schema: docs/VALIDATE.md), written to a
 * temporary file and renamed into place. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "config.h"
#include "core/json_text.h"
#include "loader/cost_model.h"
#include "validate/validate_result.h"

/* A finite number, or the string "inf"/"-inf"/"nan" (JSON has no such numbers). */
static json_t *number(double v)
{
    if (isfinite(v))
        return json_real(v);
    return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static json_t *settings_json(const es_validate_settings *s)
{
    return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:b}",
                     "dim", (json_int_t)s->dim, "zero_norm", number(s->zero_norm),
                     "min_norm", number(s->min_norm), "max_norm", number(s->max_norm),
                     "norm_ratio", number(s->norm_ratio), "min_cosine", number(s->min_cosine),
                     "spk_mean_tol", number(s->spk_mean_tol), "duplicates", s->duplicates != 0);
}

/* es_validate_data's part of the summary: "filtered" per reason, "loader". */
static int data_json(const es_validate_result *r, json_t *summary)
{
    if (!summary || !r->data_checked)
        return 0;
    json_t *f = json_object();
    int bad = !f;
    for (int k = 1; !bad && k < ES_DROP_REASONS; k++)
        bad |= json_object_set_new(f, es_filter_reason_name((es_filter_reason)k),
                                   json_integer((json_int_t)r->filtered[k]));
    bad |= json_object_set_new(summary, "filtered", f);
    if (!bad)
        bad |= json_object_set_new(summary, "text_tokens",
                                   es_token_report(&r->data.model, &r->token_gap, r->token_note,
                                                   NULL, r->tokenizer));
    if (!bad && r->imbalance_checked)
        bad |= json_object_set_new(summary, "loader",
            json_pack("{s:s, s:I, s:I, s:o, s:o, s:o}", "loader", es_enum_name(ES_ENUM_LOADER, r->data.loader),
                      "world_size", (json_int_t)r->data.world_size,
                      "workers", (json_int_t)r->data.workers, "max_imbalance",
                      number(r->data.max_imbalance), "imbalance", number(r->imbalance),
                      "retention", number(r->retention)));
    return bad;
}

static json_t *summary_json(const es_validate_result *r)
{
    const es_validate_info *i = &r->info;
    json_t *s = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o}",
                     "device", i->device == ES_DEVICE_CUDA ? "cuda" : "cpu",
                     "dim", (json_int_t)i->dim, "utt_embeddings", (json_int_t)i->utt_rows,
                     "spk_embeddings", (json_int_t)i->spk_rows, "utterances", (json_int_t)i->utterances,
                     "speakers", (json_int_t)i->speakers, "median_utt_norm", number(i->median_utt_norm),
                     "median_spk_norm", number(i->median_spk_norm));
    if (data_json(r, s)) {
        json_decref(s);
        return NULL;
    }
    return s;
}

static json_t *finding_json(const es_vfinding *v)
{
    const es_finding *f = &v->f;
    json_t *o = json_pack("{s:s, s:s, s:s}", "check", es_enum_name(ES_ENUM_CHECK, f->check), "kind",
                          f->kind == ES_KIND_SPK ? "spk" : f->kind == ES_KIND_DATA ? "data" : "utt", "key", "");
    if (!o)
        return NULL;
    /* keys and paths need not be UTF-8 (core/json_text.h) */
    int bad = json_object_set_new(o, "key", es_json_bytes(f->key));
    if (f->row != ES_NO_ROW)
        bad |= json_object_set_new(o, "row", json_integer((json_int_t)f->row));
    switch (f->check) {
    case ES_CHECK_MISSING_UTT_EMB:
    case ES_CHECK_MISSING_SPK_EMB:
        bad |= json_object_set_new(o, "value", json_null());
        break;
    case ES_CHECK_DUPLICATE_VECTOR:
    case ES_CHECK_DUPLICATE_AUDIO:
        bad |= json_object_set_new(o, "value", es_json_bytes(f->other ? f->other : ""));
        if (f->other_row != ES_NO_ROW)
            bad |= json_object_set_new(o, "other_row", json_integer((json_int_t)f->other_row));
        break;
    case ES_CHECK_FILTERED:
        bad |= json_object_set_new(o, "value", es_json_bytes(f->other ? f->other : ""));
        break;
    case ES_CHECK_IMBALANCE:
        bad |= json_object_set_new(o, "value", json_pack("{s:o, s:o}", "imbalance", number(f->value),
                                                         "retention", number(v->value2)));
        break;
    case ES_CHECK_WRONG_DIM:
    case ES_CHECK_NAN:
    case ES_CHECK_INF:
        bad |= json_object_set_new(o, "value", json_integer((json_int_t)f->value));
        break;
    default:
        bad |= json_object_set_new(o, "value", number(f->value));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *report_json(const es_validate_result *r)
{
    json_t *counts = json_object(), *findings = json_array();
    json_t *root = json_pack("{s:s, s:s, s:o, s:o}", "equishard", ES_VERSION, "report", "validate",
                             "settings", settings_json(&r->settings), "summary", summary_json(r));
    int bad = !counts || !findings || !root;
    for (int c = 0; !bad && c < ES_CHECK_COUNT; c++)
        bad |= json_object_set_new(counts, es_enum_name(ES_ENUM_CHECK, c), json_integer((json_int_t)r->counts[c]));
    for (size_t i = 0; !bad && i < r->n; i++)
        bad |= json_array_append_new(findings, finding_json(&r->items[i]));
    if (!bad) {
        bad |= json_object_set_new(root, "counts", counts);
        bad |= json_object_set_new(root, "findings", findings);
        if (!bad)
            return root;
        counts = findings = NULL;
    }
    json_decref(counts);
    json_decref(findings);
    json_decref(root);
    return NULL;
}

int es_validate_write_json(es_context *ctx, const es_validate_result *r, const char *path)
{
    es_clear_error(ctx);
    if (!r || !path)
        return es_fail(ctx, ES_ERR_USAGE, "validate: no result or path");
    json_t *root = report_json(r);
    if (!root)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    es_strbuf text = {0};
    int rc = es_json_dump(&text, root, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    es_strbuf_putc(&text, '\n');
    json_decref(root);
    if (rc || text.oom)
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    else
        rc = es_write_output(ctx, path, text.buf, text.len);
    es_strbuf_release(&text);
    return rc;
}
