/* The cost table's formatter and byte sink (table_writer.h): rows formatted by
 * hand into one large buffer that is flushed to the file or to zstd, with an
 * optional second thread that compresses while the next buffer is formatted.
 * The whole-table writer (cost_table_write.c) and the streaming one
 * (cost_stream.c) both write through it, so they give the same bytes. */
#include "costs/table_writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OUT_CHUNK = 1 << 20,   /* formatted bytes collected before each flush */
    ROW_FIXED = 384,       /* bound on a row's bytes besides its three strings */
    ZSTD_LEVEL = 3,
};

/* A failure in the compressing thread, turned into the error message by the
 * calling thread (the context is not shared between threads). */
typedef struct feed_error {
    size_t zstd_code; /* ZSTD error code, or 0 */
    int io_errno;     /* errno of a failed write, or 0 */
} feed_error;

static int io_error(es_table_writer *w, const char *what)
{
    return es_fail(w->ctx, ES_ERR_IO, "%s: %s: %s", w->path, what, strerror(errno));
}

static int put_file(es_table_writer *w, const void *data, size_t n)
{
    if (n && fwrite(data, 1, n, w->file.fp) != n)
        return io_error(w, "write failed");
    return ES_OK;
}

/* Feeds `n` bytes to the compressor (mode ZSTD_e_continue) or, with ZSTD_e_end,
 * finishes the frame; writes whatever it produces. Returns 0, or -1 with *e set. */
static int zstd_feed(es_table_writer *w, const void *data, size_t n, ZSTD_EndDirective mode, feed_error *e)
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

static int feed_fail(es_table_writer *w, const feed_error *e)
{
    if (e->zstd_code)
        return es_fail(w->ctx, ES_ERR_IO, "%s: zstd: %s", w->path, ZSTD_getErrorName(e->zstd_code));
    errno = e->io_errno;
    return io_error(w, "write failed");
}

static int put_zstd(es_table_writer *w, const void *data, size_t n, ZSTD_EndDirective mode)
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
    es_table_writer *w;
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
static int zpipe_handoff(es_table_writer *w)
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
static int zpipe_start(es_table_writer *w)
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
static int zpipe_finish(es_table_writer *w, int rc)
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

int es_tw_flush(es_table_writer *w)
{
    if (w->pipe)
        return zpipe_handoff(w);
    int rc = w->z ? put_zstd(w, w->buf, w->len, ZSTD_e_continue) : put_file(w, w->buf, w->len);
    w->len = 0;
    return rc;
}

/* Makes room for `need` more bytes, flushing first; grows the buffer only for a
 * row larger than the buffer itself (a pathological key). */
static int reserve(es_table_writer *w, size_t need)
{
    if (w->cap - w->len >= need)
        return ES_OK;
    int rc = es_tw_flush(w);
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

int es_tw_row(es_table_writer *w, const es_cost_row *r, const es_cost_table *t, int stats,
              int tokens)
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
    if (stats) {
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

int es_tw_header(es_table_writer *w, int stats, int tokens, const char *tokenizer)
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

/* Sets up buffers and the compressor; the file is already open. */
int es_tw_init(es_table_writer *w, int zstd)
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

void es_tw_release(es_table_writer *w)
{
    free(w->buf);
    free(w->zout);
    ZSTD_freeCCtx(w->z);
}

int es_tw_bytes(es_table_writer *w, const char *s, size_t n)
{
    int rc = reserve(w, n);
    if (rc == ES_OK) {
        memcpy(w->buf + w->len, s, n);
        w->len += n;
    }
    return rc;
}

void es_tw_pipe(es_table_writer *w)
{
    if (w->z && !w->pipe)
        zpipe_start(w); /* on failure this thread compresses: the same bytes */
}

int es_tw_end(es_table_writer *w, int rc)
{
    if (w->pipe)
        return zpipe_finish(w, rc);
    if (rc == ES_OK)
        rc = es_tw_flush(w);
    if (rc == ES_OK && w->z)
        rc = put_zstd(w, NULL, 0, ZSTD_e_end);
    return rc;
}

int es_tw_zstd_name(const char *path)
{
    size_t n = strlen(path), k = strlen(".zst");
    return n >= k && memcmp(path + n - k, ".zst", k) == 0;
}
