/* Files equishard keeps for itself (the tokenizer cache) in a folder that may be
 * shared: a team cache, /tmp, a home folder reached through sudo. Whoever else
 * can write that folder can plant a symbolic link, a FIFO, a hard link or a
 * forged file at the name we will use, so every step goes through a folder
 * descriptor checked once, never through the name again:
 *
 *   the folder   owned by the effective user and writable by nobody else, or
 *                the user's own sticky folder (others may add names there but
 *                can neither remove nor rename ours); anything else is not used;
 *   reading      O_NOFOLLOW | O_NONBLOCK, then the open file must be a regular
 *                file owned by the user and writable by nobody else: a link, a
 *                FIFO, a device or another user's file is a miss, and never
 *                blocks;
 *   writing      a new file created with O_EXCL | O_NOFOLLOW under a random
 *                name in that folder, then renamed onto the name: the rename
 *                replaces whatever sits there (a link is replaced, its target
 *                untouched) and readers see the old file or the new, whole.
 *
 * docs/RELIABILITY.md lists the rule and its tests (tests/cli/test_cli_private.sh). */
#ifndef ES_PRIVATE_DIR_H
#define ES_PRIVATE_DIR_H

#include <stddef.h>
#include <sys/stat.h>

/* Opens the folder at path (a descriptor, O_DIRECTORY), creating it and any
 * missing parents with mode 0700 when create is set. -1 with errno set when it
 * cannot be opened, or EPERM when it fails the ownership rule above. */
int es_private_dir_open(const char *path, int create);

/* 1 when st (a folder's) passes the rule above for the effective user. */
int es_private_dir_ok(const struct stat *st);

/* Opens name inside dirfd for reading: a descriptor, or -1 (errno ELOOP for a
 * link, EPERM for a file the rule refuses). st receives its fstat. */
int es_private_file_open(int dirfd, const char *name, struct stat *st);

/* Writes data as the new content of name inside dirfd (dir_path names the
 * folder, for the signal-time clean-up of the temporary file): 0, or -1 with
 * errno set and nothing left behind. The file's mode is 0600. */
int es_private_file_replace(int dirfd, const char *dir_path, const char *name,
                            const void *data, size_t len);

#endif
