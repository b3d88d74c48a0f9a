/* Writing the cost table (DESIGN.md §5).
 *
 * Format, version 1 (the reader in cost_table_read.c is its other half):
 *
 *   #equishard-costs v1
 *   key  shard  pos  sample_rate  channels  samples  audio_bytes  text_len
 *   speech_tokens  spk  flags  hash                       (one TAB-separated line)
 *   ...one TAB-separated line per utterance, '\n'-terminated, in table order...
 *
 * - Integers are plain decimal digits: no sign, no spaces, no leading zeros.
 * - String columns (key, shard, spk) hold the bytes as they are (UTF-8 or not),
 *   except that TAB, LF, CR and backslash are written as the two-character
 *   escapes \t \n \r \\ (keys come from tar member names, which may contain any
 *   byte but NUL). No other escapes exist.
 * - An empty string is an empty field ("" is written as nothing between two
 *   TABs); "-" in a string column is the literal one-character string "-".
 * - flags: the flag names (es_flag_name) joined by ',' in bit order, "-" for none.
 * - hash: 16 lowercase hex digits when the row has the `hashed` flag, else "-"
 *   (a hash value without the flag is not written).
 * - A table that knows its shards' files as measure found them adds two columns
 *   after hash (v1 readers ignore trailing columns): shard_size, the file's size
 *   in bytes, and shard_mtime, its modification time as SECONDS.NNNNNNNNN; both
 *   "-" for a row whose shard has none (raw-list and Kaldi items).
 * - text_tokens (issue 11): the last column, written only when some row has a
 *   token count (text_tokens > 0: measured with a tokenizer), so tables
 *   measured without one stay as they were; "-" where unknown (0 with a
 *   non-empty transcript), else decimal (0 for an empty transcript).
 * - A path ending in ".zst" gets one zstd frame (level 3); readers detect zstd by
 *   its magic bytes, not by name.
 *
 * Speed: 10 M rows must take seconds, so rows are formatted by hand into one
 * large buffer (no per-field stdio) that is flushed to the file or compressor.
 */
#include "costs/cost_table.h"
#include "core/atomic_file.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

enum {
    OUT_CHUNK = 1 << 20,   /* formatted bytes collected before each flush */
    ROW_FIXED = 384,       /* bound on a row's bytes besides its three strings */
    ZSTD_LEVEL = 3,
    PIPE_ROWS = 50000,     /* rows above which a second thread compresses */
};

typedef struct writer {
    es_context *ctx;
    const char *path;
    es_atomic_file file;
    ZSTD_CCtx *z;        /* NULL: plain output */
    char *buf;           /* formatted, not yet flushed bytes */
    size_t len, cap;
    void *zout;          /* compressor output, then fwrite */
    size_t zout_cap;
    const char *stat_shard;    /* the shard whose stat `stat` is (rows share the pointer) */
    const es_shard_stat *stat;
    struct zpipe *pipe;  /* non-NULL: a second thread compresses (zstd output only) */
} writer;

/* A failure in the compressing thread, turned into the error message by the
 * calling thread (the context is not shared between threads). */
typedef struct feed_error {
    size_t zstd_code; /* ZSTD error code, or 0 */
    int io_errno;     /* errno of a failed write, or 0 */
} feed_error;

static int io_error(writer *w, const char *what)
{
    return es_fail(w->ctx, ES_ERR_IO, "%s: %s: %s", w->path, what, strerror(errno));
}

static int put_file(writer *w, const void *data, size_t n)
{
    if (n && fwrite(data, 1, n, w->file.fp) != n)
        return io_error(w, "write failed");
    return ES_OK;
}

/* Feeds `n` bytes to the compressor (mode ZSTD_e_continue) or, with ZSTD_e_end,
 * finishes the frame; writes whatever it produces. Returns 0, or -1 with *e set. */
static int zstd_feed(writer *w, const void *data, size_t n, ZSTD_EndDirective mode, feed_error *e)
{
    ZSTD_inBuffer in = {data, n, 0};
    for (;;) {
        ZSTD_outBuffer out = {w->zout, w->zout_cap, 0};
        size_t left = ZSTD_compressStream2(w->z, &out, &in, mode);
        if (ZSTD_isError(left)) {
            e->zstd_code = left;
            return -1;
        }
        if (out.pos && fwrite(w->zout, 1, out.pos, w->file.fp) != out.pos) {
            e->io_errno = errno;
            return -1;
        }
        /* continue: done once all input is consumed; end: once the frame is flushed. */
        if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size)
            return 0;
    }
}

static int feed_fail(writer *w, const feed_error *e)
{
    if (e->zstd_code)
        return es_fail(w->ctx, ES_ERR_IO, "%s: zstd: %s", w->path, ZSTD_getErrorName(e->zstd_code));
    errno = e->io_errno;
    return io_error(w, "write failed");
}

static int put_zstd(writer *w, const void *data, size_t n, ZSTD_EndDirective mode)
{
    feed_error e = {0, 0};
    return zstd_feed(w, data, n, mode, &e) == 0 ? ES_OK : feed_fail(w, &e);
}

/* Compression beside formatting: the formatter hands each full buffer to the
 * compressing thread and goes on in the other buffer. The compressor gets the
 * same buffers, in the same order and sizes, as the single-threaded writer
 * feeds it, so the output is the same bytes. */
typedef struct zpipe {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    writer *w;
    char *spare;          /* the buffer the formatter takes next */
    size_t spare_cap;
    const char *job;      /* handed over, not yet compressed; NULL: none */
    size_t job_len;
    int finish;           /* no more input: end the frame and stop */
    int failed;
    feed_error err;
} zpipe;

static void *zpipe_main(void *arg)
{
    zpipe *z = arg;
    pthread_mutex_lock(&z->mu);
    for (;;) {
        while (!z->job && !z->finish)
            pthread_cond_wait(&z->cv, &z->mu);
        if (!z->job)
            break;
        const char *job = z->job;
        size_t len = z->job_len;
        int failed = z->failed;
        pthread_mutex_unlock(&z->mu);
        feed_error e = {0, 0};
        int bad = !failed && zstd_feed(z->w, job, len, ZSTD_e_continue, &e) != 0;
        pthread_mutex_lock(&z->mu);
        if (bad) {
            z->failed = 1;
            z->err = e;
        }
        z->job = NULL;
        pthread_cond_broadcast(&z->cv);
    }
    if (!z->failed) {
        feed_error e = {0, 0};
        if (zstd_feed(z->w, NULL, 0, ZSTD_e_end, &e) != 0) {
            z->failed = 1;
            z->err = e;
        }
    }
    pthread_mutex_unlock(&z->mu);
    return NULL;
}

/* Hands w's buffer to the compressor once it has taken the previous one, and
 * gives w the other buffer. */
static int zpipe_handoff(writer *w)
{
    zpipe *z = w->pipe;
    pthread_mutex_lock(&z->mu);
    while (z->job)
        pthread_cond_wait(&z->cv, &z->mu);
    int failed = z->failed;
    if (!failed && w->len) {
        char *mine = w->buf;
        size_t cap = w->cap;
        /* the buffer the compressor finished last is free again */
        w->buf = z->spare;
        w->cap = z->spare_cap;
        z->spare = mine;
        z->spare_cap = cap;
        z->job = mine;
        z->job_len = w->len;
        pthread_cond_broadcast(&z->cv);
    }
    pthread_mutex_unlock(&z->mu);
    w->len = 0;
    return failed ? feed_fail(w, &z->err) : ES_OK;
}

/* Starts the compressing thread; 0, or -1 (the writer then compresses itself). */
static int zpipe_start(writer *w)
{
    zpipe *z = calloc(1, sizeof *z);
    if (!z)
        return -1;
    z->w = w;
    z->spare_cap = w->cap;
    z->spare = malloc(z->spare_cap);
    if (!z->spare || pthread_mutex_init(&z->mu, NULL) != 0) {
        free(z->spare);
        free(z);
        return -1;
    }
    pthread_cond_init(&z->cv, NULL);
    if (pthread_create(&z->thread, NULL, zpipe_main, z) != 0) {
        pthread_cond_destroy(&z->cv);
        pthread_mutex_destroy(&z->mu);
        free(z->spare);
        free(z);
        return -1;
    }
    w->pipe = z;
    return 0;
}

/* Hands over what is left, ends the frame and stops the thread; ES_OK or the
 * first failure's message. Also releases the pipe after a failure. */
static int zpipe_finish(writer *w, int rc)
{
    zpipe *z = w->pipe;
    if (rc == ES_OK)
        rc = zpipe_handoff(w);
    pthread_mutex_lock(&z->mu);
    z->finish = 1;
    if (rc != ES_OK)
        z->failed = 1; /* no end of frame after a failure */
    pthread_cond_broadcast(&z->cv);
    pthread_mutex_unlock(&z->mu);
    pthread_join(z->thread, NULL);
    if (rc == ES_OK && z->failed)
        rc = feed_fail(w, &z->err);
    pthread_cond_destroy(&z->cv);
    pthread_mutex_destroy(&z->mu);
    free(z->spare);
    free(z);
    w->pipe = NULL;
    return rc;
}

static int flush(writer *w)
{
    if (w->pipe)
        return zpipe_handoff(w);
    int rc = w->z ? put_zstd(w, w->buf, w->len, ZSTD_e_continue) : put_file(w, w->buf, w->len);
    w->len = 0;
    return rc;
}

/* Makes room for `need` more bytes, flushing first; grows the buffer only for a
 * row larger than the buffer itself (a pathological key). */
static int reserve(writer *w, size_t need)
{
    if (w->cap - w->len >= need)
        return ES_OK;
    int rc = flush(w);
    if (rc != ES_OK || w->cap >= need)
        return rc;
    char *p = realloc(w->buf, need);
    if (!p)
        return es_fail(w->ctx, ES_ERR_NOMEM, "%s: out of memory", w->path);
    w->buf = p;
    w->cap = need;
    return ES_OK;
}

/* Decimal digits of v at p; returns the end. Two digits per division halves the
 * divisions, which dominate formatting of 8 integer columns × 10 M rows. */
static char *put_u64(char *p, uint64_t v)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";
    char tmp[20];
    char *t = tmp + sizeof tmp;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--t = pairs[d + 1];
        *--t = pairs[d];
    }
    if (v >= 10) {
        *--t = pairs[v * 2 + 1];
        *--t = pairs[v * 2];
    } else {
        *--t = (char)('0' + v);
    }
    size_t n = (size_t)(tmp + sizeof tmp - t);
    memcpy(p, t, n);
    return p + n;
}

static char *put_hex64(char *p, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4)
        p[i] = hex[v & 15];
    return p + 16;
}

/* Copies s, escaping the bytes that would break the TSV structure. At most 2
 * output bytes per input byte, which reserve() accounts for. */
static char *put_str(char *p, const char *s)
{
    for (; *s; s++) {
        char c = *s;
        switch (c) {
        case '\t': *p++ = '\\'; *p++ = 't'; break;
        case '\n': *p++ = '\\'; *p++ = 'n'; break;
        case '\r': *p++ = '\\'; *p++ = 'r'; break;
        case '\\': *p++ = '\\'; *p++ = '\\'; break;
        default: *p++ = c;
        }
    }
    return p;
}

static const char *str_or_empty(const char *s) { return s ? s : ""; }

/* shard_size and shard_mtime of row r, or "-" twice. */
static char *put_stat(char *p, const es_shard_stat *st)
{
    *p++ = '\t';
    if (!st) {
        memcpy(p, "-\t-", 3);
        return p + 3;
    }
    p = put_u64(p, st->size);
    *p++ = '\t';
    p = put_u64(p, (uint64_t)st->mtime_s); /* measure records no time before 1970 */
    return p + sprintf(p, ".%09u", st->mtime_ns % 1000000000u);
}

static int put_row(writer *w, const es_cost_row *r, const es_cost_table *t, int tokens)
{
    const char *key = str_or_empty(r->key), *shard = str_or_empty(r->shard);
    const char *spk = str_or_empty(r->spk);
    size_t need = 2 * (strlen(key) + strlen(shard) + strlen(spk)) + ROW_FIXED;
    int rc = reserve(w, need);
    if (rc != ES_OK)
        return rc;
    char *p = w->buf + w->len;
    p = put_str(p, key);
    *p++ = '\t';
    p = put_str(p, shard);
    *p++ = '\t';
    p = put_u64(p, r->pos);
    *p++ = '\t';
    p = put_u64(p, r->sample_rate);
    *p++ = '\t';
    p = put_u64(p, r->channels);
    *p++ = '\t';
    p = put_u64(p, r->samples);
    *p++ = '\t';
    p = put_u64(p, r->audio_bytes);
    *p++ = '\t';
    p = put_u64(p, r->text_len);
    *p++ = '\t';
    p = put_u64(p, r->speech_tokens);
    *p++ = '\t';
    p = put_str(p, spk);
    *p++ = '\t';
    /* All nine names joined are 66 bytes; ROW_FIXED leaves room for them. */
    p += es_flags_format(r->flags, p, 96);
    *p++ = '\t';
    if (r->flags & ES_FLAG_HASHED)
        p = put_hex64(p, r->hash);
    else
        *p++ = '-';
    if (t->shard_stats.n) {
        if (!w->stat_shard || r->shard != w->stat_shard) { /* rows of a shard are consecutive */
            w->stat_shard = r->shard;
            w->stat = es_cost_table_shard_stat(t, shard);
        }
        p = put_stat(p, w->stat);
    }
    if (tokens) {
        *p++ = '\t';
        if (r->text_tokens == 0 && ((r->text_len > 0 && !(r->flags & ES_FLAG_NO_TOKENS)) ||
                                    (r->flags & ES_FLAG_BAD_TEXT)))
            *p++ = '-';
        else
            p = put_u64(p, r->text_tokens);
    }
    *p++ = '\n';
    w->len = (size_t)(p - w->buf);
    return ES_OK;
}

static int put_header(writer *w, int stats, int tokens, const char *tokenizer)
{
    static const char magic[] = ES_COSTS_MAGIC_LINE "\n";
    static const char head[] = ES_COSTS_HEADER;
    static const char stat_cols[] = ES_COSTS_STAT_COLUMNS;
    static const char token_col[] = "\ttext_tokens";
    static const char tok_line[] = ES_COSTS_TOKENIZER_LINE;
    size_t tok_len = tokens && tokenizer ? strlen(tokenizer) : 0;
    int rc = reserve(w, sizeof magic + sizeof tok_line + tok_len + sizeof head + sizeof stat_cols +
                            sizeof token_col + 2);
    if (rc == ES_OK) {
        memcpy(w->buf + w->len, magic, sizeof magic - 1);
        w->len += sizeof magic - 1;
        if (tok_len) { /* between the magic line and the header row (COST_TABLE.md) */
            memcpy(w->buf + w->len, tok_line, sizeof tok_line - 1);
            w->len += sizeof tok_line - 1;
            memcpy(w->buf + w->len, tokenizer, tok_len);
            w->len += tok_len;
            w->buf[w->len++] = '\n';
        }
        memcpy(w->buf + w->len, head, sizeof head - 1);
        w->len += sizeof head - 1;
        if (stats) {
            memcpy(w->buf + w->len, stat_cols, sizeof stat_cols - 1);
            w->len += sizeof stat_cols - 1;
        }
        if (tokens) {
            memcpy(w->buf + w->len, token_col, sizeof token_col - 1);
            w->len += sizeof token_col - 1;
        }
        w->buf[w->len++] = '\n';
    }
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Sets up buffers and the compressor; the file is already open. */
static int writer_init(writer *w, int zstd)
{
    w->cap = OUT_CHUNK;
    w->buf = malloc(w->cap);
    if (!w->buf)
        return es_fail(w->ctx, ES_ERR_NOMEM, "%s: out of memory", w->path);
    if (!zstd)
        return ES_OK;
    w->z = ZSTD_createCCtx();
    w->zout_cap = ZSTD_CStreamOutSize();
    w->zout = malloc(w->zout_cap);
    if (!w->z || !w->zout)
        return es_fail(w->ctx, ES_ERR_NOMEM, "%s: out of memory", w->path);
    size_t r = ZSTD_CCtx_setParameter(w->z, ZSTD_c_compressionLevel, ZSTD_LEVEL);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(w->z, ZSTD_c_checksumFlag, 1);
    if (ZSTD_isError(r))
        return es_fail(w->ctx, ES_ERR_INTERNAL, "%s: zstd: %s", w->path, ZSTD_getErrorName(r));
    return ES_OK;
}

static void writer_release(writer *w)
{
    free(w->buf);
    free(w->zout);
    ZSTD_freeCCtx(w->z);
}

static int write_all(writer *w, const es_cost_table *t)
{
    int tokens = 0;
    for (size_t i = 0; i < t->n && !tokens; i++)
        tokens = t->rows[i].text_tokens > 0;
    /* A table of more than a buffer or two is compressed in a second thread. */
    if (w->z && t->n > PIPE_ROWS)
        zpipe_start(w);
    int rc = put_header(w, t->shard_stats.n > 0, tokens, t->tokenizer);
    for (size_t i = 0; rc == ES_OK && i < t->n; i++)
        rc = put_row(w, &t->rows[i], t, tokens);
    if (w->pipe)
        return zpipe_finish(w, rc);
    if (rc == ES_OK)
        rc = flush(w);
    if (rc == ES_OK && w->z)
        rc = put_zstd(w, NULL, 0, ZSTD_e_end);
    return rc;
}

ES_API int es_cost_table_write(es_context *ctx, const es_cost_table *t, const char *path)
{
    es_clear_error(ctx);
    if (!t || !path)
        return es_fail(ctx, ES_ERR_USAGE, "es_cost_table_write: table and path are required");
    writer w = {.ctx = ctx, .path = path};
    int rc = es_atomic_open(ctx, &w.file, path);
    if (rc != ES_OK)
        return rc;
    rc = writer_init(&w, ends_with(path, ".zst"));
    if (rc == ES_OK)
        rc = write_all(&w, t);
    writer_release(&w);
    if (rc != ES_OK) {
        es_atomic_abort(&w.file);
        return rc;
    }
    return es_atomic_commit(ctx, &w.file);
}

int es_cost_table_write_stream(es_context *ctx, const es_cost_table *t, FILE *fp,
                               const char *name, int zstd)
{
    writer w = {.ctx = ctx, .path = name, .file.fp = fp};
    int rc = writer_init(&w, zstd);
    if (rc == ES_OK)
        rc = write_all(&w, t);
    writer_release(&w);
    return rc;
}

ES_API int es_cost_table_write_fd(es_context *ctx, const es_cost_table *t, int fd, int zstd)
{
    es_clear_error(ctx);
    if (!t || fd < 0)
        return es_fail(ctx, ES_ERR_USAGE, "es_cost_table_write_fd: table and fd are required");
    const char *name = "(output)";
    int dup_fd = dup(fd); /* fclose below must not close the caller's descriptor */
    FILE *fp = dup_fd >= 0 ? fdopen(dup_fd, "wb") : NULL;
    if (!fp) {
        if (dup_fd >= 0)
            close(dup_fd);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot write: %s", name, strerror(errno));
    }
    int rc = es_cost_table_write_stream(ctx, t, fp, name, zstd);
    if (fclose(fp) != 0 && rc == ES_OK)
        rc = es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", name, strerror(errno));
    return rc;
}
