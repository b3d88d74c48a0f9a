/* The row reader behind es_row_reader_* (equishard.h): the public calls in
 * row_reader.c, each format's fetch behind its table (formats/format.h).
 *
 * A fetch works on unique positions in ascending order (row_reader.c sorts and
 * de-duplicates the caller's), so each format makes one forward pass; the
 * caller's order and duplicates are restored from `order` afterwards.
 * Everything a fetch returns lives in `arena`, released at the next fetch. */
#ifndef ES_ROW_READER_H
#define ES_ROW_READER_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "core/strbuf.h"
#include "equishard/equishard.h"
#include "formats/format.h"

struct es_row_reader {
    char *path;
    const es_format_ops *format; /* the file's, by content */
    void *state;                 /* its rows_open's */
    es_arena arena;   /* the last fetch's rows, fields and values */
    es_row *rows;     /* the caller's order: rows[i] for positions[i] */
    size_t rows_cap;
};

#endif
