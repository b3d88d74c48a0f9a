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

struct es_context {
    char msg[1024];
};

#if defined(__GNUC__)
#define ES_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ES_PRINTF(a, b)
#endif

/* Sets ctx's message (ctx may be NULL) and returns status. */
int es_fail(es_context *ctx, int status, const char *fmt, ...) ES_PRINTF(3, 4);
int es_vfail(es_context *ctx, int status, const char *fmt, va_list ap);

/* Clears the message; public calls start with it so old errors do not linger. */
void es_clear_error(es_context *ctx);

#endif
