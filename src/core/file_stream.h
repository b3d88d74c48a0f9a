/* An es_byte_stream over an open file descriptor: reads with read(2), skips with
 * lseek(2) so chunk bodies before a WAV `data` chunk cost nothing. */
#ifndef ES_FILE_STREAM_H
#define ES_FILE_STREAM_H

#include "core/byte_stream.h"

#include <stdio.h>

typedef struct es_file_stream {
    int fd;
    int err; /* errno of the last failure */
} es_file_stream;

/* Returned by es_file_stream_open for a path that is neither a regular file nor
 * a folder (a FIFO would block or never end, /dev/zero never ends). */
#define ES_ENOTREG (-1)

/* Opens path read-only as an input: *fd on success; an errno, EISDIR for a
 * folder, or ES_ENOTREG for anything but a regular file (a FIFO is opened
 * O_NONBLOCK, so refusing it never waits for a writer; the flag is cleared
 * before *fd is handed back). */
int es_open_regular(const char *path, int *fd);
/* es_open_regular as a stdio stream ("rb"). */
int es_fopen_regular(const char *path, FILE **fp);

/* Opens path read-only and sets up s (size from fstat). Returns 0, an errno, or
 * ES_ENOTREG: only regular files are read (opening never blocks on a FIFO). */
int es_file_stream_open(es_byte_stream *s, es_file_stream *f, const char *path);
/* strerror for es_file_stream_open's result ("not a regular file" for ES_ENOTREG). */
const char *es_file_stream_strerror(int e);
void es_file_stream_close(es_file_stream *f);

#endif
