/* What an utterance costs a GPU, and whether the loader keeps it at all
 * (docs/COST_MODEL.md). Shared by plan, simulate and validate so all see the same data.
 *
 * cost = a·frames + b·text + c·speech_tokens + q·frames² + e·[emb missing]·frames + u
 * with frames = samples / sample_rate × frame_rate (feature frames; CosyVoice 2
 * extracts 50 per second). The filters are CosyVoice's `processor.filter`,
 * in its units: lengths in 10 ms frames (100 per second) of the original audio,
 * token limits on text_tokens, the recipe tokenizer's count (rows without one
 * skip the token filters); under WeNet on text_len. */
#ifndef ES_COST_MODEL_H
#define ES_COST_MODEL_H

#include <stdint.h>

#include "equishard/equishard.h"

/* Why the loader's filter drops an utterance (ES_KEEP = it does not). */
typedef enum es_filter_reason {
    ES_KEEP = 0,
    ES_DROP_NO_AUDIO,        /* no probed audio (unsupported format, 0 samples) */
    ES_DROP_TOO_SHORT,       /* num_frames < min_length */
    ES_DROP_TOO_LONG,        /* num_frames > max_length */
    ES_DROP_FEW_TOKENS,      /* text < token_min_length */
    ES_DROP_MANY_TOKENS,     /* text > token_max_length */
    ES_DROP_NO_SPEECH_TOKEN, /* speech_tokens == 0 while required */
    ES_DROP_RATIO_LOW,       /* text / num_frames < min_output_input_ratio */
    ES_DROP_RATIO_HIGH,      /* text / num_frames > max_output_input_ratio */
    ES_DROP_BAD_TEXT,        /* ES_FLAG_BAD_TEXT: the transcript is not UTF-8 (checked
                                first: the loader drops it while reading) */
    ES_DROP_REASONS
} es_filter_reason;

/* Stable names for reports and plan.json ("too_short", …). */
const char *es_filter_reason_name(es_filter_reason r);

/* Defaults: CosyVoice 2's recipe (frame_rate 50, filter min_length 100,
 * max_length 40960, tokens 1..200, ratios 0.0005..1), weights a = 1, others 0. */
void es_cost_model_defaults(es_cost_model *m);

/* Settles require_speech_token's auto (-1) for `loader` and table t: for
 * CosyVoice (whose filter drops an empty speech_token; plan's filter is
 * CosyVoice's) 1 when any row has speech tokens, else 0; for WeNet, which has
 * no such rule, 0. Every user of the model does this once before filtering, so
 * filters and reports see 0 or 1. */
void es_cost_model_settle(es_cost_model *m, const es_cost_table *t, es_loader loader);

/* The loader's filter decision for one row. */
es_filter_reason es_filter_row(const es_cost_model *m, const es_cost_row *row);

/* Feature frames of a row: floor(samples × frame_rate / sample_rate). */
uint32_t es_row_frames(const es_cost_model *m, const es_cost_row *row);

/* 1 when the row's text_tokens is a count: measured with a tokenizer, or an
 * empty transcript (no tokens whatever the tokenizer), or ES_FLAG_NO_TOKENS. */
int es_row_has_tokens(const es_cost_row *row);

/* Rows the token filters could not judge (CosyVoice, no token count) and how
 * many of those the old character stand-in would have dropped. */
typedef struct es_token_gap_counts {
    size_t counted, unknown, would_drop;
} es_token_gap_counts;
void es_token_gap(const es_cost_model *m, const es_cost_table *t, es_token_gap_counts *g);
/* The one line reports print (snprintf-style); "" when nothing is unknown. */
size_t es_token_gap_note(const es_token_gap_counts *g, char *buf, size_t len);

/* The "text_tokens" object of plan.json, simulate's and validate's JSON (one
 * implementation for the three): {"tokenizer": tokenizer (stolen; NULL: parsed
 * from table_tokenizer, the table's "# tokenizer:" record, or null), "count":
 * "text_tokens" or "text_len", "rows_counted", "rows_without", "note" (when
 * rows lack counts)}. NULL when out of memory. */
struct json_t;
struct json_t *es_token_report(const es_cost_model *m, const es_token_gap_counts *g,
                               const char *note, struct json_t *tokenizer,
                               const char *table_tokenizer);

/* ES_OK when the model's weights make finite, non-degenerate costs: each a
 * finite number >= 0 and at most ES_COST_WEIGHT_MAX (above it the plan's sums
 * overflow), and not all 0 (every batch would cost nothing and one rank would get
 * everything). Else ES_ERR_USAGE with one line "WHERE: PREFIXw_frames is …"
 * (PREFIX names the weights where they came from, e.g. "weights." in a model
 * file). Every way in (flags, model files, the Python binding) ends here. */
int es_cost_model_check_weights(es_context *ctx, const char *where, const char *prefix,
                                const es_cost_model *m);

/* The cost of a row under the model (>= 0). */
double es_row_cost(const es_cost_model *m, const es_cost_row *row);

#endif
