/* The validation result: findings (check, which key, a value) in an array
 * whose strings live in the result's arena, per-check counts, and what was
 * validated. Producers add findings in any order; es_vresult_finish() sorts
 * them by check, utterances before speakers, then by `order` (a row or key
 * ordinal), ties in insertion order.
 *
 * Also the internal entry point shared by es_validate_matrices and the
 * source-based es_validate(): es_vrun(). */
#ifndef ES_VALIDATE_RESULT_H
#define ES_VALIDATE_RESULT_H

#include "core/context.h"
#include "core/strbuf.h"
#include "loader/cost_model.h"
#include "validate/vjob.h"

typedef struct es_vfinding {
    es_finding f;  /* key/other point into the result's arena */
    size_t order;  /* sort key inside (check, kind) */
    size_t seq;    /* insertion number: keeps the sort stable */
    double value2; /* imbalance: the retention (JSON); else 0 */
} es_vfinding;

struct es_validate_result {
    es_vfinding *items;
    size_t n, cap;
    size_t counts[ES_CHECK_COUNT];
    es_arena strings;
    es_validate_info info;
    es_validate_settings settings; /* what the checks used (for the JSON report) */
    int data_checked;              /* es_validate_data ran: the JSON has its summary */
    es_validate_data_settings data;
    uint64_t filtered[16];         /* per es_filter_reason (index 0 unused) */
    es_token_gap_counts token_gap; /* rows the token filters could not judge */
    char token_note[320];          /* es_token_gap_note: "" when none */
    char *tokenizer;               /* the table's "# tokenizer:" record, or NULL */
    int imbalance_checked;         /* data.world_size > 0 */
    double imbalance, retention;   /* epoch 0 of the replay */
    int oom;
};

es_validate_result *es_vresult_new(void);
/* Adds one finding; key/other are copied (other may be NULL). Out of memory is
 * remembered and reported by es_vresult_finish. */
void es_vresult_add(es_validate_result *r, es_check check, es_kind kind, const char *key,
                    size_t row, double value, const char *other, size_t other_row, size_t order);
/* Sorts the findings; ES_ERR_NOMEM if any add failed. */
int es_vresult_finish(es_context *ctx, es_validate_result *r);

/* One matrix to validate, as es_vrun sees it. */
typedef struct es_vset {
    const es_emb_matrix *m;  /* NULL: none */
    const size_t *src_row;   /* matrix row → row reported (source entry); NULL = same */
} es_vset;

/* Validates utt and spk (speakers as es_validate_matrices documents) into r:
 * dimension, NaN/Inf, norms, centroid cosines, speaker means, duplicates.
 * Rows are in device memory when on_device. Chooses the device per s. */
int es_vrun(es_context *ctx, const es_validate_settings *s, const es_vset *utt,
            const es_vset *spk, const es_emb_speakers *speakers, int on_device,
            es_validate_result *r);

/* Checks settings and one matrix; ES_ERR_USAGE with a message when invalid. */
int es_vcheck_settings(es_context *ctx, const es_validate_settings *s);

#endif
