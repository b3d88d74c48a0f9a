/* The CPU backend: the per-row functions of emb_kernel.h under OpenMP.
 *
 * Rows grouped by speaker go to validate_cpu_grouped.c (one memory pass).
 * Otherwise the matrix is streamed in row order, twice, whatever the order of speakers
 * in it (CosyVoice's .pt files list utterances in no speaker order; reading a
 * speaker's rows through order[] instead costs a random 768-byte read per
 * row, about ten times the time of a streaming pass: docs/PERFORMANCE.md).
 *
 *   1. The rows are walked in windows of WINDOW rows per thread. In each
 *      window a thread first computes the statistics of its own contiguous
 *      WINDOW rows, then walks the whole window (now in cache) and adds the
 *      finite rows of the speakers it owns (owner()) into their
 *      speaker's open chunk partial (es_k_part_add), flushed into the
 *      speaker's double total after every ES_K_CHUNK rows of that speaker
 *      (es_k_part_flush). A speaker's rows are thus added by one thread, in
 *      row order, in the chunks vjob.h defines: the sums have the bits of
 *      es_k_chunk_sum() (the CUDA path's) for any thread count. The threads
 *      do not wait for each other inside the pass: a row of another thread's
 *      block may not have its statistics yet, so its finiteness is checked
 *      again (es_k_all_finite). Every speaker's state (its
 *      partial, its counters) sits on cache lines of its own, or shuffled
 *      rows would make the threads fight over shared lines at every row.
 *   2. After a barrier the centroids are known; rows are split evenly between
 *      threads for their cosines to their speaker's centroid.
 *
 * float16/bfloat16 rows are converted to float one row at a time. This file
 * is compiled once per instruction set (cpu_isa.h). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "validate/vjob.h"

#include "validate/cpu_isa.h"

/* Rows of pass 1's window per thread: its rows and the other threads' stay in
 * the (shared) cache between the two walks of a window. */
enum { WINDOW = 256 };

/* A speaker's counters in pass 1, on a cache line of their own: speakers are
 * shared out between threads, and counters of two speakers on one line would
 * bounce between the cores' caches on every row when rows are shuffled. */
typedef struct spk_count {
    _Alignas(64) uint32_t seen; /* rows walked so far (finite or not) */
    uint32_t n_finite;
} spk_count;

/* What both passes share. job->mean holds the speakers' double totals until
 * pass 1 ends, then their means. */
typedef struct cpu_run {
    const es_vjob *job;
    const int32_t *row_spk; /* n: the row's speaker, -1 for none */
    int32_t *own_spk;       /* row_spk when derived here (job->speaker NULL) */
    float *part;            /* n_spk × stride: open chunk partials, then the float
                               centroids; 64-byte aligned, as each speaker's slot */
    size_t stride;          /* dim rounded up to whole cache lines */
    spk_count *count;       /* n_spk */
    double *csq;            /* n_spk: centroid · centroid */
} cpu_run;

/* Row r as floats: in place for float32, else converted into buf (dim floats). */
static const float *row_floats(const es_vjob *job, size_t r, float *buf)
{
    if (job->dtype == ES_DTYPE_F32)
        return (const float *)job->rows + r * job->dim;
    const uint16_t *h = (const uint16_t *)job->rows + r * job->dim;
    for (size_t j = 0; j < job->dim; j++)
        buf[j] = job->dtype == ES_DTYPE_F16 ? es_k_f16_to_f32(h[j]) : es_k_bf16_to_f32(h[j]);
    return buf;
}

/* With shuffled rows each row goes to a random speaker's slot (its partial in
 * pass 1, its centroid in pass 2), and in pass 1 the row may be another
 * thread's, not in this core's cache: both are fetched PREFETCH rows ahead. */
enum { PREFETCH = 8 };

static void prefetch(const void *p, size_t bytes, int for_write)
{
#if defined(__GNUC__)
    for (size_t b = 0; b < bytes; b += 64)
        if (for_write)
            __builtin_prefetch((const char *)p + b, 1, 3);
        else
            __builtin_prefetch((const char *)p + b, 0, 3);
#else
    (void)p, (void)bytes, (void)for_write;
#endif
}

static const float *slot(const cpu_run *c, int32_t s) { return c->part + (size_t)s * c->stride; }

/* Pass 1, rows [a, b): statistics. */
static void stats_rows(const es_vjob *job, size_t a, size_t b, float *buf)
{
    for (size_t r = a; r < b; r++)
        es_k_row_stats_simd(row_floats(job, r, buf), (uint32_t)job->dim, &job->res[r]);
}

/* The thread of nt that owns speaker s: a multiplicative hash scaled to nt
 * (a division per row costs as much as the rest of the bookkeeping), spread
 * so that neighbouring speakers, as in grouped rows, go to different threads. */
static int owner(int32_t s, int nt)
{
    return (int)(((uint64_t)((uint32_t)s * 0x9e3779b1u) * (uint32_t)nt) >> 32);
}

/* Pass 1, rows [a, b): those of the speakers thread t owns into their chunks.
 * Rows [own_a, own_b) have their statistics from this thread already. */
static void add_rows(const cpu_run *c, size_t a, size_t b, size_t own_a, size_t own_b, int t,
                     int nt, float *buf)
{
    const es_vjob *job = c->job;
    uint32_t d = (uint32_t)job->dim;
    for (size_t r = a; r < b; r++) {
        int32_t s = c->row_spk[r], next = r + PREFETCH < b ? c->row_spk[r + PREFETCH] : -1;
        if (next >= 0 && owner(next, nt) == t) {
            prefetch(slot(c, next), d * sizeof(float), 1);
            prefetch((const char *)job->rows + (r + PREFETCH) * d * es_dtype_size(job->dtype),
                     d * es_dtype_size(job->dtype), 0);
        }
        if (s < 0 || owner(s, nt) != t)
            continue;
        float *part = c->part + (size_t)s * c->stride;
        spk_count *n = &c->count[s];
        const float *x = row_floats(job, r, buf);
        int finite = r >= own_a && r < own_b ? es_k_row_finite(&job->res[r])
                                              : es_k_all_finite(x, d);
        if (finite) {
            es_k_part_add(part, x, d);
            n->n_finite++;
        }
        if (++n->seen % ES_K_CHUNK == 0)
            es_k_part_flush(job->mean + (size_t)s * d, part, d);
    }
}

/* After pass 1, speaker s: the last chunk, the mean (in place of the total)
 * and the float centroid (in place of the partial). */
static void finish_speaker(const cpu_run *c, size_t s)
{
    uint32_t d = (uint32_t)c->job->dim, n_finite = c->count[s].n_finite;
    double *mean = c->job->mean + s * d;
    float *centroid = c->part + s * c->stride;
    c->job->n_finite[s] = n_finite;
    if (c->count[s].seen % ES_K_CHUNK)
        es_k_part_flush(mean, centroid, d);
    for (size_t j = 0; j < d; j++) {
        centroid[j] = n_finite ? es_k_mean(mean[j], n_finite) : 0.0f;
        mean[j] = n_finite ? mean[j] / n_finite : 0.0;
    }
    c->csq[s] = es_k_dot_simd(centroid, centroid, d);
}

static void pass1(const cpu_run *c, int t, int nt, float *buf)
{
    size_t n = c->job->n, step = (size_t)WINDOW * (size_t)nt;
    for (size_t w = 0; w < n; w += step) {
        size_t end = n - w < step ? n : w + step, a = w + (size_t)t * WINDOW;
        size_t b = a < end ? (end - a < WINDOW ? end : a + WINDOW) : a;
        stats_rows(c->job, a, b, buf);
        add_rows(c, w, end, a, b, t, nt, buf);
    }
    for (size_t s = 0; s < c->job->n_spk; s++)
        if (owner((int32_t)s, nt) == t)
            finish_speaker(c, s);
}

/* Pass 2, row r: the cosine to its speaker's centroid. */
static void cosine_row(const cpu_run *c, size_t r, float *buf)
{
    const es_vjob *job = c->job;
    uint32_t d = (uint32_t)job->dim;
    es_row_result *res = &job->res[r];
    if (r + PREFETCH < job->n && c->row_spk[r + PREFETCH] >= 0)
        prefetch(slot(c, c->row_spk[r + PREFETCH]), d * sizeof(float), 0);
    int32_t s = c->row_spk[r];
    if (s < 0 || !job->n_finite[s] || !es_k_row_finite(res) || !(res->sumsq > 0.0))
        return;
    const float *x = row_floats(job, r, buf), *centroid = slot(c, s);
    res->cosine = es_k_cosine(es_k_dot_simd(x, centroid, d), res->sumsq, c->csq[s]);
}

/* own_spk from order/seg (vjob.h), when the job has no speaker array. */
static void speaker_of_rows(const cpu_run *c)
{
    const es_vjob *job = c->job;
    if (!c->own_spk)
        return;
#pragma omp for schedule(static)
    for (size_t s = 0; s <= job->n_spk; s++)
        for (size_t e = job->seg[s]; e < (s < job->n_spk ? job->seg[s + 1] : job->n); e++)
            c->own_spk[job->order[e]] = s < job->n_spk ? (int32_t)s : -1;
}

static void run_free(cpu_run *c)
{
    free(c->own_spk);
    free(c->part);
    free(c->count);
    free(c->csq);
}

/* Whether every speaker's rows are contiguous in the matrix: then the grouped
 * backend reads it once (validate_cpu_grouped.c). O(n) over order[]. */
static int rows_grouped(const es_vjob *job)
{
    for (size_t s = 0; s < job->n_spk; s++)
        for (size_t e = job->seg[s] + 1; e < job->seg[s + 1]; e++)
            if (job->order[e] != job->order[e - 1] + 1)
                return 0;
    return 1;
}

int ES_CPU_FN(es_vjob_run_cpu)(es_context *ctx, const es_vjob *job)
{
    if (rows_grouped(job))
        return ES_CPU_FN(es_vjob_run_cpu_grouped)(ctx, job);
    size_t d = job->dim, S = job->n_spk;
    int threads = job->threads > 0 ? job->threads : omp_get_max_threads();
    size_t stride = (d + 15) / 16 * 16;
    cpu_run c = {job, job->speaker, NULL, aligned_alloc(64, (S + 1) * stride * sizeof(float)),
                 stride, aligned_alloc(64, (S + 1) * sizeof(spk_count)),
                 malloc((S + 1) * sizeof *c.csq)};
    if (!c.row_spk)
        c.row_spk = c.own_spk = malloc((job->n ? job->n : 1) * sizeof *c.own_spk);
    int failed = !c.row_spk || !c.part || !c.count || !c.csq;
    if (!failed) {
        memset(c.part, 0, S * stride * sizeof *c.part);
        memset(c.count, 0, S * sizeof *c.count);
        if (S)
            memset(job->mean, 0, S * d * sizeof *job->mean);
    }
    if (!failed) {
#pragma omp parallel num_threads(threads) reduction(| : failed)
        {
            float *buf = job->dtype == ES_DTYPE_F32 ? NULL : malloc(d * sizeof *buf);
            failed = job->dtype != ES_DTYPE_F32 && !buf;
            speaker_of_rows(&c); /* a barrier when it writes */
            if (!failed)
                pass1(&c, omp_get_thread_num(), omp_get_num_threads(), buf);
#pragma omp barrier
#pragma omp for schedule(static)
            for (size_t r = 0; r < job->n; r++)
                if (!failed)
                    cosine_row(&c, r, buf);
            free(buf);
        }
    }
    run_free(&c);
    return failed ? es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory") : ES_OK;
}
