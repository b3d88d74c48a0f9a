/* Fuzzes the loaded-tokenizer cache's reader (src/text/tok_cache.c) with
 * arbitrary bodies: the harness puts a valid header (magic, version, the
 * body's checksum) in front, since a checksum failure would stop every input
 * at the door. Whatever the body says, tok_cache_parse either refuses it or
 * gives a model that encodes text without a crash, a hang (a merge table with
 * no empty slot would loop) or a leak. Seeds: corpus/tok_cache/ (the body of
 * a small byte-level model's cache, as tok_cache_serialize writes it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok_cache.h"
#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t header = tok_cache_seal(NULL, 0);
    unsigned char *file = aligned_alloc(16, (header + size + 15) / 16 * 16);
    if (!file)
        return 0;
    if (size)
        memcpy(file + header, data, size);
    tok_cache_seal(file, header + size);
    es_tokenizer *t = calloc(1, sizeof *t);
    tok_sources src = {{NULL}, 0, {{0}}};
    if (t && tok_cache_parse(&t->m, &src, file, header + size) == 0 &&
        tok_add_specials(NULL, &t->m, "cosyvoice3") == ES_OK) {
        static const char text[] = "the tree, 12 [breath] <|endoftext|> Ünïcode 世界";
        const uint32_t *ids;
        size_t n;
        es_tokenizer_encode(NULL, t, text, sizeof text - 1, &ids, &n);
        es_tokenizer_encode(NULL, t, (const char *)data, size, &ids, &n);
    }
    if (t) {
        t->m.merges = (tok_merges){0}; /* points into file */
        es_tokenizer_free(t);
    }
    free(file);
    return 0;
}
