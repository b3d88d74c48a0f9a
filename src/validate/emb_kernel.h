/* The validator's per-row arithmetic: one source for the CPU path (validate_cpu.c,
 * OpenMP) and the CUDA path (validate_cuda.cu), so the CPU tests cover the logic
 * the GPU runs, and both give the same findings.
 *
 * Everything here is a `static inline` function marked ES_KFN, which is
 * `__host__ __device__` under nvcc and nothing otherwise; the header is valid C11
 * and CUDA C++ and needs no library.
 *
 * How a row of d floats is reduced. Element i belongs to lane i % ES_K_LANES at
 * position i / ES_K_LANES inside that lane; es_k_elem() adds one element to its
 * lane's state. The CPU walks a row with ES_K_LANES lanes side by side (one
 * SIMD vector: the *_simd functions at the end, equal bit for bit to the scalar
 * reference functions, which the tests check); a CUDA warp gives element i to
 * thread i % 32, whose lane is (i % 32) % ES_K_LANES, and merges threads with
 * shuffles. The integer parts of the state (NaN/Inf counts, the row checksum)
 * are therefore bit-identical on both; the sums of squares are rounded in a
 * different order and agree to float precision.
 *
 * The row checksum (duplicate detection) is, per lane, the wrapping sums
 * a = Σ bits(x_i) and s = Σ pos_i · bits(x_i) over 32-bit words, folded into 64
 * bits. It is not a cryptographic hash: equal checksums are only candidates,
 * and the caller compares the rows' bytes before it reports a duplicate. */
#ifndef ES_EMB_KERNEL_H
#define ES_EMB_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define ES_KFN static inline __host__ __device__
#else
#define ES_KFN static inline
#endif

enum { ES_K_LANES = 16 };     /* lanes per row; 32 (a warp) is a multiple */
enum { ES_K_CHUNK = 64 };     /* rows per partial sum of a speaker's centroid */
#define ES_K_NO_COSINE 2.0    /* es_row_result.cosine when not computed */

/* What the kernels report per row (host memory, indexed by row). */
typedef struct es_row_result {
    double sumsq;     /* Σ x²; meaningful only when nan == inf == 0 */
    double cosine;    /* to the speaker's centroid, or ES_K_NO_COSINE */
    uint64_t hash;    /* row checksum (candidates for identical rows) */
    uint32_t nan, inf;/* elements that are NaN / ±Inf */
} es_row_result;

/* ---- element conversions -------------------------------------------------------- */

ES_KFN uint32_t es_k_f32_bits(float v)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(v);
#else
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
#endif
}

ES_KFN float es_k_bits_f32(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
#endif
}

/* IEEE binary16 → float, exactly (subnormals, ±Inf and NaN payloads kept). */
ES_KFN float es_k_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) /* Inf or NaN */
        return es_k_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp != 0)
        return es_k_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
    /* zero or subnormal: man × 2^-24, exact in float */
    float v = (float)man * (1.0f / 16777216.0f);
    return sign ? -v : v;
}

/* bfloat16 → float: the upper half of a float. */
ES_KFN float es_k_bf16_to_f32(uint16_t h) { return es_k_bits_f32((uint32_t)h << 16); }

/* ---- one element -------------------------------------------------------------------- */

/* Classification by bit pattern, so it holds under any floating-point flags. */
ES_KFN uint32_t es_k_is_nan(uint32_t bits) { return (bits & 0x7fffffffu) > 0x7f800000u; }
ES_KFN uint32_t es_k_is_inf(uint32_t bits) { return (bits & 0x7fffffffu) == 0x7f800000u; }

/* Adds element v (at position pos of its lane) to a lane's state. */
ES_KFN void es_k_elem(float *ss, uint32_t *nan, uint32_t *inf, uint32_t *ha, uint32_t *hs,
                      float v, uint32_t pos)
{
    uint32_t b = es_k_f32_bits(v);
    *nan += es_k_is_nan(b);
    *inf += es_k_is_inf(b);
    *ss += v * v;
    *ha += b;
    *hs += b * pos;
}

/* ---- merging lanes ------------------------------------------------------------------ */

/* Folds the per-lane checksums (ha[l], hs[l], l < ES_K_LANES) of a row of d
 * elements into 64 bits. Lanes are weighted by distinct odd constants so that
 * moving a value to another lane changes the result. */
ES_KFN uint64_t es_k_hash_finish(const uint32_t *ha, const uint32_t *hs, uint32_t d)
{
    uint32_t a = 0, s = 0;
    for (int l = 0; l < ES_K_LANES; l++) {
        a += ha[l] * (0x9e3779b1u + 2u * (uint32_t)l * 0x632be5abu);
        s += hs[l] * (0x85ebca77u + 2u * (uint32_t)l * 0x27d4eb2fu);
    }
    uint64_t h = ((uint64_t)a << 32 | s) ^ ((uint64_t)d * 0x9e3779b97f4a7c15ull);
    h ^= h >> 33; /* murmur3 fmix64 */
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* Σ of ES_K_LANES float partial sums, in double, as a tree (four dependent
 * additions instead of sixteen). */
ES_KFN double es_k_sum_lanes(const float *v)
{
    double t[ES_K_LANES];
    for (int l = 0; l < ES_K_LANES; l++)
        t[l] = v[l];
    for (int w = ES_K_LANES / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++)
            t[l] += t[l + w];
    return t[0];
}

/* A row's Σ x² as stored: one NaN for every row that holds one. Which NaN an
 * addition of two NaNs returns (sign, payload) depends on the operand order,
 * which the compiler may swap in one inlined copy and not in another; the same
 * row must give the same bytes in every backend and compilation. */
ES_KFN double es_k_sumsq_out(double sum, uint32_t nan) { return nan ? (double)NAN : sum; }

/* ---- whole rows: the scalar reference ------------------------------------------- */

/* NaN/Inf counts, sum of squares and checksum of a row of d floats: every
 * element through es_k_elem(), lane by lane. */
ES_KFN void es_k_row_stats(const float *x, uint32_t d, es_row_result *out)
{
    float ss[ES_K_LANES];
    uint32_t ha[ES_K_LANES], hs[ES_K_LANES], nan = 0, inf = 0;
    for (int l = 0; l < ES_K_LANES; l++) {
        ss[l] = 0.0f;
        ha[l] = hs[l] = 0;
    }
    for (uint32_t i = 0; i < d; i++) {
        uint32_t l = i % ES_K_LANES;
        es_k_elem(&ss[l], &nan, &inf, &ha[l], &hs[l], x[i], i / ES_K_LANES);
    }
    out->sumsq = es_k_sumsq_out(es_k_sum_lanes(ss), nan);
    out->nan = nan;
    out->inf = inf;
    out->hash = es_k_hash_finish(ha, hs, d);
    out->cosine = ES_K_NO_COSINE;
}

/* Σ x·c over d elements, in ES_K_LANES float lanes merged in double. */
ES_KFN double es_k_dot(const float *x, const float *c, uint32_t d)
{
    float acc[ES_K_LANES];
    for (int l = 0; l < ES_K_LANES; l++)
        acc[l] = 0.0f;
    for (uint32_t i = 0; i < d; i++)
        acc[i % ES_K_LANES] += x[i] * c[i];
    return es_k_sum_lanes(acc);
}

/* A speaker's centroid sums, one chunk of (at most ES_K_CHUNK) rows at a time:
 * for every column j in [j0, j1), part = Σ x[row][j] over the chunk's rows in
 * the given order, in float starting from 0, then total[j] += part in double.
 * Chunks are added in a fixed order too, so the sums are the same for any
 * thread count, and the CUDA path (one thread per column) produces the same
 * bits. A float partial over at most 64 rows costs at most ~64 ulp of one
 * row's magnitude (about 4e-6 relative), far below every threshold here, and
 * keeps the CPU loop at memory speed (double partials cost twice the time). */
ES_KFN void es_k_chunk_sum(double *total, const float *x, size_t d, const uint32_t *rows,
                           uint32_t n_rows, uint32_t j0, uint32_t j1)
{
    for (uint32_t j = j0; j < j1; j++) {
        float part = 0.0f;
        for (uint32_t r = 0; r < n_rows; r++)
            part += x[(size_t)rows[r] * d + j];
        total[j] += (double)part;
    }
}

/* The same sums row by row, for a backend that streams the matrix in row
 * order instead of gathering a speaker's chunk (the CPU): part[j] += x[j] for
 * each row of the chunk in order, then es_k_part_flush() at the chunk's end.
 * Every column sees the same additions in the same order as in
 * es_k_chunk_sum(), so the bits are the same. */
ES_KFN void es_k_part_add(float *part, const float *x, uint32_t d)
{
    for (uint32_t j = 0; j < d; j++)
        part[j] += x[j];
}

/* Whether all d elements are finite, by bit pattern: es_k_row_finite() of the
 * row's statistics, without computing them. */
ES_KFN int es_k_all_finite(const float *x, uint32_t d)
{
    uint32_t bad = 0;
    for (uint32_t i = 0; i < d; i++)
        bad |= (es_k_f32_bits(x[i]) & 0x7f800000u) == 0x7f800000u;
    return !bad;
}

/* total[j] += part[j] in double, and the partial back to 0 for the next chunk. */
ES_KFN void es_k_part_flush(double *total, float *part, uint32_t d)
{
    for (uint32_t j = 0; j < d; j++) {
        total[j] += (double)part[j];
        part[j] = 0.0f;
    }
}

/* The centroid used for cosines: the double mean rounded to float. */
ES_KFN float es_k_mean(double sum, uint32_t count) { return (float)(sum / (double)count); }

/* Cosine from a dot product and the two sums of squares; ES_K_NO_COSINE when
 * either vector is zero. */
ES_KFN double es_k_cosine(double dot, double sumsq_x, double sumsq_c)
{
    if (!(sumsq_x > 0.0) || !(sumsq_c > 0.0))
        return ES_K_NO_COSINE;
    return dot / (sqrt(sumsq_x) * sqrt(sumsq_c));
}

/* A row counts toward its speaker's centroid when every element is finite. */
ES_KFN int es_k_row_finite(const es_row_result *r) { return r->nan == 0 && r->inf == 0; }

/* ---- whole rows with SIMD (host only) -------------------------------------------------
 *
 * The same results as the reference functions above, bit for bit (the tests
 * check it): the same per-lane operations in the same order, written with GCC/
 * Clang vector extensions because the auto-vectorizer does not manage these
 * lane patterns. A block of ES_K_LANES lanes is held in ES_K_NV vectors of
 * the compilation's register width (ES_K_VLANES floats: AVX-512 one vector,
 * AVX2 two, SSE2 or NEON four); the CPU backend is compiled once per
 * instruction set (cpu_isa.h). Why not one 64-byte vector type for all: GCC
 * keeps a vector wider than the target's registers in memory and lowers its
 * comparisons lane by lane through general registers (GCC 12 on AVX2: the
 * accumulators stored and reloaded on every block, ~4× the instructions, so
 * the avx2 and baseline target_clones of the old code ran at a fraction of
 * memory speed). The loops also use no comparison at all, only additions,
 * multiplications and bit operations.
 *
 * Three rewrites keep the loop short: the checksum's position sums come from
 * Fletcher's recurrence (hc += ha after each block gives hc = Σ (nb - pos)·bits,
 * so Σ pos·bits = nb·ha - hc, additions instead of a multiply per element);
 * NaN and Inf need no test per element, because either makes its lane's Σ x²
 * NaN or Inf for good (squares are never negative, nothing cancels them), so
 * a row whose lane sums are all finite has none and only the others are
 * counted element by element (that includes finite rows whose Σ x² overflows,
 * where the count finds none); and NaN and Inf are counted together in that
 * slow path. Compilers without vector extensions (and nvcc, which runs the
 * per-element functions instead) use the reference. */
#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__))
#define ES_K_SIMD 1
/* Floats per vector: the widest registers the compilation targets. */
#if defined(__AVX512F__)
#define ES_K_VLANES 16
#elif defined(__AVX2__)
#define ES_K_VLANES 8
#else
#define ES_K_VLANES 4
#endif
enum { ES_K_NV = ES_K_LANES / ES_K_VLANES }; /* vectors per block of ES_K_LANES */
typedef float es_kvf __attribute__((vector_size(4 * ES_K_VLANES)));
typedef uint32_t es_kvu __attribute__((vector_size(4 * ES_K_VLANES)));
typedef char es_k_whole_vectors[ES_K_LANES % ES_K_VLANES == 0 ? 1 : -1];
#define ES_K_SIMD_FN static inline __attribute__((always_inline))

/* Lane l of a block is element l % ES_K_VLANES of vector l / ES_K_VLANES. */
ES_K_SIMD_FN void es_k_load_block(es_kvf *v, const float *x)
{
    for (int k = 0; k < ES_K_NV; k++)
        memcpy(&v[k], x + k * ES_K_VLANES, sizeof v[k]);
}

/* NaN and Inf counts of x[0..n): the slow path, for rows that may hold any. */
ES_K_SIMD_FN void es_k_count_nonfinite(const float *x, uint32_t n, uint32_t *nan, uint32_t *inf)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t bits = es_k_f32_bits(x[i]);
        *nan += es_k_is_nan(bits);
        *inf += es_k_is_inf(bits);
    }
}

/* Whether every lane of the block is finite. (e + 2^23) reaches bit 31 only
 * when the exponent field e is all ones: no comparison (see above). */
ES_K_SIMD_FN int es_k_lanes_finite(const es_kvf *v)
{
    es_kvu any = {0};
    for (int k = 0; k < ES_K_NV; k++)
        any |= ((es_kvu)v[k] & 0x7f800000u) + 0x00800000u;
    uint32_t a = 0;
    for (int l = 0; l < ES_K_VLANES; l++)
        a |= any[l];
    return !(a >> 31);
}

/* The block's lanes into an array, lane order. */
ES_K_SIMD_FN void es_k_store_block(float *out, const es_kvf *v)
{
    for (int k = 0; k < ES_K_NV; k++)
        memcpy(out + k * ES_K_VLANES, &v[k], sizeof v[k]);
}

ES_K_SIMD_FN void es_k_store_block_u(uint32_t *out, const es_kvu *v)
{
    for (int k = 0; k < ES_K_NV; k++)
        memcpy(out + k * ES_K_VLANES, &v[k], sizeof v[k]);
}

/* es_k_sum_lanes of ES_K_LANES lanes, its tree written out level by level
 * (constant bounds, so the compiler unrolls it into a few vector additions;
 * the reference's halving loop stays a loop through memory). */
typedef char es_k_lanes_are_16[ES_K_LANES == 16 ? 1 : -1];
ES_K_SIMD_FN double es_k_sum_lanes16(const float *f)
{
    double t[8];
    for (int l = 0; l < 8; l++)
        t[l] = (double)f[l] + (double)f[l + 8];
    for (int l = 0; l < 4; l++)
        t[l] += t[l + 4];
    for (int l = 0; l < 2; l++)
        t[l] += t[l + 2];
    return t[0] + t[1];
}

ES_K_SIMD_FN void es_k_row_stats_simd(const float *x, uint32_t d, es_row_result *out)
{
    es_kvf ss[ES_K_NV];
    es_kvu ha[ES_K_NV], hc[ES_K_NV];
    for (int k = 0; k < ES_K_NV; k++) {
        ss[k] = (es_kvf){0};
        ha[k] = hc[k] = (es_kvu){0};
    }
    uint32_t nb = d / ES_K_LANES;
    for (uint32_t b = 0; b < nb; b++) {
        es_kvf v[ES_K_NV];
        es_k_load_block(v, x + (size_t)b * ES_K_LANES);
        for (int k = 0; k < ES_K_NV; k++) {
            ss[k] += v[k] * v[k];
            ha[k] += (es_kvu)v[k];
            hc[k] += ha[k];
        }
    }
    uint32_t nan = 0, inf = 0;
    if (!es_k_lanes_finite(ss))
        es_k_count_nonfinite(x, nb * ES_K_LANES, &nan, &inf);
    float ssl[ES_K_LANES];
    uint32_t hal[ES_K_LANES], hsl[ES_K_LANES];
    for (int k = 0; k < ES_K_NV; k++)
        hc[k] = ha[k] * nb - hc[k]; /* Σ pos·bits */
    es_k_store_block(ssl, ss);
    es_k_store_block_u(hal, ha);
    es_k_store_block_u(hsl, hc);
    for (uint32_t i = nb * ES_K_LANES; i < d; i++) {
        uint32_t l = i % ES_K_LANES;
        es_k_elem(&ssl[l], &nan, &inf, &hal[l], &hsl[l], x[i], nb);
    }
    out->sumsq = es_k_sumsq_out(es_k_sum_lanes16(ssl), nan);
    out->hash = es_k_hash_finish(hal, hsl, d);
    out->nan = nan;
    out->inf = inf;
    out->cosine = ES_K_NO_COSINE;
}

ES_K_SIMD_FN double es_k_dot_simd(const float *x, const float *c, uint32_t d)
{
    es_kvf acc[ES_K_NV];
    for (int k = 0; k < ES_K_NV; k++)
        acc[k] = (es_kvf){0};
    uint32_t nb = d / ES_K_LANES;
    for (uint32_t b = 0; b < nb; b++) {
        es_kvf xv[ES_K_NV], cv[ES_K_NV];
        es_k_load_block(xv, x + (size_t)b * ES_K_LANES);
        es_k_load_block(cv, c + (size_t)b * ES_K_LANES);
        for (int k = 0; k < ES_K_NV; k++)
            acc[k] += xv[k] * cv[k];
    }
    float lanes[ES_K_LANES];
    es_k_store_block(lanes, acc);
    for (uint32_t i = nb * ES_K_LANES; i < d; i++)
        lanes[i % ES_K_LANES] += x[i] * c[i];
    return es_k_sum_lanes16(lanes);
}

/* es_k_chunk_sum over all d columns: ES_K_VLANES columns at a time stay in a
 * register while the chunk's rows (just read, so in cache) stream past. */
ES_K_SIMD_FN void es_k_chunk_sum_simd(double *total, const float *x, size_t d,
                                       const uint32_t *rows, uint32_t n_rows)
{
    uint32_t j = 0;
    for (; j + ES_K_VLANES <= d; j += ES_K_VLANES) {
        es_kvf part = {0};
        for (uint32_t r = 0; r < n_rows; r++) {
            es_kvf v;
            memcpy(&v, x + (size_t)rows[r] * d + j, sizeof v);
            part += v;
        }
        for (int l = 0; l < ES_K_VLANES; l++)
            total[j + l] += (double)part[l];
    }
    es_k_chunk_sum(total, x, d, rows, n_rows, j, (uint32_t)d);
}
#else
#define es_k_row_stats_simd es_k_row_stats
#define es_k_dot_simd es_k_dot
#define es_k_chunk_sum_simd(total, x, d, rows, n) es_k_chunk_sum(total, x, d, rows, n, 0, (uint32_t)(d))
#endif

#endif
