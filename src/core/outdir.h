/* Writing a directory of outputs atomically: files go into a temporary folder
 * beside OUTDIR, which replaces OUTDIR only when everything is written
 * (renameat2 RENAME_EXCHANGE when OUTDIR exists, so readers see the old or the
 * new folder, never a mix). An interrupted run leaves the old OUTDIR intact.
 * The temporary folder is registered for es_remove_temporaries (a SIGINT or
 * SIGTERM handler removes it) and carries a marker file naming this process
 * and host until it is renamed, so that a run killed outright (SIGKILL, a node
 * lost) leaves a folder the next run to that OUTDIR recognises as ours and
 * removes (es_outdir_remove_stale). Output folders hold plain files only.
 * The folder and its files are made with 0777/0666 & ~umask. */
#ifndef ES_PLAN_OUTDIR_H
#define ES_PLAN_OUTDIR_H

#include <stdio.h>

#include "core/context.h"

typedef struct es_outdir {
    char *final_path;  /* OUTDIR as given: messages and data.list name it */
    char *target_path; /* the folder replaced: a symlink's target, else final_path */
    char *temp_path;
    int slot;          /* es_temporary_add's, -1 when not registered */
    int joined;        /* es_outdir_join: another process's folder, never removed here */
    /* es_outdir_defer_sync: files closed so far, fsync'd by es_outdir_commit */
    int defer_sync;
    char **unsynced;
    size_t n_unsynced, cap_unsynced;
} es_outdir;

/* From now on es_outdir_close starts each file's writeback without waiting for
 * it, and es_outdir_commit fsyncs them all before the folder is put in place:
 * the same promise (every file on disk before the rename), but the many small
 * files of a plan share journal commits instead of waiting for one each.
 * es_outdir_create, _close and _write_text may then run on several threads at
 * once (the list of files to fsync is locked); es_outdir_sync and _commit only
 * after those threads are done. */
void es_outdir_defer_sync(es_outdir *d);

int es_outdir_begin(es_context *ctx, es_outdir *d, const char *path);
/* Writes into the temporary folder another process began for OUTDIR `path`
 * (es_outdir_begin there; its temp_path is `folder`), for one OUTDIR written by
 * several processes. The folder must be there with its marker (on a file
 * system this process shares). A joined folder is never committed or removed
 * from here: es_outdir_abort only forgets it (a signal's es_remove_temporaries
 * does remove it: every process is ending then). */
int es_outdir_join(es_context *ctx, es_outdir *d, const char *path, const char *folder);
/* Opens a new file `name` inside the temporary folder for writing. */
FILE *es_outdir_create(es_context *ctx, es_outdir *d, const char *name);
/* Starts the writeback of what was written to fp so far, without waiting for
 * it: a file written over a long time then reaches the disk while the writer
 * computes, not all at its close. A hint: errors show at close or fsync. */
void es_outdir_write_behind(FILE *fp);
/* Closes fp, reporting write errors against `name`. */
int es_outdir_close(es_context *ctx, es_outdir *d, FILE *fp, const char *name);
/* Writes a whole file `name` from sb (an out-of-memory sb is an error). A large
 * sb whose buffer is aligned (es_strbuf.align = ES_DIRECT_ALIGN) goes around
 * the page cache (core/direct_write.h); the bytes are the same. */
struct es_strbuf;
int es_outdir_write_text(es_context *ctx, es_outdir *d, const char *name,
                         const struct es_strbuf *sb);
/* The fsync es_outdir_defer_sync left to the commit, done now for the files
 * closed so far: they are on disk when it returns ES_OK (a process that joined
 * the folder calls it before reporting its files written). */
int es_outdir_sync(es_context *ctx, es_outdir *d);
/* Puts the folder in place; on failure everything temporary is removed. */
int es_outdir_commit(es_context *ctx, es_outdir *d);
void es_outdir_abort(es_outdir *d);

#endif
