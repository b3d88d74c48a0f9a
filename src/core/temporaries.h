/* The temporary outputs this process is writing (an OUTDIR's temporary folder,
 * an -o FILE's FILE.tmp.XXXXXX), so that es_remove_temporaries can remove them
 * from a SIGINT/SIGTERM handler (none is left behind). A fixed table of paths: the
 * handler allocates nothing and never sees a half-written entry. */
#ifndef ES_TEMPORARIES_H
#define ES_TEMPORARIES_H

#include <signal.h>

/* Registers path (a file, or a folder of plain files when is_dir). Returns its
 * slot for es_temporary_drop, or -1 when the table is full or the path too
 * long: that one is then not removed on a signal. */
int es_temporary_add(const char *path, int is_dir);

/* Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (the previous mask
 * into *old) until es_temporary_unblock: a signal between creating a temporary
 * and es_temporary_add would leave it behind, since the handler cannot know it
 * yet. Pending signals are delivered at the unblock, when it is registered. */
void es_temporary_block(sigset_t *old);
void es_temporary_unblock(const sigset_t *old);

/* Forgets slot (-1: nothing); call it once the path is renamed or removed. */
void es_temporary_drop(int slot);


#endif
