/* Thrift compact protocol writer (pq_thrift_write.h). Integers are zigzag
 * varints; a field header is (delta << 4 | type) when the id grew by 1..15,
 * else the type byte followed by the id itself. */
#include "formats/parquet/codec/pq_thrift_write.h"

static void put_byte(pq_tw *w, uint8_t b)
{
    es_strbuf_putc(w->out, (char)b);
}

static void put_varint(pq_tw *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    es_strbuf_append(w->out, (const char *)b, n);
}

static void put_zigzag(pq_tw *w, int64_t v)
{
    put_varint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void field(pq_tw *w, int16_t id, int type)
{
    int delta = id - w->last[w->depth];
    if (delta > 0 && delta <= 15) {
        put_byte(w, (uint8_t)(delta << 4 | type));
    } else {
        put_byte(w, (uint8_t)type);
        put_zigzag(w, id);
    }
    w->last[w->depth] = id;
}

void pq_tw_init(pq_tw *w, es_strbuf *out)
{
    w->out = out;
    w->depth = 0;
    w->last[0] = 0;
}

void pq_tw_i32(pq_tw *w, int16_t id, int32_t v)
{
    field(w, id, PQ_T_I32);
    put_zigzag(w, v);
}

void pq_tw_i64(pq_tw *w, int16_t id, int64_t v)
{
    field(w, id, PQ_T_I64);
    put_zigzag(w, v);
}

void pq_tw_binary(pq_tw *w, int16_t id, const void *data, size_t n)
{
    field(w, id, PQ_T_BINARY);
    pq_tw_elem_binary(w, data, n);
}

void pq_tw_list(pq_tw *w, int16_t id, int elem_type, uint32_t n)
{
    field(w, id, PQ_T_LIST);
    if (n < 15) {
        put_byte(w, (uint8_t)(n << 4 | (uint32_t)elem_type));
    } else {
        put_byte(w, (uint8_t)(0xf0 | elem_type));
        put_varint(w, n);
    }
}

void pq_tw_elem_i32(pq_tw *w, int32_t v)
{
    put_zigzag(w, v);
}

void pq_tw_elem_binary(pq_tw *w, const void *data, size_t n)
{
    put_varint(w, n);
    es_strbuf_append(w->out, data, n);
}

void pq_tw_elem_raw(pq_tw *w, const void *data, size_t n)
{
    es_strbuf_append(w->out, data, n);
}

static void push(pq_tw *w)
{
    /* the writer's own structs nest 4 deep at most */
    if (w->depth < PQ_THRIFT_MAX_DEPTH)
        w->last[++w->depth] = 0;
}

void pq_tw_struct_begin(pq_tw *w, int16_t id)
{
    field(w, id, PQ_T_STRUCT);
    push(w);
}

void pq_tw_elem_struct_begin(pq_tw *w)
{
    push(w);
}

void pq_tw_struct_end(pq_tw *w)
{
    put_byte(w, PQ_T_STOP);
    if (w->depth > 0)
        w->depth--;
}

void pq_tw_finish(pq_tw *w)
{
    put_byte(w, PQ_T_STOP);
}
