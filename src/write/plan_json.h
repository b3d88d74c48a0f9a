/* plan.json: inputs and their digests, every parameter, the metrics and the
 * per-rank/per-worker loads. Key names are a contract (docs/PLAN.md). */
#ifndef ES_PLAN_JSON_H
#define ES_PLAN_JSON_H

#include <stdio.h>

#include "core/strbuf.h"
#include "plan/plan_internal.h"

int es_plan_json_write(es_context *ctx, const es_plan *p, FILE *fp,
                       const char *const *inputs, size_t n_inputs);

/* Appends s to sb as a JSON string literal (quotes included). A byte that is
 * not part of well-formed UTF-8 is written as \udcXX (XX the byte): the
 * lone surrogate Python's json.loads reads and .encode("utf-8",
 * "surrogateescape") turns back into that byte, which is how Python's
 * tarfile and os already decode such names. */
void es_json_string(es_strbuf *sb, const char *s);

/* The same literal written at w, which has room for ES_JSON_ESCAPED_MAX(n)
 * bytes (every byte escaped as \uXXXX, and the quotes); returns its end.
 * Runs of bytes that need no escape are copied whole. */
#define ES_JSON_ESCAPED_MAX(n) (6 * (n) + 2)
char *es_json_escape(char *w, const char *s, size_t n);

#endif
