/* NumPy .npy files (format versions 1, 2 and 3): a 2-D float16/32/64 matrix in
 * C order (or a 1-D vector: one row), converted to float. The header is a
 * Python dict literal with exactly the keys 'descr', 'fortran_order' and
 * 'shape'; it is parsed as data, never evaluated. Object arrays, structured
 * dtypes, Fortran order and other element types are refused. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_stream.h"
#include "validate/emb_kernel.h"
#include "validate/sources/emb_source.h"

enum { MAX_HEADER = 1 << 20, CHUNK = 1 << 16 };

typedef struct hdr {
    const char *p, *end;
} hdr;

static void skip_ws(hdr *h)
{
    while (h->p < h->end && isspace((unsigned char)*h->p))
        h->p++;
}

static int eat(hdr *h, char c)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return 1;
    }
    return 0;
}

/* A quoted string without escapes into out (cap bytes). */
static int quoted(hdr *h, char *out, size_t cap)
{
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
        return -1;
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (*h->p == '\\' || n + 1 >= cap)
            return -1;
        out[n++] = *h->p++;
    }
    if (h->p >= h->end)
        return -1;
    h->p++;
    out[n] = '\0';
    return 0;
}

static int word(hdr *h, const char *w)
{
    skip_ws(h);
    size_t n = strlen(w);
    if ((size_t)(h->end - h->p) >= n && !memcmp(h->p, w, n)) {
        h->p += n;
        return 1;
    }
    return 0;
}

/* (a, b) or (a,) or (): up to 3 dimensions. */
static int shape(hdr *h, size_t *dims, int *ndim)
{
    if (!eat(h, '('))
        return -1;
    *ndim = 0;
    for (;;) {
        skip_ws(h);
        if (eat(h, ')'))
            return 0;
        if (*ndim == 3 || h->p >= h->end || !isdigit((unsigned char)*h->p))
            return -1;
        size_t v = 0;
        while (h->p < h->end && isdigit((unsigned char)*h->p)) {
            if (v > (SIZE_MAX - 9) / 10)
                return -1;
            v = v * 10 + (size_t)(*h->p++ - '0');
        }
        dims[(*ndim)++] = v;
        if (!eat(h, ',')) {
            if (!eat(h, ')'))
                return -1;
            return 0;
        }
    }
}

static int parse_header(es_context *ctx, const char *name, const char *text, size_t len,
                        es_npy_info *info)
{
    hdr h = {text, text + len};
    char key[32], fortran = -1;
    size_t dims[3] = {0};
    int have_descr = 0, have_shape = 0, ndim = 0;
    if (!eat(&h, '{'))
        return es_fail(ctx, ES_ERR_FORMAT, "%s: .npy header is not a dict", name);
    while (!eat(&h, '}')) {
        if (quoted(&h, key, sizeof key) || !eat(&h, ':'))
            return es_fail(ctx, ES_ERR_FORMAT, "%s: malformed .npy header", name);
        if (!strcmp(key, "descr")) {
            if (quoted(&h, info->descr, sizeof info->descr))
                return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: .npy dtype is not a simple type "
                               "(structured arrays are not embeddings)", name);
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order")) {
            fortran = word(&h, "True") ? 1 : word(&h, "False") ? 0 : -1;
            if (fortran < 0)
                return es_fail(ctx, ES_ERR_FORMAT, "%s: malformed .npy header", name);
        } else if (!strcmp(key, "shape")) {
            if (shape(&h, dims, &ndim))
                return es_fail(ctx, ES_ERR_FORMAT, "%s: malformed .npy shape", name);
            have_shape = 1;
        } else {
        {
            char k[40];
            return es_fail(ctx, ES_ERR_FORMAT, "%s: unexpected key '%s' in the .npy header", name,
                           es_printable(k, sizeof k, key, SIZE_MAX));
        }
        }
        if (!eat(&h, ',')) {
            if (!eat(&h, '}'))
                return es_fail(ctx, ES_ERR_FORMAT, "%s: malformed .npy header", name);
            break;
        }
    }
    skip_ws(&h);
    if (h.p != h.end || !have_descr || !have_shape || fortran < 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: malformed .npy header", name);
    if (fortran)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: Fortran-order .npy: save it in C order", name);
    if (ndim != 1 && ndim != 2)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: a %d-D array: embeddings are 2-D (rows x "
                       "dimension) or one 1-D vector", name, ndim);
    info->ndim = ndim;
    info->rows = ndim == 1 ? 1 : dims[0];
    info->cols = ndim == 1 ? dims[0] : dims[1];
    const char *d = info->descr;
    if (strlen(d) != 3 || (d[0] != '<' && d[0] != '>') || d[1] != 'f' ||
        (d[2] != '2' && d[2] != '4' && d[2] != '8'))
    {
        char t[16];
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: .npy dtype '%s': only float16/32/64 ('<f2', "
                       "'<f4', '<f8') are embeddings", name, es_printable(t, sizeof t, d, SIZE_MAX));
    }
    return ES_OK;
}

/* Element k of a chunk as float. */
static float element(const unsigned char *b, int size, int big)
{
    unsigned char t[8];
    for (int i = 0; i < size; i++)
        t[i] = big ? b[size - 1 - i] : b[i];
    if (size == 2) {
        uint16_t h = (uint16_t)(t[0] | t[1] << 8);
        return es_k_f16_to_f32(h);
    }
    if (size == 4) {
        float f;
        memcpy(&f, t, 4);
        return f;
    }
    double x;
    memcpy(&x, t, 8);
    return (float)x;
}

/* Little-endian float32, the common case (numpy's default '<f4'), is already
 * what the set holds: read straight into it, DIRECT_CHUNK bytes at a time (as
 * elsewhere here, the host is taken to be little-endian). When the file holds
 * all the header promises, the room for it is taken at once
 * (es_emb_set_expect: grown by doubling, a 1 GiB matrix was copied whole on
 * the way). A shorter file is read as it goes, to its "truncated" error. */
enum { DIRECT_CHUNK = 4 << 20 };

static int read_f32_direct(es_context *ctx, const char *name, es_byte_stream *in,
                           const es_npy_info *info, size_t total, es_emb_set *out)
{
    size_t done = 0;
    uint64_t left = in->size > in->consumed ? in->size - in->consumed : 0;
    if (left / 4 >= total)
        es_emb_set_expect(out, total);
    while (done < total) {
        size_t k = total - done < DIRECT_CHUNK / 4 ? total - done : DIRECT_CHUNK / 4;
        if (es_emb_set_reserve(out, k) != ES_OK)
            return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
        uint64_t before = in->consumed;
        ssize_t got = es_stream_read_full(in, out->vals + out->n_vals, k * 4);
        if (got < 0)
            return es_fail(ctx, ES_ERR_IO, "%s: read error", name);
        es_emb_set_progress(out, before, in->consumed);
        out->n_vals += (size_t)got / 4;
        done += (size_t)got / 4;
        if ((size_t)got < k * 4)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: truncated: the header says %zu x %zu values, "
                           "the file holds %zu", name, info->rows, info->cols, done);
    }
    return ES_OK;
}

static int read_data(es_context *ctx, const char *name, es_byte_stream *in, const es_npy_info *info,
                     es_emb_set *out)
{
    int size = info->descr[2] - '0', big = info->descr[0] == '>';
    if (info->cols && info->rows > SIZE_MAX / info->cols / 8)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: .npy shape (%zu, %zu) is too large", name, info->rows,
                       info->cols);
    size_t total = info->rows * info->cols, done = 0;
    if (size == 4 && !big && !out->lengths_only) /* (a set that only counts: pushed) */
        return read_f32_direct(ctx, name, in, info, total, out);
    unsigned char *buf = malloc(CHUNK);
    if (!buf)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    int rc = ES_OK;
    while (rc == ES_OK && done < total) {
        size_t want = (total - done) * (size_t)size;
        if (want > CHUNK)
            want = CHUNK;
        uint64_t before = in->consumed;
        ssize_t got = es_stream_read_full(in, buf, want);
        if (got < 0) {
            rc = es_fail(ctx, ES_ERR_IO, "%s: read error", name);
            break;
        }
        es_emb_set_progress(out, before, in->consumed);
        size_t k = (size_t)got / (size_t)size;
        if (es_emb_set_reserve(out, k) != ES_OK) {
            rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
            break;
        }
        for (size_t i = 0; i < k; i++)
            out->vals[out->n_vals++] = element(buf + i * (size_t)size, size, big);
        done += k;
        if ((size_t)got < want)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: truncated: the header says %zu x %zu values, the "
                         "file holds %zu", name, info->rows, info->cols, done);
    }
    free(buf);
    return rc;
}

int es_npy_read(es_context *ctx, const char *name, es_byte_stream *in, es_npy_info *info,
                es_emb_set *out)
{
    unsigned char pre[12];
    memset(info, 0, sizeof *info);
    if (es_stream_read_full(in, pre, 10) != 10 || memcmp(pre, "\x93NUMPY", 6))
        return es_fail(ctx, ES_ERR_FORMAT, "%s: not a .npy file", name);
    int major = pre[6];
    if (major < 1 || major > 3)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: .npy format version %d.%d", name, major, pre[7]);
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    if (major >= 2) {
        if (es_stream_read_full(in, pre + 10, 2) != 2)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: truncated .npy header", name);
        hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    }
    if (hlen > MAX_HEADER)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: .npy header of %zu bytes", name, hlen);
    char *text = malloc(hlen + 1);
    if (!text)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", name);
    int rc = ES_OK;
    if ((size_t)es_stream_read_full(in, text, hlen) != hlen)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: truncated .npy header", name);
    if (rc == ES_OK)
        rc = parse_header(ctx, name, text, hlen, info);
    free(text);
    return rc == ES_OK ? read_data(ctx, name, in, info, out) : rc;
}

/* "dir/LJ050-0131.npy" → "LJ050-0131". */
static const char *stem(const char *path, size_t *len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 4 && !strcmp(base + n - 4, ".npy"))
        n -= 4;
    *len = n;
    return base;
}

int es_npy_load(es_context *ctx, const char *path, const char *keys_path, es_emb_set *out)
{
    es_byte_stream s;
    es_file_stream f;
    int e = es_file_stream_open(&s, &f, path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(e));
    es_npy_info info;
    int rc = es_npy_read(ctx, path, &s, &info, out);
    es_file_stream_close(&f);
    if (rc != ES_OK)
        return rc;
    if (info.cols > UINT32_MAX)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: dimension %zu", path, info.cols);
    if (keys_path)
        return es_key_list_read(ctx, keys_path, out, info.rows, info.cols);
    if (info.ndim == 2)
        return es_fail(ctx, ES_ERR_USAGE, "%s: a 2-D .npy needs a key list naming its %zu rows",
                       path, info.rows);
    size_t n;
    const char *key = stem(path, &n);
    return es_emb_set_add(ctx, out, key, n, 0, (uint32_t)info.cols);
}

static int npy_bid(const uint8_t *b, size_t n)
{
    return n >= 6 && !memcmp(b, "\x93NUMPY", 6) ? 10 : 0;
}

static int npy_source_load(es_context *ctx, const char *path, const es_emb_load_args *a,
                           es_emb_set *out)
{
    return es_npy_load(ctx, path, a->keys_path, out);
}

const es_emb_source_ops es_emb_source_npy = {"npy", npy_bid, npy_source_load};
