/* The xxh3-64 of input files that were already read whole, so that plan.json's
 * "inputs" digests (write/plan_json.c) need not read them a second time.
 *
 * A reader that streams a regular file front to back (the cost-table reader)
 * hashes the bytes as they pass and, when it has read them all and the file's
 * identity did not change meanwhile, remembers the digest under that identity:
 * device, inode, size, modification and change times (to the nanosecond). A
 * later lookup with a fresh stat() of the path finds it only if all of them
 * are still the same; anything else (another file, a file rewritten or touched
 * since) is hashed from disk as before. At 50 M rows the table is 5.7 GB: the
 * second read was about a second of `plan`'s serial write phase.
 *
 * Process-wide, a few entries, thread-safe. */
#ifndef ES_FILE_DIGEST_H
#define ES_FILE_DIGEST_H

#include <stdint.h>
#include <sys/stat.h>

/* Remembers digest for the file `st` describes (replacing an older entry for
 * the same device and inode). */
void es_file_digest_remember(const struct stat *st, uint64_t digest);

/* 1 and *digest when a digest was remembered for exactly this identity, else 0. */
int es_file_digest_recall(const struct stat *st, uint64_t *digest);

/* Whether two stat results describe the same unchanged file (the identity above). */
int es_file_same_identity(const struct stat *a, const struct stat *b);

#endif
