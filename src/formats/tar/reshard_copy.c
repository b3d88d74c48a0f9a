/* Reshard mode, the tar copy: source tar shards streamed into the new shards.
 *
 * Each source shard is opened once per pass and read front to back; its
 * members are grouped into utterances exactly as the tar reader does
 * (member_group.h), counted, and the utterance at position `pos` of a table
 * row is routed, member by member and byte for byte, to the writer of its new
 * shard. Data moves in libarchive's own read blocks (archive_read_data_block),
 * straight into the writers: no member is held whole, nothing copied out first
 * (run->buf only supplies the zeros of a sparse member's holes).
 * Before copying, the utterance's key is compared with the table's: a shard
 * that changed since it was measured is an error, not a silent mix-up.
 *
 * Passes: all N writers are open at once when the open-file limit (soft
 * RLIMIT_NOFILE, less 64 for everything else) and a 1 GiB budget for
 * compressor state allow; otherwise the new shards are written in passes of as
 * many as fit (reshard_pass.c's loop), each pass re-reading only the sources
 * that feed it. After each pass every shard written is read back and compared
 * member by member (name, size, xxh3) with what was copied into it. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/strbuf.h"
#include "core/strmap.h"
#include "costs/cost_table.h"
#include "formats/tar/reshard_tar.h"
#include "formats/reshard_job.h"
#include "formats/tar/tar.h"
#include "readers/manifest.h"
#include "formats/tar/member_group.h"
#include "readers/reader.h"
#include "readers/shard_file.h"
#include "formats/tar/tar_link.h"
#include "formats/tar/tar_scan.h"

#define COPY_BUFFER (256u << 10)
/* A new shard's writeback is started after every this many bytes written to
 * it (libarchive's writer's block), so the disk writes while the copy goes
 * on rather than all at the pass's end. */
#define WRITE_BEHIND (1u << 20)
/* Text kept for check_measured: the tar reader refuses transcripts past 1 MiB. */
#define TEXT_LIMIT ((1u << 20) + 1)

typedef struct copy_target {
    struct archive *a;
    FILE *fp;
    char name[64];
    reshard_digest digest;
    uint64_t behind; /* bytes written since its writeback was last started */
} copy_target;

typedef struct copy_run {
    const es_plan *p;
    reshard_job *job;
    copy_item *items;     /* the job's */
    copy_target *targets; /* N */
    uint32_t t0, t1;      /* the pass: targets [t0, t1) are open */
    void *buf;
    XXH3_state_t *hash;
    struct archive_entry *out; /* header of the member being copied */
    es_strbuf key;
    es_strbuf text;            /* a text member as it is copied, for its length */
} copy_run;

static int open_targets(es_context *ctx, copy_run *run)
{
    for (uint32_t t = run->t0; t < run->t1; t++) {
        copy_target *tg = &run->targets[t];
        reshard_job_shard_name(run->job, t, tg->name, sizeof tg->name);
        tg->fp = es_outdir_create(ctx, run->job->d, tg->name);
        if (!tg->fp)
            return ES_ERR_IO;
        char label[4096];
        snprintf(label, sizeof label, "%s/%s", run->job->d->final_path, tg->name);
        tg->a = reshard_writer_open(ctx, tg->fp, run->job->compress, label);
        if (!tg->a)
            return ES_ERR_IO;
    }
    return ES_OK;
}

/* Closes target t's writer; with `ok` unset (after an error) quietly. */
static int close_target(es_context *ctx, copy_run *run, uint32_t t, int ok)
{
    copy_target *tg = &run->targets[t];
    int rc = ES_OK;
    if (ok) {
        char label[4096];
        snprintf(label, sizeof label, "%s/%s", run->job->d->final_path, tg->name);
        rc = reshard_writer_close(ctx, tg->a, label);
        int crc = tg->fp ? es_outdir_close(ctx, run->job->d, tg->fp, tg->name) : ES_OK;
        rc = rc == ES_OK ? crc : rc;
    } else {
        if (tg->a)
            archive_write_free(tg->a);
        if (tg->fp)
            fclose(tg->fp);
    }
    tg->a = NULL;
    tg->fp = NULL;
    return rc;
}

static int in_pass(const copy_run *run, const copy_item *it)
{
    return it->target >= run->t0 && it->target < run->t1;
}

static int source_error(es_context *ctx, struct archive *in, const copy_source *s,
                        const char *member)
{
    const char *msg = archive_error_string(in);
    if (member)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: %s (changed since it was measured?)",
                       s->path, member, msg ? msg : "read error");
    return es_fail(ctx, ES_ERR_FORMAT, "%s: %s (changed since it was measured?)", s->path,
                   msg ? msg : "read error");
}


/* Where a member's bytes go as they are read: every target of items [a, b)
 * in the pass, and run->text for a transcript. */
typedef struct member_sink {
    es_context *ctx;
    copy_run *run;
    const char *name;
    int keep_text;
    size_t a, b;
    int rc; /* a write's failure, reported here */
} member_sink;

static int write_to_targets(void *arg, const void *data, size_t n)
{
    member_sink *k = arg;
    copy_run *run = k->run;
    if (k->keep_text && run->text.len < TEXT_LIMIT)
        es_strbuf_append(&run->text, data, n);
    for (size_t i = k->a; i < k->b; i++) {
        copy_target *tg = &run->targets[run->items[i].target];
        if (!in_pass(run, &run->items[i]))
            continue;
        if (archive_write_data(tg->a, data, n) != (la_ssize_t)n) {
            k->rc = es_fail(k->ctx, ES_ERR_IO, "%s/%s: member %s: write failed: %s",
                            run->job->d->final_path, tg->name, k->name, reshard_writer_error(tg->a));
            return -1;
        }
        if ((tg->behind += n) >= WRITE_BEHIND) {
            es_outdir_write_behind(tg->fp);
            tg->behind = 0;
        }
    }
    return 0;
}

/* The member the scanner found, its data read through the scanner's window
 * and handed on in place, as reshard_read_blocks hands on libarchive's
 * blocks. 0, or -1 on a read error (a file shorter than it was) or when the
 * sink stopped. */
static int scan_blocks(es_tar_scan *scan, XXH3_state_t *st, uint64_t *got,
                       int (*sink)(void *, const void *, size_t), void *arg)
{
    uint64_t off = scan->data_off, end = off + scan->data_size;
    while (off < end) {
        const uint8_t *p;
        size_t want = end - off > COPY_BUFFER ? COPY_BUFFER : (size_t)(end - off);
        ssize_t n = es_tar_scan_view(scan, off, want, &p);
        if (n <= 0 || reshard_hash_bytes(st, p, (size_t)n, got, sink, arg) != 0)
            return -1;
        off += (uint64_t)n;
    }
    return 0;
}

/* Copies member `name` (size bytes, read from `in`, or through `scan` when
 * the header scanner found it) to the targets of items [a, b) in the pass,
 * always as a regular member: a hard link's data is its target's
 * (tar_link.h), which WeNet's stream-mode tarfile could not read. */
static int copy_member(es_context *ctx, copy_run *run, struct archive *in, es_tar_scan *scan,
                       const char *name, uint64_t size, int keep_text, const copy_source *s,
                       size_t a, size_t b)
{
    archive_entry_clear(run->out);
    archive_entry_copy_pathname(run->out, name);
    archive_entry_set_size(run->out, (la_int64_t)size);
    archive_entry_set_filetype(run->out, AE_IFREG);
    archive_entry_set_perm(run->out, 0644);
    archive_entry_set_mtime(run->out, 0, 0);
    for (size_t i = a; i < b; i++) {
        copy_target *tg = &run->targets[run->items[i].target];
        if (in_pass(run, &run->items[i]) && archive_write_header(tg->a, run->out) < ARCHIVE_WARN)
            return es_fail(ctx, ES_ERR_IO, "%s/%s: member %s: %s", run->job->d->final_path,
                           tg->name, name, reshard_writer_error(tg->a));
    }
    XXH3_64bits_reset(run->hash);
    uint64_t got = 0;
    run->text.len = 0;
    member_sink sink = {ctx, run, name, keep_text, a, b, ES_OK};
    if (scan ? scan_blocks(scan, run->hash, &got, write_to_targets, &sink)
             : reshard_read_blocks(in, run->buf, COPY_BUFFER, run->hash, &got, write_to_targets,
                                   &sink))
        return sink.rc != ES_OK ? sink.rc : source_error(ctx, in, s, name);
    if (got != size)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: %llu bytes, its header says %llu "
                       "(truncated?)", s->path, name, (unsigned long long)got,
                       (unsigned long long)size);
    uint64_t hash = XXH3_64bits_digest(run->hash);
    for (size_t i = a; i < b; i++)
        if (in_pass(run, &run->items[i]))
            reshard_digest_add(&run->targets[run->items[i].target].digest, name, size, hash);
    return ES_OK;
}

/* The member just copied against what was measured: an audio
 * object of another size, or a transcript of another length, means the shard
 * changed since, and the balance would be computed on wrong numbers. */
static int check_measured(es_context *ctx, const copy_run *run, const copy_source *s,
                          const char *name, es_member_kind kind, uint64_t size, size_t a)
{
    const es_cost_row *row = &run->p->table->rows[run->items[a].row];
    if (kind == ES_MEMBER_AUDIO && (row->flags & (ES_FLAG_AUDIO | ES_FLAG_UNSUPPORTED)) &&
        size != row->audio_bytes)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: %llu bytes, %llu when measured: the "
                       "shard changed since it was measured (measure it again)", s->path, name,
                       (unsigned long long)size, (unsigned long long)row->audio_bytes);
    if (kind == ES_MEMBER_TEXT && (row->flags & ES_FLAG_TEXT)) {
        if (run->text.oom)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        size_t len = es_text_length(run->text.buf ? run->text.buf : "", run->text.len);
        if (len != row->text_len)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: a text of %zu characters, %u when "
                           "measured: the shard changed since it was measured (measure it again)",
                           s->path, name, len, row->text_len);
    }
    return ES_OK;
}

/* The utterance at `ordinal` starts with key run->key: items [*a, *b) are its
 * copies; their table keys must agree with the shard. */
static int start_utterance(es_context *ctx, copy_run *run, const copy_source *s,
                           uint64_t ordinal, size_t *at, size_t *a, size_t *b)
{
    *a = *at;
    while (*at < s->end && run->items[*at].pos == ordinal)
        (*at)++;
    *b = *at;
    for (size_t i = *a; i < *b; i++) {
        const char *want = run->p->table->rows[run->items[i].row].key;
        if (strcmp(want, run->key.buf) != 0)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: utterance %llu is %s, the cost table says "
                           "%s: the shard changed since it was measured", s->path,
                           (unsigned long long)ordinal, run->key.buf, want);
    }
    return ES_OK;
}

/* The utterance that just ended (items from a) had every member the table
 * measured: a transcript or audio member removed since is an error too. */
static int check_complete(es_context *ctx, const copy_run *run, const copy_source *s, size_t a,
                          int seen_audio, int seen_text)
{
    const es_cost_row *row = &run->p->table->rows[run->items[a].row];
    int want_audio = (row->flags & (ES_FLAG_AUDIO | ES_FLAG_UNSUPPORTED)) != 0;
    int want_text = (row->flags & ES_FLAG_TEXT) != 0;
    if ((want_audio && !seen_audio) || (want_text && !seen_text))
        return es_fail(ctx, ES_ERR_FORMAT, "%s: utterance %s has no %s member, it had when "
                       "measured: the shard changed since it was measured (measure it again)",
                       s->path, row->key, want_audio && !seen_audio ? "audio" : "text");
    return ES_OK;
}

/* The next member of the source: from the header scanner while it reads the
 * headers (*scan then set, for the member's data), else from libarchive,
 * which takes over past the headers the scanner read (tar_scan.h).
 * 1 with *name, *target (a hard link's, or NULL) and *size set; 0 at the end;
 * negative: an error, reported. */
typedef struct member_source {
    struct archive *in;
    es_tar_scan scan;
    int scanning;     /* the scanner reads the headers */
    uint64_t headers; /* headers read so far, all kinds */
} member_source;

static int next_member(es_context *ctx, member_source *m, const copy_source *s,
                       const char **name, const char **target, uint64_t *size,
                       es_tar_scan **scan)
{
    *scan = NULL;
    if (m->scanning) {
        int r = es_tar_scan_next(&m->scan);
        if (r == ES_TAR_SCAN_MEMBER) {
            m->headers++;
            *name = m->scan.name;
            *target = NULL;
            *size = m->scan.data_size;
            *scan = &m->scan;
            return 1;
        }
        if (r == ES_TAR_SCAN_END)
            return 0;
        m->scanning = 0;
        struct archive_entry *e;
        for (uint64_t i = 0; i < m->headers; i++) {
            int h = archive_read_next_header(m->in, &e);
            if (h == ARCHIVE_EOF)
                return 0;
            if (!es_archive_header_ok(h))
                return source_error(ctx, m->in, s, NULL);
        }
    }
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(m->in, &e);
        if (r == ARCHIVE_EOF)
            return 0;
        if (!es_archive_header_ok(r))
            return source_error(ctx, m->in, s, NULL);
        m->headers++;
        *target = archive_entry_hardlink(e);
        if (!*target && archive_entry_filetype(e) != AE_IFREG)
            continue; /* as the tar reader: directories and symbolic links are no members */
        *name = reshard_entry_name(e);
        if (!*name)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: a member without a usable name", s->path);
        *size = archive_entry_size_is_set(e) ? (uint64_t)archive_entry_size(e) : 0;
        return 1;
    }
}

static int stream_members(es_context *ctx, copy_run *run, member_source *m,
                          const copy_source *s)
{
    int seen_audio = 0, seen_text = 0, was_wanted = 0;
    size_t at = s->begin, a = at, b = at;
    uint64_t ordinal = UINT64_MAX;
    int started = 0, rc = ES_OK;
    struct archive *in = m->in;
    const char *name = NULL, *target = NULL;
    es_tar_scan *scan = NULL;
    uint64_t size = 0;
    int r;
    while (rc == ES_OK && (r = next_member(ctx, m, s, &name, &target, &size, &scan)) != 0) {
        if (r < 0)
            return r;
        size_t key_len;
        const char *suffix;
        es_member_split(name, &key_len, &suffix);
        if (!started || key_len != run->key.len || memcmp(name, run->key.buf, key_len) != 0) {
            if (rc == ES_OK && was_wanted)
                rc = check_complete(ctx, run, s, a, seen_audio, seen_text);
            seen_audio = seen_text = 0;
            started = 1;
            ordinal++;
            run->key.len = 0;
            es_strbuf_append(&run->key, name, key_len);
            if (run->key.oom)
                return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
            rc = start_utterance(ctx, run, s, ordinal, &at, &a, &b);
        }
        int wanted = 0;
        for (size_t i = a; i < b; i++)
            wanted |= in_pass(run, &run->items[i]);
        es_member_kind kind = es_member_kind_of(suffix);
        if (rc == ES_OK && wanted && target) {
            es_tar_link link;
            rc = es_tar_link_open(ctx, &link, copy_source_read_path(s), name, target,
                                  m->headers - 1);
            size = link.size;
            if (rc == ES_OK)
                rc = copy_member(ctx, run, link.a, NULL, name, size, kind == ES_MEMBER_TEXT, s,
                                 a, b);
            es_tar_link_close(&link);
        } else if (rc == ES_OK && wanted) {
            rc = copy_member(ctx, run, in, scan, name, size, kind == ES_MEMBER_TEXT, s, a, b);
        }
        if (rc == ES_OK && wanted)
            rc = check_measured(ctx, run, s, name, kind, size, a);
        was_wanted = wanted;
        seen_audio |= kind == ES_MEMBER_AUDIO;
        seen_text |= kind == ES_MEMBER_TEXT;
    }
    if (rc == ES_OK && was_wanted)
        rc = check_complete(ctx, run, s, a, seen_audio, seen_text);
    if (rc == ES_OK && at < s->end)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: ends after %llu utterances, but the cost table has "
                     "utterance %llu (%s) in it: the shard changed since it was measured",
                     s->path, (unsigned long long)(ordinal + 1),
                     (unsigned long long)run->items[at].pos,
                     run->p->table->rows[run->items[at].row].key);
    return rc;
}

static int copy_source_shard(es_context *ctx, copy_run *run, const copy_source *s)
{
    int wanted = 0;
    for (size_t i = s->begin; i < s->end && !wanted; i++)
        wanted = in_pass(run, &run->items[i]);
    if (!wanted)
        return ES_OK;
    struct archive *in = archive_read_new();
    if (!in)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    archive_read_support_filter_all(in);
    archive_read_support_format_tar(in);
    es_shard_file file;
    member_source m = {.in = in};
    int rc;
    /* read, not mapped: a source cut short by someone else while it is copied
     * is then a read error, not a SIGBUS */
    if (es_shard_file_open(in, &file, copy_source_read_path(s)) == ARCHIVE_OK) {
        /* a plain file (no filter): its plain headers read by the scanner */
        m.scanning = archive_filter_code(in, 0) == ARCHIVE_FILTER_NONE &&
                     es_tar_scan_init(&m.scan, file.fd, file.size) == 0;
        rc = stream_members(ctx, run, &m, s);
        es_tar_scan_release(&m.scan);
    } else {
        rc = source_error(ctx, in, s, NULL);
    }
    archive_read_free(in);
    return rc;
}

/* The pass's shards read back as they are closed: the main thread closes
 * them in order (each close flushes the writer and starts the file's
 * writeback, which waits on the disk's queue), a helper thread reads back
 * each one closed, and the main thread joins it when all are. The error
 * reported is that of the first shard in order that fails, as one thread
 * closing all and then reading them back in order would report it. */
typedef struct verify_queue {
    const copy_run *run;
    pthread_mutex_t lock;
    pthread_cond_t more;
    uint32_t closed; /* targets below it are closed, may be read back */
    uint32_t next;   /* the next to read back */
    int done;        /* no more will be closed */
    uint32_t fail_t; /* the first that failed, UINT32_MAX while none */
    int fail_rc;
    char fail_msg[1024];
} verify_queue;

static int verify_one(es_context *ctx, const copy_run *run, uint32_t t, void *buf)
{
    const copy_target *tg = &run->targets[t];
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", run->job->d->temp_path, tg->name);
    return reshard_verify(ctx, path, tg->name, run->job->compress, &tg->digest, buf, COPY_BUFFER);
}

/* Reads back closed targets until none is left, or one before them failed. */
static void verify_work(verify_queue *q, es_context *ctx, void *buf)
{
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (q->next >= q->closed && !q->done)
            pthread_cond_wait(&q->more, &q->lock);
        if (q->next >= q->closed || q->next > q->fail_t)
            break;
        uint32_t t = q->next++;
        pthread_mutex_unlock(&q->lock);
        int rc = verify_one(ctx, q->run, t, buf);
        pthread_mutex_lock(&q->lock);
        if (rc != ES_OK && t < q->fail_t) {
            q->fail_t = t;
            q->fail_rc = rc;
            snprintf(q->fail_msg, sizeof q->fail_msg, "%s", es_errmsg(ctx));
        }
    }
    pthread_mutex_unlock(&q->lock);
}

typedef struct verify_helper {
    verify_queue *q;
    es_context *ctx; /* its own, with the caller's settings */
    void *buf;
} verify_helper;

static void *verify_main(void *arg)
{
    verify_helper *h = arg;
    verify_work(h->q, h->ctx, h->buf);
    return NULL;
}

/* Closes the pass's writers and reads every shard written back. */
static int close_and_verify(es_context *ctx, copy_run *run)
{
    verify_queue q = {.run = run, .closed = run->t0, .next = run->t0, .fail_t = UINT32_MAX};
    pthread_mutex_init(&q.lock, NULL);
    pthread_cond_init(&q.more, NULL);
    verify_helper h = {.q = &q};
    pthread_t thread;
    int threaded = 0;
    if (run->t1 - run->t0 >= 2) {
        h.ctx = es_context_new_like(ctx);
        h.buf = malloc(COPY_BUFFER);
        threaded = h.ctx && h.buf && pthread_create(&thread, NULL, verify_main, &h) == 0;
    }
    int rc = ES_OK;
    for (uint32_t t = run->t0; t < run->t1; t++) {
        int crc = close_target(ctx, run, t, rc == ES_OK);
        rc = rc == ES_OK ? crc : rc;
        if (rc == ES_OK && threaded) {
            pthread_mutex_lock(&q.lock);
            q.closed = t + 1;
            pthread_cond_signal(&q.more);
            pthread_mutex_unlock(&q.lock);
        }
    }
    pthread_mutex_lock(&q.lock);
    q.closed = rc == ES_OK ? run->t1 : q.closed;
    q.next = rc == ES_OK ? q.next : run->t1; /* a close failed: no more read back */
    q.done = 1;
    pthread_cond_broadcast(&q.more);
    pthread_mutex_unlock(&q.lock);
    if (rc == ES_OK)
        verify_work(&q, ctx, run->buf);
    if (threaded)
        pthread_join(thread, NULL);
    if (rc == ES_OK && q.fail_t != UINT32_MAX)
        rc = es_fail(ctx, q.fail_rc, "%s", q.fail_msg);
    free(h.buf);
    if (h.ctx)
        es_context_free(h.ctx);
    pthread_cond_destroy(&q.more);
    pthread_mutex_destroy(&q.lock);
    return rc;
}

/* ---- the pass loop's ops (reshard_pass.c) ---- */

static size_t tar_target_memory(const reshard_job *job)
{
    return reshard_writer_memory(job->compress);
}

static int tar_begin_pass(es_context *ctx, void *r, uint32_t t0, uint32_t t1)
{
    copy_run *run = r;
    run->t0 = t0;
    run->t1 = t1;
    return open_targets(ctx, run);
}

static int tar_copy_source(es_context *ctx, void *r, const copy_source *s)
{
    return copy_source_shard(ctx, r, s);
}

/* Closes the pass's writers and reads every shard written back; after an
 * error, closes them quietly. */
static int tar_end_pass(es_context *ctx, void *r, int rc)
{
    copy_run *run = r;
    if (rc == ES_OK)
        return close_and_verify(ctx, run);
    for (uint32_t t = run->t0; t < run->t1; t++)
        close_target(ctx, run, t, 0);
    return rc;
}

static const reshard_ops tar_ops = {
    .name = "tar",
    .target_memory = tar_target_memory,
    .begin_pass = tar_begin_pass,
    .copy_source = tar_copy_source,
    .end_pass = tar_end_pass,
};

static void run_release(copy_run *run)
{
    free(run->targets);
    free(run->buf);
    if (run->hash)
        XXH3_freeState(run->hash);
    if (run->out)
        archive_entry_free(run->out);
    es_strbuf_release(&run->key);
    es_strbuf_release(&run->text);
}

int reshard_copy_tar(es_context *ctx, reshard_job *job, uint32_t t0, uint32_t t1)
{
    copy_run run = {.p = job->p, .job = job, .items = job->items};
    run.targets = calloc(job->p->reshard->n_shards, sizeof *run.targets);
    run.buf = malloc(COPY_BUFFER);
    run.hash = XXH3_createState();
    run.out = archive_entry_new();
    int rc = run.targets && run.buf && run.hash && run.out
                 ? reshard_run_passes(ctx, job, &tar_ops, &run, t0, t1)
                 : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    run_release(&run);
    return rc;
}
