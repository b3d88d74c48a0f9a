/* The text tokenizer's model (es_tokenizer, equishard.h): Qwen2's byte-level BPE
 * as Hugging Face runs it for CosyVoice 2/3, whose filters count its tokens
 * (../shared/fixtures/tokenizers/qwen2/PROVENANCE.md). The pipeline, top-down:
 *
 *   tok_added.c   added tokens split out of the raw text (leftmost-longest)
 *   tokenizer.c   each remaining segment: UTF-8 check, then NFC
 *   tok_nfc.c     NFC as HF computes it (libutf8proc, code points newer than
 *                 Unicode 9.0 left as HF's tables leave them)
 *   tok_pretok.c  Qwen2's Split regex as a scanner over Unicode properties
 *   tok_bpe.c     bytes → ids by merge rank, with a per-word cache
 *
 * WeNet's CharTokenizer (units.txt) is another model kind: char_tok.c, used
 * in place of all of the above when m->chr is set.
 *
 * Loading: tok_load.c (vocab.json + merges.txt + tokenizer_config.json, or
 * tokenizer.json) fills the model through tok_vocab.c's maps; tok_cache.c
 * keeps the loaded model in a file so the next load is a read.
 *
 * Invariants: the model is immutable once loaded, so threads may share it;
 * everything an encode writes lives in a tok_state (one per thread). Vocab
 * strings are kept in the byte-level form the files spell them in (GPT-2's
 * bytes_to_unicode); BPE itself works on ids, starting from byte_id[]. */
#ifndef ES_TOK_MODEL_H
#define ES_TOK_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "core/strbuf.h"

#define TOK_NONE UINT32_MAX
/* How far past its entry count a vocab id may go: a BPE vocab's ids run 0..n-1
 * (Qwen2's 0..151642), and tables are sized by the largest id, so one id of
 * 2^28 would cost gigabytes (and its cache file tens of MB). */
#define TOK_ID_SLACK 65536u

/* string → id (vocab.json), used while loading only: entries in file order,
 * open addressing over entry indexes (slot = entry + 1, 0 = empty); strings
 * live in `strs`. */
typedef struct tok_vocab {
    es_arena strs;
    const char **str;  /* by entry */
    uint32_t *len;     /* by entry */
    uint32_t *id;      /* by entry; TOK_NONE once the string was given again */
    size_t n_all, cap; /* entries given, allocated */
    size_t n_entries;  /* live entries: distinct strings */
    uint32_t *by_id;   /* id → its latest entry + 1, 0 = none */
    size_t n_ids, cap_ids; /* max id + 1, allocated */
    uint32_t *slots;
    size_t mask;
} tok_vocab;

/* (left, right) → (rank, merged id). key = (left << 32 | right) + 1, 0 = empty. */
typedef struct tok_merge_slot {
    uint64_t key;
    uint32_t rank, id;
} tok_merge_slot;

typedef struct tok_merges {
    tok_merge_slot *slots;
    size_t mask, n;
    /* slots inside a mapped cache file (tok_cache.c) instead of malloc'd */
    void (*unmap)(void *, size_t);
    void *mapped;
    size_t mapped_len;
} tok_merges;

typedef struct tok_added_token {
    const char *s;     /* raw UTF-8, matched on the text before NFC */
    uint32_t len, id;
} tok_added_token;

typedef struct tok_added {
    tok_added_token *tok; /* sorted by first byte, then longest first */
    size_t n, cap;
    uint32_t first[257];  /* tok[first[b] .. first[b+1]) start with byte b */
    es_arena strs;
} tok_added;

typedef struct tok_model {
    tok_merges merges;
    tok_added added;       /* the tokenizer's own, then the recipe's specials */
    uint32_t byte_id[256]; /* id of each single byte's symbol */
    /* What adding the specials needs to know of the vocab once it is gone:
     * the vocab id of each of tok_added.c's special strings (TOK_NONE where
     * absent), and which ids the vocab holds (bitmap). */
    uint32_t *special_vocab_id;
    size_t n_special;
    uint64_t *vocab_ids;   /* tok_vocab_id_words(n_vocab_ids) words */
    size_t n_vocab_ids;    /* bits in vocab_ids: max id + 1 */
    size_t n_vocab;        /* distinct vocab strings */
    size_t vocab_size;     /* distinct ids: base vocab + added tokens outside it */
    char *path;
    char *files;           /* "vocab.json+merges.txt" or "tokenizer.json" */
    const char *specials;  /* "cosyvoice2", "cosyvoice3", "none" */
    uint64_t digest;       /* xxh3-64 of vocab.json then merges.txt, or of tokenizer.json
                              (char: of the symbol table then the non_lang_syms file) */
    struct tok_char *chr;  /* WeNet's CharTokenizer instead of the BPE above, or NULL */
    size_t n_non_lang;     /* chr: the non_lang_syms listed */
} tok_model;

/* Scratch and cache of one encoding thread. */
typedef struct tok_cache_slot {
    uint64_t hash;
    uint32_t key_off, key_len; /* in bytes */
    uint32_t ids_off, n_ids;   /* in ids; key_len 0 = empty */
} tok_cache_slot;

typedef struct tok_sym {
    uint32_t id, prev, next; /* id TOK_NONE: merged into its left neighbour */
} tok_sym;

typedef struct tok_state {
    uint32_t *ids;            /* output of the last encode */
    size_t n_ids, cap_ids;
    int32_t *cps;             /* a segment's code points after NFC */
    size_t cap_cps;
    uint32_t *off;            /* their byte offsets, where NFC changed nothing */
    size_t cap_off;
    int32_t *up;              /* char_tok.c: the text upper-cased */
    size_t cap_up;
    uint8_t *cls;             /* their classes (tok_pretok.c) */
    size_t cap_cls;
    char *piece;              /* one pre-token's UTF-8 */
    size_t cap_piece;
    /* BPE work arrays */
    tok_sym *syms;
    size_t cap_sym;
    uint64_t *heap;
    size_t cap_heap;
    /* per-word cache */
    tok_cache_slot *cache;
    size_t cache_mask, cache_n;
    char *cache_keys;
    size_t cache_keys_len, cache_keys_cap;
    uint32_t *cache_ids;
    size_t cache_ids_len, cache_ids_cap;
} tok_state;

/* Words of the vocab-id bitmap for ids below n_ids (one spare, so an empty
 * vocab still has one): the loader allocates it, the cache writes and reads it. */
static inline size_t tok_vocab_id_words(size_t n_ids) { return (n_ids + 63) / 64 + 1; }

/* tok_vocab.c */
int tok_vocab_reserve(tok_vocab *v, size_t n); /* room for n strings (it grows past) */
int tok_vocab_put(tok_vocab *v, const char *s, size_t n, uint32_t id);
uint32_t tok_vocab_get(const tok_vocab *v, const char *s, size_t n);
/* Is id's latest string a followed by b? (merges.txt: the merged token is
 * usually the next id; one comparison spares a lookup.) */
int tok_vocab_is(const tok_vocab *v, uint32_t id, const char *a, size_t na, const char *b,
                 size_t nb);
void tok_vocab_release(tok_vocab *v);
size_t tok_merges_capacity(size_t n); /* slots for n merges (a power of two) */
int tok_merges_reserve(tok_merges *m, size_t n);
void tok_merges_put(tok_merges *m, uint32_t left, uint32_t right, uint32_t rank, uint32_t id);
const tok_merge_slot *tok_merges_get(const tok_merges *m, uint32_t left, uint32_t right);
void tok_merges_release(tok_merges *m);
/* GPT-2's bytes_to_unicode: the code point byte b is spelled with. */
uint32_t tok_byte_char(unsigned b);

/* tok_added.c */
int tok_added_add(tok_added *a, const char *s, size_t n, uint32_t id);
void tok_added_finish(tok_added *a);
/* Longest added token starting at text[i], or NULL. */
const tok_added_token *tok_added_match(const tok_added *a, const char *text, size_t n, size_t i);
uint32_t tok_added_find(const tok_added *a, const char *s, size_t n);
void tok_added_release(tok_added *a);
/* Adds the recipe's specials ("cosyvoice2", "cosyvoice3", "none") after the
 * tokenizer's own added tokens, with the ids HF's add_special_tokens gives. */
int tok_add_specials(es_context *ctx, tok_model *m, const char *which);
/* Looks the specials' strings up in the vocab, for tok_add_specials once the
 * vocab is gone. */
int tok_specials_resolve(tok_model *m, const tok_vocab *v);
/* Changes when that list does (tok_cache.c keeps special ids by position). */
uint64_t tok_specials_digest(void);

/* tok_nfc.c: st->cps = the NFC of text[0..n) (valid UTF-8) as HF's normalizer
 * computes it; the count, or -1 when out of memory. */
long tok_nfc(tok_state *st, const char *text, size_t n);

/* tok_pretok.c: classes and the Qwen2 split. */
enum { TOK_L = 1, TOK_N = 2, TOK_WS = 4, TOK_CRLF = 8 };
uint8_t tok_class(int32_t cp);
/* End (exclusive) of the pre-token that starts at i (i < n). */
size_t tok_pretok_next(const int32_t *cp, const uint8_t *cls, size_t i, size_t n);

/* tok_bpe.c: appends the ids of one pre-token's bytes to st->ids. */
int tok_bpe_word(const tok_model *m, tok_state *st, const char *w, size_t n);
void tok_state_release(tok_state *st);

/* tok_load.c */
int tok_model_load(es_context *ctx, tok_model *m, const char *path);
/* The same from memory (tests, fuzzers): config may be NULL. */
int tok_model_from_memory(es_context *ctx, tok_model *m, const char *vocab_json, size_t vlen,
                          const char *merges_txt, size_t mlen, const char *config_json,
                          size_t clen);
void tok_model_release(tok_model *m);

/* char_tok.c: WeNet's CharTokenizer (symbol table, optional non_lang_syms
 * file, split_with_space); fills m->chr, path, files, digest, vocab_size. */
typedef struct tok_char tok_char;
int tok_char_load(es_context *ctx, tok_model *m, const char *symbol_table,
                  const char *non_lang_syms, int split_with_space);
int tok_char_encode(es_context *ctx, const tok_char *c, tok_state *st, const char *text, size_t n);
const char *tok_char_kind(const tok_char *c);
void tok_char_free(tok_char *c);
/* Python's str.isspace() for one code point (bidi WS, B, S or category Zs). */
int tok_py_space(int32_t c);

/* tokenizer.c: the whole pipeline; ids land in st->ids / st->n_ids.
 * ES_ERR_FORMAT for text that is not UTF-8 (message names the byte offset). */
int tok_encode(es_context *ctx, const tok_model *m, tok_state *st, const char *text, size_t n);

/* A whole regular file into a NUL-terminated malloc'd buffer (*len bytes
 * before the NUL); ES_ERR_IO / ES_ERR_NOMEM name the file. Shared by the BPE
 * and the symbol-table loaders. */
int tok_read_file(es_context *ctx, const char *path, char **data, size_t *len);

#endif
