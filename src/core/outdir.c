#include "core/outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/direct_write.h"
#include "core/grow.h"
#include "core/strbuf.h"
#include "core/temporaries.h"

/* Inside a temporary folder until it is renamed into place: who made it. */
#define MARKER ".equishard-tmp"

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
    for (size_t i = 0; i < d->n_unsynced; i++)
        free(d->unsynced[i]);
    free(d->unsynced);
    d->unsynced = NULL;
    d->n_unsynced = d->cap_unsynced = 0;
    es_temporary_drop(d->slot);
    d->slot = -1;
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

/* The folder OUTDIR names: a symlink's target (resolved), else the path as given
 * without trailing slashes. Returns a malloc'd path, or NULL with *err set. */
static char *target_of(const char *final_path, int *err)
{
    struct stat st;
    char resolved[PATH_MAX];
    *err = ENOMEM;
    if (lstat(final_path, &st) == 0 && S_ISLNK(st.st_mode)) {
        /* OUTDIR is a link (to an earlier plan, say): the folder it points to is
         * replaced and the link kept, as -o FILE does with a link. */
        if (!realpath(final_path, resolved)) {
            *err = errno;
            return NULL;
        }
        return strdup(resolved);
    }
    return strdup(final_path);
}

/* dir/MARKER says "pid P" and "host H": a folder of ours. Returns 1 and the pid
 * when it was made on this host by a process that has ended. */
static int stale(const char *dir, long *pid)
{
    char path[8192 + 32], host[256], mine[256] = "";
    snprintf(path, sizeof path, "%s/%s", dir, MARKER);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    int ok = fscanf(fp, "equishard temporary folder pid %ld host %255s", pid, host) == 2;
    fclose(fp);
    gethostname(mine, sizeof mine - 1);
    return ok && *pid > 0 && *pid != (long)getpid() && strcmp(host, mine) == 0 &&
           kill((pid_t)*pid, 0) != 0 && errno == ESRCH;
}

static size_t remove_stale(const char *target,
                           void (*report)(void *user, const char *path, long pid), void *user)
{
    const char *slash = strrchr(target, '/');
    char parent[4096], prefix[4096];
    if (slash)
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - target) + (slash == target), target);
    else
        snprintf(parent, sizeof parent, ".");
    snprintf(prefix, sizeof prefix, "%s.tmp.", slash ? slash + 1 : target);
    size_t plen = strlen(prefix), removed = 0;
    DIR *dir = opendir(parent);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        char path[8192];
        struct stat st;
        long pid;
        if (strncmp(e->d_name, prefix, plen) || strlen(e->d_name) != plen + 6)
            continue; /* mkdtemp's six characters */
        snprintf(path, sizeof path, "%s/%s", slash ? parent : ".", e->d_name);
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || !stale(path, &pid))
            continue;
        remove_flat_dir(path);
        if (lstat(path, &st) != 0 && errno == ENOENT) {
            removed++;
            if (report)
                report(user, path, pid);
        }
    }
    if (dir)
        closedir(dir);
    return removed;
}

ES_API size_t es_outdir_remove_stale(const char *outdir,
                                     void (*report)(void *user, const char *path, long pid),
                                     void *user)
{
    if (!outdir)
        return 0;
    size_t n = strlen(outdir);
    while (n > 1 && outdir[n - 1] == '/')
        n--;
    char *final_path = strndup(outdir, n);
    int err;
    char *target = final_path ? target_of(final_path, &err) : NULL;
    size_t removed = target ? remove_stale(target, report, user) : 0;
    free(target);
    free(final_path);
    return removed;
}

/* Names this process and host inside the temporary folder (see MARKER). */
static int write_marker(const char *dir)
{
    char path[4096], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(path, sizeof path, "%s/%s", dir, MARKER);
    FILE *fp = fopen(path, "w");
    if (!fp)
        return errno;
    fprintf(fp, "equishard temporary folder\npid %ld\nhost %s\n", (long)getpid(),
            host[0] ? host : "-");
    return fclose(fp) != 0 ? errno : 0;
}

/* d->final_path (OUTDIR as given, less trailing slashes: "out/" names the same
 * folder as "out") and d->target_path, the folder replaced. */
static int set_paths(es_context *ctx, es_outdir *d, const char *path)
{
    memset(d, 0, sizeof *d);
    d->slot = -1;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    d->final_path = strndup(path, n);
    if (!d->final_path)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    int err;
    d->target_path = target_of(d->final_path, &err);
    if (!d->target_path) {
        int rc = err == ENOMEM ? es_fail(ctx, ES_ERR_NOMEM, "out of memory")
                               : es_fail(ctx, ES_ERR_IO, "%s: symbolic link that cannot be "
                                         "followed: %s", d->final_path, strerror(err));
        release(d);
        return rc;
    }
    return ES_OK;
}

int es_outdir_begin(es_context *ctx, es_outdir *d, const char *path)
{
    int rc = set_paths(ctx, d, path);
    if (rc != ES_OK)
        return rc;
    size_t n = strlen(d->target_path);
    d->temp_path = malloc(n + sizeof ".tmp.XXXXXX");
    if (!d->temp_path) {
        release(d);
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    if (!replaceable(d->target_path)) {
        rc = es_fail(ctx, ES_ERR_USAGE, "%s: exists and is not an equishard output folder "
                     "(no plan.json); refusing to replace it", d->final_path);
        release(d);
        return rc;
    }
    remove_stale(d->target_path, NULL, NULL);
    snprintf(d->temp_path, n + sizeof ".tmp.XXXXXX", "%s.tmp.XXXXXX", d->target_path);
    sigset_t mask;
    es_temporary_block(&mask); /* created and registered as one step */
    int made = mkdtemp(d->temp_path) != NULL, made_errno = errno;
    if (made)
        d->slot = es_temporary_add(d->temp_path, 1);
    es_temporary_unblock(&mask);
    if (!made) {
        rc = es_fail(ctx, ES_ERR_IO, "%s: cannot create output folder: %s", d->final_path,
                     strerror(made_errno));
        release(d);
        return rc;
    }
    /* mkdtemp makes 0700; an output folder is an ordinary one: 0777 & ~umask. */
    chmod(d->temp_path, 0777 & ~es_current_umask());
    int e = write_marker(d->temp_path);
    if (e) {
        rc = es_fail(ctx, ES_ERR_IO, "%s: cannot create output folder: %s", d->final_path,
                     strerror(e));
        es_outdir_abort(d);
        return rc;
    }
    return ES_OK;
}

int es_outdir_join(es_context *ctx, es_outdir *d, const char *path, const char *folder)
{
    int rc = set_paths(ctx, d, path);
    if (rc != ES_OK)
        return rc;
    d->joined = 1;
    d->temp_path = strdup(folder);
    if (!d->temp_path) {
        release(d);
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    /* Registered for es_remove_temporaries too: when a signal ends every
     * process, whichever handler runs last finds the folder empty of writers
     * and removes it (the owner's alone could race a joiner still creating a
     * file). An ordinary failure never removes it from here (es_outdir_abort). */
    char marker[4096];
    snprintf(marker, sizeof marker, "%s/%s", folder, MARKER);
    if (access(marker, F_OK) != 0) {
        int e = errno;
        rc = es_fail(ctx, ES_ERR_IO, "%s: the output folder being written (%s) is not visible "
                     "here: %s (OUTDIR must be on a file system every process shares)",
                     d->final_path, folder, strerror(e));
        release(d);
        return rc;
    }
    d->slot = es_temporary_add(d->temp_path, 1);
    return ES_OK;
}

FILE *es_outdir_create(es_context *ctx, es_outdir *d, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->temp_path, name);
    FILE *fp = fopen(path, "wb");
    if (!fp)
        es_fail(ctx, ES_ERR_IO, "%s/%s: cannot create: %s", d->final_path, name, strerror(errno));
    else
        es_test_point(ctx, "file-made");
    return fp;
}

void es_outdir_defer_sync(es_outdir *d) { d->defer_sync = 1; }

/* Batch mode writes its rank files from two threads (plan_write_batch.c);
 * this list is all they share. */
static pthread_mutex_t unsynced_lock = PTHREAD_MUTEX_INITIALIZER;

/* Remembers `name` for es_outdir_commit's fsync; 0, or -1 when out of memory. */
static int remember_unsynced(es_outdir *d, const char *name)
{
    char *copy = strdup(name);
    if (!copy)
        return -1;
    pthread_mutex_lock(&unsynced_lock);
    void *names = d->unsynced;
    int grown = es_grow(&names, &d->cap_unsynced, d->n_unsynced + 1, sizeof(char *), 64) == 0;
    if (grown) {
        d->unsynced = names;
        d->unsynced[d->n_unsynced++] = copy;
    }
    pthread_mutex_unlock(&unsynced_lock);
    if (!grown)
        free(copy);
    return grown ? 0 : -1;
}

/* A written file's writeback, started (deferred sync) or waited for: 0, or
 * -1 with errno. */
static int sync_or_defer(es_outdir *d, int fd, const char *name)
{
    if (d->defer_sync && remember_unsynced(d, name) == 0) {
        /* start the writeback now; es_outdir_commit waits for it */
        sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        return 0;
    }
    return fsync(fd);
}

void es_outdir_write_behind(FILE *fp)
{
    sync_file_range(fileno(fp), 0, 0, SYNC_FILE_RANGE_WRITE);
}

static int write_failed(es_context *ctx, es_outdir *d, const char *name, int e)
{
    return es_fail(ctx, ES_ERR_IO, "%s/%s: write failed: %s", d->final_path, name, strerror(e));
}

int es_outdir_close(es_context *ctx, es_outdir *d, FILE *fp, const char *name)
{
    int bad = fflush(fp) != 0 || ferror(fp);
    if (!bad)
        bad = sync_or_defer(d, fileno(fp), name) != 0;
    int e = errno;
    if (fclose(fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    return bad ? write_failed(ctx, d, name, e) : ES_OK;
}

int es_outdir_sync(es_context *ctx, es_outdir *d)
{
    for (size_t i = 0; i < d->n_unsynced; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", d->temp_path, d->unsynced[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        int bad = fd < 0 || fsync(fd) != 0;
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (bad)
            return es_fail(ctx, ES_ERR_IO, "%s/%s: write failed: %s", d->final_path,
                           d->unsynced[i], strerror(e));
    }
    for (size_t i = 0; i < d->n_unsynced; i++)
        free(d->unsynced[i]);
    d->n_unsynced = 0;
    return ES_OK;
}

int es_outdir_commit(es_context *ctx, es_outdir *d)
{
    if (d->joined) {
        int rc = es_fail(ctx, ES_ERR_USAGE, "%s: only the process that began the output "
                         "folder puts it in place", d->final_path);
        es_outdir_abort(d);
        return rc;
    }
    if (es_outdir_sync(ctx, d) != ES_OK) {
        es_outdir_abort(d);
        return ES_ERR_IO;
    }
    struct stat st;
    int exists = lstat(d->target_path, &st) == 0;
    if (exists && !S_ISDIR(st.st_mode)) {
        int rc = es_fail(ctx, ES_ERR_IO, "%s: exists and is not a folder", d->final_path);
        es_outdir_abort(d);
        return rc;
    }
    char marker[4096];
    snprintf(marker, sizeof marker, "%s/%s", d->temp_path, MARKER);
    unlink(marker); /* OUTDIR holds the outputs only */
    /* tests hold a run here, between looking for OUTDIR and renaming into it
     * (after the marker is gone, which they wait for), so that another run
     * can put its OUTDIR there in between */
    es_test_point(ctx, "before-commit");
    int rc = exists ? renameat2(AT_FDCWD, d->temp_path, AT_FDCWD, d->target_path, RENAME_EXCHANGE)
                    : rename(d->temp_path, d->target_path);
    if (rc != 0) {
        int e = errno;
        /* OUTDIR was missing a moment ago and now holds a folder: another run
         * (plan into the same OUTDIR at the same time) renamed its whole plan
         * there first. That one stays; this one is not written. */
        int status = !exists && (e == ENOTEMPTY || e == EEXIST)
                         ? es_fail(ctx, ES_ERR_IO, "%s: another run put its output folder in "
                                   "place first, while this one was being written; that one "
                                   "was kept and this run's plan was not written", d->final_path)
                         : es_fail(ctx, ES_ERR_IO, "%s: cannot put output folder in place: %s",
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
    if (d->temp_path && !d->joined)
        remove_flat_dir(d->temp_path);
    release(d);
}

/* Files at least this long, from a buffer aligned for it, are written around
 * the page cache (core/direct_write.h); below it a device round trip per file
 * costs more than the copy it saves. */
enum { DIRECT_MIN = 256 << 10 };

int es_outdir_write_text(es_context *ctx, es_outdir *d, const char *name, const es_strbuf *sb)
{
    if (sb->oom)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    if (sb->len < DIRECT_MIN || !sb->align) {
        FILE *fp = es_outdir_create(ctx, d, name);
        if (!fp)
            return ES_ERR_IO;
        if (sb->len)
            fwrite(sb->buf, 1, sb->len, fp);
        return es_outdir_close(ctx, d, fp, name);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->temp_path, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return es_fail(ctx, ES_ERR_IO, "%s/%s: cannot create: %s", d->final_path, name,
                       strerror(errno));
    es_test_point(ctx, "file-made");
    /* around the page cache unless the context says not (direct_io) */
    size_t direct_min = es_ctx_direct_io(ctx) ? DIRECT_MIN : SIZE_MAX;
    int bad = es_write_whole(fd, sb->buf, sb->len, direct_min) != 0 ||
              sync_or_defer(d, fd, name) != 0;
    int e = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    return bad ? write_failed(ctx, d, name, e) : ES_OK;
}
