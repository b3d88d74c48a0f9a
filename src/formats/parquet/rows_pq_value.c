#include "formats/parquet/rows_pq_value.h"

#include <string.h>

static int is_unsigned(const pq_schema_elem *e)
{
    return (e->converted_type >= PQ_CONVERTED_UINT_8 && e->converted_type <= PQ_CONVERTED_UINT_64) ||
           (e->logical_type == PQ_LOGICAL_INTEGER && e->logical_unsigned);
}

/* What pyarrow reads a leaf's physical type and annotation as. */
static es_value_type type_of(const pq_schema_elem *e)
{
    switch (e->type) {
    case PQ_BOOLEAN: return ES_VALUE_BOOL;
    case PQ_INT32: return is_unsigned(e) ? ES_VALUE_UINT32 : ES_VALUE_INT32;
    case PQ_INT64: return is_unsigned(e) ? ES_VALUE_UINT64 : ES_VALUE_INT64;
    case PQ_FLOAT: return ES_VALUE_FLOAT;
    case PQ_DOUBLE: return ES_VALUE_DOUBLE;
    case PQ_BYTE_ARRAY:
        return e->converted_type == PQ_CONVERTED_UTF8 || e->logical_type == PQ_LOGICAL_STRING
                   ? ES_VALUE_STRING : ES_VALUE_BYTES;
    default: return ES_VALUE_BYTES; /* INT96, FIXED_LEN_BYTE_ARRAY */
    }
}

void rows_pq_kind_of(const es_pq_file *f, const pq_leaf *l, rows_pq_kind *k)
{
    k->type = type_of(&f->meta.schema[l->schema_index]);
    k->is_list = l->max_rep > 0;
    k->unsupported = NULL;
    /* a flat column is its own leaf; a list has at most the 3 levels of a LIST
       (field, repeated group, element); anything deeper holds a struct */
    if (l->field_leaves != 1)
        k->unsupported = "a struct or map of several fields";
    else if (l->max_rep > 1)
        k->unsupported = "a list of lists";
    else if (l->max_rep == 0 && l->depth > 1)
        k->unsupported = "a struct";
    else if (l->depth > 3)
        k->unsupported = "a list of structs";
}

size_t rows_pq_width(es_value_type t)
{
    switch (t) {
    case ES_VALUE_BOOL: return 1;
    case ES_VALUE_INT32: case ES_VALUE_UINT32: case ES_VALUE_FLOAT: return 4;
    case ES_VALUE_INT64: case ES_VALUE_UINT64: case ES_VALUE_DOUBLE: return 8;
    default: return sizeof(es_value);
    }
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

void rows_pq_pack(es_value_type t, const uint8_t *p, void *dst)
{
    switch (t) {
    case ES_VALUE_BOOL: *(uint8_t *)dst = p[0] != 0; break;
    case ES_VALUE_INT32: case ES_VALUE_UINT32: case ES_VALUE_FLOAT: {
        uint32_t u = le32(p);
        memcpy(dst, &u, 4);
        break;
    }
    case ES_VALUE_INT64: case ES_VALUE_UINT64: case ES_VALUE_DOUBLE: {
        uint64_t u = le64(p);
        memcpy(dst, &u, 8);
        break;
    }
    default: break;
    }
}

int rows_pq_scalar(es_value_type t, const uint8_t *p, uint32_t len, es_arena *a, es_value *v)
{
    memset(v, 0, sizeof *v);
    v->type = t;
    switch (t) {
    case ES_VALUE_BYTES: case ES_VALUE_STRING: {
        char *s = es_arena_strndup(a, len ? (const char *)p : "", len);
        if (!s)
            return -1;
        v->data = s;
        v->len = len;
        return 0;
    }
    case ES_VALUE_BOOL: v->i = p[0] != 0; return 0;
    case ES_VALUE_INT32: v->i = (int32_t)le32(p); return 0;
    case ES_VALUE_UINT32: v->i = le32(p); return 0;
    case ES_VALUE_INT64: case ES_VALUE_UINT64: v->i = (int64_t)le64(p); return 0;
    case ES_VALUE_FLOAT: {
        float f;
        uint32_t u = le32(p);
        memcpy(&f, &u, 4);
        v->d = f;
        return 0;
    }
    case ES_VALUE_DOUBLE: {
        uint64_t u = le64(p);
        memcpy(&v->d, &u, 8);
        return 0;
    }
    default: return 0;
    }
}
