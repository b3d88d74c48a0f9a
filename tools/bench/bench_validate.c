/* Benchmark of the validator's checks against the machine's memory bandwidth
 * (targets: CPU >= 50 %, GPU >= 70 %, counting each pass over the matrix).
 *
 *   bench_validate [--cpu-gib G] [--gpu-gib G] [--dim D] [--speakers S]
 *                  [--repeat R] [--threads T] [--order grouped|shuffled|both]
 *
 * CPU: a G GiB float32 matrix of speaker-structured random rows, for each
 * order asked (default both): rows grouped by speaker (sorted keys, parquet,
 * Kaldi) and speakers shuffled (CosyVoice's utt2embedding.pt). In the same
 * run: a plain read loop over the same memory (OpenMP, a sum of 32-bit words:
 * the bandwidth reference), the same read gathering each speaker's rows in
 * turn (the access pattern of a backend that reduces speaker by speaker), the
 * CPU backend alone (es_vjob_run_cpu: two passes over the matrix, statistics
 * and centroid sums, then cosines) and the whole es_validate_matrices call
 * (grouping, findings, median, duplicate search). Best of R runs each. The
 * backend's process CPU time is reported too: on a machine shared with other
 * jobs, time spent descheduled inflates the wall time but not the CPU time.
 *
 * GPU (when a CUDA device exists and --gpu-gib > 0; rows grouped with
 * --order grouped, else shuffled): the same on a matrix in device memory, timed with CUDA events: a plain read kernel, and each of the
 * three kernels (stats, chunk sums, cosines), each one pass over the matrix. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_clock.h"
#include "validate/validate_findings.h"

typedef struct opts {
    double cpu_gib, gpu_gib;
    size_t dim, speakers;
    int repeat, threads;
    int orders; /* 1 grouped, 2 shuffled, 3 both */
} opts;

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Row i: speaker direction (a pattern of ±1) plus uniform noise; no NaN. */
static void fill(float *m, int32_t *spk, size_t n, size_t d, size_t S, int grouped)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        size_t s = grouped ? i * S / n : mix(i + 1) % S;
        spk[i] = (int32_t)s;
        uint64_t r = mix(i * 0x9e3779b97f4a7c15ull + 7);
        for (size_t j = 0; j < d; j++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            float dir = (mix(s * 4096 + j) & 1) ? 1.0f : -1.0f;
            m[i * d + j] = dir + (float)((int64_t)(r >> 40) - (1 << 23)) / (float)(1 << 23) * 0.8f;
        }
    }
}

/* The bandwidth reference: every 32-bit word read once, summed. */
static double read_loop(const float *m, size_t words, int threads)
{
    const uint32_t *u = (const uint32_t *)m;
    uint32_t acc = 0;
    double t = now();
#pragma omp parallel for num_threads(threads) reduction(+ : acc) schedule(static)
    for (size_t b = 0; b < words / 64; b++) {
        uint32_t s = 0;
        for (int k = 0; k < 64; k++)
            s += u[b * 64 + k];
        acc += s;
    }
    t = now() - t;
    if (acc == 0x12345678u)
        printf(" ");
    return t;
}

/* The plain read, but row by row in speaker order (order[]). */
static double gather_loop(const float *m, const uint32_t *order, size_t n, size_t d, int threads)
{
    const uint32_t *u = (const uint32_t *)m;
    uint32_t acc = 0;
    double t = now();
#pragma omp parallel for num_threads(threads) reduction(+ : acc) schedule(static)
    for (size_t e = 0; e < n; e++) {
        const uint32_t *row = u + (size_t)order[e] * d;
        uint32_t s = 0;
        for (size_t k = 0; k < d; k++)
            s += row[k];
        acc += s;
    }
    t = now() - t;
    if (acc == 0x12345678u)
        printf(" ");
    return t;
}

static void group(const int32_t *spk, size_t n, size_t S, uint32_t *order, size_t *seg)
{
    memset(seg, 0, (S + 2) * sizeof *seg);
    for (size_t i = 0; i < n; i++)
        seg[spk[i] + 1]++;
    for (size_t s = 0; s <= S; s++)
        seg[s + 1] += seg[s];
    size_t *fill_at = malloc((S + 1) * sizeof *fill_at);
    memcpy(fill_at, seg, (S + 1) * sizeof *fill_at);
    for (size_t i = 0; i < n; i++)
        order[fill_at[spk[i]]++] = (uint32_t)i;
    free(fill_at);
}

static int bench_cpu(const opts *o, int grouped)
{
    size_t d = o->dim, S = o->speakers;
    size_t n = (size_t)(o->cpu_gib * (1u << 30)) / (d * sizeof(float));
    size_t bytes = n * d * sizeof(float);
    int threads = o->threads ? o->threads : omp_get_max_threads();
    float *m = aligned_alloc(1 << 21, (bytes + (1 << 21) - 1) / (1 << 21) * (1 << 21));
    if (getenv("BENCH_HUGEPAGES"))
        madvise(m, (bytes + (1 << 21) - 1) / (1 << 21) * (1 << 21), MADV_HUGEPAGE);
    int32_t *spk = malloc(n * sizeof *spk);
    uint32_t *order = malloc(n * sizeof *order);
    size_t *seg = malloc((S + 2) * sizeof *seg);
    es_row_result *res = malloc(n * sizeof *res);
    double *mean = malloc(S * d * sizeof *mean);
    uint32_t *nf = malloc(S * sizeof *nf);
    if (!m || !spk || !order || !seg || !res || !mean || !nf) {
        fprintf(stderr, "bench_validate: out of memory\n");
        return 1;
    }
    fill(m, spk, n, d, S, grouped);
    group(spk, n, S, order, seg);
    es_vjob job = {m, ES_DTYPE_F32, n, d, order, seg, spk, S, threads, res, mean, nf, NULL};
    es_context *ctx = es_context_new();
    es_context_set(ctx, "cpu_isa", getenv("EQUISHARD_CPU_ISA")); /* as the CLI does */
    double t_read = 1e9, t_gather = 1e9, t_kernel = 1e9, t_total = 1e9, c_kernel = 1e9;
    es_validate_settings s;
    es_validate_defaults(&s);
    s.device = ES_DEVICE_CPU;
    s.threads = threads;
    s.dim = d;
    es_emb_matrix utt = {m, ES_DTYPE_F32, n, d, NULL};
    es_emb_speakers sp = {spk, S};
    size_t findings = 0;
    for (int r = 0; r < o->repeat; r++) {
        double t = read_loop(m, bytes / 4, threads);
        t_read = t < t_read ? t : t_read;
        t = gather_loop(m, order, n, d, threads);
        t_gather = t < t_gather ? t : t_gather;
        double c = cpu();
        t = now();
        if (es_vjob_run_cpu(ctx, &job) != ES_OK)
            return fprintf(stderr, "%s\n", es_errmsg(ctx)), 1;
        t = now() - t;
        c = cpu() - c;
        t_kernel = t < t_kernel ? t : t_kernel;
        c_kernel = c < c_kernel ? c : c_kernel;
        es_validate_result *vr = NULL;
        t = now();
        if (es_validate_matrices(ctx, &s, &utt, NULL, &sp, 0, &vr) != ES_OK)
            return fprintf(stderr, "%s\n", es_errmsg(ctx)), 1;
        t = now() - t;
        t_total = t < t_total ? t : t_total;
        findings = es_validate_count(vr, -1);
        es_validate_result_free(vr);
    }
    double gb = bytes / 1e9, bw = gb / t_read;
    const char *order_name = grouped ? "grouped" : "shuffled";
    printf("cpu: %zu x %zu float32 (%.2f GiB), %zu speakers (%s), %d threads, best of %d, %s backend "
           "(EQUISHARD_CPU_ISA)\n", n, d, bytes / 1073741824.0, S, order_name, threads, o->repeat,
           es_cpu_isa_name(es_cpu_isa_default(ctx)));
    printf("cpu: read loop         %8.1f ms  %6.1f GB/s  (bandwidth reference)\n", t_read * 1e3, bw);
    printf("cpu: gather by speaker %8.1f ms  %6.1f GB/s  %5.1f %% of bandwidth (the same read, rows "
           "in speaker order)\n", t_gather * 1e3, gb / t_gather, 100 * gb / t_gather / bw);
    printf("cpu: checks (backend)  %8.1f ms  %6.1f GB/s  %5.1f %% of bandwidth counting its 2 passes"
           " (%.1f %% for one)\n", t_kernel * 1e3, 2 * gb / t_kernel, 200 * gb / t_kernel / bw,
           100 * gb / t_kernel / bw);
    printf("cpu: checks, CPU time  %8.1f ms  (all threads; steadier than the wall time on a shared "
           "machine)\n", c_kernel * 1e3);
    printf("cpu: es_validate_matrices  %8.1f ms  %6.1f GB/s  %5.1f %% of bandwidth, one pass counted "
           "(grouping, findings, duplicates; %zu findings)\n", t_total * 1e3, gb / t_total,
           100 * gb / t_total / bw, findings);
    printf("RESULT cpu isa=%s order=%s bytes=%zu read_gbps=%.2f gather_gbps=%.2f checks_ms=%.1f "
           "ratio_2pass=%.3f total_ms=%.1f checks_cpu_ms=%.1f\n", es_cpu_isa_name(es_cpu_isa_default(ctx)),
           order_name, bytes, bw, gb / t_gather, t_kernel * 1e3, 2 * gb / t_kernel / bw, t_total * 1e3,
           c_kernel * 1e3);
    es_context_free(ctx);
    free(m), free(spk), free(order), free(seg), free(res), free(mean), free(nf);
    return 0;
}

static int bench_gpu(const opts *o)
{
    es_context *ctx = es_context_new();
    if (es_cuda_probe(ctx) != ES_OK) {
        printf("gpu: skipped: %s\n", es_errmsg(ctx));
        es_context_free(ctx);
        return 0;
    }
    size_t d = o->dim, S = o->speakers;
    size_t n = (size_t)(o->gpu_gib * (1u << 30)) / (d * sizeof(float));
    size_t bytes = n * d * sizeof(float);
    float *m = malloc(bytes);
    int32_t *spk = malloc(n * sizeof *spk);
    uint32_t *order = malloc(n * sizeof *order);
    size_t *seg = malloc((S + 2) * sizeof *seg);
    es_row_result *res = malloc(n * sizeof *res);
    double *mean = malloc(S * d * sizeof *mean);
    uint32_t *nf = malloc(S * sizeof *nf);
    void *dev = NULL;
    if (!m || !spk || !order || !seg || !res || !mean || !nf) {
        fprintf(stderr, "bench_validate: out of memory\n");
        return 1;
    }
    fill(m, spk, n, d, S, o->orders == 1);
    group(spk, n, S, order, seg);
    if (es_cuda_alloc(ctx, &dev, m, bytes) != ES_OK)
        return fprintf(stderr, "%s\n", es_errmsg(ctx)), 1;
    double read_ms, ms[ES_VJOB_TIMES], best[ES_VJOB_TIMES];
    if (es_cuda_read_bandwidth(ctx, dev, bytes, o->repeat, &read_ms) != ES_OK)
        return fprintf(stderr, "%s\n", es_errmsg(ctx)), 1;
    es_vjob job = {dev, ES_DTYPE_F32, n, d, order, seg, spk, S, 0, res, mean, nf, ms};
    for (int r = 0; r < o->repeat; r++) {
        if (es_vjob_run_cuda(ctx, &job, 1) != ES_OK)
            return fprintf(stderr, "%s\n", es_errmsg(ctx)), 1;
        for (int k = 0; k < ES_VJOB_TIMES; k++)
            best[k] = r == 0 || ms[k] < best[k] ? ms[k] : best[k];
    }
    double gb = bytes / 1e9, bw = gb / (read_ms / 1e3), kernels = best[0] + best[1] + best[2];
    printf("gpu: %zu x %zu float32 (%.2f GiB) in device memory, %zu speakers, best of %d\n", n, d,
           bytes / 1073741824.0, S, o->repeat);
    printf("gpu: read kernel   %8.3f ms  %7.1f GB/s  (bandwidth reference)\n", read_ms, bw);
    const char *names[] = {"stats kernel", "chunk sums", "cosines"};
    for (int k = 0; k < 3; k++)
        printf("gpu: %-13s %8.3f ms  %7.1f GB/s  %5.1f %% of bandwidth\n", names[k], best[k],
               gb / (best[k] / 1e3), 100 * gb / (best[k] / 1e3) / bw);
    printf("gpu: 3 passes      %8.3f ms  %7.1f GB/s  %5.1f %% of bandwidth counting each pass\n", kernels,
           3 * gb / (kernels / 1e3), 100 * 3 * gb / (kernels / 1e3) / bw);
    printf("gpu: whole job     %8.3f ms  (events; includes result copies and the host combine)\n", best[3]);
    printf("RESULT gpu bytes=%zu read_gbps=%.1f passes_gbps=%.1f ratio=%.3f stats=%.3f chunks=%.3f cosines=%.3f\n",
           bytes, bw, 3 * gb / (kernels / 1e3), 3 * gb / (kernels / 1e3) / bw, gb / (best[0] / 1e3) / bw,
           gb / (best[1] / 1e3) / bw, gb / (best[2] / 1e3) / bw);
    es_cuda_free(dev);
    es_context_free(ctx);
    free(m), free(spk), free(order), free(seg), free(res), free(mean), free(nf);
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {1.0, 4.0, 192, 5000, 5, 0, 3};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--cpu-gib"))
            o.cpu_gib = atof(v), i++;
        else if (!strcmp(a, "--gpu-gib"))
            o.gpu_gib = atof(v), i++;
        else if (!strcmp(a, "--dim"))
            o.dim = strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--speakers"))
            o.speakers = strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--repeat"))
            o.repeat = atoi(v), i++;
        else if (!strcmp(a, "--threads"))
            o.threads = atoi(v), i++;
        else if (!strcmp(a, "--grouped"))
            o.orders = 1;
        else if (!strcmp(a, "--order") && strcmp(v, "grouped") == 0)
            o.orders = 1, i++;
        else if (!strcmp(a, "--order") && strcmp(v, "shuffled") == 0)
            o.orders = 2, i++;
        else if (!strcmp(a, "--order") && strcmp(v, "both") == 0)
            o.orders = 3, i++;
        else {
            fprintf(stderr, "usage: bench_validate [--cpu-gib G] [--gpu-gib G] [--dim D] "
                            "[--speakers S] [--repeat R] [--threads T] "
                            "[--order grouped|shuffled|both]\n");
            return 2;
        }
    }
    if (o.dim == 0 || o.speakers == 0 || o.repeat < 1)
        return fprintf(stderr, "bench_validate: bad arguments\n"), 2;
    int rc = 0;
    for (int grouped = 1; grouped >= 0 && rc == 0 && o.cpu_gib > 0; grouped--)
        if (o.orders & (grouped ? 1 : 2))
            rc = bench_cpu(&o, grouped);
    if (rc == 0 && o.gpu_gib > 0)
        rc = bench_gpu(&o);
    return rc;
}
