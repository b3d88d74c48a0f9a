#include "core/private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/temporaries.h"

int es_private_dir_ok(const struct stat *st)
{
    if (!S_ISDIR(st->st_mode) || st->st_uid != geteuid())
        return 0;
    /* others may write only a sticky folder: they cannot move our names there */
    return !(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX);
}

/* mkdir -p, each missing folder 0700 (what the XDG base-directory rules ask of
 * a cache home, and what keeps our own folder ours). */
static int make_folders(const char *path)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(dir, 0700) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(dir, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

int es_private_dir_open(const char *path, int create)
{
    if (create && make_folders(path) != 0)
        return -1;
    /* the folder may be reached through links (~/.cache on another disk); what
     * counts is the folder the descriptor holds, checked once and used after */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !es_private_dir_ok(&st)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

int es_private_file_open(int dirfd, const char *name, struct stat *st)
{
    /* O_NONBLOCK: a FIFO planted at the name must not hang the open */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
        (st->st_mode & (S_IWGRP | S_IWOTH))) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A new file "name.tmp.<16 hex>" that did not exist: its descriptor, the name
 * in tmp. */
static int create_temporary(int dirfd, const char *name, char *tmp, size_t size)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r ^= (uint64_t)getpid() << 32 ^ (uint64_t)attempt ^ (uintptr_t)&r;
        if (snprintf(tmp, size, "%s.tmp.%016llx", name, (unsigned long long)r) >= (int)size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int es_private_file_replace(int dirfd, const char *dir_path, const char *name,
                            const void *data, size_t len)
{
    char tmp[NAME_MAX + 1], full[PATH_MAX];
    sigset_t mask;
    es_temporary_block(&mask); /* created and registered as one step */
    int fd = create_temporary(dirfd, name, tmp, sizeof tmp), slot = -1;
    if (fd >= 0 && snprintf(full, sizeof full, "%s/%s", dir_path, tmp) < (int)sizeof full)
        slot = es_temporary_add(full, 0);
    es_temporary_unblock(&mask);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, data, len);
    int e = errno;
    if (close(fd) != 0 && rc == 0)
        rc = -1, e = errno;
    /* renameat replaces the name itself: a link there is replaced, never followed */
    if (rc == 0 && renameat(dirfd, tmp, dirfd, name) != 0)
        rc = -1, e = errno;
    if (rc != 0)
        unlinkat(dirfd, tmp, 0);
    es_temporary_drop(slot);
    errno = e;
    return rc;
}
