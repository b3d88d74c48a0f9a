/* The tar side of reshard: libarchive writers with deterministic metadata, and
 * the read-back check of a written shard.
 *
 * Every member is written as a regular file with mode 0644, mtime 0, uid/gid 0
 * and empty user/group names, in pax-restricted format (plain ustar headers
 * unless a name or size needs a pax extension, as Python's tarfile does).
 * Filters: none, gzip (level 6, no timestamp) or zstd (level 3). Same members,
 * same bytes, in any run.
 *
 * A digest is a running hash over the members in order: each member's name,
 * size and xxh3-64 of its bytes. Two shards with equal digests and member
 * counts hold the same members in the same order. */
#ifndef ES_RESHARD_TAR_H
#define ES_RESHARD_TAR_H

#include <archive.h>
#include <stdint.h>
#include <stdio.h>
#include <xxhash.h>

#include "core/context.h"

typedef struct reshard_digest {
    uint64_t chain;
    uint64_t members;
    uint64_t bytes;
} reshard_digest;

void reshard_digest_add(reshard_digest *d, const char *name, uint64_t size, uint64_t hash);

/* The cause of a writer's failure: strerror of archive_errno when it has one
 * ("No space left on device" where libarchive says "Write error"), else
 * libarchive's message; never NULL. */
const char *reshard_writer_error(struct archive *a);

/* A writer onto fp (which the caller closes after reshard_writer_close).
 * `label` names the shard in messages (OUTDIR/NAME). NULL on failure (message in ctx). */
struct archive *reshard_writer_open(es_context *ctx, FILE *fp, es_compress c, const char *label);

/* Finishes the archive and frees the writer (a may be NULL). */
int reshard_writer_close(es_context *ctx, struct archive *a, const char *label);

/* libarchive's output block for each new shard: large writes, few system
 * calls. 100 tar records of 10240 bytes, so that a plain tar, padded to a
 * whole record at its end, comes out as it did with 10240-byte blocks. */
#define RESHARD_WRITE_BUFFER ((size_t)100 * 10240)

/* A member's data from `a` as libarchive's own blocks (no copy), each hashed
 * into st, counted into *size and given to sink (if any; nonzero stops); a
 * sparse member's holes come as zeros from `zeros`. 0, or -1 on a read error
 * or when sink stopped. */
int reshard_read_blocks(struct archive *a, void *zeros, size_t zeros_size, XXH3_state_t *st,
                        uint64_t *size, int (*sink)(void *, const void *, size_t), void *arg);

/* n bytes at data, as reshard_read_blocks treats each block: hashed into st,
 * counted into *size, given to sink (if any). 0, or -1 when sink stopped. */
int reshard_hash_bytes(XXH3_state_t *st, const void *data, size_t n, uint64_t *size,
                       int (*sink)(void *, const void *, size_t), void *arg);

/* Memory one open writer needs, roughly (compressor state and buffers). */
size_t reshard_writer_memory(es_compress c);

/* The name of a source member as libarchive reports it (NULL when it has none
 * in any form). */
const char *reshard_entry_name(struct archive_entry *e);

/* Reads the shard at path back (any filter) and compares its members with
 * `want`; also checks that the filter is the one written. buf is scratch space. */
int reshard_verify(es_context *ctx, const char *path, const char *label, es_compress c,
                   const reshard_digest *want, void *buf, size_t buf_size);

#endif
