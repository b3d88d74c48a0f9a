/* A strict unpickler for one shape of pickle: a dict of str → list of numbers,
 * as torch.save (pickle protocol 2) writes CosyVoice's utt2embedding.pt,
 * spk2embedding.pt and utt2speech_token.pt, and as pickle.dump writes the same
 * dict with protocols 2 to 5.
 *
 * It interprets only the opcodes such a pickle contains and refuses every
 * other one by name. It never imports, calls or constructs anything: the
 * values it knows are strings, numbers, lists of numbers, the one dict, and
 * marks. A hostile file can only make it fail.
 *
 *   accepted: PROTO FRAME STOP MARK EMPTY_DICT EMPTY_LIST SETITEM SETITEMS APPEND
 *             APPENDS BINUNICODE SHORT_BINUNICODE BINUNICODE8 BINFLOAT BININT
 *             BININT1 BININT2 LONG1 BINPUT LONG_BINPUT MEMOIZE BINGET LONG_BINGET
 *
 * Lists are stored flat in the set's value array: a list may grow only while it
 * is the newest list (true for every pickler's output), so each list's values
 * are contiguous. Memory grows with the values actually read, never with a
 * length a header claims.
 *
 * What a file can honestly hold bounds the rest (a hostile 389 KB .pt,
 * a deflated run of MEMOIZE, grew the memo past 8 GB): a pickler memoizes each
 * object (string, list, dict) at most once, so the memo never has more entries
 * than objects were made; the stack and the marks hold at most MAX_STACK
 * entries (picklers batch APPENDS and SETITEMS 1000 at a time); and a pickle
 * read out of a compressed zip member may decode to at most COMPRESSED_RATIO
 * times the file's size (plus COMPRESSED_FLOOR): torch.save stores data.pkl
 * uncompressed, and embeddings or tokens do not compress 64-fold. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/strbuf.h"
#include "validate/sources/emb_set.h"

enum { MAX_STACK = 1 << 20, MAX_STRING = 1 << 20, BUF = 1 << 16 };
#define COMPRESSED_RATIO 64
#define COMPRESSED_FLOOR (64ull << 20)

typedef enum vtype { V_STR, V_NUM, V_LIST, V_DICT } vtype;

typedef struct value {
    vtype type;
    int is_int;
    double num;
    const char *str;  /* V_STR: NUL-terminated, in the set's arena */
    size_t list;      /* V_LIST: index into lists */
} value;

typedef struct plist {
    size_t off;
    uint32_t len;
} plist;

typedef struct up {
    es_context *ctx;
    const char *name;
    es_byte_stream *in;
    es_emb_set *out;
    unsigned char buf[BUF];
    size_t pos, len;
    uint64_t offset;   /* file offset of buf[0] */
    uint64_t op_at;    /* offset of the opcode being run, for messages */
    value *stack;
    size_t sp, cap;
    size_t *marks;
    size_t n_marks, cap_marks;
    value *memo;
    size_t n_memo, cap_memo;
    plist *lists;
    size_t n_lists, cap_lists;
    int have_dict;
    uint64_t n_objects; /* strings, lists and the dict made so far */
    uint64_t file_size; /* read out of a zip member: the file's size; else 0 */
    es_strbuf str;     /* the string being read */
} up;

/* ---- errors and bytes -------------------------------------------------------------- */

static int fail(up *u, int status, const char *fmt, ...) ES_PRINTF(3, 4);
static int fail(up *u, int status, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return es_fail(u->ctx, status, "%s: byte %llu: %s", u->name, (unsigned long long)u->op_at, what);
}

static int nomem(up *u) { return es_fail(u->ctx, ES_ERR_NOMEM, "%s: out of memory", u->name); }

/* Makes n (<= BUF) bytes available at buf[pos]. */
static int need(up *u, size_t n)
{
    if (u->len - u->pos >= n)
        return ES_OK;
    memmove(u->buf, u->buf + u->pos, u->len - u->pos);
    u->offset += u->pos;
    u->len -= u->pos;
    u->pos = 0;
    while (u->len < n) {
        if (u->out->max_bytes && u->offset + u->len >= u->out->max_bytes)
            return fail(u, ES_ERR_UNSUPPORTED, "larger than the %llu-byte limit",
                        (unsigned long long)u->out->max_bytes);
        if (u->file_size && u->offset + u->len >= COMPRESSED_RATIO * u->file_size + COMPRESSED_FLOOR)
            return fail(u, ES_ERR_UNSUPPORTED, "decompresses to more than %d times the %llu-byte "
                        "file (+%llu MiB): refused as a decompression bomb (torch.save does not "
                        "compress data.pkl)", COMPRESSED_RATIO, (unsigned long long)u->file_size,
                        COMPRESSED_FLOOR >> 20);
        ssize_t got = u->in->read(u->in->opaque, u->buf + u->len, BUF - u->len);
        if (got < 0)
            return es_fail(u->ctx, ES_ERR_IO, "%s: read error", u->name);
        if (got == 0)
            return fail(u, ES_ERR_FORMAT, "truncated: the pickle ends inside an opcode");
        u->len += (size_t)got;
        es_emb_set_progress(u->out, u->offset + u->len - (size_t)got, u->offset + u->len);
    }
    return ES_OK;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int arg(up *u, int n, uint64_t *v)
{
    int rc = need(u, (size_t)n);
    if (rc == ES_OK) {
        *v = le(u->buf + u->pos, n);
        u->pos += (size_t)n;
    }
    return rc;
}

/* ---- the stack --------------------------------------------------------------------- */

static int push(up *u, value v)
{
    if (u->sp == u->cap) {
        if (u->cap >= MAX_STACK)
            return fail(u, ES_ERR_UNSUPPORTED, "stack deeper than %d entries", MAX_STACK);
        void *p = u->stack;
        if (es_grow(&p, &u->cap, u->cap + 1, sizeof *u->stack, 256))
            return nomem(u);
        u->stack = p;
    }
    u->stack[u->sp++] = v;
    return ES_OK;
}

static const char *type_name(const value *v)
{
    static const char *const names[] = {"str", "number", "list", "dict"};
    return names[v->type];
}

static int underflow(up *u, const char *op)
{
    return fail(u, ES_ERR_FORMAT, "%s on an empty stack", op);
}

/* Index where the items after the last MARK start; the mark is removed. */
static int pop_mark(up *u, const char *op, size_t *at)
{
    if (!u->n_marks)
        return fail(u, ES_ERR_FORMAT, "%s without a MARK", op);
    *at = u->marks[--u->n_marks];
    return ES_OK;
}

/* ---- values ------------------------------------------------------------------------ */

static int new_list(up *u)
{
    if (u->n_lists == u->cap_lists) {
        void *p = u->lists;
        if (es_grow(&p, &u->cap_lists, u->cap_lists + 1, sizeof *u->lists, 1024))
            return nomem(u);
        u->lists = p;
    }
    u->lists[u->n_lists] = (plist){u->out->n_vals, 0};
    u->n_objects++;
    value v = {V_LIST, 0, 0, NULL, u->n_lists++};
    return push(u, v);
}

/* Appends numbers items[0..n) to the list `target`. */
static int extend(up *u, const value *target, const value *items, size_t n, const char *op)
{
    if (target->type != V_LIST)
        return fail(u, ES_ERR_UNSUPPORTED, "%s to a %s: only lists of numbers are read", op,
                    type_name(target));
    plist *l = &u->lists[target->list];
    if (target->list != u->n_lists - 1 || l->off + l->len != u->out->n_vals)
        return fail(u, ES_ERR_UNSUPPORTED, "%s to a list other than the newest: unsupported layout",
                    op);
    for (size_t i = 0; i < n; i++) {
        if (items[i].type != V_NUM)
            return fail(u, ES_ERR_UNSUPPORTED, "a list holds a %s: only lists of numbers are read",
                        type_name(&items[i]));
        if (l->len == UINT32_MAX)
            return fail(u, ES_ERR_UNSUPPORTED, "a list longer than 2^32 - 1");
        if (es_emb_set_push(u->out, (float)items[i].num) != ES_OK)
            return nomem(u);
        l->len++;
        u->out->has_ints |= items[i].is_int;
        u->out->has_floats |= !items[i].is_int;
    }
    return ES_OK;
}

/* dict[key] = value, for pairs items[0..2n). */
static int set_items(up *u, const value *dict, const value *items, size_t n, const char *op)
{
    if (dict->type != V_DICT)
        return fail(u, ES_ERR_UNSUPPORTED, "%s on a %s", op, type_name(dict));
    for (size_t i = 0; i < n; i++) {
        const value *k = &items[2 * i], *v = &items[2 * i + 1];
        if (k->type != V_STR)
            return fail(u, ES_ERR_UNSUPPORTED, "a dict key is a %s: only str keys are read",
                        type_name(k));
        if (v->type != V_LIST) {
            char key[128];
            return fail(u, ES_ERR_UNSUPPORTED, "the value of key '%s' is a %s, not a list of numbers",
                        es_printable(key, sizeof key, k->str, SIZE_MAX), type_name(v));
        }
        const plist *l = &u->lists[v->list];
        int rc = es_emb_set_add(u->ctx, u->out, k->str, strlen(k->str), l->off, l->len);
        if (rc != ES_OK)
            return rc;
    }
    return ES_OK;
}

/* Reads a UTF-8 string of n bytes (BINUNICODE and friends) and pushes it. */
static int string(up *u, uint64_t n)
{
    if (n > MAX_STRING)
        return fail(u, ES_ERR_UNSUPPORTED, "a string longer than 1 MiB");
    u->str.len = 0;
    while (n) {
        size_t chunk = n < BUF ? (size_t)n : BUF;
        int rc = need(u, chunk);
        if (rc != ES_OK)
            return rc;
        es_strbuf_append(&u->str, (const char *)u->buf + u->pos, chunk);
        u->pos += chunk;
        n -= chunk;
    }
    es_strbuf_append(&u->str, "", 0);
    if (u->str.oom)
        return nomem(u);
    if (memchr(u->str.buf, 0, u->str.len))
        return fail(u, ES_ERR_UNSUPPORTED, "a string contains a NUL byte");
    const char *s = es_arena_strndup(&u->out->strings, u->str.buf, u->str.len);
    if (!s)
        return nomem(u);
    value v = {V_STR, 0, 0, s, 0};
    u->n_objects++;
    return push(u, v);
}

static int number(up *u, double x, int is_int)
{
    value v = {V_NUM, is_int, x, NULL, 0};
    return push(u, v);
}

/* LONG1: n bytes of little-endian two's complement. */
static int long1(up *u)
{
    uint64_t n, raw;
    int rc = arg(u, 1, &n);
    if (rc != ES_OK)
        return rc;
    if (n > 8)
        return fail(u, ES_ERR_UNSUPPORTED, "an integer of more than 64 bits");
    if (n == 0)
        return number(u, 0, 1);
    if ((rc = arg(u, (int)n, &raw)) != ES_OK)
        return rc;
    if (n < 8 && (raw >> (8 * n - 1)) & 1)
        raw |= ~(uint64_t)0 << (8 * n); /* sign-extend */
    return number(u, (double)(int64_t)raw, 1);
}

static double be_double(const unsigned char *b)
{
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++) /* big-endian */
        bits = bits << 8 | b[i];
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* BINFLOAT, and the BINFLOATs right after it that the buffer already holds:
 * an embedding is hundreds of them in a row (between MARK and APPENDS), and
 * going back through step() for each was a fifth of a large .pt's load. Each
 * is still pushed, and op_at still names it, as step() would. */
static int binfloat(up *u)
{
    int rc = need(u, 8);
    if (rc != ES_OK)
        return rc;
    double x = be_double(u->buf + u->pos);
    u->pos += 8;
    rc = number(u, x, 0);
    while (rc == ES_OK && u->len - u->pos >= 9 && u->buf[u->pos] == 'G') {
        u->op_at = u->offset + u->pos;
        x = be_double(u->buf + u->pos + 1);
        u->pos += 9;
        rc = number(u, x, 0);
    }
    return rc;
}

/* ---- memo ---------------------------------------------------------------------------- */

static int put(up *u, uint64_t id)
{
    if (!u->sp)
        return underflow(u, "PUT");
    if (id > u->n_memo) /* picklers number memo entries 0, 1, 2, … */
        return fail(u, ES_ERR_UNSUPPORTED, "memo index out of sequence");
    if (id == u->n_memo) {
        if (u->n_memo >= u->n_objects)
            return fail(u, ES_ERR_FORMAT, "more memo entries than objects (%llu): a pickler "
                        "memoizes each object once", (unsigned long long)u->n_objects);
        if (u->n_memo == u->cap_memo) {
            void *p = u->memo;
            if (es_grow(&p, &u->cap_memo, u->cap_memo + 1, sizeof *u->memo, 1024))
                return nomem(u);
            u->memo = p;
        }
        u->n_memo++;
    }
    u->memo[id] = u->stack[u->sp - 1];
    return ES_OK;
}

static int get(up *u, uint64_t id)
{
    if (id >= u->n_memo)
        return fail(u, ES_ERR_FORMAT, "memo index not defined");
    return push(u, u->memo[id]);
}

/* ---- refusals ---------------------------------------------------------------------- */

static const char *opcode_name(int op)
{
    static const struct { int op; const char *name; } names[] = {
        {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"},
        {'F', "FLOAT"}, {'I', "INT"}, {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"},
        {'M', "BININT2"}, {'N', "NONE"}, {'P', "PERSID"}, {'Q', "BINPERSID"}, {'R', "REDUCE"},
        {'S', "STRING"}, {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"}, {'V', "UNICODE"},
        {'X', "BINUNICODE"}, {'a', "APPEND"}, {'b', "BUILD"}, {'c', "GLOBAL"}, {'d', "DICT"},
        {'}', "EMPTY_DICT"}, {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"}, {'i', "INST"},
        {'j', "LONG_BINGET"}, {'l', "LIST"}, {']', "EMPTY_LIST"}, {'o', "OBJ"}, {'p', "PUT"},
        {'q', "BINPUT"}, {'r', "LONG_BINPUT"}, {'s', "SETITEM"}, {'t', "TUPLE"},
        {')', "EMPTY_TUPLE"}, {'u', "SETITEMS"}, {'G', "BINFLOAT"}, {0x80, "PROTO"},
        {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {0x85, "TUPLE1"},
        {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"},
        {0x8a, "LONG1"}, {0x8b, "LONG4"}, {'B', "BINBYTES"}, {'C', "SHORT_BINBYTES"},
        {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"},
        {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"},
        {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"}, {0x95, "FRAME"}, {0x96, "BYTEARRAY8"},
        {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].op == op)
            return names[i].name;
    return NULL;
}

/* GLOBAL's argument ("module\nname\n"), read only to name it in the message. */
static void global_name(up *u, char *out, size_t cap)
{
    size_t k = 0;
    for (int lines = 0; lines < 2 && k + 1 < cap;) {
        if (need(u, 1) != ES_OK)
            break;
        char c = (char)u->buf[u->pos++];
        if (c == '\n') {
            lines++;
            c = lines < 2 ? '.' : '\0';
        }
        if (c >= 0x20 && c < 0x7f)
            out[k++] = c;
        else if (c)
            out[k++] = '?';
    }
    out[k] = '\0';
}

static int refuse(up *u, int op)
{
    const char *name = opcode_name(op);
    char what[160];
    if (!name) {
        snprintf(what, sizeof what, "0x%02x", op);
        return fail(u, ES_ERR_FORMAT, "unknown opcode %s: not a pickle", what);
    }
    if (op == 'c') {
        char g[128];
        global_name(u, g, sizeof g);
        snprintf(what, sizeof what, "GLOBAL %s", g);
        return fail(u, ES_ERR_UNSUPPORTED,
                    "opcode %s refused: only a dict of str to lists of numbers is read; "
                    "nothing is imported or called%s", what,
                    strncmp(g, "torch", 5) == 0 ? " (the file holds tensors: save .tolist() values)" : "");
    }
    snprintf(what, sizeof what, "%s ('%c')", name, op >= 0x20 && op < 0x7f ? op : '?');
    if (op >= 0x80)
        snprintf(what, sizeof what, "%s (0x%02x)", name, op);
    return fail(u, ES_ERR_UNSUPPORTED,
                "opcode %s refused: only a dict of str to lists of numbers is read; "
                "nothing is imported or called", what);
}

/* ---- the machine ------------------------------------------------------------------- */

static int op_appends(up *u)
{
    size_t at = 0;
    int rc = pop_mark(u, "APPENDS", &at);
    if (rc != ES_OK)
        return rc;
    if (at == 0)
        return underflow(u, "APPENDS");
    rc = extend(u, &u->stack[at - 1], &u->stack[at], u->sp - at, "APPENDS");
    u->sp = at;
    return rc;
}

static int op_setitems(up *u)
{
    size_t at = 0;
    int rc = pop_mark(u, "SETITEMS", &at);
    if (rc != ES_OK)
        return rc;
    if (at == 0)
        return underflow(u, "SETITEMS");
    if ((u->sp - at) % 2)
        return fail(u, ES_ERR_FORMAT, "SETITEMS with an odd number of items");
    rc = set_items(u, &u->stack[at - 1], &u->stack[at], (u->sp - at) / 2, "SETITEMS");
    u->sp = at;
    return rc;
}

static int op_mark(up *u)
{
    if (u->n_marks == u->cap_marks) {
        if (u->cap_marks >= MAX_STACK)
            return fail(u, ES_ERR_UNSUPPORTED, "too many nested MARKs");
        void *p = u->marks;
        if (es_grow(&p, &u->cap_marks, u->cap_marks + 1, sizeof *u->marks, 64))
            return nomem(u);
        u->marks = p;
    }
    u->marks[u->n_marks++] = u->sp;
    return ES_OK;
}

/* Runs one opcode; *stop is set by STOP. */
static int step(up *u, int *stop)
{
    uint64_t a;
    int rc;
    u->op_at = u->offset + u->pos;
    if ((rc = need(u, 1)) != ES_OK)
        return rc;
    int op = u->buf[u->pos++];
    switch (op) {
    case 0x80: /* PROTO */
        if ((rc = arg(u, 1, &a)) == ES_OK && (a < 2 || a > 5))
            rc = fail(u, ES_ERR_UNSUPPORTED, "pickle protocol outside 2..5");
        return rc;
    case 0x95: /* FRAME: a length prefix we do not need */
        return arg(u, 8, &a);
    case '(':
        return op_mark(u);
    case '}':
        if (u->have_dict)
            return fail(u, ES_ERR_UNSUPPORTED, "a second dict: only one flat dict is read");
        u->have_dict = 1;
        u->n_objects++;
        return push(u, (value){V_DICT, 0, 0, NULL, 0});
    case ']':
        return new_list(u);
    case 'X':
        return (rc = arg(u, 4, &a)) == ES_OK ? string(u, a) : rc;
    case 0x8c: /* SHORT_BINUNICODE */
        return (rc = arg(u, 1, &a)) == ES_OK ? string(u, a) : rc;
    case 0x8d: /* BINUNICODE8 */
        return (rc = arg(u, 8, &a)) == ES_OK ? string(u, a) : rc;
    case 'G':
        return binfloat(u);
    case 'J':
        return (rc = arg(u, 4, &a)) == ES_OK ? number(u, (int32_t)(uint32_t)a, 1) : rc;
    case 'K':
        return (rc = arg(u, 1, &a)) == ES_OK ? number(u, (double)a, 1) : rc;
    case 'M':
        return (rc = arg(u, 2, &a)) == ES_OK ? number(u, (double)a, 1) : rc;
    case 0x8a: /* LONG1 */
        return long1(u);
    case 'q':
        return (rc = arg(u, 1, &a)) == ES_OK ? put(u, a) : rc;
    case 'r':
        return (rc = arg(u, 4, &a)) == ES_OK ? put(u, a) : rc;
    case 0x94: /* MEMOIZE */
        return put(u, u->n_memo);
    case 'h':
        return (rc = arg(u, 1, &a)) == ES_OK ? get(u, a) : rc;
    case 'j':
        return (rc = arg(u, 4, &a)) == ES_OK ? get(u, a) : rc;
    case 'a': /* APPEND */
        if (u->sp < 2)
            return underflow(u, "APPEND");
        rc = extend(u, &u->stack[u->sp - 2], &u->stack[u->sp - 1], 1, "APPEND");
        u->sp--;
        return rc;
    case 'e':
        return op_appends(u);
    case 's': /* SETITEM */
        if (u->sp < 3)
            return underflow(u, "SETITEM");
        rc = set_items(u, &u->stack[u->sp - 3], &u->stack[u->sp - 2], 1, "SETITEM");
        u->sp -= 2;
        return rc;
    case 'u':
        return op_setitems(u);
    case '.': /* STOP */
        if (u->sp != 1 || u->stack[0].type != V_DICT || u->n_marks)
            return fail(u, ES_ERR_UNSUPPORTED, "the pickled object is not a dict of str to lists "
                        "of numbers");
        *stop = 1;
        return ES_OK;
    default:
        return refuse(u, op);
    }
}

int es_unpickle_dict(es_context *ctx, const char *name, es_byte_stream *in, uint64_t file_size,
                     es_emb_set *out)
{
    up *u = calloc(1, sizeof *u);
    if (!u)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    u->ctx = ctx;
    u->name = name;
    u->in = in;
    u->file_size = file_size;
    u->out = out;
    /* The values' room at once (es_emb_set_expect): page by page it was a
     * tenth of a large file's load. A float takes 9 bytes of pickle
     * (BINFLOAT), so a pickle of B bytes holds at most B / 9 of them (ints take
     * fewer and grow the array further, as before). Only where B is the
     * pickle's real size: a plain pickle, or a zip member no larger than the
     * file (stored, as torch.save writes data.pkl). */
    uint64_t bytes = in->size;
    if ((!file_size || bytes <= file_size) && bytes / 9 <= SIZE_MAX / sizeof *out->vals)
        es_emb_set_expect(out, (size_t)(bytes / 9));
    int rc = ES_OK, stop = 0;
    while (rc == ES_OK && !stop)
        rc = step(u, &stop);
    free(u->stack);
    free(u->marks);
    free(u->memo);
    free(u->lists);
    es_strbuf_release(&u->str);
    free(u);
    return rc;
}
