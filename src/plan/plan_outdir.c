#include "plan/plan_outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/strbuf.h"

/* Removes a folder of plain files (ours: we never create subfolders). */
static void remove_flat_dir(const char *path)
{
    DIR *dir = opendir(path);
    if (dir) {
        struct dirent *e;
        char child[4096];
        while ((e = readdir(dir))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            unlink(child);
        }
        closedir(dir);
    }
    rmdir(path);
}

static void release(es_outdir *d)
{
    free(d->final_path);
    free(d->target_path);
    free(d->temp_path);
    d->final_path = d->target_path = d->temp_path = NULL;
}

/* An existing OUTDIR is replaced only when it is one of ours: empty, or holding
 * a plan.json. Anything else (a typo for a data folder) is refused. */
static int replaceable(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT;
    if (!S_ISDIR(st.st_mode))
        return 0;
    char marker[4096];
    snprintf(marker, sizeof marker, "%s/plan.json", path);
    if (access(marker, F_OK) == 0)
        return 1;
    DIR *dir = opendir(path);
    int empty = 1;
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = 0;
    if (dir)
        closedir(dir);
    return dir && empty;
}

int es_outdir_begin(es_context *ctx, es_outdir *d, const char *path)
{
    memset(d, 0, sizeof *d);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--; /* "out/" names the same folder as "out" */
    d->final_path = strndup(path, n);
    if (!d->final_path)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    struct stat st;
    char resolved[PATH_MAX];
    if (lstat(d->final_path, &st) == 0 && S_ISLNK(st.st_mode)) {
        /* OUTDIR is a link (to an earlier plan, say): the folder it points to is
         * replaced and the link kept, as -o FILE does with a link. */
        if (!realpath(d->final_path, resolved)) {
            int e = errno;
            int rc = es_fail(ctx, ES_ERR_IO, "%s: symbolic link that cannot be followed: %s",
                             d->final_path, strerror(e));
            release(d);
            return rc;
        }
        d->target_path = strdup(resolved);
    } else {
        d->target_path = strdup(d->final_path);
    }
    n = d->target_path ? strlen(d->target_path) : 0;
    d->temp_path = d->target_path ? malloc(n + sizeof ".tmp.XXXXXX") : NULL;
    if (!d->temp_path) {
        release(d);
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    if (!replaceable(d->target_path)) {
        int rc = es_fail(ctx, ES_ERR_USAGE, "%s: exists and is not an equishard output folder "
                         "(no plan.json); refusing to replace it", d->final_path);
        release(d);
        return rc;
    }
    snprintf(d->temp_path, n + sizeof ".tmp.XXXXXX", "%s.tmp.XXXXXX", d->target_path);
    if (!mkdtemp(d->temp_path)) {
        int e = errno;
        int rc = es_fail(ctx, ES_ERR_IO, "%s: cannot create output folder: %s", d->final_path,
                         strerror(e));
        release(d);
        return rc;
    }
    /* mkdtemp makes 0700; an output folder is an ordinary one: 0777 & ~umask. */
    chmod(d->temp_path, 0777 & ~es_current_umask());
    return ES_OK;
}

FILE *es_outdir_create(es_context *ctx, es_outdir *d, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->temp_path, name);
    FILE *fp = fopen(path, "wb");
    if (!fp)
        es_fail(ctx, ES_ERR_IO, "%s/%s: cannot create: %s", d->final_path, name, strerror(errno));
    return fp;
}

int es_outdir_close(es_context *ctx, es_outdir *d, FILE *fp, const char *name)
{
    int bad = fflush(fp) != 0 || ferror(fp) || fsync(fileno(fp)) != 0;
    int e = errno;
    if (fclose(fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    return bad ? es_fail(ctx, ES_ERR_IO, "%s/%s: write failed: %s", d->final_path, name,
                         strerror(e))
               : ES_OK;
}

int es_outdir_commit(es_context *ctx, es_outdir *d)
{
    struct stat st;
    int exists = lstat(d->target_path, &st) == 0;
    if (exists && !S_ISDIR(st.st_mode)) {
        int rc = es_fail(ctx, ES_ERR_IO, "%s: exists and is not a folder", d->final_path);
        es_outdir_abort(d);
        return rc;
    }
    int rc = exists ? renameat2(AT_FDCWD, d->temp_path, AT_FDCWD, d->target_path, RENAME_EXCHANGE)
                    : rename(d->temp_path, d->target_path);
    if (rc != 0) {
        int e = errno;
        int status = es_fail(ctx, ES_ERR_IO, "%s: cannot put output folder in place: %s",
                             d->final_path, strerror(e));
        es_outdir_abort(d);
        return status;
    }
    if (exists)
        remove_flat_dir(d->temp_path); /* now holds the previous OUTDIR */
    release(d);
    return ES_OK;
}

void es_outdir_abort(es_outdir *d)
{
    if (d->temp_path)
        remove_flat_dir(d->temp_path);
    release(d);
}

int es_outdir_write_text(es_context *ctx, es_outdir *d, const char *name, const es_strbuf *sb)
{
    if (sb->oom)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    FILE *fp = es_outdir_create(ctx, d, name);
    if (!fp)
        return ES_ERR_IO;
    if (sb->len)
        fwrite(sb->buf, 1, sb->len, fp);
    return es_outdir_close(ctx, d, fp, name);
}
