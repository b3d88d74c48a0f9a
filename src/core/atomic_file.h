/* Outputs are written to a temporary name in the destination's folder and renamed
 * into place (DESIGN.md §9): an interrupted run leaves the previous file intact,
 * and readers never see a half-written one. */
#ifndef ES_ATOMIC_FILE_H
#define ES_ATOMIC_FILE_H

#include <stdio.h>

#include "core/context.h"

typedef struct es_atomic_file {
    FILE *fp;          /* write here */
    char *final_path;
    char *temp_path;
} es_atomic_file;

/* Creates "<path>.tmp.XXXXXX" beside path. */
int es_atomic_open(es_context *ctx, es_atomic_file *f, const char *path);
/* Flushes, fsyncs and renames over the final path; on any failure removes the
 * temporary file and reports. Always releases f. */
int es_atomic_commit(es_context *ctx, es_atomic_file *f);
/* Removes the temporary file; the final path is untouched. */
void es_atomic_abort(es_atomic_file *f);

#endif
