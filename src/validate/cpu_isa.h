/* The CPU backend is compiled once per instruction set and picked at run time.
 *
 * validate_cpu.c and validate_cpu_grouped.c are compiled several times
 * (meson.build): "generic" with the build's own flags (x86-64 baseline, or any
 * other CPU), and on x86-64 also "avx2" (-mavx2) and "avx512" (-mavx512f).
 * Each compilation gets ES_CPU_ISA set to its name and suffixes its entry
 * points with it (ES_CPU_FN), and emb_kernel.h sizes its vectors to the
 * compilation's registers. validate_cpu_dispatch.c calls the best one the CPU
 * runs. Why not target_clones: one body cloned per target keeps one source
 * vector width for all clones, and a 64-byte vector on AVX2 or SSE2 is
 * lowered through memory (see emb_kernel.h); a preprocessor pass per target
 * can choose the width. All compilations give the same bits (no contraction,
 * the same lanes); the tests run every one the machine can and compare. */
#ifndef ES_VALIDATE_CPU_ISA_H
#define ES_VALIDATE_CPU_ISA_H

#include "validate/vjob.h"

#define ES_CPU_CAT2(a, b) a##_##b
#define ES_CPU_CAT(a, b) ES_CPU_CAT2(a, b)
#define ES_CPU_FN(name) ES_CPU_CAT(name, ES_CPU_ISA) /* name_avx2 in the avx2 compilation */

/* Each compilation's entry points: the streaming backend (validate_cpu.c),
 * which hands rows grouped by speaker to the grouped one of the same
 * compilation (validate_cpu_grouped.c). */
#define ES_CPU_DECLARE(isa)                                                 \
    int es_vjob_run_cpu_##isa(es_context *ctx, const es_vjob *job);         \
    int es_vjob_run_cpu_grouped_##isa(es_context *ctx, const es_vjob *job);
ES_CPU_DECLARE(generic)
ES_CPU_DECLARE(avx2)
ES_CPU_DECLARE(avx512)

#endif
