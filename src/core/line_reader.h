/* Line-by-line reading of text inputs (lists, Kaldi files) with line numbers for
 * error messages. Lines come without their "\n" or "\r\n"; a NUL byte inside a
 * line is reported, since such a file is not text. */
#ifndef ES_LINE_READER_H
#define ES_LINE_READER_H

#include <stdio.h>
#include <sys/types.h>

typedef struct es_line_reader {
    FILE *fp;
    char *line;
    size_t cap;
    size_t len;
    unsigned long lineno; /* 1-based number of the line last read */
    int has_nul;          /* the line last read contains a NUL byte */
} es_line_reader;

/* Returns 0 or an errno. */
int es_line_reader_open(es_line_reader *lr, const char *path);
/* Returns 1 with a line, 0 at end of file, -1 on a read error (errno set). */
int es_line_reader_next(es_line_reader *lr);
void es_line_reader_close(es_line_reader *lr);

#endif
