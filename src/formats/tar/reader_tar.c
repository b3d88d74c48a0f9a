/* WeNet / WebDataset tar shards, plain or compressed (gzip, zstd, …: whatever
 * libarchive's filters read), grouped into utterances the way WeNet's
 * `tar_file_and_group` does (member_group.h).
 *
 * Audio members are read only as far as their header (the probe), unless
 * hashing asks for every byte; the rest is skipped (by moving an offset, for
 * an uncompressed tar in a file). An uncompressed shard's plain headers are
 * read by tar_scan.h, without libarchive's cost per member; from the first
 * header it leaves, libarchive reads the rest. */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/utf8.h"
#include "readers/audio_object.h"
#include "formats/tar/member_group.h"
#include "readers/reader.h"
#include "formats/tar/tar.h"
#include "readers/shard_file.h"
#include "formats/tar/tar_link.h"
#include "formats/tar/tar_scan.h"

/* A text or speaker member larger than this is not a transcript. */
#define MAX_TEXT_MEMBER (1u << 20)

struct es_shard_reader {
    struct archive *a;
    es_shard_file file;
    struct archive *src; /* the pending member's data: a, or a hard link's target */
    es_tar_link link;
    es_tar_scan scan;
    int fast;            /* headers come from scan, not from a */
    uint64_t data_pos;   /* fast: bytes of the pending member read so far */
    uint64_t headers;    /* headers read so far */
    const char *path, *shard;
    es_reader_opts opts;
    int pending;      /* a header was read whose member is not yet consumed */
    int at_end;
    es_strbuf name;   /* pending member's name */
    uint64_t size;    /* pending member's declared size */
    uint64_t ordinal; /* utterances started so far */
    /* the utterance being assembled */
    es_strbuf key, spk, text;
    int bad;
    char problem[512];
};

int bid_tar(const uint8_t *h, size_t n)
{
    static const uint8_t gz[] = {0x1f, 0x8b}, zst[] = {0x28, 0xb5, 0x2f, 0xfd},
                         xz[] = {0xfd, '7', 'z', 'X', 'Z', 0}, bz[] = {'B', 'Z', 'h'};
    if (n >= 262 && memcmp(h + 257, "ustar", 5) == 0)
        return 100;
    /* A compressed stream is most likely a compressed tar shard; libarchive
     * will say so clearly if it is not. */
    if ((n >= 2 && memcmp(h, gz, 2) == 0) || (n >= 4 && memcmp(h, zst, 4) == 0) ||
        (n >= 6 && memcmp(h, xz, 6) == 0) || (n >= 3 && memcmp(h, bz, 3) == 0))
        return 50;
    if (n < 512)
        return 0;
    /* A pre-POSIX (v7) header has no magic; its checksum field still proves it. */
    unsigned long sum = 0, stored = 0;
    for (size_t i = 0; i < 512; i++)
        sum += (i >= 148 && i < 156) ? ' ' : h[i];
    for (size_t i = 148; i < 156 && h[i] >= '0' && h[i] <= '7'; i++)
        stored = stored * 8 + (unsigned long)(h[i] - '0');
    return (sum == stored && sum != 8 * ' ') ? 40 : 0;
}

int tar_open(es_context *ctx, const char *path, const char *shard,
                    const es_reader_opts *opts, es_shard_reader **out)
{
    *out = NULL;
    es_shard_reader *r = calloc(1, sizeof *r);
    if (!r)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    r->a = archive_read_new();
    r->path = path;
    r->shard = shard;
    r->opts = *opts;
    if (!r->a) {
        free(r);
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    }
    archive_read_support_filter_all(r->a);
    archive_read_support_format_tar(r->a);
    if (es_shard_file_open(r->a, &r->file, path) != ARCHIVE_OK) {
        int rc = es_fail(ctx, ES_ERR_FORMAT, "%s: %s", path,
                         archive_error_string(r->a) ? archive_error_string(r->a) : "cannot open");
        archive_read_free(r->a);
        free(r);
        return rc;
    }
    /* libarchive chose its filters while opening: none means a plain file */
    r->fast = !opts->libarchive_only && archive_filter_code(r->a, 0) == ARCHIVE_FILTER_NONE &&
              es_tar_scan_init(&r->scan, r->file.fd, r->file.size) == 0;
    *out = r;
    return ES_OK;
}

static int shard_error(es_context *ctx, es_shard_reader *r)
{
    const char *msg = archive_error_string(r->src ? r->src : r->a);
    if (r->pending || r->name.len)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: %s", r->path, r->name.buf,
                       msg ? msg : "read error");
    return es_fail(ctx, ES_ERR_FORMAT, "%s: %s", r->path, msg ? msg : "read error");
}

/* The next header from the scanner: 1 with r->name / r->size set, 0 at the
 * end, or -1 when libarchive is to read from here (then positioned past the
 * headers the scanner read). */
static int fast_header(es_context *ctx, es_shard_reader *r)
{
    int rc = es_tar_scan_next(&r->scan);
    if (rc == ES_TAR_SCAN_MEMBER) {
        r->headers++;
        r->name.len = 0;
        es_strbuf_puts(&r->name, r->scan.name);
        if (r->name.oom)
            return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", r->path);
        r->size = r->scan.data_size;
        r->data_pos = 0;
        r->pending = 1;
        return 1;
    }
    if (rc == ES_TAR_SCAN_END)
        return 0;
    r->fast = 0;
    es_tar_scan_release(&r->scan);
    struct archive_entry *e;
    for (uint64_t i = 0; i < r->headers; i++) {
        int h = archive_read_next_header(r->a, &e);
        if (!es_archive_header_ok(h))
            return h == ARCHIVE_EOF ? 0 : shard_error(ctx, r);
    }
    return -1;
}

/* A read of the scanner's file failed: worded as libarchive's own source
 * (shard_file.c) words it. */
static int fast_error(es_context *ctx, es_shard_reader *r)
{
    return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: read error", r->path, r->name.buf);
}

/* Reads the next regular member's header into r->name / r->size. Returns 1, 0 at
 * end of archive, or a negative status. */
static int read_header(es_context *ctx, es_shard_reader *r)
{
    if (r->fast) {
        int rc = fast_header(ctx, r);
        if (rc != -1)
            return rc;
    }
    for (;;) {
        struct archive_entry *e;
        es_tar_link_close(&r->link);
        r->src = r->a;
        int rc = archive_read_next_header(r->a, &e);
        if (rc == ARCHIVE_EOF)
            return 0;
        if (rc == ARCHIVE_RETRY)
            return r->name.len ? es_fail(ctx, ES_ERR_FORMAT, "%s: damaged tar header after member %s",
                                         r->path, r->name.buf)
                               : es_fail(ctx, ES_ERR_FORMAT, "%s: damaged tar header", r->path);
        if (!es_archive_header_ok(rc))
            return shard_error(ctx, r);
        r->headers++;
        const char *target = archive_entry_hardlink(e);
        if (!target && archive_entry_filetype(e) != AE_IFREG)
            continue; /* directories, symbolic links: no members of an utterance */
        const char *name = archive_entry_pathname(e);
        r->name.len = 0;
        es_strbuf_puts(&r->name, name ? name : "");
        if (r->name.oom)
            return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", r->path);
        r->size = archive_entry_size_is_set(e) ? (uint64_t)archive_entry_size(e) : 0;
        if (target) { /* read as tarfile reads it: the target's data (tar_link.h) */
            rc = es_tar_link_open(ctx, &r->link, r->path, r->name.buf, target, r->headers - 1);
            if (rc != ES_OK)
                return rc;
            r->src = r->link.a;
            r->size = r->link.size;
        }
        r->pending = 1;
        return 1;
    }
}

static ssize_t member_read(void *opaque, void *buf, size_t n)
{
    la_ssize_t got = archive_read_data(opaque, buf, n);
    return got < 0 ? -1 : (ssize_t)got;
}

/* The pending member's data, from the scanner's file (the size is known to
 * fit in it). */
static ssize_t fast_read(void *opaque, void *buf, size_t n)
{
    es_shard_reader *r = opaque;
    uint64_t left = r->size - r->data_pos;
    ssize_t got = es_tar_scan_read(&r->scan, r->scan.data_off + r->data_pos, buf,
                                   n < left ? n : (size_t)left);
    if (got > 0)
        r->data_pos += (uint64_t)got;
    return got;
}

static ssize_t data_read(es_shard_reader *r, void *buf, size_t n)
{
    return r->fast ? fast_read(r, buf, n) : member_read(r->src, buf, n);
}

static void mark_bad(es_shard_reader *r, const char *fmt, const char *a, const char *b)
{
    if (r->bad)
        return; /* keep the first problem */
    r->bad = 1;
    snprintf(r->problem, sizeof r->problem, fmt, a, b);
}

/* Reads a small member whole (transcript, speaker) into sb, stripped later. */
static int read_small(es_context *ctx, es_shard_reader *r, es_strbuf *sb)
{
    sb->len = 0;
    if (r->size > MAX_TEXT_MEMBER) {
        mark_bad(r, "member %s: %s", r->name.buf, "larger than 1 MiB; not a transcript");
        return ES_OK;
    }
    char buf[8192];
    ssize_t got;
    while ((got = data_read(r, buf, sizeof buf)) > 0)
        es_strbuf_append(sb, buf, (size_t)got);
    if (got < 0)
        return r->fast ? fast_error(ctx, r) : shard_error(ctx, r);
    if (sb->oom)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", r->path);
    return ES_OK;
}

static int consume_audio(es_context *ctx, es_shard_reader *r, es_cost_row *row,
                         const char *suffix)
{
    if (row->flags & (ES_FLAG_AUDIO | ES_FLAG_UNSUPPORTED)) {
        mark_bad(r, "member %s: %s", r->name.buf, "second audio member for one key");
        return ES_OK;
    }
    es_byte_stream s = r->fast ? (es_byte_stream){fast_read, NULL, r, r->size, 0}
                               : (es_byte_stream){member_read, NULL, r->src, r->size, 0};
    int strict = strcmp(suffix, "wav") == 0 || strcmp(suffix, "flac") == 0;
    char err[256];
    int rc = es_audio_object_measure(&s, &r->opts, strict, row, err, sizeof err);
    if (rc == ES_AUDIO_OBJ_IO)
        return r->fast ? fast_error(ctx, r) : shard_error(ctx, r);
    if (rc == ES_AUDIO_OBJ_BAD)
        mark_bad(r, "member %s: %s", r->name.buf, err);
    return ES_OK;
}

/* Consumes the pending member into the utterance being built. */
static int consume_member(es_context *ctx, es_shard_reader *r, es_cost_row *row,
                          const char *suffix)
{
    r->pending = 0;
    switch (es_member_kind_of(suffix)) {
    case ES_MEMBER_AUDIO:
        return consume_audio(ctx, r, row, suffix);
    case ES_MEMBER_TEXT: {
        int rc = read_small(ctx, r, &r->text);
        if (rc == ES_OK && !r->text.oom) {
            const char *s = r->text.buf ? r->text.buf : "";
            size_t n = es_strip(&s, r->text.len); /* WeNet strips the transcript */
            es_reader_text(&r->opts, s, n, row);
        }
        return rc;
    }
    case ES_MEMBER_SPK: {
        int rc = read_small(ctx, r, &r->spk);
        if (rc == ES_OK && r->spk.len) {
            const char *s = r->spk.buf;
            size_t n = es_strip(&s, r->spk.len);
            memmove(r->spk.buf, s, n);
            r->spk.buf[n] = '\0';
            r->spk.len = n;
        }
        return rc;
    }
    case ES_MEMBER_OTHER:
        return ES_OK; /* an attribute the loader keeps; nothing to measure */
    }
    return ES_OK;
}

static void start_utterance(es_shard_reader *r, es_cost_row *row, size_t key_len)
{
    memset(row, 0, sizeof *row);
    r->key.len = 0;
    es_strbuf_append(&r->key, r->name.buf, key_len);
    r->spk.len = 0;
    es_strbuf_puts(&r->spk, "");
    r->bad = 0;
    r->problem[0] = '\0';
    row->pos = r->ordinal++;
}

static int finish_utterance(es_context *ctx, es_shard_reader *r, es_cost_row *row)
{
    row->key = r->key.buf;
    row->shard = r->shard;
    row->spk = r->spk.buf;
    if (!r->bad && !(row->flags & (ES_FLAG_AUDIO | ES_FLAG_UNSUPPORTED)))
        mark_bad(r, "utterance %s: %s", r->key.buf,
                 "no audio member (.wav, .flac, .mp3, .m4a, .ogg, .opus, .wma)");
    if (r->bad) {
        es_fail(ctx, ES_ERR_FORMAT, "%s: %s", r->path, r->problem);
        return ES_NEXT_BAD;
    }
    return ES_NEXT_RECORD;
}

int tar_next(es_context *ctx, es_shard_reader *r, es_cost_row *row)
{
    int started = 0;
    for (;;) {
        if (!r->pending && !r->at_end) {
            int rc = read_header(ctx, r);
            if (rc < 0)
                return rc;
            if (rc == 0)
                r->at_end = 1;
        }
        if (r->at_end)
            return started ? finish_utterance(ctx, r, row) : ES_NEXT_END;
        size_t key_len;
        const char *suffix;
        es_member_split(r->name.buf, &key_len, &suffix);
        if (started && (key_len != r->key.len || memcmp(r->name.buf, r->key.buf, key_len) != 0))
            return finish_utterance(ctx, r, row); /* the pending member starts the next key */
        if (!started) {
            start_utterance(r, row, key_len);
            if (r->key.oom || r->spk.oom)
                return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", r->path);
            started = 1;
        }
        int rc = consume_member(ctx, r, row, suffix);
        if (rc < 0)
            return rc;
    }
}

void tar_close(es_shard_reader *r)
{
    if (!r)
        return;
    es_tar_link_close(&r->link);
    if (r->fast)
        es_tar_scan_release(&r->scan);
    archive_read_free(r->a);
    es_strbuf_release(&r->name);
    es_strbuf_release(&r->key);
    es_strbuf_release(&r->spk);
    es_strbuf_release(&r->text);
    free(r);
}
