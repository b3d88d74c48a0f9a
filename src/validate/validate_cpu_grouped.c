/* The CPU backend for rows grouped by speaker (each speaker's rows contiguous,
 * as in a Kaldi-sorted utt2embedding.pt whose keys begin with the speaker):
 * validate_cpu.c hands such jobs here, where one memory pass does what the
 * streaming backend needs two for. Same per-row functions of emb_kernel.h,
 * same additions in the same order: the same bits as validate_cpu.c's.
 *
 * Speakers are the unit of parallel work. For one speaker, each chunk of
 * ES_K_CHUNK rows is read once from memory: row statistics, then (while the
 * chunk is in cache) its column sums; after the last chunk the centroid is
 * known and a second loop takes each row's cosine to it, from cache when the
 * speaker's rows fit. Every number is computed by one thread in a fixed
 * order, so results are identical for any thread count. Rows without a speaker
 * only get their statistics.
 *
 * float16/bfloat16 rows are converted to float a chunk at a time. This file
 * is compiled once per instruction set (cpu_isa.h). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "validate/vjob.h"

#include "validate/cpu_isa.h"

/* Per-thread scratch: the running centroid sums, the centroid, a chunk's
 * finite rows, and converted rows for half-precision inputs. */
typedef struct scratch {
    double *total;
    float *centroid;
    float *conv; /* ES_K_CHUNK × dim floats (f16/bf16 only) */
    uint32_t list[ES_K_CHUNK];
} scratch;

static void convert_row(const es_vjob *job, size_t r, float *out)
{
    const uint16_t *h = (const uint16_t *)job->rows + r * job->dim;
    if (job->dtype == ES_DTYPE_F16)
        for (size_t j = 0; j < job->dim; j++)
            out[j] = es_k_f16_to_f32(h[j]);
    else
        for (size_t j = 0; j < job->dim; j++)
            out[j] = es_k_bf16_to_f32(h[j]);
}

/* Row r as floats: in place for float32, else converted into buf. */
static const float *row_floats(const es_vjob *job, size_t r, float *buf)
{
    if (job->dtype == ES_DTYPE_F32)
        return (const float *)job->rows + r * job->dim;
    convert_row(job, r, buf);
    return buf;
}

/* Rows of a speaker are scattered over the matrix whenever the source is not
 * sorted by speaker (CosyVoice's .pt files are not), and the hardware
 * prefetcher cannot guess the next row: fetch the row PREFETCH_ROWS ahead
 * (every cache line of it) and its result slot. */
enum { PREFETCH_ROWS = 6 };

static void prefetch_row(const es_vjob *job, size_t e)
{
#if defined(__GNUC__)
    if (e >= job->n)
        return;
    uint32_t r = job->order[e];
    size_t bytes = job->dim * es_dtype_size(job->dtype);
    const char *p = (const char *)job->rows + r * bytes;
    for (size_t b = 0; b < bytes; b += 64)
        __builtin_prefetch(p + b, 0, 3);
    __builtin_prefetch(p + bytes - 1, 0, 3);
    __builtin_prefetch(&job->res[r], 1, 3);
#else
    (void)job, (void)e;
#endif
}

/* One chunk: statistics of every row, column sums of the finite ones.
 * Returns how many were finite. */
static uint32_t chunk(const es_vjob *job, size_t begin, size_t end, scratch *w)
{
    uint32_t d = (uint32_t)job->dim, k = 0;
    int f32 = job->dtype == ES_DTYPE_F32;
    for (size_t e = begin; e < begin + PREFETCH_ROWS && e < end; e++)
        prefetch_row(job, e);
    for (size_t e = begin; e < end; e++) {
        prefetch_row(job, e + PREFETCH_ROWS);
        uint32_t r = job->order[e];
        float *buf = f32 ? NULL : w->conv + (e - begin) * d;
        const float *x = row_floats(job, r, buf);
        es_k_row_stats_simd(x, d, &job->res[r]);
        if (es_k_row_finite(&job->res[r]))
            w->list[k++] = f32 ? r : (uint32_t)(e - begin);
    }
    es_k_chunk_sum_simd(w->total, f32 ? (const float *)job->rows : w->conv, d, w->list, k);
    return k;
}

/* Cosines of a speaker's finite, nonzero rows to its centroid. */
static void cosines(const es_vjob *job, size_t begin, size_t end, scratch *w)
{
    uint32_t d = (uint32_t)job->dim;
    double csq = es_k_dot_simd(w->centroid, w->centroid, d);
    for (size_t e = begin; e < end; e++) {
        uint32_t r = job->order[e];
        es_row_result *res = &job->res[r];
        if (!es_k_row_finite(res) || !(res->sumsq > 0.0))
            continue;
        const float *x = row_floats(job, r, w->conv);
        res->cosine = es_k_cosine(es_k_dot_simd(x, w->centroid, d), res->sumsq, csq);
    }
}

static void speaker(const es_vjob *job, size_t s, scratch *w)
{
    size_t d = job->dim, begin = job->seg[s], end = job->seg[s + 1];
    memset(w->total, 0, d * sizeof *w->total);
    uint32_t n_finite = 0;
    for (size_t c = begin; c < end; c += ES_K_CHUNK)
        n_finite += chunk(job, c, c + ES_K_CHUNK < end ? c + ES_K_CHUNK : end, w);
    double *mean = job->mean + s * d;
    for (size_t j = 0; j < d; j++) {
        mean[j] = n_finite ? w->total[j] / n_finite : 0.0;
        w->centroid[j] = n_finite ? es_k_mean(w->total[j], n_finite) : 0.0f;
    }
    job->n_finite[s] = n_finite;
    if (n_finite)
        cosines(job, begin, end, w);
}

static void stats_only(const es_vjob *job, size_t e, float *buf)
{
    prefetch_row(job, e + PREFETCH_ROWS);
    uint32_t r = job->order[e];
    es_k_row_stats_simd(row_floats(job, r, buf), (uint32_t)job->dim, &job->res[r]);
}

static void scratch_free(scratch *w)
{
    free(w->total);
    free(w->centroid);
    free(w->conv);
}

static int scratch_init(scratch *w, size_t d)
{
    w->total = malloc(d * sizeof *w->total);
    w->centroid = malloc(d * sizeof *w->centroid);
    w->conv = malloc(ES_K_CHUNK * d * sizeof *w->conv);
    return w->total && w->centroid && w->conv ? 0 : -1;
}

int ES_CPU_FN(es_vjob_run_cpu_grouped)(es_context *ctx, const es_vjob *job)
{
    size_t d = job->dim, nospk = job->seg[job->n_spk];
    int threads = job->threads > 0 ? job->threads : omp_get_max_threads();
    scratch *ws = calloc((size_t)threads, sizeof *ws);
    int failed = !ws;
    for (int t = 0; !failed && t < threads; t++)
        failed = scratch_init(&ws[t], d);
    if (!failed) {
#pragma omp parallel num_threads(threads)
        {
            scratch *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1) nowait
            for (size_t s = 0; s < job->n_spk; s++)
                speaker(job, s, w);
#pragma omp for schedule(static) nowait
            for (size_t e = nospk; e < job->n; e++)
                stats_only(job, e, w->conv);
        }
    }
    for (int t = 0; ws && t < threads; t++)
        scratch_free(&ws[t]);
    free(ws);
    return failed ? es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory") : ES_OK;
}
