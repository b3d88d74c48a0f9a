/* Shard readers: one file per container format, each a const table of callbacks
 * listed in reader_registry.c, so a new format touches no other reader. A reader
 * turns one shard into a stream of utterance records: open, next, next, …, close.
 *
 * Detection is by content: the registry asks every reader to `bid` on the first
 * bytes of the file and opens it with the highest bidder. CosyVoice names its
 * parquet files `parquet_000000000.tar`; a name proves nothing.
 *
 * Manifests that list audio files (WeNet raw lists, Kaldi directories) are not
 * shards in this sense; they are parsed into items (manifest.h) and measured in
 * parallel chunks. */
#ifndef ES_READER_H
#define ES_READER_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "equishard/equishard.h"

/* What every reader needs to know about the run. */
typedef struct es_reader_opts {
    int hash;            /* compute xxh3-64 of every audio object */
    size_t probe_buffer; /* bytes an audio probe may buffer (libsndfile formats) */
    const struct tok_model *tok;  /* count text tokens with it, or NULL */
    struct tok_state *tok_state;  /* the measuring thread's (src/text/tok_model.h) */
    int libarchive_only; /* tar: every header through libarchive (tests compare the two) */
} es_reader_opts;

/* Sets row->text_tokens to the ids o's tokenizer gives s[0..n) (as the loader
 * keeps the transcript), or 0 (unknown) without a tokenizer or for text that
 * is not UTF-8. */
void es_reader_text_tokens(const es_reader_opts *o, const char *s, size_t n, es_cost_row *row);

/* The transcript s[0..n) as the loader keeps it: sets ES_FLAG_TEXT, and either
 * text_len (code points) and text_tokens, or, for text that is not valid UTF-8
 * (the loaders drop such an utterance), ES_FLAG_BAD_TEXT with both 0. */
void es_reader_text(const es_reader_opts *o, const char *s, size_t n, es_cost_row *row);

typedef struct es_shard_reader es_shard_reader;

/* Results of next(). */
enum {
    ES_NEXT_END = 0,    /* no more utterances */
    ES_NEXT_RECORD = 1, /* *row holds an utterance */
    ES_NEXT_BAD = 2,    /* this utterance is unusable (message in ctx); the
                           reader can go on with the next one */
    /* negative: es_status; the shard cannot be read further (message in ctx) */
};

typedef struct es_reader_ops {
    const char *name;
    /* How well `head` (the file's first bytes, n >= 0) matches this format:
     * 0 no, higher is surer. */
    int (*bid)(const uint8_t *head, size_t n);
    /* `path` is what to open; `shard` is the name rows carry (the list entry as
     * written). Both strings outlive the reader. */
    int (*open)(es_context *ctx, const char *path, const char *shard,
                const es_reader_opts *opts, es_shard_reader **out);
    /* Fills *row; its strings stay valid until the next call or close. row->pos
     * is the utterance's ordinal in the shard. */
    int (*next)(es_context *ctx, es_shard_reader *r, es_cost_row *row);
    void (*close)(es_shard_reader *r);
} es_reader_ops;

/* Size of the head buffer the registry reads for bidding. */
#define ES_SNIFF_BYTES 512

/* The reader for a file, chosen by content. Returns NULL when none bids;
 * `head`/`n` are the file's first bytes. */
const es_reader_ops *es_reader_for(const uint8_t *head, size_t n);

/* Reads up to ES_SNIFF_BYTES of path into head; returns bytes read or -1
 * (message in ctx). */
long es_sniff_file(es_context *ctx, const char *path, uint8_t *head);

extern const es_reader_ops es_reader_tar;
extern const es_reader_ops es_reader_parquet;

#endif
