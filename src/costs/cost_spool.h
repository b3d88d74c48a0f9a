/* The rows a cost_stream holds back while its header is undecided
 * (cost_stream.h): formatted with every column (stat columns and text_tokens)
 * into an unnamed temporary file, then copied to the output with the columns
 * that did not appear cut out. Rows are escaped TSV, so a TAB always ends a
 * field and the cut needs no parsing beyond counting them. */
#ifndef ES_COST_SPOOL_H
#define ES_COST_SPOOL_H

#include "costs/table_writer.h"

typedef struct es_cost_spool {
    es_table_writer w; /* w.file.fp: the tmpfile(); NULL until the first row */
    size_t rows;
} es_cost_spool;

/* Appends t's rows with every column; opens the temporary file on first use. */
int es_cost_spool_put(es_context *ctx, es_cost_spool *sp, const es_cost_table *t);

/* Copies the spooled rows into out, dropping the stat columns (!stats) and the
 * text_tokens column (!tokens); then releases the spool. Nothing to do when
 * nothing was spooled. */
int es_cost_spool_drain(es_cost_spool *sp, es_table_writer *out, int stats, int tokens);

/* Releases the spool without copying it (closing the file removes it). */
void es_cost_spool_release(es_cost_spool *sp);

#endif
