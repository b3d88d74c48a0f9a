/* Embedding sources: one file per format, each a const table of callbacks
 * (like the shard readers, readers/reader.h), listed in emb_registry.c, which
 * opens a source with the format that bids highest on its first bytes. A
 * source fills an empty es_emb_set (emb_set.c), the container; it never calls
 * the registry. */
#ifndef ES_EMB_SOURCE_H
#define ES_EMB_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "validate/sources/emb_set.h"

/* What es_emb_set_load_at was given, for the formats that use it. */
typedef struct es_emb_load_args {
    const char *keys_path; /* .npy: the key list (NULL: none) */
    const char *root;      /* lists of files: resolves relative paths (NULL: cwd) */
    int speakers;          /* parquet: spk_embedding instead of utt_embedding */
} es_emb_load_args;

typedef struct es_emb_source_ops {
    const char *name;
    /* How well `head` (the file's first bytes, n >= 0) matches: 0 no, higher
     * is surer (a magic number beats "any text"). */
    int (*bid)(const uint8_t *head, size_t n);
    int (*load)(es_context *ctx, const char *path, const es_emb_load_args *a, es_emb_set *out);
} es_emb_source_ops;

/* Bytes of the head the registry reads for bidding. */
#define ES_EMB_SNIFF_BYTES 512

/* The source for a head, or NULL when none bids. */
const es_emb_source_ops *es_emb_source_for(const uint8_t *head, size_t n);

extern const es_emb_source_ops es_emb_source_torch;   /* torch_zip.c: .pt zip, pickle */
extern const es_emb_source_ops es_emb_source_npy;     /* npy.c */
extern const es_emb_source_ops es_emb_source_parquet; /* parquet_source.c: file or list */

#endif
