/* A few remembered file digests: core/file_digest.h says why and when they
 * are trusted. */
#include "core/file_digest.h"

#include <pthread.h>
#include <string.h>

/* A plan reads one table, or a handful (`plan a.tsv b.tsv`); the oldest entry
 * makes room. */
enum { SLOTS = 16 };

typedef struct remembered {
    struct stat st;
    uint64_t digest;
    int used;
} remembered;

static remembered slots[SLOTS];
static size_t next_slot;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int es_file_same_identity(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

void es_file_digest_remember(const struct stat *st, uint64_t digest)
{
    pthread_mutex_lock(&lock);
    size_t at = next_slot;
    for (size_t i = 0; i < SLOTS; i++)
        if (slots[i].used && slots[i].st.st_dev == st->st_dev && slots[i].st.st_ino == st->st_ino)
            at = i;
    if (at == next_slot)
        next_slot = (next_slot + 1) % SLOTS;
    slots[at] = (remembered){*st, digest, 1};
    pthread_mutex_unlock(&lock);
}

int es_file_digest_recall(const struct stat *st, uint64_t *digest)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < SLOTS && !found; i++)
        if (slots[i].used && es_file_same_identity(&slots[i].st, st)) {
            *digest = slots[i].digest;
            found = 1;
        }
    pthread_mutex_unlock(&lock);
    return found;
}
