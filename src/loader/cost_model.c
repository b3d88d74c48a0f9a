#include "loader/cost_model.h"

#include "core/context.h"
#include "core/json_text.h"
#include "costs/cost_table.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *es_filter_reason_name(es_filter_reason r)
{
    /* the names are the public enum's (src/core/enum_names.c) */
    const char *name = es_enum_name(ES_ENUM_FILTER_REASON, (int)r);
    return name ? name : "unknown";
}

ES_API void es_cost_model_defaults(es_cost_model *m)
{
    memset(m, 0, sizeof *m);
    m->frame_rate = 50;
    m->w_frames = 1;
    m->min_length = 100;
    m->max_length = 40960;
    m->token_min_length = 1;
    m->token_max_length = 200;
    m->min_output_input_ratio = 0.0005;
    m->max_output_input_ratio = 1;
    m->require_speech_token = -1; /* auto: es_cost_model_settle */
    m->token_chars = -1;
}

void es_cost_model_settle(es_cost_model *m, const es_cost_table *t, es_loader loader)
{
    if (m->token_chars < 0) {
        /* WeNet: its label's length when measured with --symbol-table, else
         * characters (CharTokenizer's stand-in) */
        m->token_chars = loader == ES_LOADER_WENET;
        for (size_t i = 0; m->token_chars && i < t->n; i++)
            m->token_chars = t->rows[i].text_tokens == 0 &&
                             !(t->rows[i].flags & ES_FLAG_NO_TOKENS);
    }
    if (m->require_speech_token >= 0)
        return;
    m->require_speech_token = 0;
    for (size_t i = 0; loader == ES_LOADER_COSYVOICE && i < t->n && !m->require_speech_token; i++)
        m->require_speech_token = t->rows[i].speech_tokens > 0;
}

/* The filter's num_frames: samples / sample_rate × 100, as a float like Python's. */
static double num_frames_100hz(const es_cost_row *row)
{
    return (double)row->samples / (double)row->sample_rate * 100.0;
}

es_filter_reason es_filter_row(const es_cost_model *m, const es_cost_row *row)
{
    if (row->flags & ES_FLAG_BAD_TEXT)
        return ES_DROP_BAD_TEXT;
    if (!(row->flags & ES_FLAG_AUDIO) || row->sample_rate == 0 || row->samples == 0)
        return ES_DROP_NO_AUDIO;
    double frames = num_frames_100hz(row);
    if (frames < m->min_length)
        return ES_DROP_TOO_SHORT;
    if (frames > m->max_length)
        return ES_DROP_TOO_LONG;
    uint32_t tokens = m->token_chars > 0 ? row->text_len : row->text_tokens;
    int known = m->token_chars > 0 || es_row_has_tokens(row);
    if (known && tokens < m->token_min_length)
        return ES_DROP_FEW_TOKENS;
    if (known && tokens > m->token_max_length)
        return ES_DROP_MANY_TOKENS;
    if (m->require_speech_token > 0 && row->speech_tokens == 0)
        return ES_DROP_NO_SPEECH_TOKEN;
    if (!known)
        return ES_KEEP; /* no count: the token filters are not applied */
    double ratio = (double)tokens / frames;
    if (ratio < m->min_output_input_ratio)
        return ES_DROP_RATIO_LOW;
    if (ratio > m->max_output_input_ratio)
        return ES_DROP_RATIO_HIGH;
    return ES_KEEP;
}

uint32_t es_row_frames(const es_cost_model *m, const es_cost_row *row)
{
    if (row->sample_rate == 0)
        return 0;
    double f = (double)row->samples * m->frame_rate / (double)row->sample_rate;
    return f >= 4294967295.0 ? UINT32_MAX : (uint32_t)f;
}

double es_row_cost(const es_cost_model *m, const es_cost_row *row)
{
    double frames = es_row_frames(m, row);
    int missing = (row->flags & (ES_FLAG_UTT_EMB | ES_FLAG_SPK_EMB)) !=
                  (ES_FLAG_UTT_EMB | ES_FLAG_SPK_EMB);
    double c = m->w_frames * frames + m->w_text * row->text_len +
               m->w_speech_tokens * row->speech_tokens + m->w_frames_sq * frames * frames +
               (missing ? m->w_missing_emb * frames : 0) + m->w_overhead;
    return c > 0 ? c : 0;
}

int es_row_has_tokens(const es_cost_row *row)
{
    return row->text_tokens > 0 || row->text_len == 0 || (row->flags & ES_FLAG_NO_TOKENS);
}

void es_token_gap(const es_cost_model *m, const es_cost_table *t, es_token_gap_counts *g)
{
    memset(g, 0, sizeof *g);
    if (m->token_chars > 0)
        return;
    es_cost_model chars = *m;
    chars.token_chars = 1;
    for (size_t i = 0; i < t->n; i++) {
        const es_cost_row *row = &t->rows[i];
        if (row->flags & ES_FLAG_BAD_TEXT)
            continue; /* dropped as bad_text whatever the counts */
        if (es_row_has_tokens(row)) {
            g->counted++;
            continue;
        }
        g->unknown++;
        es_filter_reason why = es_filter_row(&chars, row);
        g->would_drop += es_filter_row(m, row) == ES_KEEP &&
                         (why == ES_DROP_FEW_TOKENS || why == ES_DROP_MANY_TOKENS ||
                          why == ES_DROP_RATIO_LOW || why == ES_DROP_RATIO_HIGH);
    }
}

json_t *es_token_report(const es_cost_model *m, const es_token_gap_counts *g, const char *note,
                        json_t *tokenizer, const char *table_tokenizer)
{
    if (!tokenizer && table_tokenizer)
        /* its paths may hold \udcXX (not UTF-8), which json_loads refuses */
        tokenizer = es_json_load_bytes(table_tokenizer, strlen(table_tokenizer), 0, NULL);
    json_t *o = json_pack("{s:o, s:s, s:I, s:I}", "tokenizer", tokenizer ? tokenizer : json_null(),
                          "count", m->token_chars > 0 ? "text_len" : "text_tokens",
                          "rows_counted", (json_int_t)g->counted, "rows_without",
                          (json_int_t)g->unknown);
    if (o && g->unknown)
        json_object_set_new(o, "note", json_string(note));
    return o;
}

size_t es_token_gap_note(const es_token_gap_counts *g, char *buf, size_t len)
{
    if (!g->unknown) {
        if (len)
            buf[0] = '\0';
        return 0;
    }
    return (size_t)snprintf(buf, len,
                            "token filters not applied to %zu utterance(s) without text token "
                            "counts (measure with --tokenizer); %zu of them would be dropped if "
                            "characters were tokens",
                            g->unknown, g->would_drop);
}

int es_cost_model_check_weights(es_context *ctx, const char *where, const char *prefix,
                                const es_cost_model *m)
{
    const double w[ES_TERM_COUNT] = {m->w_frames, m->w_frames_sq, m->w_text, m->w_speech_tokens,
                                     m->w_missing_emb, m->w_overhead, m->w_batch};
    int any = 0;
    for (int j = 0; j < ES_TERM_COUNT; j++) {
        if (!(w[j] >= 0) || !isfinite(w[j]))
            return es_fail(ctx, ES_ERR_USAGE, "%s: %s%s is %g: a weight is a finite number >= 0",
                           where, prefix, es_enum_name(ES_ENUM_COST_TERM, j), w[j]);
        if (w[j] > ES_COST_WEIGHT_MAX)
            return es_fail(ctx, ES_ERR_USAGE, "%s: %s%s is %g, above %g s a unit: costs would "
                           "not be finite", where, prefix, es_enum_name(ES_ENUM_COST_TERM, j), w[j],
                           ES_COST_WEIGHT_MAX);
        any |= w[j] > 0;
    }
    if (!any)
        return es_fail(ctx, ES_ERR_USAGE, "%s: every weight is 0: every batch would cost nothing "
                       "and the plan would give one rank everything (a degenerate model: give "
                       "one weight above 0)", where);
    return ES_OK;
}

/* ---- a batch's terms as the loader pads it (calibration) --------------------- */

ES_API int es_cost_batch_terms(const es_cost_model *m, const es_cost_table *t, const size_t *rows,
                               size_t n, double *x)
{
    double longest = 0, text = 0, speech = 0, missing = 0;
    for (size_t i = 0; i < n; i++) {
        if (!t || rows[i] >= t->n)
            return ES_ERR_USAGE;
        const es_cost_row *row = &t->rows[rows[i]];
        double frames = es_row_frames(m, row);
        longest = frames > longest ? frames : longest;
        text = row->text_len > text ? row->text_len : text;
        speech = row->speech_tokens > speech ? row->speech_tokens : speech;
        if ((row->flags & (ES_FLAG_UTT_EMB | ES_FLAG_SPK_EMB)) != (ES_FLAG_UTT_EMB | ES_FLAG_SPK_EMB))
            missing += frames;
    }
    double b = (double)n;
    x[ES_TERM_FRAMES] = b * longest;
    x[ES_TERM_FRAMES_SQ] = b * longest * longest;
    x[ES_TERM_TEXT] = b * text;
    x[ES_TERM_SPEECH_TOKENS] = b * speech;
    x[ES_TERM_MISSING_EMB] = missing;
    x[ES_TERM_OVERHEAD] = b;
    x[ES_TERM_BATCH] = n ? 1 : 0;
    return ES_OK;
}

ES_API double es_cost_batch(const es_cost_model *m, const double *x)
{
    double c = m->w_frames * x[ES_TERM_FRAMES] + m->w_frames_sq * x[ES_TERM_FRAMES_SQ] +
               m->w_text * x[ES_TERM_TEXT] + m->w_speech_tokens * x[ES_TERM_SPEECH_TOKENS] +
               m->w_missing_emb * x[ES_TERM_MISSING_EMB] + m->w_overhead * x[ES_TERM_OVERHEAD] +
               m->w_batch * x[ES_TERM_BATCH];
    return c > 0 ? c : 0;
}
