/* The CUDA backend: the per-row functions of emb_kernel.h launched over the
 * N×D matrix in device memory.
 *
 *   1. stats:   one warp per row; element i goes to lane i % 32, whose state is
 *               es_k_elem()'s; lanes merge with shuffles (checksum and counts
 *               are bit-identical to the CPU's; sums of squares agree to float
 *               precision).
 *   2. chunks:  the segmented per-speaker reduction. One block per chunk of
 *               ES_K_CHUNK rows of a speaker (vjob.h), one thread per column:
 *               the float partial sum of the chunk's finite rows, in row order —
 *               es_k_chunk_sum() for one column, so the same bits as the CPU.
 *               The host adds the chunk partials per speaker in chunk order (the
 *               CPU path's own code), giving means and centroids equal to the
 *               CPU's.
 *   3. cosines: one warp per row, dot product with its speaker's centroid.
 *
 * Every CUDA call's status is checked, and cudaGetLastError() after every
 * launch; a failure is one line in the context naming the call. The device is
 * the caller's current one (cudaGetDevice). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "validate/vjob.h"
}

#define FULL_MASK 0xffffffffu
enum { THREADS = 256, BATCH = 8 };

/* ---- errors ------------------------------------------------------------------------ */

static int cuda_fail(es_context *ctx, const char *what, cudaError_t e)
{
    int status = e == cudaErrorMemoryAllocation ? ES_ERR_NOMEM : ES_ERR_INTERNAL;
    return es_fail(ctx, status, "CUDA: %s failed: %s (%s)", what, cudaGetErrorString(e),
                   cudaGetErrorName(e));
}

/* Both macros need `int rc` and a `done:` label. */
#define CU(call)                                                                           \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            rc = cuda_fail(ctx, #call, e_);                                                \
            goto done;                                                                     \
        }                                                                                  \
    } while (0)
#define LAUNCHED(name)                                                                     \
    do {                                                                                   \
        cudaError_t e_ = cudaGetLastError();                                               \
        if (e_ != cudaSuccess) {                                                           \
            rc = cuda_fail(ctx, "launch of " name, e_);                                    \
            goto done;                                                                     \
        }                                                                                  \
    } while (0)

extern "C" int es_cuda_probe(es_context *ctx)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error state */
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "no CUDA device (%s)", cudaGetErrorString(e));
    }
    if (n == 0)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "no CUDA device");
    return ES_OK;
}

/* ---- element loads ------------------------------------------------------------------- */

struct LoadF32 {
    __device__ static float at(const void *p, size_t i) { return static_cast<const float *>(p)[i]; }
};
struct LoadF16 {
    __device__ static float at(const void *p, size_t i)
    {
        return es_k_f16_to_f32(static_cast<const uint16_t *>(p)[i]);
    }
};
struct LoadBF16 {
    __device__ static float at(const void *p, size_t i)
    {
        return es_k_bf16_to_f32(static_cast<const uint16_t *>(p)[i]);
    }
};

/* ---- kernels ------------------------------------------------------------------------ */

/* One warp per row (grid-stride). Loads are issued BATCH at a time before use so
 * each thread keeps several in flight. */
template <class L>
__global__ void stats_kernel(const void *__restrict__ rows, size_t n, uint32_t d,
                             es_row_result *__restrict__ res)
{
    const uint32_t lane = threadIdx.x & 31;
    const size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < n; r += warps) {
        float ss = 0.0f;
        uint32_t nan = 0, inf = 0, ha = 0, hs = 0;
        const size_t base = r * d;
        for (uint32_t i0 = lane; i0 < d; i0 += 32 * BATCH) {
            float v[BATCH];
#pragma unroll
            for (int k = 0; k < BATCH; k++) {
                uint32_t i = i0 + 32 * k;
                v[k] = i < d ? L::at(rows, base + i) : 0.0f;
            }
#pragma unroll
            for (int k = 0; k < BATCH; k++) {
                uint32_t i = i0 + 32 * k;
                if (i < d)
                    es_k_elem(&ss, &nan, &inf, &ha, &hs, v[k], i / ES_K_LANES);
            }
        }
        double sum = ss;
        for (int o = 16; o > 0; o >>= 1) {
            sum += __shfl_xor_sync(FULL_MASK, sum, o);
            nan += __shfl_xor_sync(FULL_MASK, nan, o);
            inf += __shfl_xor_sync(FULL_MASK, inf, o);
        }
        /* Threads t and t ^ 16 hold checksum lane t % 16; after this add, thread l
         * (l < 16) holds lane l's totals. */
        ha += __shfl_xor_sync(FULL_MASK, ha, 16);
        hs += __shfl_xor_sync(FULL_MASK, hs, 16);
        uint32_t has[ES_K_LANES], hss[ES_K_LANES];
#pragma unroll
        for (int l = 0; l < ES_K_LANES; l++) {
            has[l] = __shfl_sync(FULL_MASK, ha, l);
            hss[l] = __shfl_sync(FULL_MASK, hs, l);
        }
        if (lane == 0) {
            es_row_result out;
            out.sumsq = es_k_sumsq_out(sum, nan);
            out.cosine = ES_K_NO_COSINE;
            out.hash = es_k_hash_finish(has, hss, d);
            out.nan = nan;
            out.inf = inf;
            res[r] = out;
        }
    }
}

/* One block per chunk (grid-stride), one thread per column: the chunk's float
 * partial sums over its finite rows, in order (es_k_chunk_sum for one column). */
template <class L>
__global__ void chunk_kernel(const void *__restrict__ rows, uint32_t d,
                             const uint32_t *__restrict__ order, const size_t *__restrict__ chunk_begin,
                             const uint32_t *__restrict__ chunk_len, size_t n_chunks,
                             const es_row_result *__restrict__ res, float *__restrict__ partial)
{
    __shared__ uint32_t cand[ES_K_CHUNK], row[ES_K_CHUNK];
    __shared__ uint8_t finite[ES_K_CHUNK];
    __shared__ uint32_t n_rows;
    for (size_t c = blockIdx.x; c < n_chunks; c += gridDim.x) {
        /* The chunk's rows and whether each is finite, loaded in parallel; then
         * thread 0 compacts the finite ones, keeping their order. */
        const uint32_t len = chunk_len[c];
        for (uint32_t e = threadIdx.x; e < len; e += blockDim.x) {
            uint32_t r = order[chunk_begin[c] + e];
            cand[e] = r;
            finite[e] = (uint8_t)es_k_row_finite(&res[r]);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            uint32_t k = 0;
            for (uint32_t e = 0; e < len; e++)
                if (finite[e])
                    row[k++] = cand[e];
            n_rows = k;
        }
        __syncthreads();
        for (uint32_t j = threadIdx.x; j < d; j += blockDim.x) {
            float part = 0.0f;
            for (uint32_t e0 = 0; e0 < n_rows; e0 += BATCH) {
                float v[BATCH];
#pragma unroll
                for (int k = 0; k < BATCH; k++)
                    v[k] = e0 + k < n_rows ? L::at(rows, (size_t)row[e0 + k] * d + j) : 0.0f;
#pragma unroll
                for (int k = 0; k < BATCH; k++)
                    if (e0 + k < n_rows)
                        part += v[k];
            }
            partial[c * d + j] = part;
        }
        __syncthreads();
    }
}

/* One warp per row: cosine to the speaker's centroid (rows without a speaker,
 * non-finite or zero rows and speakers without a centroid are skipped). */
template <class L>
__global__ void cosine_kernel(const void *__restrict__ rows, size_t n, uint32_t d,
                              const int32_t *__restrict__ row_spk, const float *__restrict__ centroid,
                              const double *__restrict__ csq, es_row_result *__restrict__ res)
{
    const uint32_t lane = threadIdx.x & 31;
    const size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < n; r += warps) {
        int32_t s = row_spk[r];
        if (s < 0)
            continue;
        es_row_result x = res[r];
        double cc = csq[s];
        if (!es_k_row_finite(&x) || !(x.sumsq > 0.0) || !(cc > 0.0))
            continue;
        const float *c = centroid + (size_t)s * d;
        const size_t base = r * d;
        float acc = 0.0f;
        for (uint32_t i0 = lane; i0 < d; i0 += 32 * BATCH) {
            float v[BATCH];
#pragma unroll
            for (int k = 0; k < BATCH; k++) {
                uint32_t i = i0 + 32 * k;
                v[k] = i < d ? L::at(rows, base + i) : 0.0f;
            }
#pragma unroll
            for (int k = 0; k < BATCH; k++) {
                uint32_t i = i0 + 32 * k;
                if (i < d)
                    acc += v[k] * c[i];
            }
        }
        double dot = acc;
        for (int o = 16; o > 0; o >>= 1)
            dot += __shfl_xor_sync(FULL_MASK, dot, o);
        if (lane == 0)
            res[r].cosine = es_k_cosine(dot, x.sumsq, cc);
    }
}

/* Copies rows idx[i] to out[i] (row_bytes each), one block per row. */
__global__ void gather_kernel(const unsigned char *__restrict__ src, size_t row_bytes,
                              const uint32_t *__restrict__ idx, size_t k,
                              unsigned char *__restrict__ out)
{
    for (size_t i = blockIdx.x; i < k; i += gridDim.x) {
        const unsigned char *from = src + (size_t)idx[i] * row_bytes;
        for (size_t b = threadIdx.x; b < row_bytes; b += blockDim.x)
            out[i * row_bytes + b] = from[b];
    }
}

/* A plain read of the matrix's bytes: the bandwidth reference for the benchmark. */
__global__ void read_kernel(const uint4 *__restrict__ p, size_t n16, uint32_t *out)
{
    uint32_t acc = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
        uint4 v = p[i];
        acc += v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) /* never in practice; keeps the loads */
        *out = acc;
}

/* ---- launches ---------------------------------------------------------------------- */

static unsigned grid_for(size_t items, size_t per_block)
{
    size_t g = (items + per_block - 1) / per_block;
    if (g < 1)
        g = 1;
    return g > (1u << 30) ? (1u << 30) : (unsigned)g;
}

template <class L>
static void launch_stats(const void *rows, size_t n, uint32_t d, es_row_result *res)
{
    stats_kernel<L><<<grid_for(n, THREADS / 32), THREADS>>>(rows, n, d, res);
}

template <class L>
static void launch_chunks(const void *rows, uint32_t d, const uint32_t *order, const size_t *cb,
                          const uint32_t *cl, size_t n_chunks, const es_row_result *res, float *partial)
{
    unsigned threads = d >= 256 ? 256 : (d + 31) / 32 * 32;
    chunk_kernel<L><<<grid_for(n_chunks, 1), threads>>>(rows, d, order, cb, cl, n_chunks, res, partial);
}

template <class L>
static void launch_cosines(const void *rows, size_t n, uint32_t d, const int32_t *row_spk,
                           const float *centroid, const double *csq, es_row_result *res)
{
    cosine_kernel<L><<<grid_for(n, THREADS / 32), THREADS>>>(rows, n, d, row_spk, centroid, csq, res);
}

#define DISPATCH(dtype, fn, ...)                                                           \
    do {                                                                                   \
        if ((dtype) == ES_DTYPE_F32)                                                       \
            fn<LoadF32>(__VA_ARGS__);                                                      \
        else if ((dtype) == ES_DTYPE_F16)                                                  \
            fn<LoadF16>(__VA_ARGS__);                                                      \
        else                                                                               \
            fn<LoadBF16>(__VA_ARGS__);                                                     \
    } while (0)

/* ---- the job ------------------------------------------------------------------------ */

/* Host-side plan of the speaker segments: chunk ranges and each row's speaker. */
typedef struct plan {
    size_t n_chunks;
    size_t *chunk_begin;   /* n_chunks offsets into order */
    uint32_t *chunk_len;
    size_t *spk_chunk;     /* n_spk + 1: speaker s owns chunks [spk_chunk[s], spk_chunk[s+1]) */
    int32_t *row_spk;      /* n */
} plan;

static void plan_free(plan *p)
{
    free(p->chunk_begin);
    free(p->chunk_len);
    free(p->spk_chunk);
    free(p->row_spk);
}

static int plan_make(const es_vjob *job, plan *p)
{
    memset(p, 0, sizeof *p);
    size_t n_chunks = 0;
    for (size_t s = 0; s < job->n_spk; s++)
        n_chunks += (job->seg[s + 1] - job->seg[s] + ES_K_CHUNK - 1) / ES_K_CHUNK;
    p->n_chunks = n_chunks;
    p->chunk_begin = (size_t *)malloc((n_chunks + 1) * sizeof *p->chunk_begin);
    p->chunk_len = (uint32_t *)malloc((n_chunks + 1) * sizeof *p->chunk_len);
    p->spk_chunk = (size_t *)malloc((job->n_spk + 1) * sizeof *p->spk_chunk);
    p->row_spk = (int32_t *)malloc((job->n + 1) * sizeof *p->row_spk);
    if (!p->chunk_begin || !p->chunk_len || !p->spk_chunk || !p->row_spk)
        return -1;
    size_t c = 0;
    for (size_t r = 0; r < job->n; r++)
        p->row_spk[r] = -1;
    for (size_t s = 0; s < job->n_spk; s++) {
        p->spk_chunk[s] = c;
        for (size_t e = job->seg[s]; e < job->seg[s + 1]; e += ES_K_CHUNK) {
            size_t end = e + ES_K_CHUNK < job->seg[s + 1] ? e + ES_K_CHUNK : job->seg[s + 1];
            p->chunk_begin[c] = e;
            p->chunk_len[c++] = (uint32_t)(end - e);
        }
        for (size_t e = job->seg[s]; e < job->seg[s + 1]; e++)
            p->row_spk[job->order[e]] = (int32_t)s;
    }
    p->spk_chunk[job->n_spk] = c;
    return 0;
}

/* Means and centroids from the chunk partials, exactly as validate_cpu.c's
 * speaker() adds them; n_finite from the row results. */
static void combine(const es_vjob *job, const plan *p, const float *partial, float *centroid,
                    double *csq)
{
    size_t d = job->dim;
    for (size_t s = 0; s < job->n_spk; s++) {
        uint32_t n_finite = 0;
        for (size_t e = job->seg[s]; e < job->seg[s + 1]; e++)
            n_finite += es_k_row_finite(&job->res[job->order[e]]);
        double *mean = job->mean + s * d;
        float *cen = centroid + s * d;
        for (size_t j = 0; j < d; j++) {
            double total = 0.0;
            for (size_t c = p->spk_chunk[s]; c < p->spk_chunk[s + 1]; c++)
                total += (double)partial[c * d + j];
            mean[j] = n_finite ? total / n_finite : 0.0;
            cen[j] = n_finite ? es_k_mean(total, n_finite) : 0.0f;
        }
        job->n_finite[s] = n_finite;
        csq[s] = n_finite ? es_k_dot(cen, cen, (uint32_t)d) : 0.0;
    }
}

typedef struct dev_bufs {
    void *rows;
    es_row_result *res;
    uint32_t *order, *chunk_len;
    size_t *chunk_begin;
    int32_t *row_spk;
    float *partial, *centroid;
    double *csq;
} dev_bufs;

static void dev_free(dev_bufs *b, int owns_rows)
{
    if (owns_rows)
        cudaFree(b->rows);
    cudaFree(b->res);
    cudaFree(b->order);
    cudaFree(b->chunk_len);
    cudaFree(b->chunk_begin);
    cudaFree(b->row_spk);
    cudaFree(b->partial);
    cudaFree(b->centroid);
    cudaFree(b->csq);
}

extern "C" int es_vjob_run_cuda(es_context *ctx, const es_vjob *job, int rows_on_device)
{
    int rc = ES_OK;
    dev_bufs b;
    plan p;
    float *partial = NULL, *centroid = NULL;
    double *csq = NULL;
    cudaEvent_t ev[ES_VJOB_TIMES + 1] = {0};
    const size_t n = job->n, d = job->dim, row_bytes = d * es_dtype_size(job->dtype);
    const size_t cd = (size_t)1 * d; /* columns per chunk partial */
    memset(&b, 0, sizeof b);
    memset(&p, 0, sizeof p);
    if (plan_make(job, &p)) {
        rc = es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
        goto done;
    }
    partial = (float *)malloc((p.n_chunks * cd + 1) * sizeof *partial);
    centroid = (float *)malloc((job->n_spk * d + 1) * sizeof *centroid);
    csq = (double *)malloc((job->n_spk + 1) * sizeof *csq);
    if (!partial || !centroid || !csq) {
        rc = es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
        goto done;
    }
    if (rows_on_device) {
        cudaPointerAttributes attr;
        CU(cudaPointerGetAttributes(&attr, job->rows));
        if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
            rc = es_fail(ctx, ES_ERR_USAGE, "validate: the matrix is not in CUDA device memory");
            goto done;
        }
        b.rows = (void *)job->rows;
    } else {
        CU(cudaMalloc(&b.rows, n * row_bytes));
        CU(cudaMemcpy(b.rows, job->rows, n * row_bytes, cudaMemcpyHostToDevice));
    }
    CU(cudaMalloc(&b.res, n * sizeof *b.res));
    CU(cudaMalloc(&b.order, n * sizeof *b.order));
    CU(cudaMalloc(&b.row_spk, n * sizeof *b.row_spk));
    CU(cudaMalloc(&b.chunk_begin, (p.n_chunks + 1) * sizeof *b.chunk_begin));
    CU(cudaMalloc(&b.chunk_len, (p.n_chunks + 1) * sizeof *b.chunk_len));
    CU(cudaMalloc(&b.partial, (p.n_chunks * cd + 1) * sizeof *b.partial));
    CU(cudaMalloc(&b.centroid, (job->n_spk * d + 1) * sizeof *b.centroid));
    CU(cudaMalloc(&b.csq, (job->n_spk + 1) * sizeof *b.csq));
    CU(cudaMemcpy(b.order, job->order, n * sizeof *b.order, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(b.row_spk, p.row_spk, n * sizeof *b.row_spk, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(b.chunk_begin, p.chunk_begin, p.n_chunks * sizeof *b.chunk_begin,
                  cudaMemcpyHostToDevice));
    CU(cudaMemcpy(b.chunk_len, p.chunk_len, p.n_chunks * sizeof *b.chunk_len, cudaMemcpyHostToDevice));
    if (job->gpu_ms)
        for (int i = 0; i <= ES_VJOB_TIMES; i++)
            CU(cudaEventCreate(&ev[i]));

    if (ev[0])
        CU(cudaEventRecord(ev[0]));
    DISPATCH(job->dtype, launch_stats, b.rows, n, (uint32_t)d, b.res);
    LAUNCHED("stats_kernel");
    if (ev[1])
        CU(cudaEventRecord(ev[1]));
    if (p.n_chunks) {
        DISPATCH(job->dtype, launch_chunks, b.rows, (uint32_t)d, b.order, b.chunk_begin, b.chunk_len,
                 p.n_chunks, b.res, b.partial);
        LAUNCHED("chunk_kernel");
    }
    if (ev[2])
        CU(cudaEventRecord(ev[2]));
    CU(cudaMemcpy(job->res, b.res, n * sizeof *b.res, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(partial, b.partial, p.n_chunks * cd * sizeof *partial, cudaMemcpyDeviceToHost));
    combine(job, &p, partial, centroid, csq);
    if (job->n_spk) {
        CU(cudaMemcpy(b.centroid, centroid, job->n_spk * d * sizeof *centroid, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(b.csq, csq, job->n_spk * sizeof *csq, cudaMemcpyHostToDevice));
        if (ev[3])
            CU(cudaEventRecord(ev[3]));
        DISPATCH(job->dtype, launch_cosines, b.rows, n, (uint32_t)d, b.row_spk, b.centroid, b.csq,
                 b.res);
        LAUNCHED("cosine_kernel");
        if (ev[4])
            CU(cudaEventRecord(ev[4]));
        CU(cudaMemcpy(job->res, b.res, n * sizeof *b.res, cudaMemcpyDeviceToHost));
    } else if (ev[3]) {
        CU(cudaEventRecord(ev[3]));
        CU(cudaEventRecord(ev[4]));
    }
    CU(cudaDeviceSynchronize());
    if (job->gpu_ms) {
        float ms[4];
        CU(cudaEventElapsedTime(&ms[0], ev[0], ev[1]));
        CU(cudaEventElapsedTime(&ms[1], ev[1], ev[2]));
        CU(cudaEventElapsedTime(&ms[2], ev[3], ev[4]));
        CU(cudaEventElapsedTime(&ms[3], ev[0], ev[4]));
        for (int i = 0; i < ES_VJOB_TIMES; i++)
            job->gpu_ms[i] = ms[i];
    }
done:
    for (int i = 0; i <= ES_VJOB_TIMES; i++)
        if (ev[i])
            cudaEventDestroy(ev[i]);
    dev_free(&b, !rows_on_device);
    plan_free(&p);
    free(partial);
    free(centroid);
    free(csq);
    return rc;
}

extern "C" int es_cuda_gather_rows(es_context *ctx, const void *rows, es_dtype dtype, size_t dim,
                                   const uint32_t *idx, size_t k, void *out)
{
    int rc = ES_OK;
    size_t row_bytes = dim * es_dtype_size(dtype);
    uint32_t *d_idx = NULL;
    unsigned char *d_out = NULL;
    if (k == 0)
        return ES_OK;
    CU(cudaMalloc(&d_idx, k * sizeof *d_idx));
    CU(cudaMalloc(&d_out, k * row_bytes));
    CU(cudaMemcpy(d_idx, idx, k * sizeof *d_idx, cudaMemcpyHostToDevice));
    gather_kernel<<<grid_for(k, 1), 128>>>((const unsigned char *)rows, row_bytes, d_idx, k, d_out);
    LAUNCHED("gather_kernel");
    CU(cudaMemcpy(out, d_out, k * row_bytes, cudaMemcpyDeviceToHost));
done:
    cudaFree(d_idx);
    cudaFree(d_out);
    return rc;
}

extern "C" int es_cuda_read_bandwidth(es_context *ctx, const void *dev, size_t bytes, int repeat,
                                      double *ms)
{
    int rc = ES_OK;
    uint32_t *d_out = NULL;
    cudaEvent_t a = NULL, z = NULL;
    int sms = 0, dev_id = 0;
    *ms = 0;
    CU(cudaGetDevice(&dev_id));
    CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev_id));
    CU(cudaMalloc(&d_out, sizeof *d_out));
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&z));
    for (int i = 0; i < repeat; i++) {
        float t;
        CU(cudaEventRecord(a));
        read_kernel<<<(unsigned)sms * 8, 512>>>((const uint4 *)dev, bytes / 16, d_out);
        LAUNCHED("read_kernel");
        CU(cudaEventRecord(z));
        CU(cudaEventSynchronize(z));
        CU(cudaEventElapsedTime(&t, a, z));
        if (i == 0 || t < *ms)
            *ms = t;
    }
done:
    if (a)
        cudaEventDestroy(a);
    if (z)
        cudaEventDestroy(z);
    cudaFree(d_out);
    return rc;
}

extern "C" int es_cuda_alloc(es_context *ctx, void **dev, const void *host, size_t bytes)
{
    int rc = ES_OK;
    *dev = NULL;
    CU(cudaMalloc(dev, bytes));
    if (host)
        CU(cudaMemcpy(*dev, host, bytes, cudaMemcpyHostToDevice));
    return ES_OK;
done:
    cudaFree(*dev);
    *dev = NULL;
    return rc;
}

extern "C" void es_cuda_free(void *dev) { cudaFree(dev); }
