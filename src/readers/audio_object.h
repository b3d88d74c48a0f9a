/* Measuring one audio object (a tar member, a file, a parquet value): probe its
 * header, fill the row's audio fields, and when hashing is on, feed every byte
 * of it to xxh3-64. Shared by all readers so they agree on flags and hashing. */
#ifndef ES_AUDIO_OBJECT_H
#define ES_AUDIO_OBJECT_H

#include "core/byte_stream.h"
#include "equishard/equishard.h"
#include "readers/reader.h"

enum {
    ES_AUDIO_OBJ_OK = 0,
    ES_AUDIO_OBJ_BAD = 1,  /* malformed audio: err holds why */
    ES_AUDIO_OBJ_IO = -1,  /* the stream failed: its owner holds the message */
};

/* `s` is positioned at the object's first byte; s->size is its declared size.
 * `strict` = the name says WAV/FLAC, so content we cannot recognise is an error
 * rather than an "unsupported" flag. */
int es_audio_object_measure(es_byte_stream *s, const es_reader_opts *opts, int strict,
                            es_cost_row *row, char *err, size_t errlen);

#endif
