/* The CUDA backend's entry points in a build without CUDA (no nvcc, or
 * -Dcuda=disabled): every one reports that CUDA is not available. */
#include "validate/vjob.h"

static int unavailable(es_context *ctx)
{
    return es_fail(ctx, ES_ERR_UNSUPPORTED, "no CUDA device: this equishard was built without "
                                            "CUDA (no nvcc, or -Dcuda=disabled)");
}

int es_cuda_probe(es_context *ctx) { return unavailable(ctx); }

int es_vjob_run_cuda(es_context *ctx, const es_vjob *job, int rows_on_device)
{
    (void)job, (void)rows_on_device; /* stubs keep the CUDA backend's signatures */
    return unavailable(ctx);
}

int es_cuda_gather_rows(es_context *ctx, const void *rows, es_dtype dtype, size_t dim,
                        const uint32_t *idx, size_t k, void *out)
{
    (void)rows, (void)dtype, (void)dim, (void)idx, (void)k, (void)out;
    return unavailable(ctx);
}

int es_cuda_read_bandwidth(es_context *ctx, const void *dev, size_t bytes, int repeat, double *ms)
{
    (void)dev, (void)bytes, (void)repeat, (void)ms;
    return unavailable(ctx);
}

int es_cuda_alloc(es_context *ctx, void **dev, const void *host, size_t bytes)
{
    (void)host, (void)bytes;
    *dev = NULL;
    return unavailable(ctx);
}

void es_cuda_free(void *dev) { (void)dev; }
