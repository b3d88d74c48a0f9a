/* torch.save files: a zip archive (torch >= 1.6) holding `<name>/data.pkl`,
 * read with libarchive, and streamed into the strict unpickler. A plain
 * pickle file (pickle.dump of the same dict) is read directly; the legacy torch
 * format (torch < 1.6, `_use_new_zipfile_serialization=False`) is refused. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_stream.h"
#include "validate/sources/emb_source.h"

/* The legacy format opens with the pickled magic number 0x1950a86a20f9469cfc6c. */
static const unsigned char legacy_magic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                             0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

static ssize_t archive_source(void *opaque, void *buf, size_t n)
{
    la_ssize_t got = archive_read_data(opaque, buf, n);
    return got < 0 ? -1 : (ssize_t)got;
}

/* `<name>/data.pkl` with exactly one folder level, as torch writes it. */
static int is_data_pkl(const char *name)
{
    const char *slash = strchr(name, '/');
    return slash && slash != name && !strcmp(slash, "/data.pkl");
}

/* libarchive's message as one printable line. */
static const char *archive_msg(struct archive *a, char *buf, size_t cap, const char *fallback)
{
    const char *m = archive_error_string(a);
    return es_printable(buf, cap, m ? m : fallback, SIZE_MAX);
}

/* file_size: the file's size, for the unpickler's cap on a compressed member. */
static int from_archive(es_context *ctx, const char *name, struct archive *a, uint64_t file_size,
                        es_emb_set *out)
{
    char msg[256];
    struct archive_entry *e;
    int r;
    while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
        const char *member = archive_entry_pathname(e);
        if (!member || !is_data_pkl(member))
            continue;
        /* the member name is the file's bytes: printable, so the error stays one line */
        char shown[1024], where[4096];
        snprintf(where, sizeof where, "%s: %s", name,
                 es_printable(shown, sizeof shown, member, SIZE_MAX));
        es_byte_stream s = {archive_source, NULL, a, (uint64_t)archive_entry_size(e), 0};
        /* a stored member is smaller than the file: only a compressed one meets the cap */
        int rc = es_unpickle_dict(ctx, where, &s, file_size, out);
        if (rc == ES_ERR_IO)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: %s", where,
                           archive_msg(a, msg, sizeof msg, "corrupt or truncated archive"));
        return rc;
    }
    if (r != ARCHIVE_EOF)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: corrupt or truncated zip: %s", name,
                       archive_msg(a, msg, sizeof msg, "read error"));
    return es_fail(ctx, ES_ERR_FORMAT, "%s: no <name>/data.pkl member: not a torch.save file", name);
}

static int open_archive(es_context *ctx, const char *name, struct archive **out)
{
    struct archive *a = archive_read_new();
    if (!a)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    archive_read_support_format_zip(a);
    *out = a;
    return ES_OK;
}

static int check_not_legacy(es_context *ctx, const char *name, const unsigned char *b, size_t n)
{
    if (n >= sizeof legacy_magic && !memcmp(b, legacy_magic, sizeof legacy_magic))
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: legacy torch format (torch < 1.6 or "
                       "_use_new_zipfile_serialization=False): re-save with a current torch.save",
                       name);
    return ES_OK;
}

int es_torch_load_memory(es_context *ctx, const char *name, const void *data, size_t len,
                         es_emb_set *out)
{
    const unsigned char *b = data;
    int rc = check_not_legacy(ctx, name, b, len);
    if (rc != ES_OK)
        return rc;
    if (len >= 1 && b[0] == 0x80) {
        es_byte_stream s;
        es_mem_stream m;
        es_byte_stream_from_memory(&s, &m, data, len);
        return es_unpickle_dict(ctx, name, &s, 0, out);
    }
    struct archive *a = NULL;
    if ((rc = open_archive(ctx, name, &a)) != ES_OK)
        return rc;
    char msg[256];
    if (archive_read_open_memory(a, data, len) != ARCHIVE_OK)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: not a zip archive: %s", name,
                     archive_msg(a, msg, sizeof msg, "unreadable"));
    else
        rc = from_archive(ctx, name, a, len, out);
    archive_read_free(a);
    return rc;
}

int es_torch_load(es_context *ctx, const char *path, es_emb_set *out)
{
    unsigned char head[16];
    FILE *fp;
    int err = es_fopen_regular(path, &fp);
    if (err)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(err));
    size_t n = fread(head, 1, sizeof head, fp);
    fclose(fp);
    int rc = check_not_legacy(ctx, path, head, n);
    if (rc != ES_OK)
        return rc;
    if (n >= 1 && head[0] == 0x80) {
        es_byte_stream s;
        es_file_stream f;
        int e = es_file_stream_open(&s, &f, path);
        if (e)
            return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(e));
        rc = es_unpickle_dict(ctx, path, &s, 0, out);
        es_file_stream_close(&f);
        return rc;
    }
    struct archive *a = NULL;
    if ((rc = open_archive(ctx, path, &a)) != ES_OK)
        return rc;
    char msg[256];
    struct stat st;
    if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK)
        rc = es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, archive_msg(a, msg, sizeof msg, "unreadable"));
    else
        rc = from_archive(ctx, path, a, stat(path, &st) == 0 ? (uint64_t)st.st_size : 0, out);
    archive_read_free(a);
    return rc;
}

/* A zip (torch >= 1.6), or a pickle of protocol 2 to 5 (a plain pickle, or
 * legacy torch, which es_torch_load refuses by name). */
static int torch_bid(const uint8_t *b, size_t n)
{
    if (n >= 4 && !memcmp(b, "PK\003\004", 4))
        return 10;
    if (n >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
        return 10;
    return 0;
}

static int torch_source_load(es_context *ctx, const char *path, const es_emb_load_args *a,
                             es_emb_set *out)
{
    (void)a; /* a source callback: keys and root are other formats' */
    return es_torch_load(ctx, path, out);
}

const es_emb_source_ops es_emb_source_torch = {"torch", torch_bid, torch_source_load};
