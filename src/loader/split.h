/* How a loader splits its list among ranks and DataLoader workers, per epoch.
 *
 * CosyVoice (cosyvoice/dataset/dataset.py, DistributedSampler.sample):
 *     idx = list(range(n))
 *     if partition:
 *         if shuffle: random.Random(epoch).shuffle(idx)
 *         if len(idx) < K: idx = (idx * ceil(K / len(idx)))[:K]
 *         idx = idx[rank::K]
 *     if len(idx) < W: idx = (idx * ceil(W / len(idx)))[:W]
 *     idx = idx[worker::W]
 * WeNet (wenet/dataset/datapipes.py ShardDataPipe, a torch ShardingFilter whose
 * sharding torch's DataLoader sets to K*W instances, instance w*K + rank):
 *     element i goes to (rank, worker) when i % (K*W) == worker*K + rank;
 *     with partition off, every rank reads all and worker w takes i % W == w.
 *
 * Invariant of a split: worker (r, w)'s entries are
 * items[worker_start[r*W + w] .. worker_start[r*W + w + 1]), rank r's list (the
 * slice it reads, before the worker split) rank_items[rank_start[r] .. [r + 1]). */
#ifndef ES_LOADER_SPLIT_H
#define ES_LOADER_SPLIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct es_loader_split {
    uint32_t k, w;
    uint32_t *items;
    size_t *worker_start; /* k*w + 1 offsets */
    uint32_t *rank_items;
    size_t *rank_start;   /* k + 1 offsets */
} es_loader_split;

/* n >= 1 list entries. Return 0, or -1 when out of memory (*out released). */
int es_loader_split_cosyvoice(uint32_t n, uint32_t k, uint32_t w, int64_t epoch, int shuffle,
                              int partition, es_loader_split *out);
int es_loader_split_wenet(uint32_t n, uint32_t k, uint32_t w, int partition, es_loader_split *out);
void es_loader_split_release(es_loader_split *s);

#endif
