/* Manifests: inputs that list audio files instead of holding them — WeNet raw
 * lists (JSON lines) and Kaldi data directories. They are parsed whole (they are
 * small next to the audio), then their items are measured in parallel chunks:
 * each item is one audio file to probe.
 *
 * Invariants: items are in manifest order; every string points into `strings`
 * or is a literal; an item with `problem` set is reported instead of measured. */
#ifndef ES_MANIFEST_H
#define ES_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "core/path.h"
#include "core/strbuf.h"
#include "readers/reader.h"

typedef struct es_manifest_item {
    const char *key;
    const char *audio;    /* audio path as written (resolved against root later) */
    const char *spk;      /* "" when unknown */
    const char *problem;  /* non-NULL: why this item cannot be measured */
    uint64_t pos;         /* line (raw list) or entry (Kaldi) index, from 0 */
    uint32_t text_len;
    const char *text;     /* the transcript as the loader keeps it (text_bytes bytes) */
    uint32_t text_bytes;
    int has_text;
    int has_segment;
    double start, end;    /* seconds; end < 0 = to the end of the audio */
} es_manifest_item;

typedef struct es_manifest {
    const char *file;     /* what errors name: the list file or Kaldi dir */
    const char *shard;    /* the table's `shard` for these rows */
    const char *pos_label; /* how errors name an item: "line" (raw list, 1-based)
                              or "entry" (Kaldi, 0-based like `pos`) */
    unsigned pos_base;
    es_manifest_item *items;
    size_t n, cap;
    es_arena strings;
} es_manifest;

/* A manifest format, detected by content like the shard readers (reader.h):
 * a const table listed in manifest_registry.c, each `bid` scoring an input
 * that is a directory (is_dir, head NULL) or a text file no shard reader took
 * (head: its first bytes, n >= 1). A text file no manifest bids on is a shard
 * list (measure/work_units.c). */
typedef struct es_manifest_ops {
    const char *name;
    int (*bid)(int is_dir, const uint8_t *head, size_t n);
    int (*parse)(es_context *ctx, const char *path, es_manifest **out);
} es_manifest_ops;

/* The manifest format for an input, or NULL when none bids. */
const es_manifest_ops *es_manifest_for(int is_dir, const uint8_t *head, size_t n);

extern const es_manifest_ops es_manifest_rawlist; /* reader_rawlist.c */
extern const es_manifest_ops es_manifest_kaldi;   /* reader_kaldi.c */

/* Parsers: on success *out owns a manifest. A line that cannot become an item
 * (bad JSON, missing field) still becomes an item, with `problem` set, so
 * --on-error skip can leave out just that line. */
int es_rawlist_parse(es_context *ctx, const char *path, es_manifest **out);
int es_kaldi_parse(es_context *ctx, const char *dir, es_manifest **out);

/* Probes item i's audio (path resolved against root when relative; root may be
 * NULL) and fills *row, whose strings point into the manifest. Returns
 * ES_NEXT_RECORD, or ES_NEXT_BAD with the message in ctx. */
int es_manifest_measure(es_context *ctx, const es_manifest *m, size_t i, const char *root,
                        const es_reader_opts *opts, es_cost_row *row);

/* Helpers for the parsers. */
es_manifest *es_manifest_new(const char *file);
/* Appends a zeroed item; NULL when out of memory. */
es_manifest_item *es_manifest_add(es_manifest *m);
const char *es_manifest_strdup(es_manifest *m, const char *s, size_t n);
void es_manifest_free(es_manifest *m);


#endif
