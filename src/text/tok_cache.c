/* A loaded BPE tokenizer kept in a file, so that the next load of the same
 * files is one read instead of parsing 4.7 MB and building two hash tables
 * (Qwen2: 60–100 ms, most of it first touches of fresh memory; from the cache
 * about a millisecond). `measure --tokenizer` on a corpus of thousands of
 * utterances would otherwise spend more on the load than on the texts.
 *
 * Where: $EQUISHARD_CACHE_DIR, else $XDG_CACHE_HOME/equishard, else
 * ~/.cache/equishard; EQUISHARD_CACHE_DIR=off (or empty) turns it off. One
 * file per tokenizer location: tokenizer-<xxh3 of its real path>.bin.
 *
 * When it is used: only when every source file (the ones the load would read,
 * chosen as the load chooses them) has the device, inode, size, mtime and
 * ctime recorded in the cache; any change is a miss and the cache is
 * rewritten after the full load. A file that is unreadable, truncated, of
 * another version or fails its checksum is a miss too: the cache can make a
 * load faster, never different (tests/test_text.c compares ids both ways).
 *
 * What: exactly what encoding uses (tok_model.h): byte ids, the merge table
 * as it sits in memory (mapped, not copied), the tokenizer's own added tokens
 * in file order, the vocab facts adding specials needs, digest and files.
 * Native byte order and layout; the header says which, so another machine's
 * file is a miss. Written atomically (temporary name, rename), so processes
 * loading one tokenizer at once (DataLoader workers, ranks) never see half a
 * file. Any failure to write is silent: it is a cache.
 *
 * Whose: the folder is often shared (a team cache, /tmp, root's sudo with a
 * user's HOME), so it is used only when it is the user's alone, and only the
 * user's own files in it are read (core/private_dir.h): a checksum proves a
 * file whole, not who wrote it, and another user could re-seal a forged one. */
#include "text/tok_cache.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/private_dir.h"
#include "core/strbuf.h"

#define CACHE_MAGIC "ESTOKC\r\n"
#define CACHE_VERSION 1u

typedef struct cache_header {
    char magic[8];
    uint32_t version, byte_order; /* 0x01020304 as written */
    uint32_t sizes;               /* sizeof(size_t) << 16 | sizeof(tok_merge_slot) */
    uint32_t pad;
    uint64_t body_len, body_hash; /* xxh3-64 of the body */
} cache_header;

static tok_file_stat stat_of(const char *file)
{
    tok_file_stat c = {0};
    struct stat st;
    if (file && stat(file, &st) == 0)
        c = (tok_file_stat){(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
                            st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_ctim.tv_sec,
                            st.st_ctim.tv_nsec, 1};
    return c;
}

void tok_sources_stat(tok_sources *src)
{
    for (size_t i = 0; i < src->n; i++)
        src->before[i] = stat_of(src->file[i]);
}

/* The cache folder (base, PATH_MAX bytes) and the file's name in it (name,
 * NAME_MAX + 1 bytes) for a tokenizer at `path`: 0, or -1 (cache off). */
static int cache_location(const char *path, char *base, char *name)
{
    const char *dir = getenv("EQUISHARD_CACHE_DIR");
    int n;
    if (dir) {
        if (!*dir || strcmp(dir, "off") == 0)
            return -1;
        n = snprintf(base, PATH_MAX, "%s", dir);
    } else if ((dir = getenv("XDG_CACHE_HOME")) && *dir) {
        n = snprintf(base, PATH_MAX, "%s/equishard", dir);
    } else if ((dir = getenv("HOME")) && *dir) {
        n = snprintf(base, PATH_MAX, "%s/.cache/equishard", dir);
    } else {
        return -1;
    }
    char real[PATH_MAX];
    if (n >= PATH_MAX || !realpath(path, real))
        return -1;
    snprintf(name, NAME_MAX + 1, "tokenizer-%016llx.bin",
             (unsigned long long)XXH3_64bits(real, strlen(real)));
    return 0;
}

/* ---- writing ------------------------------------------------------------------ */

static void put(es_strbuf *b, const void *p, size_t n) { es_strbuf_append(b, p, n); }
static void put_u64(es_strbuf *b, uint64_t v) { put(b, &v, sizeof v); }
static void put_str(es_strbuf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u64(b, n);
    put(b, s, n);
}

size_t tok_cache_seal(void *file, size_t len)
{
    if (len < sizeof(cache_header))
        return sizeof(cache_header);
    cache_header h = {CACHE_MAGIC, CACHE_VERSION, 0x01020304u,
                      (uint32_t)(sizeof(size_t) << 16 | sizeof(tok_merge_slot)), 0,
                      len - sizeof h, XXH3_64bits((char *)file + sizeof h, len - sizeof h)};
    memcpy(file, &h, sizeof h);
    return sizeof h;
}

int tok_cache_serialize(const tok_model *m, const tok_sources *src, es_strbuf *out)
{
    es_strbuf body = {0};
    while (body.len < tok_cache_seal(NULL, 0)) /* the header, sealed at the end */
        es_strbuf_putc(&body, 0);
    put_u64(&body, src->n);
    for (size_t i = 0; i < src->n; i++) {
        tok_file_stat now = stat_of(src->file[i]);
        if (memcmp(&now, &src->before[i], sizeof now) != 0)
            body.oom = 1; /* changed under us: what we loaded may be neither */
        put(&body, &now, sizeof now);
    }
    put_u64(&body, tok_specials_digest());
    put_u64(&body, m->digest);
    put_str(&body, m->files);
    put(&body, m->byte_id, sizeof m->byte_id);
    put_u64(&body, m->n_vocab);
    put_u64(&body, m->n_vocab_ids);
    put(&body, m->vocab_ids, tok_vocab_id_words(m->n_vocab_ids) * sizeof *m->vocab_ids);
    put_u64(&body, m->n_special);
    put(&body, m->special_vocab_id, m->n_special * sizeof *m->special_vocab_id);
    put_u64(&body, m->added.n);
    for (size_t i = 0; i < m->added.n; i++) {
        put_u64(&body, m->added.tok[i].id);
        put_u64(&body, m->added.tok[i].len);
        put(&body, m->added.tok[i].s, m->added.tok[i].len);
    }
    put_u64(&body, m->merges.mask + 1);
    put_u64(&body, m->merges.n);
    /* the slots 16-byte aligned in the file, so in the mapping too */
    while (body.len % 16)
        es_strbuf_putc(&body, 0);
    put(&body, m->merges.slots, (m->merges.mask + 1) * sizeof *m->merges.slots);
    if (body.oom) {
        es_strbuf_release(&body);
        return -1;
    }
    tok_cache_seal(body.buf, body.len);
    *out = body;
    return 0;
}

void tok_cache_store(const tok_model *m, const tok_sources *src)
{
    if (m->chr || m->merges.unmap)
        return;
    char base[PATH_MAX], name[NAME_MAX + 1];
    if (cache_location(m->path, base, name) != 0)
        return;
    /* only into a folder that is ours alone (core/private_dir.h): a shared
     * folder is not used, so nobody else's link or file is ever written */
    int dir = es_private_dir_open(base, 1);
    es_strbuf data = {0};
    if (dir >= 0 && tok_cache_serialize(m, src, &data) == 0)
        es_private_file_replace(dir, base, name, data.buf, data.len);
    if (dir >= 0)
        close(dir);
    es_strbuf_release(&data);
}

/* ---- reading ------------------------------------------------------------------ */

typedef struct cursor {
    const unsigned char *p, *end;
    int bad;
} cursor;

static const void *take(cursor *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return NULL;
    }
    const void *at = c->p;
    c->p += n;
    return at;
}

static uint64_t take_u64(cursor *c)
{
    uint64_t v = 0;
    const void *p = take(c, sizeof v);
    if (p)
        memcpy(&v, p, sizeof v);
    return v;
}

static void unmap_cache(void *p, size_t n) { munmap(p, n); }

/* Fills m from the mapped body; 0, or -1 (m may hold partial allocations the
 * caller releases). */
static int read_body(tok_model *m, const tok_sources *src, cursor *c)
{
    if (take_u64(c) != src->n)
        return -1;
    for (size_t i = 0; i < src->n; i++) { /* the files as tok_sources_stat found them */
        const void *then = take(c, sizeof src->before[i]);
        if (!then || memcmp(then, &src->before[i], sizeof src->before[i]) != 0)
            return -1;
    }
    /* the special ids below are by position in this build's list */
    if (take_u64(c) != tok_specials_digest())
        return -1;
    m->digest = take_u64(c);
    uint64_t n = take_u64(c);
    const char *files = take(c, n);
    if (!files || n > 1024 || !(m->files = strndup(files, n)))
        return -1;
    const void *ids = take(c, sizeof m->byte_id);
    if (!ids)
        return -1;
    memcpy(m->byte_id, ids, sizeof m->byte_id);
    m->n_vocab = take_u64(c);
    m->n_vocab_ids = take_u64(c);
    if (m->n_vocab_ids > TOK_NONE)
        return -1;
    size_t words = tok_vocab_id_words(m->n_vocab_ids);
    const void *bits = take(c, words * sizeof *m->vocab_ids);
    if (!bits || !(m->vocab_ids = malloc(words * sizeof *m->vocab_ids)))
        return -1;
    memcpy(m->vocab_ids, bits, words * sizeof *m->vocab_ids);
    m->n_special = take_u64(c);
    if (m->n_special > 4096)
        return -1;
    const void *sp = take(c, m->n_special * sizeof *m->special_vocab_id);
    if (!sp || !(m->special_vocab_id = malloc(m->n_special * sizeof *m->special_vocab_id + 1)))
        return -1;
    memcpy(m->special_vocab_id, sp, m->n_special * sizeof *m->special_vocab_id);
    uint64_t n_added = take_u64(c);
    for (uint64_t i = 0; i < n_added && !c->bad; i++) {
        uint64_t id = take_u64(c), len = take_u64(c);
        const char *s = take(c, len);
        if (!s || id >= TOK_NONE || tok_added_add(&m->added, s, len, (uint32_t)id) != ES_OK)
            return -1;
    }
    uint64_t cap = take_u64(c), used = take_u64(c);
    while (!c->bad && (uintptr_t)c->p % 16)
        take(c, 1);
    if (cap > (size_t)(c->end - c->p) / sizeof(tok_merge_slot))
        return -1;
    const tok_merge_slot *slots = take(c, cap * sizeof *slots);
    /* a power of two, not full (a lookup of an absent pair must meet an empty
     * slot), and nothing after it */
    if (!slots || cap < 2 || (cap & (cap - 1)) || used >= cap || c->p != c->end)
        return -1;
    size_t empty = 0;
    for (size_t i = 0; i < cap; i++)
        empty += slots[i].key == 0;
    if (empty == 0)
        return -1;
    m->merges.slots = (tok_merge_slot *)slots;
    m->merges.mask = cap - 1;
    m->merges.n = used;
    return 0;
}

int tok_cache_parse(tok_model *m, const tok_sources *src, const void *data, size_t len)
{
    cache_header h;
    if (len < sizeof h || (uintptr_t)data % 16)
        return -1;
    memcpy(&h, data, sizeof h);
    const unsigned char *body = (const unsigned char *)data + sizeof h;
    cursor c = {body, body + (len - sizeof h), 0};
    int ok = memcmp(h.magic, CACHE_MAGIC, 8) == 0 && h.version == CACHE_VERSION &&
             h.byte_order == 0x01020304u &&
             h.sizes == (uint32_t)(sizeof(size_t) << 16 | sizeof(tok_merge_slot)) &&
             h.body_len == len - sizeof h && XXH3_64bits(body, h.body_len) == h.body_hash;
    if (ok && read_body(m, src, &c) == 0)
        return 0;
    /* a miss: leave m as it was given (the path only) */
    free(m->files), m->files = NULL;
    free(m->vocab_ids), m->vocab_ids = NULL;
    free(m->special_vocab_id), m->special_vocab_id = NULL;
    tok_added_release(&m->added);
    m->merges = (tok_merges){0};
    return -1;
}

int tok_cache_load(tok_model *m, const tok_sources *src)
{
    char base[PATH_MAX], name[NAME_MAX + 1];
    if (cache_location(m->path, base, name) != 0)
        return -1;
    /* a regular file of ours that nobody else can write, opened without
     * following a link or waiting on a FIFO (core/private_dir.h): so the
     * mapping below is of a file only this user can truncate, and what it
     * holds was written by this user's equishard */
    int dir = es_private_dir_open(base, 0);
    if (dir < 0)
        return -1;
    struct stat st;
    int fd = es_private_file_open(dir, name, &st);
    close(dir);
    if (fd < 0)
        return -1;
    void *map = MAP_FAILED;
    size_t len = (size_t)st.st_size;
    if (len > 0)
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    if (tok_cache_parse(m, src, map, len) != 0) {
        munmap(map, len);
        return -1;
    }
    m->merges.unmap = unmap_cache;
    m->merges.mapped = map;
    m->merges.mapped_len = len;
    return 0;
}
