/* The loaded-tokenizer cache (tok_cache.c): a BPE model saved after a full
 * load and mapped back on the next load of the same, unchanged files. */
#ifndef ES_TOK_CACHE_H
#define ES_TOK_CACHE_H

#include "core/strbuf.h"
#include "text/tok_model.h"

/* The files a load reads (tok_load.c chooses them): tokenizer.json alone, or
 * vocab.json, merges.txt and tokenizer_config.json (which may be absent). */
typedef struct tok_file_stat {
    uint64_t dev, ino, size;
    int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
    uint64_t present; /* 0: absent (all zero) */
} tok_file_stat;

typedef struct tok_sources {
    const char *file[3];
    size_t n;
    tok_file_stat before[3]; /* as they were when loading began */
} tok_sources;

/* Records src's files' stats (call before reading them). */
void tok_sources_stat(tok_sources *src);
/* Fills m (its path already set) from the cache when the cache holds these
 * very files: 0. Otherwise -1 and m is as it was. */
int tok_cache_load(tok_model *m, const tok_sources *src);
/* Saves m, just loaded from src, for the next load, unless a file changed
 * while it loaded; best effort, silent. */
void tok_cache_store(const tok_model *m, const tok_sources *src);

/* The file's bytes for m (header and body) into *out: 0, or -1 (out of
 * memory, or a source changed since tok_sources_stat). */
int tok_cache_serialize(const tok_model *m, const tok_sources *src, es_strbuf *out);
/* Writes the header of a cache file of len bytes whose body (all after the
 * header) is in place; returns the header's size (also for file NULL). */
size_t tok_cache_seal(void *file, size_t len);
/* Reads a cache file's bytes (16-byte aligned; they must outlive m, whose
 * merge table points into them): 0 and m filled, or -1 and m as it was. */
int tok_cache_parse(tok_model *m, const tok_sources *src, const void *data, size_t len);

#endif
