/* One DataLoader worker's sample stream after the split: the loader's shuffle
 * buffer, its sort buffer and its batching rule, with per-batch sums so that the
 * join cut can say which utterances it skips.
 *
 * Shuffle buffers (their randomness is the process's unseeded `random`/torch
 * state, so we draw it from our own seeded generator and report expectations):
 * - chunk (CosyVoice processor.shuffle): fill shuffle_size samples,
 *   random.shuffle them, emit all; the rest at the end likewise.
 * - reservoir (torch ShufflerIterDataPipe, WeNet): once the buffer is full,
 *   each new sample replaces a uniformly chosen one, which is emitted; at the
 *   end the buffer drains in uniform random order.
 * Sort buffer (both): fill sort_size, stable sort by frames, emit; the rest likewise.
 * Batching: es_dynamic_batches, or static batches of batch_size. */
#ifndef ES_LOADER_STREAM_H
#define ES_LOADER_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "loader/py_random.h"

typedef enum es_loader_shuffle {
    ES_LOADER_SHUFFLE_CHUNK = 0,
    ES_LOADER_SHUFFLE_RESERVOIR = 1,
} es_loader_shuffle;

typedef struct es_loader_stream_rules {
    es_loader_shuffle shuffle;
    uint32_t shuffle_size;        /* 0 or 1: no shuffle */
    uint32_t sort_size;           /* 0 or 1: no sort */
    uint64_t max_frames_in_batch; /* dynamic, when batch_size == 0 */
    uint32_t batch_size;
} es_loader_stream_rules;

/* Batches of one stream, in the order the worker yields them. */
typedef struct es_loader_batches {
    size_t n;
    uint32_t *count;   /* utterances in batch b */
    uint64_t *frames;  /* their frames */
    uint32_t *longest; /* frames of the longest: the padded length (step time) */
    double *seconds;   /* their audio */
    int empty_first;   /* dynamic: the loader would yield an empty batch first */
} es_loader_batches;

/* Scratch owned by one thread; grows as needed. Zero-initialise, then release. */
typedef struct es_loader_scratch {
    uint32_t *order, *tmp_frames;
    uint64_t *keys;
    size_t *ends;
    size_t cap;
} es_loader_scratch;

/* Runs frames/seconds[0..n) (the kept samples in reading order) through the
 * rules, drawing from rng, into *out (its arrays reallocated). Returns 0, or -1
 * when out of memory. */
int es_loader_stream_run(const es_loader_stream_rules *rules, const uint32_t *frames,
                         const double *seconds, size_t n, es_pyrandom *rng, es_loader_scratch *sc,
                         es_loader_batches *out);

/* The reading order only (shuffle and sort applied), into order[0..n). For tests. */
int es_loader_stream_order(const es_loader_stream_rules *rules, const uint32_t *frames, size_t n,
                           es_pyrandom *rng, uint32_t *order);

void es_loader_batches_release(es_loader_batches *b);
void es_loader_scratch_release(es_loader_scratch *sc);

#endif
