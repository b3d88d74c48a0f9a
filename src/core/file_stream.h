/* An es_byte_stream over an open file descriptor: reads with read(2), skips with
 * lseek(2) so chunk bodies before a WAV `data` chunk cost nothing. */
#ifndef ES_FILE_STREAM_H
#define ES_FILE_STREAM_H

#include "core/byte_stream.h"

typedef struct es_file_stream {
    int fd;
    int err; /* errno of the last failure */
} es_file_stream;

/* Opens path read-only and sets up s (size from fstat). Returns 0 or an errno. */
int es_file_stream_open(es_byte_stream *s, es_file_stream *f, const char *path);
void es_file_stream_close(es_file_stream *f);

#endif
