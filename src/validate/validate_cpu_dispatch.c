/* es_vjob_run_cpu: the CPU backend's compilation (cpu_isa.h) for this CPU.
 *
 * The best instruction set the CPU supports, unless the context's cpu_isa
 * setting (es_context_set's "cpu_isa"; the CLI's EQUISHARD_CPU_ISA) names a lower one ("generic", "avx2", "avx512"): for comparing them on one
 * machine (tools/bench/bench_validate) and for ruling one out when in doubt.
 * All give the same bits. */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/context.h"
#include "validate/cpu_isa.h"

typedef int (*run_fn)(es_context *ctx, const es_vjob *job);

static const struct {
    const char *name;
    run_fn run; /* NULL: not compiled in this build */
} isas[ES_CPU_ISA_COUNT] = {
    [ES_CPU_GENERIC] = {"generic", es_vjob_run_cpu_generic},
#if HAVE_CPU_X86_ISAS
    [ES_CPU_AVX2] = {"avx2", es_vjob_run_cpu_avx2},
    [ES_CPU_AVX512] = {"avx512", es_vjob_run_cpu_avx512},
#else
    [ES_CPU_AVX2] = {"avx2", NULL},
    [ES_CPU_AVX512] = {"avx512", NULL},
#endif
};

const char *es_cpu_isa_name(es_cpu_isa isa)
{
    return isa >= 0 && isa < ES_CPU_ISA_COUNT ? isas[isa].name : "?";
}

int es_cpu_isa_usable(es_cpu_isa isa)
{
    if (isa < 0 || isa >= ES_CPU_ISA_COUNT || !isas[isa].run)
        return 0;
#if HAVE_CPU_X86_ISAS
    __builtin_cpu_init();
    if (isa == ES_CPU_AVX2)
        return __builtin_cpu_supports("avx2");
    if (isa == ES_CPU_AVX512)
        return __builtin_cpu_supports("avx512f");
#endif
    return 1;
}

es_cpu_isa es_cpu_isa_default(const es_context *ctx)
{
    const char *want = ctx && ctx->cpu_isa[0] ? ctx->cpu_isa : NULL;
    es_cpu_isa cap = ES_CPU_ISA_COUNT - 1;
    for (int i = 0; want && i < ES_CPU_ISA_COUNT; i++)
        if (!strcmp(want, isas[i].name))
            cap = (es_cpu_isa)i;
    for (int i = cap; i > ES_CPU_GENERIC; i--)
        if (es_cpu_isa_usable((es_cpu_isa)i))
            return (es_cpu_isa)i;
    return ES_CPU_GENERIC;
}

int es_vjob_run_cpu_isa(es_context *ctx, const es_vjob *job, es_cpu_isa isa)
{
    if (!es_cpu_isa_usable(isa))
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "validate: no %s CPU backend on this machine",
                       es_cpu_isa_name(isa));
    return isas[isa].run(ctx, job);
}

int es_vjob_run_cpu(es_context *ctx, const es_vjob *job)
{
    return isas[es_cpu_isa_default(ctx)].run(ctx, job);
}
