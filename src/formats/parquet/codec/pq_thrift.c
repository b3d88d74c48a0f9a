#include "formats/parquet/codec/pq_thrift.h"

#include <stdarg.h>
#include <stdio.h>

void pq_thrift_init(pq_thrift *t, const uint8_t *data, size_t n)
{
    t->start = t->p = data;
    t->end = data + n;
    t->depth = 0;
    t->failed = 0;
    t->truncated = 0;
    t->msg[0] = '\0';
}

int pq_thrift_fail(pq_thrift *t, const char *fmt, ...)
{
    if (t->failed)
        return -1;
    t->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->msg, sizeof t->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static int ran_out(pq_thrift *t, const char *what)
{
    if (!t->failed)
        t->truncated = 1;
    return pq_thrift_fail(t, "thrift: %s ends past the end of its %zu bytes", what,
                          (size_t)(t->end - t->start));
}

static size_t left(const pq_thrift *t)
{
    return (size_t)(t->end - t->p);
}

static int varint(pq_thrift *t, const char *what, uint64_t *v)
{
    uint64_t x = 0;
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (t->p >= t->end)
            return ran_out(t, what);
        uint8_t b = *t->p++;
        if (shift == 63 && b > 1)
            return pq_thrift_fail(t, "thrift: %s: varint longer than 64 bits", what);
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return pq_thrift_fail(t, "thrift: %s: varint longer than 10 bytes", what);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static int zigzag(pq_thrift *t, const char *what, int64_t *v)
{
    uint64_t u = 0;
    if (varint(t, what, &u) < 0)
        return -1;
    *v = unzigzag(u);
    return 0;
}

int pq_thrift_field(pq_thrift *t, int16_t *last, int *type, int16_t *id)
{
    if (t->failed)
        return -1;
    if (t->p >= t->end)
        return ran_out(t, "struct");
    uint8_t b = *t->p++;
    if (b == 0)
        return 0;
    *type = b & 0x0f;
    if (*type == PQ_T_STOP || *type > PQ_T_STRUCT)
        return pq_thrift_fail(t, "thrift: unknown field type %d after field %d", *type, *last);
    int delta = b >> 4;
    if (delta) {
        *id = (int16_t)(*last + delta);
    } else {
        int64_t v;
        if (zigzag(t, "field id", &v) < 0)
            return -1;
        if (v < INT16_MIN || v > INT16_MAX)
            return pq_thrift_fail(t, "thrift: field id %lld out of range", (long long)v);
        *id = (int16_t)v;
    }
    *last = *id;
    return 1;
}

static int wrong_type(pq_thrift *t, const char *what, int type, const char *want)
{
    return pq_thrift_fail(t, "thrift: %s has type %d, expected %s", what, type, want);
}

int pq_thrift_i64(pq_thrift *t, int type, const char *what, int64_t *v)
{
    if (t->failed)
        return -1;
    if (type == PQ_T_BYTE) {
        if (t->p >= t->end)
            return ran_out(t, what);
        *v = (int8_t)*t->p++;
        return 0;
    }
    if (type != PQ_T_I16 && type != PQ_T_I32 && type != PQ_T_I64)
        return wrong_type(t, what, type, "an integer");
    if (zigzag(t, what, v) < 0)
        return -1;
    if ((type == PQ_T_I16 && (*v < INT16_MIN || *v > INT16_MAX)) ||
        (type == PQ_T_I32 && (*v < INT32_MIN || *v > INT32_MAX)))
        return pq_thrift_fail(t, "thrift: %s: %lld out of range for its type", what, (long long)*v);
    return 0;
}

int pq_thrift_i32(pq_thrift *t, int type, const char *what, int32_t *v)
{
    int64_t x = 0;
    if (type == PQ_T_I64)
        return wrong_type(t, what, type, "i32");
    if (pq_thrift_i64(t, type, what, &x) < 0)
        return -1;
    *v = (int32_t)x;
    return 0;
}

int pq_thrift_bool(pq_thrift *t, int type, const char *what, int *v)
{
    if (t->failed)
        return -1;
    if (type != PQ_T_TRUE && type != PQ_T_FALSE)
        return wrong_type(t, what, type, "bool");
    *v = type == PQ_T_TRUE;
    return 0;
}

static int length(pq_thrift *t, const char *what, size_t *n)
{
    uint64_t u = 0;
    if (varint(t, what, &u) < 0)
        return -1;
    if (u > INT32_MAX)
        return pq_thrift_fail(t, "thrift: %s: length %llu out of range", what, (unsigned long long)u);
    *n = (size_t)u;
    return 0;
}

int pq_thrift_binary(pq_thrift *t, int type, const char *what, const uint8_t **data, size_t *n)
{
    if (t->failed)
        return -1;
    if (type != PQ_T_BINARY)
        return wrong_type(t, what, type, "binary");
    if (length(t, what, n) < 0)
        return -1;
    if (*n > left(t))
        return ran_out(t, what);
    *data = t->p;
    t->p += *n;
    return 0;
}

int pq_thrift_list(pq_thrift *t, int type, const char *what, int *elem_type, uint32_t *n)
{
    if (t->failed)
        return -1;
    if (type != PQ_T_LIST && type != PQ_T_SET)
        return wrong_type(t, what, type, "list");
    if (t->p >= t->end)
        return ran_out(t, what);
    uint8_t b = *t->p++;
    *elem_type = b & 0x0f;
    size_t count = b >> 4;
    if (count == 15 && length(t, what, &count) < 0)
        return -1;
    if (*elem_type < PQ_T_TRUE || *elem_type > PQ_T_STRUCT)
        return pq_thrift_fail(t, "thrift: %s: unknown element type %d", what, *elem_type);
    /* every element takes at least one byte */
    if (count > left(t))
        return ran_out(t, what);
    *n = (uint32_t)count;
    return 0;
}

int pq_thrift_elem_i32(pq_thrift *t, int elem_type, const char *what, int32_t *v)
{
    return pq_thrift_i32(t, elem_type, what, v);
}

int pq_thrift_struct_begin(pq_thrift *t, int type, const char *what)
{
    if (t->failed)
        return -1;
    if (type != PQ_T_STRUCT)
        return wrong_type(t, what, type, "struct");
    if (++t->depth > PQ_THRIFT_MAX_DEPTH)
        return pq_thrift_fail(t, "thrift: %s: nested deeper than %d", what, PQ_THRIFT_MAX_DEPTH);
    return 0;
}

void pq_thrift_struct_end(pq_thrift *t)
{
    t->depth--;
}

static int skip_n(pq_thrift *t, size_t n, const char *what)
{
    if (n > left(t))
        return ran_out(t, what);
    t->p += n;
    return 0;
}

static int skip_struct(pq_thrift *t)
{
    int16_t last = 0, id;
    int type, rc;
    while ((rc = pq_thrift_field(t, &last, &type, &id)) > 0)
        if (pq_thrift_skip(t, type) < 0)
            return -1;
    return rc;
}

static int skip_list(pq_thrift *t, int type)
{
    int elem;
    uint32_t n;
    if (pq_thrift_list(t, type, "list", &elem, &n) < 0)
        return -1;
    if (elem == PQ_T_TRUE || elem == PQ_T_FALSE)
        return skip_n(t, n, "list of bool"); /* one byte per element in lists */
    for (uint32_t i = 0; i < n; i++)
        if (pq_thrift_skip(t, elem) < 0)
            return -1;
    return 0;
}

static int skip_map(pq_thrift *t)
{
    size_t n = 0;
    if (length(t, "map", &n) < 0)
        return -1;
    if (n == 0)
        return 0;
    if (t->p >= t->end)
        return ran_out(t, "map");
    uint8_t kv = *t->p++;
    int kt = kv >> 4, vt = kv & 0x0f;
    if (kt < PQ_T_TRUE || kt > PQ_T_STRUCT || vt < PQ_T_TRUE || vt > PQ_T_STRUCT)
        return pq_thrift_fail(t, "thrift: map: unknown key/value types %d/%d", kt, vt);
    if (n > left(t) / 2)
        return ran_out(t, "map");
    for (size_t i = 0; i < n; i++) {
        int rk = (kt == PQ_T_TRUE || kt == PQ_T_FALSE) ? skip_n(t, 1, "map") : pq_thrift_skip(t, kt);
        int rv = rk < 0 ? -1
                 : (vt == PQ_T_TRUE || vt == PQ_T_FALSE) ? skip_n(t, 1, "map")
                                                          : pq_thrift_skip(t, vt);
        if (rv < 0)
            return -1;
    }
    return 0;
}

int pq_thrift_skip(pq_thrift *t, int type)
{
    if (t->failed)
        return -1;
    uint64_t u;
    size_t n = 0;
    int rc;
    switch (type) {
    case PQ_T_TRUE:
    case PQ_T_FALSE:
        return 0; /* a bool field carries its value in the type */
    case PQ_T_BYTE:
        return skip_n(t, 1, "byte");
    case PQ_T_I16:
    case PQ_T_I32:
    case PQ_T_I64:
        return varint(t, "integer", &u);
    case PQ_T_DOUBLE:
        return skip_n(t, 8, "double");
    case PQ_T_BINARY:
        return length(t, "binary", &n) < 0 ? -1 : skip_n(t, n, "binary");
    case PQ_T_LIST:
    case PQ_T_SET:
    case PQ_T_MAP:
    case PQ_T_STRUCT:
        if (++t->depth > PQ_THRIFT_MAX_DEPTH)
            return pq_thrift_fail(t, "thrift: nested deeper than %d", PQ_THRIFT_MAX_DEPTH);
        rc = type == PQ_T_STRUCT ? skip_struct(t) : type == PQ_T_MAP ? skip_map(t) : skip_list(t, type);
        t->depth--;
        return rc < 0 ? -1 : 0;
    default:
        return pq_thrift_fail(t, "thrift: unknown type %d", type);
    }
}
