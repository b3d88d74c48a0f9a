#include "core/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ES_API const char *es_status_name(int status)
{
    switch (status) {
    case ES_OK: return "ES_OK";
    case ES_ERR_USAGE: return "ES_ERR_USAGE";
    case ES_ERR_IO: return "ES_ERR_IO";
    case ES_ERR_FORMAT: return "ES_ERR_FORMAT";
    case ES_ERR_UNSUPPORTED: return "ES_ERR_UNSUPPORTED";
    case ES_ERR_NOMEM: return "ES_ERR_NOMEM";
    case ES_ERR_INTERNAL: return "ES_ERR_INTERNAL";
    default: return "ES_ERR_UNKNOWN";
    }
}

ES_API es_context *es_context_new(void) { return calloc(1, sizeof(es_context)); }

ES_API void es_context_free(es_context *ctx) { free(ctx); }

void es_context_copy_settings(es_context *dst, const es_context *src)
{
    es_context keep = *dst;
    if (src)
        *dst = *src;
    else
        memset(dst, 0, sizeof *dst);
    memcpy(dst->msg, keep.msg, sizeof dst->msg);
}

es_context *es_context_new_like(const es_context *parent)
{
    es_context *c = es_context_new();
    if (c)
        es_context_copy_settings(c, parent);
    return c;
}

/* "0" turns an on/off setting off; NULL or anything else leaves it on (as the
 * CLI reads the environment). */
static int on_unless_zero(const char *value) { return !(value && strcmp(value, "0") == 0); }

ES_API int es_context_set(es_context *ctx, const char *name, const char *value)
{
    if (!ctx || !name)
        return ES_ERR_USAGE;
    if (strcmp(name, "huge_pages") == 0)
        ctx->no_huge_pages = !on_unless_zero(value);
    else if (strcmp(name, "pages_ahead") == 0)
        ctx->no_pages_ahead = !on_unless_zero(value);
    else if (strcmp(name, "direct_io") == 0)
        ctx->no_direct_io = !on_unless_zero(value);
    else if (strcmp(name, "cpu_isa") == 0) {
        if (value && strlen(value) >= sizeof ctx->cpu_isa)
            return ES_ERR_USAGE;
        snprintf(ctx->cpu_isa, sizeof ctx->cpu_isa, "%s", value ? value : "");
    } else
        return ES_ERR_USAGE;
    return ES_OK;
}

ES_API void es_context_set_test_hook(es_context *ctx, es_test_hook hook, void *user)
{
    if (ctx) {
        ctx->test_hook = hook;
        ctx->test_hook_user = user;
    }
}

ES_API const char *es_errmsg(const es_context *ctx) { return ctx ? ctx->msg : ""; }

void es_clear_error(es_context *ctx)
{
    if (ctx)
        ctx->msg[0] = '\0';
}

int es_vfail(es_context *ctx, int status, const char *fmt, va_list ap)
{
    if (ctx)
        vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    return status;
}

int es_fail(es_context *ctx, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    es_vfail(ctx, status, fmt, ap);
    va_end(ap);
    return status;
}
