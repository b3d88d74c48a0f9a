/* FileMetaData and PageHeader from Thrift compact bytes (parquet.thrift field
 * ids in the comments). Each struct decoder loops over fields, keeps the ones
 * it knows, skips the rest, and checks ranges and required fields at the end. */
#include "formats/parquet/codec/pq_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/parquet/codec/pq_thrift.h"

typedef struct parser {
    pq_thrift t;
    int oom;
} parser;

static int fail(parser *ps, const char *msg)
{
    return pq_thrift_fail(&ps->t, "%s", msg);
}

static int range_i32(parser *ps, int type, const char *what, int32_t lo, int32_t hi, int32_t *v)
{
    if (pq_thrift_i32(&ps->t, type, what, v) < 0)
        return -1;
    if (*v < lo || *v > hi)
        return pq_thrift_fail(&ps->t, "%s %d out of range", what, *v);
    return 0;
}

static int nonneg_i64(parser *ps, int type, const char *what, int64_t *v)
{
    if (pq_thrift_i64(&ps->t, type, what, v) < 0)
        return -1;
    if (*v < 0)
        return pq_thrift_fail(&ps->t, "%s %lld is negative", what, (long long)*v);
    return 0;
}

static char *dup_string(parser *ps, int type, const char *what)
{
    const uint8_t *s;
    size_t n;
    if (pq_thrift_binary(&ps->t, type, what, &s, &n) < 0)
        return NULL;
    char *c = malloc(n + 1);
    if (!c) {
        ps->oom = 1;
        fail(ps, "out of memory");
        return NULL;
    }
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

/* A list field of structs: *out gets a zeroed array of the list's length
 * (elements of `size` bytes; set before decoding, so the caller keeps and later
 * frees it even when an element fails), each element decoded by fn, *count
 * the elements begun. `given` says the field was seen before. */
typedef int (*struct_fn)(parser *ps, void *elem);

static int struct_list(parser *ps, int type, const char *what, const char *elem_name, int given,
                       size_t size, void **out, uint32_t *count, struct_fn fn)
{
    int elem;
    uint32_t n;
    if (pq_thrift_list(&ps->t, type, what, &elem, &n) < 0)
        return -1;
    if (given)
        return pq_thrift_fail(&ps->t, "%s given twice", what);
    char *arr = calloc(n ? n : 1, size);
    *out = arr;
    if (!arr) {
        ps->oom = 1;
        return fail(ps, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        *count = i + 1;
        if (pq_thrift_struct_begin(&ps->t, elem, elem_name) < 0)
            return -1;
        int r = fn(ps, arr + (size_t)i * size);
        pq_thrift_struct_end(&ps->t);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* ---- SchemaElement ---------------------------------------------------------- */

/* IntType { 1: i8 bitWidth, 2: bool isSigned }: only the sign matters here. */
static int int_type(parser *ps, pq_schema_elem *e)
{
    int16_t last = 0, id;
    int type, rc, sign = 1;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = id == 2 ? pq_thrift_bool(&ps->t, type, "IntType.isSigned", &sign)
                        : pq_thrift_skip(&ps->t, type);
        if (r < 0)
            return -1;
    }
    e->logical_unsigned = !sign;
    return rc < 0 ? -1 : 0;
}

/* LogicalType is a union of structs: the member's field id says which. */
static int logical_type(parser *ps, int type, pq_schema_elem *e)
{
    if (pq_thrift_struct_begin(&ps->t, type, "SchemaElement.logicalType") < 0)
        return -1;
    int16_t last = 0, id;
    int mtype, rc;
    while ((rc = pq_thrift_field(&ps->t, &last, &mtype, &id)) > 0) {
        e->logical_type = id;
        int r;
        if (id == PQ_LOGICAL_INTEGER && pq_thrift_struct_begin(&ps->t, mtype, "LogicalType.INTEGER") == 0) {
            r = int_type(ps, e);
            pq_thrift_struct_end(&ps->t);
        } else {
            r = id == PQ_LOGICAL_INTEGER ? -1 : pq_thrift_skip(&ps->t, mtype);
        }
        if (r < 0)
            break;
    }
    pq_thrift_struct_end(&ps->t);
    return rc < 0 || ps->t.failed ? -1 : 0;
}

static int schema_elem(parser *ps, pq_schema_elem *e)
{
    int16_t last = 0, id;
    int type, rc;
    e->type = e->repetition = e->converted_type = e->logical_type = -1;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: r = range_i32(ps, type, "SchemaElement.type", 0, PQ_N_TYPES - 1, &e->type); break;
        case 2: r = range_i32(ps, type, "SchemaElement.type_length", 0, INT32_MAX, &e->type_length); break;
        case 3: r = range_i32(ps, type, "SchemaElement.repetition_type", 0, 2, &e->repetition); break;
        case 4:
            free(e->name);
            e->name = dup_string(ps, type, "SchemaElement.name");
            r = e->name ? 0 : -1;
            break;
        case 5: r = range_i32(ps, type, "SchemaElement.num_children", 0, INT32_MAX, &e->num_children); break;
        case 6: r = pq_thrift_i32(&ps->t, type, "SchemaElement.converted_type", &e->converted_type); break;
        case 10: r = logical_type(ps, type, e); break;
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    return e->name ? 0 : fail(ps, "SchemaElement without a name");
}

/* ---- ColumnMetaData / ColumnChunk ------------------------------------------- */

static int path_list(parser *ps, int type, pq_column_meta *c)
{
    int elem;
    uint32_t n;
    if (pq_thrift_list(&ps->t, type, "ColumnMetaData.path_in_schema", &elem, &n) < 0)
        return -1;
    if (c->path)
        return fail(ps, "ColumnMetaData.path_in_schema given twice");
    c->path = calloc(n ? n : 1, sizeof *c->path);
    if (!c->path) {
        ps->oom = 1;
        return fail(ps, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        c->path[i] = dup_string(ps, elem, "ColumnMetaData.path_in_schema");
        if (!c->path[i])
            return -1;
        c->n_path = i + 1;
    }
    return 0;
}

enum { HAVE_TYPE = 1, HAVE_CODEC = 2, HAVE_NUM_VALUES = 4, HAVE_SIZE = 8, HAVE_OFFSET = 16 };

static int column_meta(parser *ps, pq_column_meta *c)
{
    int16_t last = 0, id;
    int type, rc;
    unsigned have = 0;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: r = range_i32(ps, type, "ColumnMetaData.type", 0, PQ_N_TYPES - 1, &c->type); have |= HAVE_TYPE; break;
        case 3: r = path_list(ps, type, c); break;
        case 4: r = range_i32(ps, type, "ColumnMetaData.codec", 0, PQ_N_CODECS - 1, &c->codec); have |= HAVE_CODEC; break;
        case 5: r = nonneg_i64(ps, type, "ColumnMetaData.num_values", &c->num_values); have |= HAVE_NUM_VALUES; break;
        case 7: r = nonneg_i64(ps, type, "ColumnMetaData.total_compressed_size", &c->total_compressed_size); have |= HAVE_SIZE; break;
        case 9: r = nonneg_i64(ps, type, "ColumnMetaData.data_page_offset", &c->data_page_offset); have |= HAVE_OFFSET; break;
        case 11: r = nonneg_i64(ps, type, "ColumnMetaData.dictionary_page_offset", &c->dictionary_page_offset); break;
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    if (have != (HAVE_TYPE | HAVE_CODEC | HAVE_NUM_VALUES | HAVE_SIZE | HAVE_OFFSET))
        return fail(ps, "ColumnMetaData lacks a required field (type, codec, num_values, "
                        "total_compressed_size or data_page_offset)");
    return 0;
}

static int column_chunk(parser *ps, pq_column_meta *c)
{
    int16_t last = 0, id;
    int type, rc, have_meta = 0;
    c->dictionary_page_offset = -1;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: c->has_file_path = 1; r = pq_thrift_skip(&ps->t, type); break;
        case 3:
            if (have_meta)
                return fail(ps, "ColumnChunk.meta_data given twice");
            have_meta = 1;
            r = pq_thrift_struct_begin(&ps->t, type, "ColumnChunk.meta_data");
            if (r == 0) {
                r = column_meta(ps, c);
                pq_thrift_struct_end(&ps->t);
            }
            break;
        case 8:
        case 9: return fail(ps, "encrypted column chunks are not supported");
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    return have_meta ? 0 : fail(ps, "ColumnChunk without meta_data");
}

/* ---- RowGroup ------------------------------------------------------------- */

static int column_chunk_elem(parser *ps, void *c) { return column_chunk(ps, c); }

static int column_list(parser *ps, int type, pq_row_group *g)
{
    void *arr = NULL;
    int r = struct_list(ps, type, "RowGroup.columns", "ColumnChunk", g->columns != NULL,
                        sizeof *g->columns, &arr, &g->n_columns, column_chunk_elem);
    if (arr)
        g->columns = arr;
    return r;
}

static int row_group(parser *ps, pq_row_group *g)
{
    int16_t last = 0, id;
    int type, rc, have_rows = 0;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: r = column_list(ps, type, g); break;
        case 3: r = nonneg_i64(ps, type, "RowGroup.num_rows", &g->num_rows); have_rows = 1; break;
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    if (!g->columns || !have_rows)
        return fail(ps, "RowGroup lacks columns or num_rows");
    return 0;
}

/* ---- FileMetaData ----------------------------------------------------------- */

/* A SchemaElement, also kept whole (logical type, scale, field id…) for the
 * writer to copy: the bytes from its first field to its STOP. */
static int schema_elem_raw(parser *ps, void *elem)
{
    pq_schema_elem *e = elem;
    size_t begin = pq_thrift_offset(&ps->t);
    if (schema_elem(ps, e) < 0)
        return -1;
    size_t n_raw = pq_thrift_offset(&ps->t) - begin;
    e->raw = malloc(n_raw);
    if (!e->raw) {
        ps->oom = 1;
        return fail(ps, "out of memory");
    }
    memcpy(e->raw, ps->t.start + begin, n_raw);
    e->raw_len = n_raw;
    return 0;
}

static int schema_list(parser *ps, int type, pq_file_meta *m)
{
    void *arr = NULL;
    int r = struct_list(ps, type, "FileMetaData.schema", "SchemaElement", m->schema != NULL,
                        sizeof *m->schema, &arr, &m->n_schema, schema_elem_raw);
    if (arr)
        m->schema = arr;
    return r;
}

static int row_group_elem(parser *ps, void *g) { return row_group(ps, g); }

static int row_group_list(parser *ps, int type, pq_file_meta *m)
{
    void *arr = NULL;
    int r = struct_list(ps, type, "FileMetaData.row_groups", "RowGroup", m->row_groups != NULL,
                        sizeof *m->row_groups, &arr, &m->n_row_groups, row_group_elem);
    if (arr)
        m->row_groups = arr;
    return r;
}

static int file_meta(parser *ps, pq_file_meta *m)
{
    int16_t last = 0, id;
    int type, rc;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: r = pq_thrift_i32(&ps->t, type, "FileMetaData.version", &m->version); break;
        case 2: r = schema_list(ps, type, m); break;
        case 3: r = nonneg_i64(ps, type, "FileMetaData.num_rows", &m->num_rows); break;
        case 4: r = row_group_list(ps, type, m); break;
        case 6:
            free(m->created_by);
            m->created_by = dup_string(ps, type, "FileMetaData.created_by");
            r = m->created_by ? 0 : -1;
            break;
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    if (!m->schema || m->n_schema == 0)
        return fail(ps, "FileMetaData has no schema");
    if (!m->row_groups)
        return fail(ps, "FileMetaData has no row_groups list");
    return 0;
}

int pq_file_meta_decode(const uint8_t *data, size_t n, pq_file_meta *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    parser ps = {.oom = 0};
    pq_thrift_init(&ps.t, data, n);
    if (file_meta(&ps, m) == 0)
        return 0;
    snprintf(err, errlen, "%s", ps.t.msg);
    pq_file_meta_release(m);
    return ps.oom ? -2 : -1;
}

void pq_file_meta_release(pq_file_meta *m)
{
    for (uint32_t i = 0; m->schema && i < m->n_schema; i++) {
        free(m->schema[i].name);
        free(m->schema[i].raw);
    }
    free(m->schema);
    for (uint32_t g = 0; m->row_groups && g < m->n_row_groups; g++) {
        pq_row_group *rg = &m->row_groups[g];
        for (uint32_t c = 0; rg->columns && c < rg->n_columns; c++) {
            for (uint32_t k = 0; k < rg->columns[c].n_path; k++)
                free(rg->columns[c].path[k]);
            free(rg->columns[c].path);
        }
        free(rg->columns);
    }
    free(m->row_groups);
    free(m->created_by);
    memset(m, 0, sizeof *m);
}

/* ---- PageHeader ------------------------------------------------------------- */

static int encoding(parser *ps, int type, const char *what, int32_t *v)
{
    if (pq_thrift_i32(&ps->t, type, what, v) < 0)
        return -1;
    if (*v < 0 || *v >= PQ_N_ENCODINGS || *v == 1)
        return pq_thrift_fail(&ps->t, "%s %d is not a parquet encoding", what, *v);
    return 0;
}

static int data_page_v1(parser *ps, pq_page_header *h)
{
    int16_t last = 0, id;
    int type, rc;
    unsigned have = 0;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: r = range_i32(ps, type, "DataPageHeader.num_values", 0, INT32_MAX, &h->num_values); have |= 1; break;
        case 2: r = encoding(ps, type, "DataPageHeader.encoding", &h->encoding); have |= 2; break;
        case 3: r = encoding(ps, type, "DataPageHeader.definition_level_encoding", &h->def_encoding); have |= 4; break;
        case 4: r = encoding(ps, type, "DataPageHeader.repetition_level_encoding", &h->rep_encoding); have |= 8; break;
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    return have == 15 ? 0 : fail(ps, "DataPageHeader lacks a required field");
}

static int dictionary_page(parser *ps, pq_page_header *h)
{
    int16_t last = 0, id;
    int type, rc;
    unsigned have = 0;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: r = range_i32(ps, type, "DictionaryPageHeader.num_values", 0, INT32_MAX, &h->num_values); have |= 1; break;
        case 2: r = encoding(ps, type, "DictionaryPageHeader.encoding", &h->encoding); have |= 2; break;
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    return have == 3 ? 0 : fail(ps, "DictionaryPageHeader lacks a required field");
}

static int data_page_v2(parser *ps, pq_page_header *h)
{
    int16_t last = 0, id;
    int type, rc;
    unsigned have = 0;
    h->is_compressed = 1;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: r = range_i32(ps, type, "DataPageHeaderV2.num_values", 0, INT32_MAX, &h->num_values); have |= 1; break;
        case 2: r = range_i32(ps, type, "DataPageHeaderV2.num_nulls", 0, INT32_MAX, &h->num_nulls); have |= 2; break;
        case 3: r = range_i32(ps, type, "DataPageHeaderV2.num_rows", 0, INT32_MAX, &h->num_rows); have |= 4; break;
        case 4: r = encoding(ps, type, "DataPageHeaderV2.encoding", &h->encoding); have |= 8; break;
        case 5: r = range_i32(ps, type, "DataPageHeaderV2.definition_levels_byte_length", 0, INT32_MAX, &h->def_length); have |= 16; break;
        case 6: r = range_i32(ps, type, "DataPageHeaderV2.repetition_levels_byte_length", 0, INT32_MAX, &h->rep_length); have |= 32; break;
        case 7: r = pq_thrift_bool(&ps->t, type, "DataPageHeaderV2.is_compressed", &h->is_compressed); break;
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    if (have != 63)
        return fail(ps, "DataPageHeaderV2 lacks a required field");
    if (h->num_nulls > h->num_values)
        return fail(ps, "DataPageHeaderV2.num_nulls exceeds num_values");
    return 0;
}

static int nested(parser *ps, int type, const char *what, int (*fn)(parser *, pq_page_header *),
                  pq_page_header *h, int *seen)
{
    if (*seen)
        return pq_thrift_fail(&ps->t, "%s given twice", what);
    *seen = 1;
    if (pq_thrift_struct_begin(&ps->t, type, what) < 0)
        return -1;
    int r = fn(ps, h);
    pq_thrift_struct_end(&ps->t);
    return r;
}

static int page_header(parser *ps, pq_page_header *h)
{
    int16_t last = 0, id;
    int type, rc, v1 = 0, dict = 0, v2 = 0;
    unsigned have = 0;
    while ((rc = pq_thrift_field(&ps->t, &last, &type, &id)) > 0) {
        int r = 0;
        switch (id) {
        case 1: r = pq_thrift_i32(&ps->t, type, "PageHeader.type", &h->type); have |= 1; break;
        case 2: r = range_i32(ps, type, "PageHeader.uncompressed_page_size", 0, INT32_MAX, &h->uncompressed_size); have |= 2; break;
        case 3: r = range_i32(ps, type, "PageHeader.compressed_page_size", 0, INT32_MAX, &h->compressed_size); have |= 4; break;
        case 5: r = nested(ps, type, "DataPageHeader", data_page_v1, h, &v1); break;
        case 7: r = nested(ps, type, "DictionaryPageHeader", dictionary_page, h, &dict); break;
        case 8: r = nested(ps, type, "DataPageHeaderV2", data_page_v2, h, &v2); break;
        default: r = pq_thrift_skip(&ps->t, type); break;
        }
        if (r < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    if (have != 7)
        return fail(ps, "PageHeader lacks type or sizes");
    if ((h->type == PQ_PAGE_DATA && !v1) || (h->type == PQ_PAGE_DICTIONARY && !dict) ||
        (h->type == PQ_PAGE_DATA_V2 && !v2) || v1 + dict + v2 > 1)
        return pq_thrift_fail(&ps->t, "PageHeader of type %d has the wrong sub-header", h->type);
    return 0;
}

int pq_page_header_decode(const uint8_t *data, size_t n, pq_page_header *h, size_t *used,
                          char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    parser ps = {.oom = 0};
    pq_thrift_init(&ps.t, data, n);
    if (page_header(&ps, h) == 0) {
        *used = pq_thrift_offset(&ps.t);
        return 0;
    }
    if (ps.t.truncated)
        return 1;
    snprintf(err, errlen, "page header: %s", ps.t.msg);
    return -1;
}

const char *pq_codec_name(int codec)
{
    static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI",
                                        "LZ4", "ZSTD", "LZ4_RAW"};
    return codec >= 0 && codec < PQ_N_CODECS ? names[codec] : "?";
}

const char *pq_encoding_name(int enc)
{
    static const char *const names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE",
                                        "BIT_PACKED", "DELTA_BINARY_PACKED",
                                        "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                                        "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return enc >= 0 && enc < PQ_N_ENCODINGS ? names[enc] : "?";
}

const char *pq_type_name(int type)
{
    static const char *const names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT",
                                        "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return type >= 0 && type < PQ_N_TYPES ? names[type] : "?";
}
