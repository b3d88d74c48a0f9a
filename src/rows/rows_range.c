/* The out-of-range message both formats give (row_reader.h): apart from
 * row_reader.c, which calls the formats, so that no format calls back into it. */
#include "rows/row_reader.h"

int rows_out_of_range(es_context *ctx, const char *path, uint64_t pos, uint64_t count,
                      const char *what)
{
    return es_fail(ctx, ES_ERR_USAGE, "%s: position %llu: out of range, the file has %llu %s",
                   path, (unsigned long long)pos, (unsigned long long)count, what);
}
