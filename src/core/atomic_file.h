/* Outputs are written to a temporary name in the destination's folder and renamed
 * into place: an interrupted run leaves the previous file intact,
 * and readers never see a half-written one.
 *
 * What is at the destination decides how (docs/RELIABILITY.md):
 *   "-"                     standard output, written through;
 *   nothing, a regular file temporary file beside it, renamed over it;
 *   a symbolic link         the same, beside the file the link resolves to: the
 *                           target is replaced and the link kept (a dangling
 *                           link is refused);
 *   anything else (device, FIFO, /dev/stdout)
 *                           opened and written through, never replaced. */
#ifndef ES_ATOMIC_FILE_H
#define ES_ATOMIC_FILE_H

#include <stdio.h>
#include <sys/types.h>

#include "core/context.h"

typedef struct es_atomic_file {
    FILE *fp;          /* write here */
    char *final_path;  /* as given, for messages */
    char *target_path; /* what is renamed over (the link's target for a symlink) */
    char *temp_path;   /* NULL when written through (stdout, a device, a FIFO) */
    int slot;          /* es_temporary_add's (removed on SIGINT/SIGTERM), or -1 */
} es_atomic_file;

/* Creates "<target>.tmp.XXXXXX" beside the target (mode 0666 & ~umask), or opens
 * the destination for writing through as described above. */
int es_atomic_open(es_context *ctx, es_atomic_file *f, const char *path);
/* Flushes, fsyncs and renames over the target; on any failure removes the
 * temporary file and reports. Always releases f. */
int es_atomic_commit(es_context *ctx, es_atomic_file *f);
/* Removes the temporary file; the final path is untouched. */
void es_atomic_abort(es_atomic_file *f);

/* The process's umask, read without changing it (/proc/self/status; the
 * umask(2) round trip only where that is missing). */
mode_t es_current_umask(void);

#endif
