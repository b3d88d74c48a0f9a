/* Tar shard utterances by ordinal, numbered as the measure reader numbers them
 * (reader_tar.c): regular members only, grouped into utterances by the key
 * before their name's last '.' while consecutive members share it
 * (member_group.h, WeNet's tar_file_and_group).
 *
 * A fetch is one forward pass. Members of utterances not asked for, and those
 * whose suffix was not asked for, are skipped with archive_read_data_skip
 * (a seek in an uncompressed tar, via shard_file.c). The pass is kept open
 * after the fetch, so a loader fetching its batches in shard order continues
 * where the last fetch stopped instead of starting over. In a plain tar, a
 * pass notes where each utterance's first header is; a later fetch of an
 * utterance before the pass, or far after it, begins a pass there (a planned
 * batch's rows come in any order: starting over from the first header made a
 * worker's fetches cost O(shard) each). */
#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/strbuf.h"
#include "formats/tar/member_group.h"
#include "readers/shard_file.h"
#include "formats/tar/tar_link.h"
#include "formats/tar/tar.h"

/* A member larger than this is not one utterance's audio or text. */
#define MAX_MEMBER ((size_t)1 << 30)
/* Utterances a pass goes through rather than begin a new pass at the wanted one
 * (a new pass opens the file again). */
#define JUMP_GAP 8

/* Where utterance u begins: its first member's header, and the regular
 * members' headers before it (tar_link.h counts headers from the start). */
typedef struct utt_start {
    uint64_t offset, headers;
    uint64_t name_hash; /* of that member's name: checked when a pass begins there */
} utt_start;

struct rows_tar {
    const char *path;
    struct archive *a;  /* the pass in progress; NULL before the first */
    es_shard_file file;
    int pending;        /* the header of `name` was read, its data not yet */
    int at_end;
    es_strbuf name;     /* the pending member: the first of utterance next_ord */
    es_strbuf target;   /* the pending member is a hard link to this (len > 0) */
    uint64_t headers;   /* headers read in this pass */
    uint64_t next_ord;
    int64_t count;      /* utterances in the shard; -1 until a pass reached the end */
    es_strbuf key;
    uint8_t *buf;       /* a wanted member's data as it is read */
    size_t buf_cap;
    es_field *members;  /* a wanted utterance's members, before they go to the arena */
    size_t n_members, members_cap;
    int plain;          /* no compression: a pass can begin at a noted start */
    uint64_t base;      /* the file offset the pass in progress began at */
    utt_start *starts;  /* [n_starts]: utterances 0 .. n_starts - 1, noted by passes */
    size_t n_starts, starts_cap;
    uint64_t headers_read; /* over the reader's life (rows_tar_headers_read) */
};

int rows_tar_open(es_context *ctx, const char *path, rows_tar **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    (*out)->path = path;
    (*out)->count = -1;
    return ES_OK;
}

void rows_tar_free(rows_tar *t)
{
    if (!t)
        return;
    if (t->a)
        archive_read_free(t->a);
    es_strbuf_release(&t->name);
    es_strbuf_release(&t->target);
    es_strbuf_release(&t->key);
    free(t->buf);
    free(t->members);
    free(t->starts);
    free(t);
}

static int tar_error(es_context *ctx, rows_tar *t)
{
    const char *msg = t->a ? archive_error_string(t->a) : NULL;
    if (t->name.len)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: %s", t->path, t->name.buf,
                       msg ? msg : "read error");
    return es_fail(ctx, ES_ERR_FORMAT, "%s: %s", t->path, msg ? msg : "read error");
}

/* Starts a pass from the first member. */
static int restart(es_context *ctx, rows_tar *t)
{
    if (t->a)
        archive_read_free(t->a);
    t->pending = t->at_end = 0;
    t->next_ord = 0;
    t->name.len = 0;
    t->headers = 0;
    t->base = 0;
    t->a = archive_read_new();
    if (!t->a)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", t->path);
    archive_read_support_filter_all(t->a);
    archive_read_support_format_tar(t->a);
    if (es_shard_file_open(t->a, &t->file, t->path) != ARCHIVE_OK) {
        int rc = tar_error(ctx, t);
        archive_read_free(t->a);
        t->a = NULL;
        return rc;
    }
    t->plain = archive_filter_count(t->a) == 1 && archive_filter_code(t->a, 0) == ARCHIVE_FILTER_NONE;
    return ES_OK;
}

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

/* Notes where utterance `ord`, whose first member's header was just read, begins. */
static void note_start(rows_tar *t, uint64_t ord)
{
    int64_t at = archive_read_header_position(t->a);
    if (!t->plain || ord != t->n_starts || at < 0 || (t->base + (uint64_t)at) % 512)
        return;
    if (es_grow((void **)&t->starts, &t->starts_cap, t->n_starts + 1, sizeof *t->starts, 1024))
        return; /* out of memory: later fetches pass through instead */
    t->starts[t->n_starts++] = (utt_start){t->base + (uint64_t)at, t->headers - 1,
                                           name_hash(t->name.buf, t->name.len)};
}

static int try_jump(rows_tar *t, uint64_t u)
{
    const utt_start *s = &t->starts[u];
    if (t->a)
        archive_read_free(t->a);
    t->pending = t->at_end = 0;
    t->name.len = t->target.len = 0;
    t->a = archive_read_new();
    if (!t->a)
        return 0;
    archive_read_support_filter_all(t->a);
    archive_read_support_format_tar(t->a);
    struct archive_entry *e;
    if (es_shard_file_open_at(t->a, &t->file, t->path, s->offset) != ARCHIVE_OK ||
        !es_archive_header_ok(archive_read_next_header(t->a, &e)) ||
        archive_read_header_position(t->a) != 0 || archive_entry_filetype(e) != AE_IFREG ||
        archive_entry_hardlink(e) || !archive_entry_pathname(e)) {
        archive_read_free(t->a);
        t->a = NULL;
        return 0;
    }
    t->headers_read++;
    es_strbuf_puts(&t->name, archive_entry_pathname(e));
    if (t->name.oom || name_hash(t->name.buf, t->name.len) != s->name_hash) {
        archive_read_free(t->a); /* not the member noted there: the file changed */
        t->a = NULL;
        return 0;
    }
    t->base = s->offset;
    t->headers = s->headers + 1;
    t->next_ord = u;
    t->pending = 1;
    return 1;
}

/* Begins a pass at utterance u (< n_starts). 1: the pass stands at u, its first
 * member's header read; 0: it does not, and the noted starts are forgotten (the
 * file is not as the pass that noted them read it); the caller starts over. */
static int jump(rows_tar *t, uint64_t u)
{
    int ok = try_jump(t, u);
    if (!ok)
        t->n_starts = 0;
    return ok;
}

/* Reads the next regular member's header into t->name. 1, 0 at the end, or a
 * negative status. */
static int read_header(es_context *ctx, rows_tar *t)
{
    for (;;) {
        struct archive_entry *e;
        int rc = archive_read_next_header(t->a, &e);
        if (rc == ARCHIVE_EOF)
            return 0;
        /* ARCHIVE_RETRY: a damaged header libarchive would step over, losing
         * members; a corrupt shard, as reader_tar.c says (shard_file.h). */
        if (rc == ARCHIVE_RETRY)
            return t->name.len ? es_fail(ctx, ES_ERR_FORMAT, "%s: damaged tar header after member %s",
                                         t->path, t->name.buf)
                               : es_fail(ctx, ES_ERR_FORMAT, "%s: damaged tar header", t->path);
        if (!es_archive_header_ok(rc))
            return tar_error(ctx, t);
        t->headers++;
        t->headers_read++;
        const char *target = archive_entry_hardlink(e);
        if (!target && archive_entry_filetype(e) != AE_IFREG)
            continue; /* directories, symbolic links: not members of an utterance */
        const char *name = archive_entry_pathname(e);
        t->name.len = t->target.len = 0;
        es_strbuf_puts(&t->name, name ? name : "");
        if (target) /* a hard link: read as tarfile reads it (tar_link.h) */
            es_strbuf_puts(&t->target, target);
        if (t->name.oom || t->target.oom)
            return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", t->path);
        t->pending = 1;
        return 1;
    }
}

static int wanted_suffix(const rows_request *req, const char *suffix)
{
    if (!req->columns)
        return 1;
    for (size_t k = 0; k < req->n_columns; k++)
        if (strcmp(req->columns[k], suffix) == 0)
            return 1;
    return 0;
}

/* Reads a's data into t->buf; *len its size. */
static int read_from(es_context *ctx, rows_tar *t, struct archive *a, size_t *len)
{
    *len = 0;
    for (;;) {
        if (es_grow((void **)&t->buf, &t->buf_cap, *len + 65536, 1, 65536))
            return es_fail(ctx, ES_ERR_NOMEM, "%s: member %s: out of memory", t->path, t->name.buf);
        la_ssize_t got = archive_read_data(a, t->buf + *len, t->buf_cap - *len);
        if (got < 0) {
            const char *msg = archive_error_string(a);
            return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: %s", t->path, t->name.buf,
                           msg ? msg : "read error");
        }
        if (got == 0)
            return ES_OK;
        *len += (size_t)got;
        if (*len > MAX_MEMBER)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: larger than 1 GiB", t->path, t->name.buf);
    }
}

/* The pending member's data into t->buf (a hard link's: its target's). */
static int read_data(es_context *ctx, rows_tar *t, size_t *len)
{
    if (!t->target.len)
        return read_from(ctx, t, t->a, len);
    es_tar_link link;
    int rc = es_tar_link_open(ctx, &link, t->path, t->name.buf, t->target.buf, t->headers - 1);
    if (rc == ES_OK)
        rc = read_from(ctx, t, link.a, len);
    es_tar_link_close(&link);
    return rc;
}

/* Adds the pending member (data and suffix) to the wanted utterance. */
static int keep_member(es_context *ctx, rows_tar *t, const char *suffix, es_arena *arena)
{
    size_t len;
    int rc = read_data(ctx, t, &len);
    if (rc != ES_OK)
        return rc;
    if (es_grow((void **)&t->members, &t->members_cap, t->n_members + 1, sizeof *t->members, 8))
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", t->path);
    char *name = es_arena_strndup(arena, suffix, strlen(suffix));
    char *data = es_arena_alloc(arena, len + 1);
    if (!name || !data)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: member %s: out of memory", t->path, t->name.buf);
    if (len)
        memcpy(data, t->buf, len);
    data[len] = '\0';
    t->members[t->n_members++] = (es_field){name, {.type = ES_VALUE_BYTES, .len = len, .data = data}};
    return ES_OK;
}

/* The row of the utterance just read: "key", then its kept members. */
static int make_row(es_context *ctx, rows_tar *t, es_arena *arena, es_row *row)
{
    es_field *f = es_arena_alloc(arena, (t->n_members + 1) * sizeof *f);
    char *key = es_arena_strndup(arena, t->key.buf ? t->key.buf : "", t->key.len);
    if (!f || !key)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", t->path);
    f[0] = (es_field){"key", {.type = ES_VALUE_STRING, .len = t->key.len, .data = key}};
    if (t->n_members)
        memcpy(f + 1, t->members, t->n_members * sizeof *f);
    *row = (es_row){f, t->n_members + 1};
    return ES_OK;
}

/* Consumes the utterance the pending member starts; with `row`, keeps the
 * members the request wants and fills *row. */
static int utterance(es_context *ctx, rows_tar *t, const rows_request *req, es_row *row)
{
    size_t key_len;
    const char *suffix;
    es_member_split(t->name.buf, &key_len, &suffix);
    t->key.len = 0;
    es_strbuf_append(&t->key, t->name.buf, key_len);
    if (t->key.oom)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", t->path);
    t->n_members = 0;
    for (;;) {
        int rc = ES_OK;
        if (row && wanted_suffix(req, suffix))
            rc = keep_member(ctx, t, suffix, req->arena);
        else if (archive_read_data_skip(t->a) < ARCHIVE_WARN)
            rc = tar_error(ctx, t);
        t->pending = 0;
        if (rc == ES_OK)
            rc = read_header(ctx, t);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            t->at_end = 1;
            break;
        }
        es_member_split(t->name.buf, &key_len, &suffix);
        if (key_len != t->key.len || memcmp(t->name.buf, t->key.buf, key_len) != 0)
            break; /* the pending member starts the next utterance */
    }
    return row ? make_row(ctx, t, req->arena, row) : ES_OK;
}

/* Goes through utterances up to the last requested one (req NULL: to the end). */
static int pass(es_context *ctx, rows_tar *t, const rows_request *req)
{
    int rc = ES_OK;
    int behind = !t->a || !req || (req->n && req->pos[0] < t->next_ord); /* no pass serves it */
    if (behind && !(req && req->n && req->pos[0] < t->n_starts && jump(t, req->pos[0])))
        rc = restart(ctx, t);
    size_t k = 0;
    while (rc == ES_OK && (!req || k < req->n)) {
        if (req && req->pos[k] > t->next_ord + JUMP_GAP && req->pos[k] < t->n_starts &&
            !jump(t, req->pos[k]))
            rc = restart(ctx, t); /* the pass was closed: go through from the start */
        if (rc != ES_OK)
            break;
        if (!t->pending && !t->at_end) {
            int got = read_header(ctx, t);
            if (got < 0)
                return got;
            t->at_end = got == 0;
        }
        if (t->at_end)
            break;
        note_start(t, t->next_ord);
        uint64_t ord = t->next_ord++;
        int want = req && req->pos[k] == ord;
        rc = utterance(ctx, t, req, want ? &req->out[k] : NULL);
        k += want;
    }
    if (rc != ES_OK) {
        archive_read_free(t->a); /* a failed pass cannot be continued */
        t->a = NULL;
        return rc;
    }
    if (t->at_end)
        t->count = (int64_t)t->next_ord;
    if (req && k < req->n)
        return rows_out_of_range(ctx, t->path, req->pos[k], t->next_ord, "utterances");
    return ES_OK;
}

uint64_t rows_tar_headers_read(const rows_tar *t)
{
    return t->headers_read;
}

int rows_tar_count(es_context *ctx, rows_tar *t, uint64_t *n)
{
    if (t->count < 0) {
        int rc = pass(ctx, t, NULL);
        if (rc != ES_OK)
            return rc;
    }
    *n = (uint64_t)t->count;
    return ES_OK;
}

int rows_tar_read(es_context *ctx, rows_tar *t, const rows_request *req)
{
    if (req->n && t->count >= 0 && req->pos[req->n - 1] >= (uint64_t)t->count) {
        size_t k = 0;
        while (req->pos[k] < (uint64_t)t->count)
            k++;
        return rows_out_of_range(ctx, t->path, req->pos[k], (uint64_t)t->count, "utterances");
    }
    return req->n ? pass(ctx, t, req) : ES_OK;
}
