/* Reading the cost table: the format is described in cost_table_write.c.
 *
 * What the reader accepts beyond exactly what the writer produces:
 * - zstd (detected by the magic bytes 28 B5 2F FD, never by name), including
 *   several concatenated frames (`cat a.tsv.zst b.tsv.zst`); plain text otherwise.
 * - Concatenated tables (`cat a.tsv b.tsv`): a later "#equishard-costs v1" line,
 *   which must again be followed by the header row, and repeated header rows.
 * - Extra trailing columns in the header row (a later v1 writer may add columns
 *   after `hash`): rows must then have that many fields, and the extra ones are
 *   ignored. The first 12 header names must be exactly ES_COSTS_HEADER's;
 *   shard_size and shard_mtime may follow (so reshard sees a changed source),
 *   then text_tokens ("-" = unknown, 0); without it every row's is unknown.
 * - CRLF line ends, a last line without '\n', upper-case hex in `hash`, flag names
 *   in any order, leading zeros in integers.
 * Everything else is an error naming the line and, for a bad value, the column:
 * "<path>: line N: column pos: not a decimal integer". In particular blank lines,
 * unknown escapes (only \t \n \r \\ exist), NUL bytes, integers that overflow
 * their column's type, and a hash that disagrees with the `hashed` flag.
 *
 * Speed: 10 M rows must load in seconds. The input is read (or decompressed) in
 * large chunks, lines are split and unescaped in place, and integers are parsed
 * by a strict hand-written loop; the only per-row allocation is the arena copy of
 * the strings (and the amortised row array growth).
 */
#include "costs/cost_table.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#include <zstd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/file_digest.h"
#include "core/file_stream.h"
#include "core/grow.h"
#include "core/json_text.h"

enum {
    CHUNK = 1 << 20,  /* initial line buffer; grows for longer lines */
    N_COLS = 12,      /* columns of ES_COSTS_HEADER */
};

static const char *const col_names[] = {
    "key", "shard", "pos", "sample_rate", "channels", "samples",
    "audio_bytes", "text_len", "speech_tokens", "spk", "flags", "hash",
    "shard_size", "shard_mtime",
};
enum { C_KEY, C_SHARD, C_POS, C_RATE, C_CHANNELS, C_SAMPLES, C_BYTES, C_TEXT,
       C_TOKENS, C_SPK, C_FLAGS, C_HASH, C_SHARD_SIZE, C_SHARD_MTIME,
       C_AFTER_STATS, /* text_tokens when shard_size and shard_mtime come first */
       N_READ };

/* ---- input: a file or a memory buffer, plain or zstd --------------------------- */

typedef struct source {
    es_context *ctx;
    const char *name;
    FILE *fp;                     /* NULL: read from mem */
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    ZSTD_DCtx *z;                 /* non-NULL: input is zstd */
    unsigned char *zin;           /* compressed bytes read from fp */
    size_t zin_cap;
    ZSTD_inBuffer in;
    size_t zret;                  /* last ZSTD_decompressStream result; 0 = frame done */
    int flush_pending;            /* the last call filled its output: call again */
    size_t limit, produced;       /* cap on decoded bytes (0 = none), for fuzzing */
    uint64_t decoded;             /* bytes src_read has returned */
    const size_t *line;           /* the parser's line number, for messages */
    int status;                   /* set with the message when a read fails */
    XXH3_state_t *digest;         /* non-NULL: xxh3 of every byte read from fp */
    uint64_t raw_bytes;           /* bytes read from fp */
    void (*progress)(void *user, uint64_t bytes); /* NULL, or told raw_bytes every
                                     PROGRESS_BYTES (es_cost_table_read_watched) */
    void *progress_user;
} source;

enum { PROGRESS_BYTES = 4 << 20 };

/* Records a failed read; the reader functions then return -1. */
static long long src_fail(source *s, int status, const char *problem, const char *detail)
{
    s->status = es_fail(s->ctx, status, "%s: line %zu: %s%s", s->name, *s->line, problem,
                        detail);
    return -1;
}

/* Raw bytes from the file or memory. Returns bytes read, 0 at end, -1 on error. */
static long long raw_read(source *s, void *dst, size_t cap)
{
    if (!s->fp) {
        size_t n = s->mem_len - s->mem_pos;
        if (n > cap)
            n = cap;
        memcpy(dst, s->mem + s->mem_pos, n);
        s->mem_pos += n;
        return (long long)n;
    }
    size_t n = fread(dst, 1, cap, s->fp);
    if (n == 0 && ferror(s->fp))
        return src_fail(s, ES_ERR_IO, "read failed: ", strerror(errno));
    if (s->digest && n)
        XXH3_64bits_update(s->digest, dst, n);
    s->raw_bytes += n;
    if (s->progress && (s->raw_bytes - n) / PROGRESS_BYTES != s->raw_bytes / PROGRESS_BYTES)
        s->progress(s->progress_user, s->raw_bytes);
    return (long long)n;
}

/* Refills the compressed input. Memory input is handed to zstd whole, no copy. */
static long long zin_refill(source *s)
{
    if (!s->fp) {
        s->in.src = s->mem + s->mem_pos;
        s->in.size = s->mem_len - s->mem_pos;
        s->in.pos = 0;
        s->mem_pos = s->mem_len;
        return (long long)s->in.size;
    }
    long long n = raw_read(s, s->zin, s->zin_cap);
    s->in.src = s->zin;
    s->in.size = n > 0 ? (size_t)n : 0;
    s->in.pos = 0;
    return n;
}

/* Decompresses into dst. Frames may follow each other: zstd starts the next one
 * by itself; a stream that ends inside a frame is truncated. */
static long long zstd_read(source *s, void *dst, size_t cap)
{
    ZSTD_outBuffer out = {dst, cap, 0};
    while (out.pos == 0) {
        if (s->in.pos == s->in.size && !s->flush_pending) {
            long long n = zin_refill(s);
            if (n < 0)
                return -1;
            if (n == 0) {
                if (s->zret != 0)
                    return src_fail(s, ES_ERR_FORMAT, "zstd data is truncated", "");
                return 0;
            }
        }
        size_t r = ZSTD_decompressStream(s->z, &out, &s->in);
        if (ZSTD_isError(r))
            return src_fail(s, ES_ERR_FORMAT, "zstd: ", ZSTD_getErrorName(r));
        s->zret = r;
        s->flush_pending = out.pos == out.size;
    }
    return (long long)out.pos;
}

static long long src_read(source *s, void *dst, size_t cap)
{
    long long n = s->z ? zstd_read(s, dst, cap) : raw_read(s, dst, cap);
    if (n > 0)
        s->decoded += (uint64_t)n;
    if (n > 0 && s->limit) {
        s->produced += (size_t)n;
        if (s->produced > s->limit)
            return src_fail(s, ES_ERR_UNSUPPORTED, "input larger than the size limit", "");
    }
    return n;
}

/* Peeks at the first bytes to choose plain or zstd; the peeked bytes are put back
 * into `head` for the parser (plain) or the decompressor's input (zstd). */
static int src_open(source *s, unsigned char *head, size_t *head_len)
{
    static const unsigned char zmagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    *head_len = 0;
    size_t want = sizeof zmagic;
    if (!s->fp) {
        *head_len = s->mem_len < want ? s->mem_len : want;
        memcpy(head, s->mem, *head_len);
    } else {
        while (*head_len < want) {
            long long n = raw_read(s, head + *head_len, want - *head_len);
            if (n < 0)
                return s->status;
            if (n == 0)
                break;
            *head_len += (size_t)n;
        }
    }
    if (*head_len < want || memcmp(head, zmagic, want) != 0) {
        if (!s->fp)
            s->mem_pos = *head_len;
        return ES_OK;
    }
    /* zstd: the peeked magic belongs to the decompressor, not the parser. */
    s->z = ZSTD_createDCtx();
    if (!s->z)
        return es_fail(s->ctx, ES_ERR_NOMEM, "%s: out of memory", s->name);
    if (s->fp) {
        s->zin_cap = ZSTD_DStreamInSize();
        s->zin = malloc(s->zin_cap);
        if (!s->zin)
            return es_fail(s->ctx, ES_ERR_NOMEM, "%s: out of memory", s->name);
        memcpy(s->zin, head, want);
        s->in = (ZSTD_inBuffer){s->zin, want, 0};
    }
    *head_len = 0;
    return ES_OK;
}

static void src_close(source *s)
{
    ZSTD_freeDCtx(s->z);
    free(s->zin);
}

/* ---- parsing ---------------------------------------------------------------------- */

typedef struct parser {
    es_context *ctx;
    const char *name;
    es_cost_table *t;
    size_t line;       /* number of the line being parsed, from 1 */
    size_t seen;       /* lines parsed so far */
    size_t ncols;      /* columns of the current header; 0 before the first */
    int want_header;   /* the previous line was the magic line */
    int stats;         /* the header has shard_size and shard_mtime after hash */
    size_t tokens_col; /* the header's text_tokens column (after those, if any); 0 = none */
    char flags_text[64]; /* the last flags field parsed, and its value */
    size_t flags_len;    /* 0: none yet (an empty field is an error, never cached) */
    uint32_t flags;
    int reserved;        /* reserve_for_file has run */
} parser;

static int line_error(parser *p, int status, const char *problem)
{
    return es_fail(p->ctx, status, "%s: line %zu: %s", p->name, p->line, problem);
}

static int col_error(parser *p, size_t col, const char *problem)
{
    if (p->tokens_col && col == p->tokens_col)
        return es_fail(p->ctx, ES_ERR_FORMAT, "%s: line %zu: column text_tokens: %s", p->name,
                       p->line, problem);
    if (col < N_COLS || (p->stats && col <= C_SHARD_MTIME))
        return es_fail(p->ctx, ES_ERR_FORMAT, "%s: line %zu: column %s: %s", p->name, p->line,
                       col_names[col], problem);
    return es_fail(p->ctx, ES_ERR_FORMAT, "%s: line %zu: column %zu: %s", p->name, p->line,
                   col + 1, problem);
}

/* Like col_error, quoting the offending value: at most 40 bytes, with anything
 * but printable ASCII shown as '?' so the message stays one clean line. */
static int value_error(parser *p, size_t col, const char *problem, const char *v, size_t n)
{
    char shown[48];
    size_t k = 0;
    for (; k < n && k < 40; k++) {
        unsigned char c = (unsigned char)v[k];
        shown[k] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (k < n)
        k += (size_t)snprintf(shown + k, sizeof shown - k, "...");
    shown[k] = '\0';
    char msg[160];
    snprintf(msg, sizeof msg, "%s: '%s'", problem, shown);
    return col_error(p, col, msg);
}

/* Strict decimal: one or more digits, value <= max (UINT32_MAX or UINT64_MAX).
 * Values short enough that they cannot exceed max skip the overflow test; that is
 * every value in practice, and this loop runs 8 times per row. */
static const char *parse_uint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (n == 0)
        return "empty";
    size_t safe = max == UINT64_MAX ? 19 : 9; /* digits that always fit */
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return "not a decimal integer";
        if (i >= safe && v > (max - d) / 10)
            return max == UINT64_MAX ? "out of range (the maximum is 18446744073709551615)"
                                     : "out of range (the maximum is 4294967295)";
        v = v * 10 + d;
    }
    *out = v;
    return NULL;
}

/* Hex digit values plus one (0 = not a hex digit): a table instead of range tests,
 * because random hash digits make those branches unpredictable. */
static const unsigned char hex_plus1[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
    ['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14,
    ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15,
    ['F'] = 16,
};

static const char *parse_hash(const char *s, size_t n, uint64_t *out)
{
    if (n != 16)
        return "not 16 hex digits or -";
    uint64_t v = 0;
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = hex_plus1[(unsigned char)s[i]];
        bad |= d == 0;
        v = v << 4 | ((d - 1) & 15);
    }
    if (bad)
        return "not 16 hex digits or -";
    *out = v;
    return NULL;
}

/* Undoes the writer's escapes in place and NUL-terminates; returns NULL or the
 * problem, and the unescaped length in *out_n. */
static const char *unescape(char *s, size_t n, size_t *out_n)
{
    char *bs = memchr(s, '\\', n);
    if (!bs) {
        s[n] = '\0';
        *out_n = n;
        return NULL;
    }
    char *w = bs, *r = bs, *end = s + n;
    while (r < end) {
        if (*r != '\\') {
            *w++ = *r++;
            continue;
        }
        if (r + 1 == end)
            return "ends with a lone backslash";
        switch (r[1]) {
        case 't': *w++ = '\t'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case '\\': *w++ = '\\'; break;
        default: return "unknown escape (only \\t \\n \\r \\\\ are allowed)";
        }
        r += 2;
    }
    *w = '\0';
    *out_n = (size_t)(w - s);
    return NULL;
}

/* One data row. `s` is mutable and has a spare byte at s[n] for a terminator. */
/* shard_size and shard_mtime (SECONDS.NNNNNNNNN) of a row. */
static int parse_stat(parser *p, char *const *f, const size_t *len, es_shard_stat *st)
{
    uint64_t size, sec, nsec;
    const char *bad = parse_uint(f[C_SHARD_SIZE], len[C_SHARD_SIZE], UINT64_MAX, &size);
    if (bad)
        return value_error(p, C_SHARD_SIZE, bad, f[C_SHARD_SIZE], len[C_SHARD_SIZE]);
    const char *dot = memchr(f[C_SHARD_MTIME], '.', len[C_SHARD_MTIME]);
    size_t whole = dot ? (size_t)(dot - f[C_SHARD_MTIME]) : 0;
    if (!dot || len[C_SHARD_MTIME] - whole - 1 != 9 ||
        parse_uint(f[C_SHARD_MTIME], whole, INT64_MAX, &sec) ||
        parse_uint(dot + 1, 9, 999999999, &nsec))
        return value_error(p, C_SHARD_MTIME, "not SECONDS.NNNNNNNNN", f[C_SHARD_MTIME],
                           len[C_SHARD_MTIME]);
    *st = (es_shard_stat){size, (int64_t)sec, (uint32_t)nsec};
    return ES_OK;
}

/* The field from s[*from] ends at s[at] (a TAB, or the line's end): the
 * first N_READ fields are recorded, all are counted. */
static inline void end_field(char *s, size_t at, char **f, size_t *len, size_t *k,
                             size_t *from)
{
    if (*k < N_READ) {
        f[*k] = s + *from;
        len[*k] = at - *from;
    }
    (*k)++;
    *from = at + 1;
}

static int parse_row(parser *p, char *s, size_t n)
{
    if (p->ncols == 0)
        return line_error(p, ES_ERR_FORMAT, "expected the column header row");
    /* One pass finds the TABs and any NUL (which would cut a C string short),
     * sixteen bytes at a time with SSE2, then eight: each word's TAB and NUL
     * bytes become exact 0x80 marks, and the TABs are taken from the mark bits. */
    char *f[N_READ];
    size_t len[N_READ];
    size_t k = 0, from = 0, i = 0;
    uint64_t nul = 0;
    uint64_t slash = 0; /* any backslash: only then can a string hold escapes */
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fu, tabs = 0x0909090909090909u,
                   slashes = 0x5c5c5c5c5c5c5c5cu;
#if defined(__SSE2__)
    /* Sixteen bytes at a time where SSE2 is there (every x86-64): one compare
     * and one mask give the TABs; NULs and backslashes are gathered in vector
     * registers and looked at once per row. The words loop below takes the
     * rest, and is the whole scan elsewhere. */
    {
        const __m128i vtab = _mm_set1_epi8('\t'), vslash = _mm_set1_epi8('\\'),
                      vzero = _mm_setzero_si128();
        __m128i vnul = vzero, vbs = vzero;
        for (; i + 16 <= n; i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            vnul = _mm_or_si128(vnul, _mm_cmpeq_epi8(x, vzero));
            vbs = _mm_or_si128(vbs, _mm_cmpeq_epi8(x, vslash));
            unsigned t = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vtab));
            while (t) {
                end_field(s, i + (size_t)__builtin_ctz(t), f, len, &k, &from);
                t &= t - 1;
            }
        }
        nul = (uint64_t)_mm_movemask_epi8(vnul);
        slash = (uint64_t)_mm_movemask_epi8(vbs);
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t x, t, b;
        memcpy(&x, s + i, 8);
        t = x ^ tabs;
        b = x ^ slashes;
        nul |= ~(((x & low7) + low7) | x | low7);
        slash |= ~(((b & low7) + low7) | b | low7);
        t = ~(((t & low7) + low7) | t | low7); /* 0x80 where a byte is TAB */
        while (t) {
            end_field(s, i + ((size_t)__builtin_ctzll(t) >> 3), f, len, &k, &from);
            t &= t - 1;
        }
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        nul |= c == '\0';
        slash |= c == '\\';
        if (c == '\t')
            end_field(s, i, f, len, &k, &from);
    }
    end_field(s, n, f, len, &k, &from);
    if (nul)
        return line_error(p, ES_ERR_FORMAT, "contains a NUL byte");
    if (k < p->ncols)
        return col_error(p, k, "missing");
    if (k > p->ncols) {
        char msg[96];
        snprintf(msg, sizeof msg, "too many columns (%zu, the header has %zu)", k, p->ncols);
        return line_error(p, ES_ERR_FORMAT, msg);
    }

    es_cost_row r;
    uint64_t v[N_COLS];
    const char *bad = NULL;
    size_t col = 0;
    static const unsigned char is_u32[N_COLS] = {[C_RATE] = 1, [C_CHANNELS] = 1,
                                                 [C_TEXT] = 1, [C_TOKENS] = 1};
    for (col = C_POS; col <= C_TOKENS && !bad; col++)
        bad = parse_uint(f[col], len[col], is_u32[col] ? UINT32_MAX : UINT64_MAX, &v[col]);
    if (bad) {
        col--;
        return value_error(p, col, bad, f[col], len[col]);
    }
    /* Rows mostly repeat the previous row's flags: a byte compare decides. */
    if (len[C_FLAGS] == p->flags_len && memcmp(f[C_FLAGS], p->flags_text, p->flags_len) == 0) {
        r.flags = p->flags;
    } else {
        if (es_flags_parse(f[C_FLAGS], len[C_FLAGS], &r.flags) != 0)
            return value_error(p, C_FLAGS, "unknown, repeated or empty flag name",
                               f[C_FLAGS], len[C_FLAGS]);
        if (len[C_FLAGS] <= sizeof p->flags_text) {
            memcpy(p->flags_text, f[C_FLAGS], len[C_FLAGS]);
            p->flags_len = len[C_FLAGS];
            p->flags = r.flags;
        }
    }
    r.hash = 0;
    int dash = len[C_HASH] == 1 && f[C_HASH][0] == '-';
    if (r.flags & ES_FLAG_HASHED) {
        if (dash)
            return col_error(p, C_HASH, "missing although the row is flagged hashed");
        if ((bad = parse_hash(f[C_HASH], len[C_HASH], &r.hash)) != NULL)
            return value_error(p, C_HASH, bad, f[C_HASH], len[C_HASH]);
    } else if (!dash) {
        bad = parse_hash(f[C_HASH], len[C_HASH], &r.hash);
        return value_error(p, C_HASH, bad ? bad : "must be - when the row is not flagged hashed",
                           f[C_HASH], len[C_HASH]);
    }
    /* Strings last: unescaping writes the terminators over the TABs, which the
     * other columns no longer need. */
    static const int str_cols[3] = {C_KEY, C_SHARD, C_SPK};
    size_t str_len[3];
    for (int j = 0; j < 3; j++) {
        if (!slash) {
            f[str_cols[j]][len[str_cols[j]]] = '\0';
            str_len[j] = len[str_cols[j]];
        } else if ((bad = unescape(f[str_cols[j]], len[str_cols[j]], &str_len[j])) != NULL) {
            return col_error(p, (size_t)str_cols[j], bad);
        }
    }

    r.key = f[C_KEY];
    r.shard = f[C_SHARD];
    r.spk = f[C_SPK];
    r.pos = v[C_POS];
    r.sample_rate = (uint32_t)v[C_RATE];
    r.channels = (uint32_t)v[C_CHANNELS];
    r.samples = v[C_SAMPLES];
    r.audio_bytes = v[C_BYTES];
    r.text_len = (uint32_t)v[C_TEXT];
    r.speech_tokens = (uint32_t)v[C_TOKENS];
    if (p->stats && !(len[C_SHARD_SIZE] == 1 && f[C_SHARD_SIZE][0] == '-')) {
        es_shard_stat st;
        int rc = parse_stat(p, f, len, &st);
        if (rc != ES_OK)
            return rc;
        if (es_cost_table_set_shard_stat(p->t, r.shard, &st) != ES_OK)
            return es_fail(p->ctx, ES_ERR_NOMEM, "%s: line %zu: out of memory", p->name, p->line);
    }
    r.text_tokens = 0; /* unknown */
    size_t tc = p->tokens_col;
    if (tc && !(len[tc] == 1 && f[tc][0] == '-')) {
        uint64_t tt;
        if ((bad = parse_uint(f[tc], len[tc], UINT32_MAX, &tt)) != NULL)
            return value_error(p, tc, bad, f[tc], len[tc]);
        r.text_tokens = (uint32_t)tt;
    }
    if (es_cost_table_append_n(p->t, &r, str_len) != ES_OK)
        return es_fail(p->ctx, ES_ERR_NOMEM, "%s: line %zu: out of memory", p->name, p->line);
    return ES_OK;
}

static int has_prefix(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

/* The header row, possibly with extra trailing columns. Returns its column count,
 * or 0 when the line is not a header. */
static size_t header_cols(const char *s, size_t n)
{
    static const char head[] = ES_COSTS_HEADER;
    size_t k = sizeof head - 1;
    if (n < k || memcmp(s, head, k) != 0 || (n > k && s[k] != '\t'))
        return 0;
    size_t cols = N_COLS;
    for (size_t i = k; i < n; i++)
        cols += s[i] == '\t';
    return cols;
}

/* A version line is "#equishard-costs ..." without a TAB (a row always has TABs,
 * so a key that happens to start with that text is still a row). */
static int is_version_line(const char *s, size_t n)
{
    return has_prefix(s, n, "#equishard-costs") && !memchr(s, '\t', n);
}

static int parse_version(parser *p, const char *s, size_t n)
{
    static const char magic[] = ES_COSTS_MAGIC_LINE;
    if (n == sizeof magic - 1 && memcmp(s, magic, n) == 0) {
        p->want_header = 1;
        return ES_OK;
    }
    if (has_prefix(s, n, "#equishard-costs v"))
        return line_error(p, ES_ERR_UNSUPPORTED,
                          "unsupported cost table version (this build reads " ES_COSTS_MAGIC_LINE
                          ")");
    return line_error(p, ES_ERR_FORMAT,
                      "not an equishard cost table (expected " ES_COSTS_MAGIC_LINE ")");
}

/* 1 when text[0..n) is a tokenizer record as measure writes it
 * (text/tok_identity.h): its paths may hold \udcXX, a byte that is not UTF-8. */
static int tokenizer_record(const char *text, size_t n)
{
    json_t *o = es_json_load_bytes(text, n, JSON_REJECT_DUPLICATES, NULL);
    static const char *const keys[] = {"kind", "path", "files", "specials", "digest"};
    int ok = json_is_object(o) && json_is_integer(json_object_get(o, "vocab_size"));
    for (size_t i = 0; ok && i < sizeof keys / sizeof keys[0]; i++)
        ok = json_is_string(json_object_get(o, keys[i]));
    json_decref(o);
    return ok;
}

/* "# tokenizer: {...}": what text_tokens were counted with. A table
 * concatenated from parts (`cat`) must have been measured with one tokenizer. */
static int parse_tokenizer(parser *p, const char *s, size_t n)
{
    size_t k = sizeof ES_COSTS_TOKENIZER_LINE - 1;
    if (!tokenizer_record(s + k, n - k))
        return line_error(p, ES_ERR_FORMAT, "tokenizer: expected a JSON object with kind, path, "
                                            "files, vocab_size, specials and digest");
    if (p->t->tokenizer) {
        if (strlen(p->t->tokenizer) == n - k && memcmp(p->t->tokenizer, s + k, n - k) == 0)
            return ES_OK;
        return line_error(p, ES_ERR_FORMAT, "measured with another tokenizer than the table "
                                            "before it (its text_tokens would not compare)");
    }
    if (!(p->t->tokenizer = strndup(s + k, n - k)))
        return es_fail(p->ctx, ES_ERR_NOMEM, "%s: out of memory", p->name);
    return ES_OK;
}

static int parse_line(parser *p, char *s, size_t n)
{
    p->seen++;
    if (n > 0 && s[n - 1] == '\r')
        n--; /* CRLF; a CR inside a field is always written escaped */
    if (p->line == 1 && !is_version_line(s, n))
        return line_error(p, ES_ERR_FORMAT,
                          "not an equishard cost table (expected " ES_COSTS_MAGIC_LINE ")");
    /* a row, unless it starts as the version line or the header row do */
    if (n == 0 || (s[0] != '#' && s[0] != ES_COSTS_HEADER[0])) {
        if (p->want_header)
            return line_error(p, ES_ERR_FORMAT,
                              "expected the column header row after " ES_COSTS_MAGIC_LINE);
        return parse_row(p, s, n);
    }
    if (is_version_line(s, n))
        return parse_version(p, s, n);
    if (p->want_header && has_prefix(s, n, ES_COSTS_TOKENIZER_LINE) && !memchr(s, '\t', n))
        return parse_tokenizer(p, s, n);
    size_t cols = header_cols(s, n);
    if (cols) {
        static const char stats[] = ES_COSTS_HEADER ES_COSTS_STAT_COLUMNS;
        static const char tokens[] = "\ttext_tokens";
        p->ncols = cols;
        p->want_header = 0;
        p->stats = n >= sizeof stats - 1 && memcmp(s, stats, sizeof stats - 1) == 0 &&
                   (n == sizeof stats - 1 || s[sizeof stats - 1] == '\t');
        /* text_tokens follows the fixed columns, or shard_size and shard_mtime */
        size_t at = p->stats ? sizeof stats - 1 : sizeof ES_COSTS_HEADER - 1;
        size_t k = sizeof tokens - 1;
        p->tokens_col = n >= at + k && memcmp(s + at, tokens, k) == 0 &&
                                (n == at + k || s[at + k] == '\t')
                            ? (p->stats ? C_AFTER_STATS : C_SHARD_SIZE)
                            : 0;
        return ES_OK;
    }
    if (p->want_header)
        return line_error(p, ES_ERR_FORMAT,
                          "expected the column header row after " ES_COSTS_MAGIC_LINE);
    return parse_row(p, s, n);
}

/* Once the first MiB of a file is parsed, its rows per byte foretell the whole
 * file's rows: the table is sized for at least them and 1/16 more, so it is not
 * moved by doubling while it grows (es_cost_table_reserve). For zstd the rows
 * per decoded byte are scaled by the decoded bytes per compressed byte so far.
 * `unparsed`: decoded bytes received but not yet parsed. Only advice: a file
 * whose later rows are shorter grows as before, and a failed reservation is
 * ignored. */
static void reserve_for_file(parser *p, source *src, size_t unparsed)
{
    struct stat st;
    off_t pos = src->fp ? ftello(src->fp) : -1;
    if (pos <= 0 || fstat(fileno(src->fp), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size <= pos)
        return;
    /* file bytes behind the decoded ones; zstd's unread input is not */
    double file_done = src->z ? (double)pos - (double)(src->in.size - src->in.pos) : (double)pos;
    double decoded = (double)src->decoded, parsed = decoded - (double)unparsed;
    if (file_done <= 0 || parsed <= 0)
        return;
    double rows = (double)p->t->n / parsed * decoded / file_done * (double)st.st_size;
    if (rows < (double)SIZE_MAX / 2)
        (void)es_cost_table_reserve(p->t, (size_t)(rows + rows / 16));
}

/* Splits the input into lines in one growing buffer; a line is parsed in place,
 * with one spare byte behind it for a terminator. */
static int parse_stream(parser *p, source *src, const unsigned char *head, size_t head_len)
{
    /* Small plain buffers (tests, the fuzzer) need no MiB buffer. */
    size_t cap = CHUNK;
    if (!src->fp && !src->z && src->mem_len < CHUNK)
        cap = src->mem_len + 64;
    char *buf = malloc(cap);
    if (!buf)
        return es_fail(p->ctx, ES_ERR_NOMEM, "%s: out of memory", p->name);
    memcpy(buf, head, head_len);
    size_t start = 0, end = head_len, scanned = 0;
    int eof = 0, rc = ES_OK;
    p->line = 1;
    while (rc == ES_OK) {
        char *nl = memchr(buf + scanned, '\n', end - scanned);
        if (nl) {
            size_t n = (size_t)(nl - (buf + start));
            rc = parse_line(p, buf + start, n);
            start = scanned = (size_t)(nl - buf) + 1;
            p->line++;
            continue;
        }
        if (eof) {
            if (start < end) /* a last line without '\n' */
                rc = parse_line(p, buf + start, end - start);
            break;
        }
        /* Keep the partial line, and room for its terminator, then read more. */
        memmove(buf, buf + start, end - start);
        end -= start;
        scanned = end;
        start = 0;
        if (end > cap / 2) {
            void *nb = buf;
            if (es_grow(&nb, &cap, cap + 1, 1, CHUNK)) { /* doubles the buffer */
                rc = es_fail(p->ctx, ES_ERR_NOMEM, "%s: line %zu: out of memory", p->name,
                             p->line);
                break;
            }
            buf = nb;
        }
        if (!p->reserved && p->t->n >= 1024) {
            reserve_for_file(p, src, end);
            /* the rows' fresh pages paid for on another core (cost_table.h) */
            es_cost_table_pages_ahead(p->t, es_ctx_pages_ahead(p->ctx));
            p->reserved = 1;
        }
        long long got = src_read(src, buf + end, cap - end - 1);
        if (got < 0)
            rc = src->status;
        else if (got == 0)
            eof = 1;
        else
            end += (size_t)got;
    }
    free(buf);
    es_cost_table_pages_ahead(p->t, 0);
    return rc;
}

/* Shared by file and memory input. */
static int parse_source(es_context *ctx, source *src, es_cost_table **out)
{
    unsigned char head[4];
    size_t head_len = 0;
    int rc = src_open(src, head, &head_len);
    if (rc != ES_OK)
        return rc;
    parser p = {.ctx = ctx, .name = src->name};
    src->line = &p.line;
    p.t = es_cost_table_new();
    if (!p.t)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", src->name);
    es_cost_table_huge_pages(p.t, es_ctx_huge_pages(ctx));
    rc = parse_stream(&p, src, head, head_len);
    if (rc == ES_OK && p.seen == 0)
        rc = line_error(&p, ES_ERR_FORMAT, "empty file: not an equishard cost table (expected "
                                           ES_COSTS_MAGIC_LINE ")");
    else if (rc == ES_OK && p.want_header)
        rc = line_error(&p, ES_ERR_FORMAT, "missing the column header row");
    if (rc != ES_OK) {
        es_cost_table_free(p.t);
        return rc;
    }
    *out = p.t;
    return ES_OK;
}

ES_API int es_cost_table_read(es_context *ctx, const char *path, es_cost_table **out)
{
    return es_cost_table_read_watched(ctx, path, NULL, NULL, out);
}

int es_cost_table_read_watched(es_context *ctx, const char *path,
                               void (*progress)(void *user, uint64_t bytes), void *progress_user,
                               es_cost_table **out)
{
    es_clear_error(ctx);
    if (!out || !path)
        return es_fail(ctx, ES_ERR_USAGE, "es_cost_table_read: path and out are required");
    *out = NULL;
    size_t line = 1;
    source src = {.ctx = ctx, .name = path, .line = &line, .progress = progress,
                  .progress_user = progress_user};
    /* A regular file only: a FIFO would block the open, and the sniff before this
     * (es_is_cost_table) would have eaten its first bytes anyway. */
    int e = es_fopen_regular(path, &src.fp);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(e));
    /* Large stdio reads: the parser asks for up to a MiB at a time anyway. */
    setvbuf(src.fp, NULL, _IONBF, 0);
    /* The file's digest as it passes, for plan.json (core/file_digest.h). */
    struct stat before, after;
    int regular = fstat(fileno(src.fp), &before) == 0 && S_ISREG(before.st_mode);
    if (regular && (src.digest = XXH3_createState()) != NULL)
        XXH3_64bits_reset(src.digest);
    int rc = parse_source(ctx, &src, out);
    if (rc == ES_OK && src.digest && fstat(fileno(src.fp), &after) == 0 &&
        es_file_same_identity(&before, &after) && src.raw_bytes == (uint64_t)after.st_size)
        es_file_digest_remember(&after, XXH3_64bits_digest(src.digest));
    XXH3_freeState(src.digest);
    src_close(&src);
    fclose(src.fp);
    return rc;
}

int es_cost_table_parse_buffer(es_context *ctx, const char *name, const void *data, size_t len,
                               size_t max_bytes, es_cost_table **out)
{
    es_clear_error(ctx);
    *out = NULL;
    size_t line = 1;
    source src = {.ctx = ctx, .name = name, .mem = data, .mem_len = len, .limit = max_bytes,
                  .line = &line};
    int rc = parse_source(ctx, &src, out);
    src_close(&src);
    return rc;
}
