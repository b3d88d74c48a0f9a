#include "formats/tar/reshard_tar.h"

#include <archive_entry.h>
#include <string.h>
#include <xxhash.h>

#include "readers/shard_file.h"
#include "formats/tar/tar_scan.h"

void reshard_digest_add(reshard_digest *d, const char *name, uint64_t size, uint64_t hash)
{
    uint8_t tail[16];
    for (int i = 0; i < 8; i++) {
        tail[i] = (uint8_t)(size >> (8 * i));
        tail[8 + i] = (uint8_t)(hash >> (8 * i));
    }
    d->chain = XXH3_64bits_withSeed(name, strlen(name) + 1, d->chain);
    d->chain = XXH3_64bits_withSeed(tail, sizeof tail, d->chain);
    d->members++;
    d->bytes += size;
}

static int add_filter(struct archive *a, es_compress c)
{
    int r;
    switch (c) {
    case ES_COMPRESS_GZIP:
        r = archive_write_add_filter_gzip(a);
        /* no value = "!timestamp": four zero bytes instead of the time */
        return r < ARCHIVE_WARN ? r : archive_write_set_filter_option(a, "gzip", "timestamp", NULL);
    case ES_COMPRESS_ZSTD:
        r = archive_write_add_filter_zstd(a);
        return r < ARCHIVE_WARN ? r : archive_write_set_filter_option(a, "zstd", "compression-level", "3");
    default: /* none: es_reshard_write settled AUTO and refused SNAPPY for tar */
        break;
    }
    return archive_write_add_filter_none(a);
}

const char *reshard_writer_error(struct archive *a)
{
    /* archive_write_open_FILE's "Write error" keeps the cause in archive_errno */
    int e = archive_errno(a);
    if (e > 0)
        return strerror(e);
    const char *msg = archive_error_string(a);
    return msg ? msg : "libarchive reported no reason";
}

struct archive *reshard_writer_open(es_context *ctx, FILE *fp, es_compress c, const char *label)
{
    struct archive *a = archive_write_new();
    if (!a) {
        es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", label);
        return NULL;
    }
    int r = archive_write_set_format_pax_restricted(a);
    if (r >= ARCHIVE_WARN)
        r = add_filter(a, c);
    /* libarchive hands its output over in blocks: large ones, written by an
     * unbuffered FILE as one write(2) each, spare a copy through stdio and
     * most system calls (with 10 KiB blocks and stdio's 4 KiB buffer, strace
     * counted 112 000 writes for 550 MB). The end is padded as it was: a
     * compressed stream ends where the compressor ends it (zero padding after
     * it is garbage to gzip -t and a bad frame to zstd); a plain tar is padded
     * to a whole 10240-byte record, as Python's tarfile writes it. */
    if (r >= ARCHIVE_WARN)
        r = archive_write_set_bytes_per_block(a, (int)RESHARD_WRITE_BUFFER);
    if (r >= ARCHIVE_WARN)
        r = archive_write_set_bytes_in_last_block(a, c != ES_COMPRESS_NONE ? 1 : 10240);
    if (r >= ARCHIVE_WARN && setvbuf(fp, NULL, _IONBF, 0) != 0)
        r = ARCHIVE_FATAL;
    if (r >= ARCHIVE_WARN)
        r = archive_write_open_FILE(a, fp);
    if (r < ARCHIVE_WARN) {
        es_fail(ctx, ES_ERR_IO, "%s: cannot start writing: %s", label, reshard_writer_error(a));
        archive_write_free(a);
        return NULL;
    }
    return a;
}

int reshard_writer_close(es_context *ctx, struct archive *a, const char *label)
{
    if (!a)
        return ES_OK;
    int rc = ES_OK;
    if (archive_write_close(a) != ARCHIVE_OK)
        rc = es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", label, reshard_writer_error(a));
    archive_write_free(a);
    return rc;
}

size_t reshard_writer_memory(es_compress c)
{
    /* zstd level 3: ZSTD_estimateCStreamSize(3) is 3.5 MiB with libzstd 1.5;
     * deflate: 256 KiB of state and a 64 KiB output buffer; and libarchive's
     * output block (RESHARD_WRITE_BUFFER). */
    size_t filter = c == ES_COMPRESS_ZSTD ? (4u << 20) : c == ES_COMPRESS_GZIP ? (384u << 10) : 0;
    return filter + (16u << 10) + RESHARD_WRITE_BUFFER;
}

const char *reshard_entry_name(struct archive_entry *e)
{
    const char *name = archive_entry_pathname(e);
    return name ? name : archive_entry_pathname_utf8(e);
}

static int filter_code(es_compress c)
{
    return c == ES_COMPRESS_GZIP ? ARCHIVE_FILTER_GZIP
           : c == ES_COMPRESS_ZSTD ? ARCHIVE_FILTER_ZSTD
                                   : ARCHIVE_FILTER_NONE;
}

/* Hashes one member's bytes; -1 on a read error. */
static int hash_member(struct archive *a, XXH3_state_t *st, void *buf, size_t buf_size,
                       uint64_t *size, uint64_t *hash)
{
    XXH3_64bits_reset(st);
    *size = 0;
    int r = reshard_read_blocks(a, buf, buf_size, st, size, NULL, NULL);
    *hash = XXH3_64bits_digest(st);
    return r;
}

/* Bytes hashed, then given to the sink, at a time: well inside L2. */
#define RESHARD_PIECE ((size_t)64 << 10)

int reshard_hash_bytes(XXH3_state_t *st, const void *data, size_t n, uint64_t *size,
                       int (*sink)(void *, const void *, size_t), void *arg)
{
    /* a piece at a time: the piece the hash read is still in cache when the
     * sink copies it (a mapped source hands over whole members at once) */
    for (size_t done = 0; done < n;) {
        size_t k = n - done < RESHARD_PIECE ? n - done : RESHARD_PIECE;
        const char *piece = (const char *)data + done;
        XXH3_64bits_update(st, piece, k);
        if (sink && sink(arg, piece, k) != 0)
            return -1;
        done += k;
    }
    *size += n;
    return 0;
}

int reshard_read_blocks(struct archive *a, void *zeros, size_t zeros_size, XXH3_state_t *st,
                        uint64_t *size, int (*sink)(void *, const void *, size_t), void *arg)
{
    const void *block;
    size_t n;
    la_int64_t at;
    int r;
    while ((r = archive_read_data_block(a, &block, &n, &at)) == ARCHIVE_OK) {
        /* a hole in a sparse member reads as zeros, as archive_read_data gives them */
        while (at > 0 && (uint64_t)at > *size) {
            size_t z = (uint64_t)at - *size < zeros_size ? (size_t)((uint64_t)at - *size) : zeros_size;
            memset(zeros, 0, z);
            XXH3_64bits_update(st, zeros, z);
            if (sink && sink(arg, zeros, z) != 0)
                return -1;
            *size += z;
        }
        if (reshard_hash_bytes(st, block, n, size, sink, arg) != 0)
            return -1;
    }
    return r == ARCHIVE_EOF ? 0 : -1;
}

/* The plain headers of a shard written without a filter (all of them, unless
 * a name needed a pax extension), read in place from its mapping; their data
 * hashed where it lies. How many headers were read, for libarchive to step
 * past when the scanner stops before the end; UINT64_MAX when it reached it. */
static uint64_t scan_members(const es_shard_file *file, reshard_digest *got)
{
    es_tar_scan scan;
    es_tar_scan_init_mapped(&scan, file->map, file->size);
    const uint8_t *map = file->map;
    uint64_t headers = 0;
    int r;
    while ((r = es_tar_scan_next(&scan)) == ES_TAR_SCAN_MEMBER) {
        reshard_digest_add(got, scan.name, scan.data_size,
                           XXH3_64bits(map + scan.data_off, (size_t)scan.data_size));
        headers++;
    }
    return r == ES_TAR_SCAN_END ? UINT64_MAX : headers;
}

static int read_members(es_context *ctx, struct archive *a, const es_shard_file *file,
                        XXH3_state_t *st, const char *label, reshard_digest *got, void *buf,
                        size_t buf_size)
{
    struct archive_entry *e;
    int r;
    if (archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE && file->map) {
        uint64_t done = scan_members(file, got);
        if (done == UINT64_MAX)
            return ES_OK;
        for (uint64_t i = 0; i < done; i++)
            if (!es_archive_header_ok(r = archive_read_next_header(a, &e)))
                return es_fail(ctx, ES_ERR_IO, "%s: read back failed: %s", label,
                               archive_error_string(a) ? archive_error_string(a) : "read error");
    }
    while ((r = archive_read_next_header(a, &e)) != ARCHIVE_EOF && es_archive_header_ok(r)) {
        const char *name = reshard_entry_name(e);
        uint64_t size, hash;
        if (archive_entry_filetype(e) != AE_IFREG || !name)
            return es_fail(ctx, ES_ERR_IO, "%s: read back: member %llu is not a named regular "
                           "file", label, (unsigned long long)got->members + 1);
        if (hash_member(a, st, buf, buf_size, &size, &hash))
            break;
        if (archive_entry_size_is_set(e) && (uint64_t)archive_entry_size(e) != size)
            return es_fail(ctx, ES_ERR_IO, "%s: read back: member %s has %llu bytes, its "
                           "header says %llu", label, name, (unsigned long long)size,
                           (unsigned long long)archive_entry_size(e));
        reshard_digest_add(got, name, size, hash);
    }
    if (r != ARCHIVE_EOF) {
        const char *msg = archive_error_string(a);
        return es_fail(ctx, ES_ERR_IO, "%s: read back failed: %s", label, msg ? msg : "read error");
    }
    return ES_OK;
}

static int read_back(es_context *ctx, struct archive *a, const es_shard_file *file,
                     const char *label, es_compress c, reshard_digest *got, void *buf,
                     size_t buf_size)
{
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", label);
    int rc = read_members(ctx, a, file, st, label, got, buf, buf_size);
    XXH3_freeState(st);
    if (rc != ES_OK)
        return rc;
    if (archive_filter_code(a, 0) != filter_code(c))
        return es_fail(ctx, ES_ERR_INTERNAL, "%s: read back: written with filter %s, not the one "
                       "asked for", label, archive_filter_name(a, 0));
    return ES_OK;
}

int reshard_verify(es_context *ctx, const char *path, const char *label, es_compress c,
                   const reshard_digest *want, void *buf, size_t buf_size)
{
    struct archive *a = archive_read_new();
    if (!a)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", label);
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    es_shard_file file;
    reshard_digest got = {0};
    int rc;
    if (es_shard_file_open_mapped(a, &file, path) != ARCHIVE_OK) {
        const char *msg = archive_error_string(a);
        rc = es_fail(ctx, ES_ERR_IO, "%s: cannot read back: %s", label, msg ? msg : "open failed");
    } else {
        rc = read_back(ctx, a, &file, label, c, &got, buf, buf_size);
    }
    archive_read_free(a);
    if (rc == ES_OK && (got.members != want->members || got.bytes != want->bytes ||
                        got.chain != want->chain))
        rc = es_fail(ctx, ES_ERR_IO, "%s: read back differs from what was written (%llu members, "
                     "%llu bytes read; %llu, %llu written, or names/xxh3 differ)", label,
                     (unsigned long long)got.members, (unsigned long long)got.bytes,
                     (unsigned long long)want->members, (unsigned long long)want->bytes);
    return rc;
}
