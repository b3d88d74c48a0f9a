/* The interface between validation (validate_run.c) and its two backends, the
 * CPU (validate_cpu.c) and CUDA (validate_cuda.cu): one matrix, its rows grouped
 * by speaker, and per-row results out.
 *
 * Invariants: order[] is a permutation of 0..n-1; rows order[seg[s] .. seg[s+1])
 * are speaker s's (s < n_spk), in ascending row order; rows order[seg[n_spk] .. n)
 * have no speaker. A speaker's rows are reduced in chunks of ES_K_CHUNK
 * consecutive entries of order[], starting at seg[s], so both backends add the
 * same numbers in the same order. */
#ifndef ES_VJOB_H
#define ES_VJOB_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "validate/emb_kernel.h"

typedef struct es_vjob {
    /* input */
    const void *rows;      /* n × dim elements: host memory (CPU) or device memory */
    es_dtype dtype;
    size_t n, dim;
    const uint32_t *order; /* host memory, as above */
    const size_t *seg;     /* n_spk + 1 offsets into order */
    const int32_t *speaker;/* host memory, optional: n, each row's speaker (< n_spk)
                              or -1; the CPU backend derives it from order/seg
                              when NULL */
    size_t n_spk;
    int threads;           /* CPU: OpenMP threads, 0 = default */
    /* output, host memory */
    es_row_result *res;    /* n, indexed by row: stats and cosine to the centroid */
    double *mean;          /* n_spk × dim: mean of the speaker's finite rows (0 if none) */
    uint32_t *n_finite;    /* n_spk: how many rows the mean has */
    double *gpu_ms;        /* CUDA, optional: ES_VJOB_TIMES device times (ms) from
                              events: stats, chunk sums, cosines, whole job */
} es_vjob;

enum { ES_VJOB_TIMES = 4 };

/* CPU backend: always there, compiled once per instruction set (cpu_isa.h).
 * es_vjob_run_cpu runs es_cpu_isa_default(ctx)'s; es_vjob_run_cpu_isa a given
 * one (ES_ERR_UNSUPPORTED when this build or CPU has none), for the tests that
 * compare them. All give the same bits. */
typedef enum es_cpu_isa { ES_CPU_GENERIC, ES_CPU_AVX2, ES_CPU_AVX512, ES_CPU_ISA_COUNT } es_cpu_isa;
int es_vjob_run_cpu(es_context *ctx, const es_vjob *job);
int es_vjob_run_cpu_isa(es_context *ctx, const es_vjob *job, es_cpu_isa isa);
/* Whether this build has the compilation and the CPU runs it. */
int es_cpu_isa_usable(es_cpu_isa isa);
/* The best usable one, capped by the context's cpu_isa setting
 * (es_context_set(ctx, "cpu_isa", …): "generic", "avx2", "avx512") when it names one;
 * ctx may be NULL (no cap). */
es_cpu_isa es_cpu_isa_default(const es_context *ctx);
const char *es_cpu_isa_name(es_cpu_isa isa);

/* Element size of a dtype in bytes. */
static inline size_t es_dtype_size(es_dtype t) { return t == ES_DTYPE_F32 ? 4 : 2; }

/* CUDA backend (validate_cuda.cu; stubs in validate_nocuda.c without CUDA).
 * es_cuda_probe: ES_OK when a device can be used, else ES_ERR_UNSUPPORTED with
 * "no CUDA device" (or the runtime's reason) in ctx. */
int es_cuda_probe(es_context *ctx);
/* Runs the job; job->rows is device memory when rows_on_device, else host
 * memory that is copied to the device first. */
int es_vjob_run_cuda(es_context *ctx, const es_vjob *job, int rows_on_device);
/* Copies rows idx[0..k) of a device matrix into host memory out (k × dim
 * elements), for byte comparisons of duplicate candidates and speaker rows. */
int es_cuda_gather_rows(es_context *ctx, const void *rows, es_dtype dtype, size_t dim,
                        const uint32_t *idx, size_t k, void *out);

/* For tools/bench: a plain read of `bytes` of device memory (a sum of 32-bit
 * words), timed with events; *ms is the best of `repeat` runs. And device
 * memory for a benchmark matrix (es_cuda_alloc copies `bytes` from host when
 * `host` is not NULL). */
int es_cuda_read_bandwidth(es_context *ctx, const void *dev, size_t bytes, int repeat, double *ms);
int es_cuda_alloc(es_context *ctx, void **dev, const void *host, size_t bytes);
void es_cuda_free(void *dev);

#endif
