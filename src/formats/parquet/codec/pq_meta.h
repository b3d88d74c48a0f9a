/* Parquet's footer (FileMetaData) and page headers, decoded from Thrift into
 * plain structs (parquet-format's parquet.thrift; only the fields a reader of
 * CosyVoice shards needs are kept, every other field is skipped).
 *
 * Decoding checks what can be checked without the rest of the file: enum values
 * in range, counts and sizes not negative, required fields present. Offsets are
 * checked against the file where they are used (pq_file.c, pq_column.c).
 *
 * Ownership: a pq_file_meta owns its arrays and strings; pq_file_meta_release
 * frees them. A pq_page_header owns nothing. */
#ifndef ES_PQ_META_H
#define ES_PQ_META_H

#include <stddef.h>
#include <stdint.h>

/* parquet.thrift enums */
enum { PQ_BOOLEAN, PQ_INT32, PQ_INT64, PQ_INT96, PQ_FLOAT, PQ_DOUBLE, PQ_BYTE_ARRAY,
       PQ_FIXED_LEN_BYTE_ARRAY, PQ_N_TYPES };
enum { PQ_REQUIRED, PQ_OPTIONAL, PQ_REPEATED };
enum { PQ_UNCOMPRESSED, PQ_SNAPPY, PQ_GZIP, PQ_LZO, PQ_BROTLI, PQ_LZ4, PQ_ZSTD, PQ_LZ4_RAW,
       PQ_N_CODECS };
enum { PQ_ENC_PLAIN = 0, PQ_ENC_PLAIN_DICTIONARY = 2, PQ_ENC_RLE = 3, PQ_ENC_BIT_PACKED = 4,
       PQ_ENC_DELTA_BINARY_PACKED = 5, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
       PQ_ENC_DELTA_BYTE_ARRAY = 7, PQ_ENC_RLE_DICTIONARY = 8, PQ_ENC_BYTE_STREAM_SPLIT = 9,
       PQ_N_ENCODINGS };
/* ConvertedType values and LogicalType union members a row fetch looks at:
 * whether a BYTE_ARRAY is text, whether an integer is unsigned. */
enum { PQ_CONVERTED_UTF8 = 0, PQ_CONVERTED_UINT_8 = 11, PQ_CONVERTED_UINT_64 = 14 };
enum { PQ_LOGICAL_STRING = 1, PQ_LOGICAL_INTEGER = 10 };
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };

typedef struct pq_schema_elem {
    char *name;
    int32_t type;           /* PQ_BOOLEAN…; -1 for a group */
    int32_t type_length;    /* FIXED_LEN_BYTE_ARRAY width */
    int32_t repetition;     /* PQ_REQUIRED…; -1 when absent (the root) */
    int32_t num_children;   /* 0 for a leaf */
    int32_t converted_type; /* -1 when absent; 3 = LIST (legacy annotation) */
    int32_t logical_type;   /* LogicalType's member (PQ_LOGICAL_*); -1 when absent */
    int logical_unsigned;   /* INTEGER logical type with isSigned false */
    uint8_t *raw;           /* the element's compact-protocol bytes, STOP included:
                               what a writer copies to keep every annotation */
    size_t raw_len;
} pq_schema_elem;

typedef struct pq_column_meta {
    int32_t type;
    int32_t codec;
    int64_t num_values;
    int64_t total_compressed_size;
    int64_t data_page_offset;
    int64_t dictionary_page_offset; /* -1 when absent */
    uint32_t n_path;
    char **path;                    /* path_in_schema */
    int has_file_path;              /* data in another file: unsupported */
} pq_column_meta;

typedef struct pq_row_group {
    int64_t num_rows;
    uint32_t n_columns;
    pq_column_meta *columns;
} pq_row_group;

typedef struct pq_file_meta {
    int32_t version;
    int64_t num_rows;
    uint32_t n_schema;
    pq_schema_elem *schema;
    uint32_t n_row_groups;
    pq_row_group *row_groups;
    char *created_by; /* NULL when absent */
} pq_file_meta;

/* Decodes FileMetaData from data[0..n). Returns 0, -1 with a message in err
 * (malformed), or -2 (out of memory). On failure *m is released. */
int pq_file_meta_decode(const uint8_t *data, size_t n, pq_file_meta *m, char *err, size_t errlen);
void pq_file_meta_release(pq_file_meta *m);

typedef struct pq_page_header {
    int32_t type;
    int32_t uncompressed_size, compressed_size;
    int32_t num_values; /* level entries (data pages) or dictionary entries */
    int32_t encoding;
    int32_t def_encoding, rep_encoding;   /* data page v1 */
    int32_t num_nulls, num_rows;          /* data page v2 */
    int32_t def_length, rep_length;       /* data page v2: level bytes, uncompressed */
    int is_compressed;                    /* data page v2 (default 1) */
} pq_page_header;

/* Decodes a PageHeader from the start of data[0..n); *used = its length.
 * Returns 0, -1 malformed (message in err), or 1 when the header runs past n
 * (read more bytes and try again). */
int pq_page_header_decode(const uint8_t *data, size_t n, pq_page_header *h, size_t *used,
                          char *err, size_t errlen);

/* Names for messages: "SNAPPY", "RLE_DICTIONARY", "DOUBLE", … ("?" when unknown). */
const char *pq_codec_name(int codec);
const char *pq_encoding_name(int enc);
const char *pq_type_name(int type);

#endif
