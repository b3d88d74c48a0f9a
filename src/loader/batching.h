/* The loaders' batching rules, replayed exactly.
 *
 * CosyVoice/WeNet `dynamic_batch`: walk the stream keeping the longest frame
 * count so far; a sample joins the batch while longest × (n + 1) <=
 * max_frames_in_batch, otherwise the batch is emitted and the sample starts the
 * next. Quirk kept on purpose: when the very first sample alone exceeds the
 * limit, the loader emits an EMPTY batch first (buf == []), which crashes
 * padding(); es_dynamic_batches reports it through *empty_first.
 *
 * `static_batch`: batches of batch_size, the last one shorter. */
#ifndef ES_BATCHING_H
#define ES_BATCHING_H

#include <stddef.h>
#include <stdint.h>

/* Splits frames[0..n) into dynamic batches. When ends != NULL, ends[b] is one
 * past the last index of batch b (capacity n). Returns the number of non-empty
 * batches; *empty_first (may be NULL) is set when the loader would emit the
 * empty batch described above. */
size_t es_dynamic_batches(const uint32_t *frames, size_t n, uint64_t max_frames_in_batch,
                          size_t *ends, int *empty_first);

/* Number of static batches of batch_size over n samples. */
size_t es_static_batches(size_t n, size_t batch_size);

#endif
