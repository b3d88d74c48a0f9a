/* Reshard, several processes, compressed tar sources: decompressed once.
 *
 * Each process writing a share of the new shards reads every source that feeds
 * one of them, and with the plan's balancing that is nearly every source: for
 * .tar.gz / .tar.zst sources every process would decompress the whole corpus.
 * Instead the sources are dealt to the processes by size (LPT, the same deal in
 * every process), each decompresses its own into a plain tar copy in the
 * temporary folder (".source-NNNNNNNNN.tar", beside the new shards, so an
 * abandoned folder takes them along), and once all have, every process reads
 * the copies (an unwanted member of a plain tar is skipped with a seek). The
 * copies are the sources' bytes after the filter, so every member, and every
 * new shard, is what reading the compressed source gives. The owner removes
 * them before the folder is put in place.
 *
 * Plain tar sources and parquet files are read in place: nothing to gain. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "algo/partition.h"
#include "readers/shard_file.h"
#include "core/outdir.h"
#include "formats/tar/tar.h"

enum { EXPAND_BLOCK = 1 << 20 };

/* The copy of source i in the temporary folder (malloc'd), or NULL. */
static char *copy_path(const reshard_job *job, size_t i)
{
    size_t len = strlen(job->d->temp_path) + 32;
    char *path = malloc(len);
    if (path)
        snprintf(path, len, "%s/.source-%09zu.tar", job->d->temp_path, i);
    return path;
}

/* Writes the n bytes at p to fd: 0, or -1 with errno set. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Source s decompressed into `path` when it is compressed (libarchive's
 * filters); a plain source is left alone (no file made). */
static int expand_one(es_context *ctx, const copy_source *s, const char *path, char *buf)
{
    struct archive *in = archive_read_new();
    if (!in)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    archive_read_support_filter_all(in);
    archive_read_support_format_raw(in);
    es_shard_file file;
    struct archive_entry *e;
    int rc = ES_OK, fd = -1;
    if (es_shard_file_open(in, &file, s->path) != ARCHIVE_OK ||
        archive_read_next_header(in, &e) != ARCHIVE_OK)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: %s (changed since it was measured?)", s->path,
                     archive_error_string(in) ? archive_error_string(in) : "read error");
    else if (archive_filter_count(in) > 1 &&
             (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
        rc = es_fail(ctx, ES_ERR_IO, "%s: %s", path, strerror(errno));
    for (la_ssize_t got = 1; rc == ES_OK && fd >= 0 && got > 0;) {
        got = archive_read_data(in, buf, EXPAND_BLOCK);
        if (got < 0)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: %s (changed since it was measured?)", s->path,
                         archive_error_string(in) ? archive_error_string(in) : "read error");
        else if (write_all(fd, buf, (size_t)got) != 0)
            rc = es_fail(ctx, ES_ERR_IO, "%s: writing the plain copy of %s: %s", path, s->path,
                         strerror(errno));
    }
    if (fd >= 0 && close(fd) != 0 && rc == ES_OK)
        rc = es_fail(ctx, ES_ERR_IO, "%s: %s", path, strerror(errno));
    archive_read_free(in);
    return rc;
}

int reshard_tar_expand(es_context *ctx, reshard_job *job, uint32_t part, uint32_t parts)
{
    if (job->n_sources == 0)
        return ES_OK;
    double *size = malloc(job->n_sources * sizeof *size);
    uint32_t *owner = malloc(job->n_sources * sizeof *owner);
    char *buf = malloc(EXPAND_BLOCK);
    int rc = size && owner && buf ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (size_t i = 0; rc == ES_OK && i < job->n_sources; i++) {
        struct stat st; /* es_reshard_prepare checked them against the table */
        size[i] = stat(job->sources[i].path, &st) == 0 ? (double)st.st_size : 0;
    }
    if (rc == ES_OK && es_partition_lpt(size, job->n_sources, parts, 0, owner) != 0)
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (size_t i = 0; rc == ES_OK && i < job->n_sources; i++) {
        if (owner[i] != part)
            continue;
        char *path = copy_path(job, i);
        rc = path ? expand_one(ctx, &job->sources[i], path, buf)
                  : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        free(path);
    }
    free(size);
    free(owner);
    free(buf);
    return rc;
}

int reshard_tar_use_copies(es_context *ctx, reshard_job *job)
{
    for (size_t i = 0; i < job->n_sources; i++) {
        char *path = copy_path(job, i);
        if (!path)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        /* a plain source has none; one not visible here yet (a network file
         * system's cached lookup) is read compressed: the same bytes either way */
        if (access(path, R_OK) == 0) {
            free(job->sources[i].copy);
            job->sources[i].copy = path;
        } else {
            free(path);
        }
    }
    return ES_OK;
}

void reshard_tar_remove_copies(reshard_job *job)
{
    for (size_t i = 0; i < job->n_sources; i++) {
        char *path = copy_path(job, i);
        if (path)
            unlink(path);
        free(path);
        free(job->sources[i].copy);
        job->sources[i].copy = NULL;
    }
}
