#include "core/temporaries.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "equishard/equishard.h"

/* More than any command writes at once (one OUTDIR, or one -o FILE each). */
#define SLOTS 16

enum { FREE, CLAIMED, A_FILE, A_DIR };

static struct {
    int state; /* read and written with __atomic: a handler may read it any time */
    char path[PATH_MAX];
} slots[SLOTS];

int es_temporary_add(const char *path, int is_dir)
{
    size_t n = strlen(path);
    if (n >= PATH_MAX)
        return -1;
    for (int i = 0; i < SLOTS; i++) {
        int expected = FREE;
        if (__atomic_compare_exchange_n(&slots[i].state, &expected, CLAIMED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            memcpy(slots[i].path, path, n + 1);
            __atomic_store_n(&slots[i].state, is_dir ? A_DIR : A_FILE, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -1;
}

void es_temporary_drop(int slot)
{
    if (slot >= 0 && slot < SLOTS)
        __atomic_store_n(&slots[slot].state, FREE, __ATOMIC_RELEASE);
}

/* getdents64's record: readdir allocates, which a signal handler must not. */
struct raw_dirent {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* Unlinks every entry of a flat folder, then the folder. Unlinking while
 * reading may hide entries from the same pass, so it re-reads until rmdir
 * succeeds (or a few tries: another thread may still be adding files). */
static void remove_dir_now(const char *path)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return;
        char buf[4096] __attribute__((aligned(8)));
        long n;
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                struct raw_dirent *e = (struct raw_dirent *)(buf + off);
                if (strcmp(e->name, ".") && strcmp(e->name, ".."))
                    unlinkat(fd, e->name, 0);
                off += e->reclen;
            }
        }
        close(fd);
        if (rmdir(path) == 0 || errno != ENOTEMPTY)
            return;
    }
}

ES_API size_t es_remove_temporaries(void)
{
    int saved = errno;
    size_t n = 0;
    for (int i = 0; i < SLOTS; i++) {
        int state = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);
        if (state == A_FILE)
            unlink(slots[i].path);
        else if (state == A_DIR)
            remove_dir_now(slots[i].path);
        n += state == A_FILE || state == A_DIR;
    }
    errno = saved;
    return n;
}

void es_temporary_block(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

void es_temporary_unblock(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }
