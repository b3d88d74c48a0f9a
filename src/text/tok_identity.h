/* The tokenizer's identity, as measure records it in a cost table's
 * "# tokenizer:" line (docs/COST_TABLE.md). */
#ifndef ES_TOK_IDENTITY_H
#define ES_TOK_IDENTITY_H

#include <jansson.h>

#include "text/tok_model.h"

/* {"kind", "path", "files", "vocab_size", "specials", "digest": "xxh3-64:…"};
 * path and files are es_json_bytes strings (their bytes as they are, UTF-8 or
 * not). NULL when out of memory. */
json_t *es_tok_identity(const tok_model *m);
/* The same as one line of compact JSON written by es_json_dump (bytes that are
 * not UTF-8 as \udcXX; malloc'd; NULL when out of memory). */
char *es_tok_identity_text(const tok_model *m);

#endif
