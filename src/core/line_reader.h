/* Line-by-line reading of text inputs (lists, Kaldi files, step logs) with line
 * numbers for error messages. Lines come without their "\n" or "\r\n"; a NUL byte
 * inside a line is reported, since such a file is not text.
 *
 * A line is at most `max_len` bytes (ES_LINE_MAX unless the caller raises it):
 * no list line comes near it (a Kaldi `text` line or a raw-list JSON line is a
 * few KB), and a longer one is a file that is not a list, refused with its line
 * number instead of being read into all the memory there is. Running out of
 * memory is an error of its own, never the end of the file. */
#ifndef ES_LINE_READER_H
#define ES_LINE_READER_H

#include "core/context.h"

#include <stddef.h>

/* The longest line read by default: 1 MiB. */
#define ES_LINE_MAX ((size_t)1 << 20)
/* es_line_reader.err for a line longer than max_len. */
#define ES_ELINE_TOO_LONG (-2)

typedef struct es_line_reader {
    int fd;
    char *buf;        /* read buffer */
    size_t pos, end;  /* its unread bytes */
    char *line;
    size_t cap;
    size_t len;
    size_t max_len;       /* longest line accepted (ES_LINE_MAX after open) */
    unsigned long lineno; /* 1-based number of the line last read */
    int has_nul;          /* the line last read contains a NUL byte */
    int err;              /* after next() returned -1: an errno, ENOMEM or ES_ELINE_TOO_LONG */
} es_line_reader;

/* Opens a regular file: returns 0, an errno, or ES_ENOTREG for a FIFO, a device
 * or any other non-regular file (refused without blocking or reading: a FIFO
 * would wait for a writer, /dev/zero never ends); es_file_stream_strerror words
 * it. */
int es_line_reader_open(es_line_reader *lr, const char *path);
/* Returns 1 with a line, 0 at end of file, -1 on an error (lr->err says which;
 * es_line_reader_fail words it). */
int es_line_reader_next(es_line_reader *lr);
/* Sets ctx's message for the error next() returned -1 for and returns its status:
 * ES_ERR_NOMEM ("PATH: line N: out of memory"), ES_ERR_FORMAT for a line longer
 * than max_len ("PATH: line N: longer than M bytes, the most a line may be"), else ES_ERR_IO
 * ("PATH: read error: ..."). */
int es_line_reader_fail(es_context *ctx, const es_line_reader *lr, const char *path);
void es_line_reader_close(es_line_reader *lr);

#endif
