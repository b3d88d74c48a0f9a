/* The cost table in memory: a growable row array whose strings live in an arena,
 * so a 10 M row table costs one allocation per MiB of strings rather than three
 * per row, and merging per-shard tables (es_cost_table_move_into) moves pointers,
 * never strings. */
#include "costs/cost_table.h"

#include "core/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Flag names in bit order; index = bit number. This is the `flags` column's
 * vocabulary, so the names are part of the file format. */
static const char *const flag_names[] = {
    "audio", "text", "utt_emb", "spk_emb", "hashed",
    "truncated", "estimated", "unsupported", "segment", "item", "bad_text",
    "no_tokens",
};
enum { N_FLAGS = sizeof flag_names / sizeof flag_names[0] };

es_cost_table *es_cost_table_new(void) { return calloc(1, sizeof(es_cost_table)); }

/* The row array's pages from here on: mapped a window at a time as
 * es_cost_table_append_n reaches them (one call per 4 MiB of rows rather than
 * a fault per page), not the whole capacity, so memory in use stays what the
 * rows need. Called whenever the array is made, moved or grown: no helper
 * outlives the array it prepares. */
static void fill_by_windows(es_cost_table *t)
{
    es_bigarray_end(&t->fill);
    es_bigarray_col rows = {t->rows, sizeof(es_cost_row)};
    es_bigarray_begin(&t->fill, ES_FILL_WINDOWS | t->fill_flags, &rows, 1, t->cap);
    t->fill_from = 0;
}

void es_cost_table_huge_pages(es_cost_table *t, int on)
{
    t->fill_flags = on ? 0 : ES_FILL_NO_HUGE;
    t->strings.no_huge = !on;
    if (t->fill.active)
        fill_by_windows(t);
}

void es_cost_table_pages_ahead(es_cost_table *t, int on)
{
    fill_by_windows(t);
    if (!on || t->n >= t->cap)
        return;
    es_bigarray_end(&t->fill);
    es_bigarray_col rows = {t->rows + t->n, sizeof(es_cost_row)};
    es_bigarray_begin(&t->fill, ES_FILL_AHEAD | ES_FILL_WINDOWS | t->fill_flags, &rows, 1,
                      t->cap - t->n);
    t->fill_from = t->n;
}

ES_API void es_cost_table_free(es_cost_table *t)
{
    if (!t)
        return;
    es_bigarray_end(&t->fill);
    if (t->drop_zstd_ahead)
        t->drop_zstd_ahead(t); /* its thread reads the rows */
    free(t->rows);
    free(t->skips);
    es_strmap_release(&t->shard_stats);
    es_arena_release(&t->strings);
    free(t->tokenizer);
    free(t);
}

ES_API size_t es_cost_table_size(const es_cost_table *t) { return t ? t->n : 0; }

ES_API int es_cost_table_row(const es_cost_table *t, size_t i, es_cost_row *row)
{
    if (!t || !row || i >= t->n)
        return ES_ERR_USAGE;
    *row = t->rows[i];
    return ES_OK;
}

ES_API const char *es_cost_table_skip(const es_cost_table *t, size_t i)
{
    return t && i < t->n_skips ? t->skips[i].msg : NULL;
}

/* Copies s unless it equals `prev` (a string already in the arena): consecutive
 * rows usually share shard and speaker, and sharing saves most of the arena. */
static const char *intern(es_arena *a, const char *s, const char *prev)
{
    if (!s)
        s = "";
    if (prev && strcmp(prev, s) == 0)
        return prev;
    return es_arena_strndup(a, s, strlen(s));
}

int es_cost_table_append(es_cost_table *t, const es_cost_row *row)
{
    if (t->n == t->cap) {
        es_bigarray_end(&t->fill);
        void *rows = t->rows;
        if (es_grow(&rows, &t->cap, t->n + 1, sizeof(es_cost_row), 1024) != 0)
            return ES_ERR_NOMEM;
        t->rows = rows;
        fill_by_windows(t);
    }

    es_cost_row r = *row;
    r.key = es_arena_strndup(&t->strings, row->key ? row->key : "",
                             row->key ? strlen(row->key) : 0);
    r.shard = intern(&t->strings, row->shard, t->last_shard);
    r.spk = intern(&t->strings, row->spk, t->n ? t->rows[t->n - 1].spk : NULL);
    if (!r.key || !r.shard || !r.spk)
        return ES_ERR_NOMEM;
    t->last_shard = r.shard;
    t->last_shard_len = strlen(r.shard);
    t->rows[t->n++] = r;
    return ES_OK;
}

/* intern() with s's length known: s equals prev when prev's first n bytes are
 * s's (strncmp stops at prev's end) and prev ends there. */
static const char *intern_n(es_arena *a, const char *s, size_t n, const char *prev)
{
    if (prev && strncmp(prev, s, n) == 0 && prev[n] == '\0')
        return prev;
    return es_arena_strndup(a, s, n);
}

int es_cost_table_reserve(es_cost_table *t, size_t rows)
{
    if (rows <= t->cap)
        return ES_OK;
    es_bigarray_end(&t->fill);
    void *p = t->rows;
    if (es_grow(&p, &t->cap, rows, sizeof(es_cost_row), 1024) != 0)
        return ES_ERR_NOMEM;
    t->rows = p;
    fill_by_windows(t);
    return ES_OK;
}

int es_cost_table_append_n(es_cost_table *t, const es_cost_row *row, const size_t len[3])
{
    if (t->n == t->cap) {
        es_bigarray_end(&t->fill);
        void *rows = t->rows;
        if (es_grow(&rows, &t->cap, t->n + 1, sizeof(es_cost_row), 1024) != 0)
            return ES_ERR_NOMEM;
        t->rows = rows;
        fill_by_windows(t);
    }
    es_bigarray_reach(&t->fill, t->n - t->fill_from);
    es_cost_row r = *row;
    r.key = es_arena_strndup(&t->strings, row->key, len[0]);
    r.shard = t->last_shard && t->last_shard_len == len[1] &&
                      memcmp(t->last_shard, row->shard, len[1]) == 0
                  ? t->last_shard
                  : es_arena_strndup(&t->strings, row->shard, len[1]);
    r.spk = intern_n(&t->strings, row->spk, len[2], t->n ? t->rows[t->n - 1].spk : NULL);
    if (!r.key || !r.shard || !r.spk)
        return ES_ERR_NOMEM;
    t->last_shard = r.shard;
    t->last_shard_len = len[1];
    t->rows[t->n++] = r;
    return ES_OK;
}

int es_cost_table_add_skip(es_cost_table *t, const char *msg, const char *shard,
                           const char *key, uint64_t pos)
{
    void *skips = t->skips;
    if (es_grow(&skips, &t->cap_skips, t->n_skips + 1, sizeof(es_cost_skip), 16) != 0)
        return ES_ERR_NOMEM;
    t->skips = skips;
    es_cost_skip k = {es_arena_strndup(&t->strings, msg, strlen(msg)),
                      es_arena_strndup(&t->strings, shard ? shard : "", shard ? strlen(shard) : 0),
                      key ? es_arena_strndup(&t->strings, key, strlen(key)) : NULL,
                      key ? pos : ES_SKIP_SHARD};
    if (!k.msg || !k.shard || (key && !k.key))
        return ES_ERR_NOMEM;
    t->skips[t->n_skips++] = k;
    return ES_OK;
}

int es_cost_table_set_shard_stat(es_cost_table *t, const char *shard, const es_shard_stat *st)
{
    es_shard_stat *copy = es_arena_alloc(&t->strings, sizeof *copy);
    if (!copy)
        return ES_ERR_NOMEM;
    *copy = *st;
    return es_strmap_put(&t->shard_stats, shard, strlen(shard), copy) == 0 ? ES_OK : ES_ERR_NOMEM;
}

const es_shard_stat *es_cost_table_shard_stat(const es_cost_table *t, const char *shard)
{
    if (!t->shard_stats.n)
        return NULL;
    const es_strmap_slot *slot = es_strmap_get(&t->shard_stats, shard, strlen(shard));
    return slot ? slot->value : NULL;
}

ES_API int es_cost_table_shard_file(const es_cost_table *t, const char *shard, uint64_t *size,
                                    int64_t *mtime_s, uint32_t *mtime_ns)
{
    const es_shard_stat *st = t && shard ? es_cost_table_shard_stat(t, shard) : NULL;
    if (!st)
        return 0;
    if (size)
        *size = st->size;
    if (mtime_s)
        *mtime_s = st->mtime_s;
    if (mtime_ns)
        *mtime_ns = st->mtime_ns;
    return 1;
}

int es_cost_table_move_into(es_cost_table *dst, es_cost_table *src)
{
    if (dst == src)
        return ES_ERR_USAGE;
    es_bigarray_end(&dst->fill);
    es_bigarray_end(&src->fill);
    /* Reserve before moving anything, so failure leaves both tables as they were. */
    void *skips = dst->skips;
    if (es_grow(&skips, &dst->cap_skips, dst->n_skips + src->n_skips, sizeof(es_cost_skip), 16) != 0)
        return ES_ERR_NOMEM;
    dst->skips = skips;
    if (dst->n == 0 && src->cap > dst->cap) {
        /* An empty destination takes the source's row array whole: merging
         * per-shard tables into a fresh one then copies nothing for the first. */
        es_cost_row *r = dst->rows;
        size_t c = dst->cap;
        dst->rows = src->rows;
        dst->cap = src->cap;
        dst->n = src->n;
        src->rows = r;
        src->cap = c;
    } else if (src->n) {
        void *rows = dst->rows;
        if (es_grow(&rows, &dst->cap, dst->n + src->n, sizeof(es_cost_row), 1024) != 0)
            return ES_ERR_NOMEM;
        dst->rows = rows;
        memcpy(dst->rows + dst->n, src->rows, src->n * sizeof(es_cost_row));
        dst->n += src->n;
    }
    fill_by_windows(dst);
    if (src->n_skips) {
        memcpy(dst->skips + dst->n_skips, src->skips, src->n_skips * sizeof(es_cost_skip));
        dst->n_skips += src->n_skips;
    }
    if (src->last_shard) {
        dst->last_shard = src->last_shard;
        dst->last_shard_len = src->last_shard_len;
    }
    if (!dst->tokenizer) { /* the first table's record; callers compare them first */
        dst->tokenizer = src->tokenizer;
        src->tokenizer = NULL;
    }
    /* Stats point into src's arena, which moves to dst below. */
    for (size_t i = 0; i < src->shard_stats.cap; i++) {
        const es_strmap_slot *slot = &src->shard_stats.slots[i];
        if (slot->key && es_strmap_put(&dst->shard_stats, slot->key, slot->key_len, slot->value) != 0)
            return ES_ERR_NOMEM;
    }
    es_strmap_release(&src->shard_stats);
    memset(&src->shard_stats, 0, sizeof src->shard_stats);
    /* The strings stay where they are; only the arena blocks change owner. */
    es_arena_splice(&dst->strings, &src->strings);

    free(src->rows);
    free(src->skips);
    src->rows = NULL;
    src->skips = NULL;
    src->n = src->cap = src->n_skips = src->cap_skips = 0;
    src->last_shard = NULL;
    return ES_OK;
}

/* `bit` is the bit number (0 = ES_FLAG_AUDIO), so `for (b = 0; es_flag_name(b); b++)`
 * lists every name. */
ES_API const char *es_flag_name(unsigned bit) { return bit < N_FLAGS ? flag_names[bit] : NULL; }

size_t es_flags_format(uint32_t flags, char *buf, size_t len)
{
    /* Writes as much as fits (NUL-terminated when len > 0) and returns the full
     * length, like snprintf, so callers can size buffers. */
    size_t n = 0;
    for (unsigned b = 0; b < N_FLAGS; b++) {
        if (!(flags & (1u << b)))
            continue;
        const char *name = flag_names[b];
        size_t k = strlen(name);
        if (n > 0) {
            if (n + 1 < len)
                buf[n] = ',';
            n++;
        }
        for (size_t i = 0; i < k; i++, n++)
            if (n + 1 < len)
                buf[n] = name[i];
    }
    if (n == 0) {
        if (len > 1)
            buf[0] = '-';
        n = 1;
    }
    if (len > 0)
        buf[n < len ? n : len - 1] = '\0';
    return n;
}

static int flag_bit(const char *s, size_t n)
{
    for (unsigned b = 0; b < N_FLAGS; b++)
        if (strlen(flag_names[b]) == n && memcmp(flag_names[b], s, n) == 0)
            return (int)b;
    return -1;
}

int es_flags_parse(const char *s, size_t n, uint32_t *flags)
{
    /* "-" is the only spelling of no flags; names may come in any order but not
     * twice, and empty names (",," or a trailing ',') are errors, so every value
     * has one meaning. Bits we write unknown to this reader cannot appear, because
     * unknown names are rejected. */
    if (n == 1 && s[0] == '-') {
        *flags = 0;
        return 0;
    }
    uint32_t f = 0;
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        int b = flag_bit(s + i, j - i);
        if (b < 0 || (f & (1u << b)))
            return -1;
        f |= 1u << b;
        if (j == n)
            break;
        i = j + 1;
    }
    *flags = f;
    return 0;
}
