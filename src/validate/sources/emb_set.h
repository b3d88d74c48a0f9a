/* An embedding set: keyed vectors as a source holds them, before validation.
 *
 * Entries keep the source's order; entry i is vals[off[i] .. off[i] + len[i]),
 * so vectors of different lengths (a wrong dimension) are representable.
 * Invariants: keys[i] is never NULL and unique (index finds it); spk is NULL or
 * has n entries (a parquet utt_embedding source knows each row's speaker);
 * absent[] lists keys the source names without a vector (a null parquet list). */
#ifndef ES_EMB_SET_H
#define ES_EMB_SET_H

#include <stddef.h>
#include <stdint.h>

#include "core/byte_stream.h"
#include "core/context.h"
#include "core/strmap.h"

typedef struct es_emb_set {
    char *name;           /* the source path, for messages */
    size_t n, cap;
    const char **keys;    /* in index's arena */
    const char **spk;     /* NULL, or speaker per entry (in `strings`) */
    size_t *off;
    uint32_t *len;
    float *vals;
    size_t n_vals, cap_vals;
    const char **absent;  /* keys without a vector */
    size_t n_absent, cap_absent;
    es_strmap index;      /* key → entry + 1 */
    es_arena strings;
    unsigned char no_huge; /* the loading context's huge_pages setting off */
    size_t max_vals;      /* 0, or a cap on values (fuzzers: decompression bombs) */
    uint64_t max_bytes;   /* 0, or a cap on the bytes the unpickler reads */
    int lengths_only;     /* es_emb_set_push counts values without storing them:
                             entries keep off/len, vals stays NULL (speech
                             tokens, where only the lengths matter) */
    int has_ints;         /* a torch dict held integers (token lists) */
    int has_floats;
    /* NULL, or told the bytes of the source file read so far, every
     * ES_EMB_PROGRESS_BYTES or so (es_emb_set_progress; es_validate's line) */
    void (*progress)(void *user, uint64_t bytes);
    void *progress_user;
} es_emb_set;

#define ES_EMB_PROGRESS_BYTES (4u << 20)

/* Calls s->progress with `bytes` when `bytes` and `before` (what was read before
 * the last read) lie in different ES_EMB_PROGRESS_BYTES blocks: a large file's
 * reader calls it after each read, at no cost between blocks. */
static inline void es_emb_set_progress(const es_emb_set *s, uint64_t before, uint64_t bytes)
{
    if (s->progress && before / ES_EMB_PROGRESS_BYTES != bytes / ES_EMB_PROGRESS_BYTES)
        s->progress(s->progress_user, bytes);
}

/* Copies s[0..n) (or up to its NUL when n is SIZE_MAX) into out for a one-line
 * message: control bytes become '?', long text is cut with "...". Returns out. */
const char *es_printable(char *out, size_t cap, const char *s, size_t n);

/* Loads a source, detected by content (emb_registry.c, emb_source.h): a torch
 * .pt (zip) or plain pickle, a .npy (keys from keys_path, one per line), a
 * CosyVoice parquet file or a list of them (column spk_embedding when `speakers`, else utt_embedding). */
int es_emb_set_load(es_context *ctx, const char *path, const char *keys_path, int speakers,
                    es_emb_set **out);
/* es_emb_set_load with relative paths inside a list of parquet files resolved
 * against root (NULL: the current directory). */
int es_emb_set_load_at(es_context *ctx, const char *path, const char *keys_path, const char *root,
                       int speakers, es_emb_set **out);
/* es_emb_set_load_at with the set's progress hook set (NULL: none) before the
 * source fills it: a .pt's pickle and a .npy's values report as they are read. */
int es_emb_set_load_watched(es_context *ctx, const char *path, const char *keys_path,
                            const char *root, int speakers, void (*progress)(void *, uint64_t),
                            void *progress_user, es_emb_set **out);
es_emb_set *es_emb_set_new(const char *name);
void es_emb_set_free(es_emb_set *s);
/* Entry index of key, or -1. */
ptrdiff_t es_emb_set_find(const es_emb_set *s, const char *key);

/* Building (the readers): add an entry whose vector is the values appended
 * since the last entry (es_emb_set_push). Return ES_OK or ES_ERR_NOMEM; a
 * duplicate key is ES_ERR_FORMAT with a message naming it. */
int es_emb_set_push(es_emb_set *s, float v);
/* Room for `extra` more values without reallocating (ES_ERR_NOMEM if not). */
int es_emb_set_reserve(es_emb_set *s, size_t extra);
/* Advice, for a reader that knows how many values are coming (at most n): their
 * room taken at once, on huge pages (core/prefault.h), so the array is neither
 * copied as it grows nor faulted in 4 KiB at a time. Does nothing for n == 0,
 * for a set that only counts (vals stays NULL), or when memory is short (the
 * values then grow the array as they come). */
void es_emb_set_expect(es_emb_set *s, size_t n);
int es_emb_set_add(es_context *ctx, es_emb_set *s, const char *key, size_t klen, size_t off,
                   uint32_t len);
/* es_emb_set_add without a message: ES_ERR_FORMAT for a duplicate key (the set
 * unchanged), ES_ERR_NOMEM, or ES_OK; for readers that name the line. */
int es_emb_set_try_add(es_emb_set *s, const char *key, size_t klen, size_t off, uint32_t len);
int es_emb_set_add_absent(es_emb_set *s, const char *key);

/* Readers, each filling an empty set (sources/). */
int es_torch_load(es_context *ctx, const char *path, es_emb_set *out);
int es_torch_load_memory(es_context *ctx, const char *name, const void *data, size_t len,
                         es_emb_set *out);
/* The unpickler: a pickled dict of str → list of numbers from a byte stream.
 * file_size: when the stream decompresses a zip member, the size of the file it
 * is in (the pickle may decode to at most 64 times that, + 64 MiB); else 0. */
int es_unpickle_dict(es_context *ctx, const char *name, es_byte_stream *in, uint64_t file_size,
                     es_emb_set *out);

/* .npy: the header and the matrix, converted to float. */
typedef struct es_npy_info {
    size_t rows, cols;  /* a 1-D array is one row */
    int ndim;
    char descr[8];      /* '<f4', '<f8', '<f2' (or big-endian '>') */
} es_npy_info;
int es_npy_read(es_context *ctx, const char *name, es_byte_stream *in, es_npy_info *info,
                es_emb_set *out);
int es_npy_load(es_context *ctx, const char *path, const char *keys_path, es_emb_set *out);

/* Key lists and Kaldi utt2spk: the first field of every non-blank line. */
int es_key_list_read(es_context *ctx, const char *path, es_emb_set *set, size_t n_rows,
                     size_t row_len);
typedef struct es_utt2spk {
    es_strmap map;        /* utt → speaker (const char *, in strings) */
    const char **utts;    /* in file order */
    size_t n, cap;
    es_arena strings;
} es_utt2spk;
int es_utt2spk_read(es_context *ctx, const char *path, es_utt2spk *out);
void es_utt2spk_release(es_utt2spk *u);
const char *es_utt2spk_get(const es_utt2spk *u, const char *utt);

/* CosyVoice parquet shards (one file, or a list of files one per line). */
int es_parquet_emb_load(es_context *ctx, const char *path, const char *root, int speakers,
                        es_emb_set *out);

#endif
