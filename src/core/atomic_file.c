#include "core/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/temporaries.h"

mode_t es_current_umask(void)
{
    /* umask(2) can only be read by setting it, which races with files other
     * threads create meanwhile; Linux shows it in /proc/self/status. */
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    unsigned mask;
    while (fp && fgets(line, sizeof line, fp))
        if (sscanf(line, "Umask: %o", &mask) == 1) {
            fclose(fp);
            return (mode_t)mask;
        }
    if (fp)
        fclose(fp);
    mode_t m = umask(022);
    umask(m);
    return m;
}

static void release(es_atomic_file *f)
{
    es_temporary_drop(f->slot);
    f->slot = -1;
    free(f->final_path);
    free(f->target_path);
    free(f->temp_path);
    f->final_path = f->target_path = f->temp_path = NULL;
    f->fp = NULL;
}

/* Standard output or something that is not a regular file: written through. */
static int open_through(es_context *ctx, es_atomic_file *f, const char *path)
{
    int fd = strcmp(path, "-") == 0 ? dup(STDOUT_FILENO)
                                     : open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    f->fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f->fp) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        release(f);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open for writing: %s", path, strerror(e));
    }
    return ES_OK;
}

int es_atomic_open(es_context *ctx, es_atomic_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->slot = -1;
    f->final_path = strdup(path);
    if (!f->final_path)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    struct stat st, lst;
    if (strcmp(path, "-") == 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode))) {
        if (strcmp(path, "-") != 0 && S_ISDIR(st.st_mode)) {
            release(f);
            return es_fail(ctx, ES_ERR_IO, "%s: is a folder, not a file", path);
        }
        return open_through(ctx, f, path);
    }
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        /* Replace what the link points to, keep the link. */
        char resolved[PATH_MAX];
        if (!realpath(path, resolved)) {
            int e = errno;
            release(f);
            return es_fail(ctx, ES_ERR_IO, "%s: symbolic link that cannot be followed: %s",
                           path, strerror(e));
        }
        f->target_path = strdup(resolved);
    } else {
        f->target_path = strdup(path);
    }
    size_t n = f->target_path ? strlen(f->target_path) : 0;
    f->temp_path = f->target_path ? malloc(n + sizeof ".tmp.XXXXXX") : NULL;
    if (!f->temp_path) {
        release(f);
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(f->temp_path, f->target_path, n);
    memcpy(f->temp_path + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    sigset_t mask;
    es_temporary_block(&mask); /* created and registered as one step */
    int fd = mkstemp(f->temp_path);
    int e = errno;
    if (fd >= 0)
        f->slot = es_temporary_add(f->temp_path, 0);
    es_temporary_unblock(&mask);
    if (fd < 0) {
        release(f);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot create: %s", path, strerror(e));
    }
    /* mkstemp creates 0600; outputs are ordinary files, so honour the umask. */
    fchmod(fd, 0666 & ~es_current_umask());
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int e = errno;
        close(fd);
        unlink(f->temp_path);
        release(f);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    es_test_point(ctx, "file-made");
    return ES_OK;
}

int es_atomic_commit(es_context *ctx, es_atomic_file *f)
{
    int failed = fflush(f->fp) != 0 || ferror(f->fp);
    int e = failed ? (errno ? errno : EIO) : 0;
    /* fsync makes the rename durable; a pipe or device has nothing to sync. */
    if (!failed && f->temp_path && fsync(fileno(f->fp)) != 0) {
        failed = 1;
        e = errno;
    }
    if (fclose(f->fp) != 0 && !failed) {
        failed = 1;
        e = errno;
    }
    f->fp = NULL;
    if (!failed && f->temp_path && rename(f->temp_path, f->target_path) != 0) {
        failed = 1;
        e = errno;
    }
    int rc = ES_OK;
    if (failed) {
        if (f->temp_path)
            unlink(f->temp_path);
        rc = es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", f->final_path, strerror(e));
    }
    release(f);
    return rc;
}

void es_atomic_abort(es_atomic_file *f)
{
    if (f->fp)
        fclose(f->fp);
    if (f->temp_path)
        unlink(f->temp_path);
    release(f);
}

ES_API int es_write_output(es_context *ctx, const char *path, const void *data, size_t len)
{
    es_clear_error(ctx);
    if (!path || (len && !data))
        return es_fail(ctx, ES_ERR_USAGE, "es_write_output: path and data are required");
    es_atomic_file f;
    int rc = es_atomic_open(ctx, &f, path);
    if (rc != ES_OK)
        return rc;
    if (len && fwrite(data, 1, len, f.fp) != len) {
        int e = errno;
        es_atomic_abort(&f);
        return es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    return es_atomic_commit(ctx, &f);
}
