/* Text-token reporting shared by measure (the cost table's "# tokenizer:"
 * line), plan.json, simulate's and validate's JSON (issue 11). */
#ifndef ES_TOK_REPORT_H
#define ES_TOK_REPORT_H

#include <jansson.h>

#include "plan/cost_model.h"
#include "text/tok_model.h"

/* {"kind", "path", "files", "vocab_size", "specials", "digest": "xxh3-64:…"};
 * strings that are not UTF-8 carry U+FFFD for the bad bytes. NULL when out of
 * memory. */
json_t *es_tok_identity(const tok_model *m);
/* The same as one line of compact JSON (malloc'd; NULL when out of memory). */
char *es_tok_identity_text(const tok_model *m);
/* 1 when text[0..n) is such an object (what a cost table may record). */
int es_tok_identity_check(const char *text, size_t n);

/* The "text_tokens" object: {"tokenizer": tokenizer (stolen; NULL: parsed from
 * table_tokenizer, the table's record, or null), "count": "text_tokens" or
 * "text_len", "rows_counted", "rows_without", "note" (when rows lack counts)}. */
json_t *es_token_report(const es_cost_model *m, const es_token_gap_counts *g, const char *note,
                        json_t *tokenizer, const char *table_tokenizer);

#endif
