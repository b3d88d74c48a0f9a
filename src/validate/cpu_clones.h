/* The CPU backends' hot functions are compiled for AVX-512, AVX2 and baseline
 * x86-64 and picked at load time; all give the same bits (no contraction, same
 * lanes). */
#ifndef ES_VALIDATE_CPU_CLONES_H
#define ES_VALIDATE_CPU_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(ES_NO_CLONES)
#define ES_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ES_CPU_CLONES
#endif

#endif
