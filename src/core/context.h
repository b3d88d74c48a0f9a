/* The context: carrier of the last error message (the library never prints;
 * its caller decides what a user sees). Internal code reports errors with
 * es_fail(), which formats one line "file: member: problem" and returns the
 * status, so error paths stay one line:
 *
 *     return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: truncated", file, name);
 */
#ifndef ES_CONTEXT_H
#define ES_CONTEXT_H

/* both tiers: the library implements the experimental one too */
#include "equishard/equishard_experimental.h"

#include <stdarg.h>

/* Settings (es_context_set) are stored so that a zeroed context
 * (`es_context ctx = {0}`) has the defaults: every "no_" switch off, the
 * best CPU backend. */
struct es_context {
    char msg[1024];
    unsigned char no_pages_ahead; /* no helper threads preparing pages (core/bigarray.h) */
    unsigned char no_direct_io;   /* every write buffered (core/direct_write.h) */
    unsigned char no_huge_pages;  /* no MADV_HUGEPAGE advice (core/prefault.h) */
    char cpu_isa[16];             /* validate's CPU backend cap by name; "" = the best */
    es_test_hook test_hook;       /* NULL, or the tests' (es_test_point) */
    void *test_hook_user;
};

#if defined(__GNUC__)
#define ES_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ES_PRINTF(a, b)
#endif

/* Sets ctx's message (ctx may be NULL) and returns status. */
int es_fail(es_context *ctx, int status, const char *fmt, ...) ES_PRINTF(3, 4);
int es_vfail(es_context *ctx, int status, const char *fmt, va_list ap);

/* A new context with parent's settings (not its message), for the library's
 * own threads: what the caller set holds in them too. NULL parent: defaults. */
es_context *es_context_new_like(const es_context *parent);
/* dst takes src's settings (src NULL: the defaults); its message stays. */
void es_context_copy_settings(es_context *dst, const es_context *src);

/* Whether ctx (NULL: the defaults) lets a helper thread prepare pages ahead
 * of a writer, lets big files be written around the page cache, and lets
 * big arrays ask for transparent huge pages. */
static inline int es_ctx_pages_ahead(const es_context *ctx) { return !ctx || !ctx->no_pages_ahead; }
static inline int es_ctx_direct_io(const es_context *ctx) { return !ctx || !ctx->no_direct_io; }
static inline int es_ctx_huge_pages(const es_context *ctx) { return !ctx || !ctx->no_huge_pages; }

/* A named point in a run where tests may hold it (es_context_set_test_hook);
 * nothing at all unless the test hook is set. */
static inline void es_test_point(const es_context *ctx, const char *point)
{
    if (ctx && ctx->test_hook)
        ctx->test_hook(ctx->test_hook_user, point);
}

/* Clears the message; public calls start with it so old errors do not linger. */
void es_clear_error(es_context *ctx);

#endif
