/* What a shard format's measure stream (its table's open, next, close;
 * formats/format.h) shares with the manifests' readers: the run's options,
 * the transcript's counts, the results of next(), and the sniff of a file's
 * first bytes that formats and manifests bid on.
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

/* Size of the head buffer the registry reads for bidding. */
#define ES_SNIFF_BYTES 512

/* Reads up to ES_SNIFF_BYTES of path into head; returns bytes read or -1
 * (message in ctx). */
long es_sniff_file(es_context *ctx, const char *path, uint8_t *head);

#endif
