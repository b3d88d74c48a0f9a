#include "loader/batching.h"

size_t es_dynamic_batches(const uint32_t *frames, size_t n, uint64_t max_frames_in_batch,
                          size_t *ends, int *empty_first)
{
    size_t batches = 0, in_buf = 0;
    uint64_t longest = 0;
    if (empty_first)
        *empty_first = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t f = frames[i];
        if (f > longest)
            longest = f;
        if (longest * (in_buf + 1) > max_frames_in_batch) {
            if (in_buf == 0) {
                if (empty_first)
                    *empty_first = 1;
            } else {
                if (ends)
                    ends[batches] = i;
                batches++;
            }
            in_buf = 1;
            longest = f;
        } else {
            in_buf++;
        }
    }
    if (in_buf) {
        if (ends)
            ends[batches] = n;
        batches++;
    }
    return batches;
}

size_t es_static_batches(size_t n, size_t batch_size)
{
    return batch_size ? (n + batch_size - 1) / batch_size : 0;
}
