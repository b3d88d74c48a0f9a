#include "core/atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void release(es_atomic_file *f)
{
    free(f->final_path);
    free(f->temp_path);
    f->final_path = f->temp_path = NULL;
    f->fp = NULL;
}

int es_atomic_open(es_context *ctx, es_atomic_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    size_t n = strlen(path);
    f->final_path = strdup(path);
    f->temp_path = malloc(n + sizeof ".tmp.XXXXXX");
    if (!f->final_path || !f->temp_path) {
        release(f);
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(f->temp_path, path, n);
    memcpy(f->temp_path + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    int fd = mkstemp(f->temp_path);
    if (fd < 0) {
        int e = errno;
        release(f);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot create: %s", path, strerror(e));
    }
    /* mkstemp creates 0600; outputs are ordinary files, so honour the umask. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int e = errno;
        close(fd);
        unlink(f->temp_path);
        release(f);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    return ES_OK;
}

int es_atomic_commit(es_context *ctx, es_atomic_file *f)
{
    int failed = fflush(f->fp) != 0 || ferror(f->fp) || fsync(fileno(f->fp)) != 0;
    int e = errno;
    if (fclose(f->fp) != 0 && !failed) {
        failed = 1;
        e = errno;
    }
    f->fp = NULL;
    if (!failed && rename(f->temp_path, f->final_path) != 0) {
        failed = 1;
        e = errno;
    }
    int rc = ES_OK;
    if (failed) {
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
