/* The out-of-range message every format's row fetch gives (format.h): apart
 * from rows/row_reader.c, which calls the formats, so that no format calls
 * back into it. */
#include "formats/format.h"

int rows_out_of_range(es_context *ctx, const char *path, uint64_t pos, uint64_t count,
                      const char *what)
{
    return es_fail(ctx, ES_ERR_USAGE, "%s: position %llu: out of range, the file has %llu %s",
                   path, (unsigned long long)pos, (unsigned long long)count, what);
}
