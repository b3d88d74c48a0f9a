/* A cost table written as its rows arrive (`equishard measure -o FILE`), so
 * that no more than the rows of a few units is ever in memory. The file is
 * byte for byte what es_cost_table_write gives for the table of all rows put,
 * in order: same header, same columns, same zstd frame; written to a temporary
 * name and renamed into place by es_cost_stream_commit only.
 *
 * Two columns depend on every row (cost_table_write.c): the shard stat columns
 * (when any table put knows a shard's stat) and text_tokens (when any row has
 * text_tokens > 0). The caller says which may appear at all (`may`); a column
 * that may appear but has not yet is undecided, and rows put while a column is
 * undecided go to a spool file (tmpfile(), formatted with every column) that is
 * copied, minus the columns that did not appear, once the header is known.
 * Measure decides both at its first unit in the usual cases (a shard list: its
 * first shard's stat; a tokenizer: the first transcript), so the spool is only
 * used for odd inputs (a tokenizer over rows without text, list entries before
 * the first shard). */
#ifndef ES_COST_STREAM_H
#define ES_COST_STREAM_H

#include "costs/cost_table.h"

typedef struct es_cost_stream es_cost_stream;

enum {
    ES_STREAM_MAY_STATS = 1,  /* some table put may know shard stats */
    ES_STREAM_MAY_TOKENS = 2, /* some row may have text_tokens > 0 */
};

/* Opens the temporary file beside path (as es_cost_table_write; zstd when path
 * ends in ".zst"). `tokenizer` (copied; may be NULL) is the "# tokenizer:"
 * line's JSON, written when the text_tokens column is. Errors, now and in the
 * calls below, go to ctx, which must outlive the stream. */
int es_cost_stream_open(es_context *ctx, const char *path, unsigned may, const char *tokenizer,
                        es_cost_stream **out);

/* Appends t's rows (t's shard stats give their stat columns). t is not kept. */
int es_cost_stream_put(es_cost_stream *s, const es_cost_table *t);

/* Finishes the file and renames it into place; frees s in any case. */
int es_cost_stream_commit(es_cost_stream *s);

/* Removes the temporary file (the final path untouched) and frees s; NULL is fine. */
void es_cost_stream_abort(es_cost_stream *s);

#endif
