#include "formats/parquet/codec/pq_column.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/parquet/codec/pq_codec.h"
#include "formats/parquet/codec/pq_rle.h"

/* Limits on what a page header may make us allocate. A page is at most 1 GiB
 * uncompressed (one value of audio_data is one page at most: an hour of 48 kHz
 * stereo 24-bit audio is 1 GiB), and compresses at most 4096:1 unless it is
 * small (zstd and gzip can do better on silence; no CosyVoice column does).
 * A page holds at most 2^28 level entries, and no more than 8 per byte plus a
 * million (all-null runs compress to nothing in RLE). */
#define MAX_PAGE (1u << 30)
#define MAX_RATIO 4096u
#define SMALL_PAGE (16u << 20)
#define MAX_ENTRIES (1u << 28)
#define FIRST_HEADER_READ 256

static int failf(pq_column *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->status = status;
    return status;
}

/* Makes *p hold at least `need` bytes. The old content is not kept (every
 * buffer here is refilled after growing), so there is no copy, and sizes jump
 * to the next power of two: a growing page costs few allocations. */
static int reserve(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = 4096;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    free(*p);
    *p = malloc(n);
    *cap = *p ? n : 0;
    return *p ? 0 : -1;
}

/* pread exactly n bytes at off. */
static int read_at(pq_column *c, uint8_t *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(c->f->fd, buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return failf(c, ES_ERR_IO, "page %u: read error: %s", c->page_no, strerror(errno));
        if (r == 0)
            return failf(c, ES_ERR_FORMAT, "page %u: file ends early (truncated while reading?)", c->page_no);
        got += (size_t)r;
    }
    return ES_OK;
}

int pq_column_open(pq_column *c, const es_pq_file *f, uint32_t rg, const pq_leaf *leaf,
                   int want_values)
{
    /* keep the buffers of a previous chunk: a new allocation costs page faults */
    c->f = f;
    c->leaf = leaf;
    c->meta = &f->meta.row_groups[rg].columns[leaf->index];
    c->want_values = want_values;
    c->pos = c->end = c->entries_left = 0;
    c->page_no = 0;
    c->has_dict = 0;
    c->n_dict = 0;
    c->n = c->i = c->vi = c->n_vals = 0;
    c->status = 0;
    c->err[0] = '\0';
    const pq_column_meta *m = c->meta;
    if (m->has_file_path)
        return failf(c, ES_ERR_UNSUPPORTED, "data in another file (ColumnChunk.file_path)");
    if (!pq_codec_supported(m->codec))
        return failf(c, ES_ERR_UNSUPPORTED, "codec %s is not supported", pq_codec_name(m->codec));
    uint64_t start = (uint64_t)m->data_page_offset;
    if (m->dictionary_page_offset > 0 && (uint64_t)m->dictionary_page_offset < start)
        start = (uint64_t)m->dictionary_page_offset;
    uint64_t size = (uint64_t)m->total_compressed_size;
    if (start < 4 || start > f->data_end || size > f->data_end - start)
        return failf(c, ES_ERR_FORMAT,
                     "chunk at bytes %llu..%llu lies outside the data (the footer starts at %llu)",
                     (unsigned long long)start, (unsigned long long)(start + size),
                     (unsigned long long)f->data_end);
    c->pos = start;
    c->end = start + size;
    c->entries_left = (uint64_t)m->num_values;
    return ES_OK;
}

static int read_header(pq_column *c, pq_page_header *h)
{
    size_t avail = (size_t)(c->end - c->pos);
    size_t want = avail < FIRST_HEADER_READ ? avail : FIRST_HEADER_READ;
    char err[200];
    for (;;) {
        if (reserve(&c->hdr, &c->hdr_cap, want + 1))
            return failf(c, ES_ERR_NOMEM, "out of memory");
        int rc = read_at(c, c->hdr, want, c->pos);
        if (rc != ES_OK)
            return rc;
        size_t used;
        rc = pq_page_header_decode(c->hdr, want, h, &used, err, sizeof err);
        if (rc == 0) {
            c->pos += used;
            return ES_OK;
        }
        if (rc < 0)
            return failf(c, ES_ERR_FORMAT, "page %u: %s", c->page_no, err);
        if (want == avail)
            return failf(c, ES_ERR_FORMAT, "page %u: page header runs past the end of the column chunk",
                         c->page_no);
        want = avail / 4 < want ? avail : want * 4;
    }
}

/* Checks the sizes a header declares against the chunk and the limits. */
static int check_sizes(pq_column *c, const pq_page_header *h, int uncompressed)
{
    uint64_t left = c->end - c->pos;
    if ((uint64_t)h->compressed_size > left)
        return failf(c, ES_ERR_FORMAT, "page %u: compressed size %d runs past the column chunk (%llu bytes left)",
                     c->page_no, h->compressed_size, (unsigned long long)left);
    uint64_t u = (uint64_t)h->uncompressed_size, z = (uint64_t)h->compressed_size;
    if (uncompressed && u != z)
        return failf(c, ES_ERR_FORMAT, "page %u: uncompressed page of %llu bytes declares %llu",
                     c->page_no, (unsigned long long)z, (unsigned long long)u);
    if (u > MAX_PAGE || (u > SMALL_PAGE && u / MAX_RATIO > z))
        return failf(c, ES_ERR_FORMAT, "page %u: %llu bytes compress to %llu: not believable",
                     c->page_no, (unsigned long long)u, (unsigned long long)z);
    return ES_OK;
}

/* Reads the page body; decompresses bytes [skip, compressed) into c->page when
 * `compressed` (v2 levels stay as read). Sets data and len to the values part. */
static int read_body(pq_column *c, const pq_page_header *h, size_t skip, int compressed,
                     const uint8_t **data, size_t *len)
{
    size_t z = (size_t)h->compressed_size, u = (size_t)h->uncompressed_size;
    if (reserve(&c->raw, &c->raw_cap, z + 1))
        return failf(c, ES_ERR_NOMEM, "page %u: out of memory (%zu bytes)", c->page_no, z);
    int rc = read_at(c, c->raw, z, c->pos);
    if (rc != ES_OK)
        return rc;
    c->pos += z;
    if (!compressed) {
        *data = c->raw + skip;
        *len = z - skip;
        return ES_OK;
    }
    if (reserve(&c->page, &c->page_cap, u - skip + 1))
        return failf(c, ES_ERR_NOMEM, "page %u: out of memory (%zu bytes)", c->page_no, u);
    char err[200];
    if (pq_decompress(c->meta->codec, &c->zstate, c->raw + skip, z - skip, c->page, u - skip, err,
                      sizeof err) < 0)
        return failf(c, ES_ERR_FORMAT, "page %u: %s", c->page_no, err);
    *data = c->page;
    *len = u - skip;
    return ES_OK;
}

static void swap_buffers(uint8_t **a, size_t *acap, uint8_t **b, size_t *bcap)
{
    uint8_t *p = *a;
    size_t cap = *acap;
    *a = *b;
    *acap = *bcap;
    *b = p;
    *bcap = cap;
}

static int dictionary_page(pq_column *c, const pq_page_header *h)
{
    if (c->page_no != 0 || c->has_dict)
        return failf(c, ES_ERR_FORMAT, "page %u: a dictionary page that is not the chunk's first page",
                     c->page_no);
    if (h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICTIONARY)
        return failf(c, ES_ERR_FORMAT, "page %u: dictionary page in encoding %s", c->page_no,
                     pq_encoding_name(h->encoding));
    int rc = check_sizes(c, h, c->meta->codec == PQ_UNCOMPRESSED);
    if (rc != ES_OK)
        return rc;
    c->has_dict = 1;
    if (!c->want_values) { /* levels only: the dictionary is not needed */
        c->pos += (uint64_t)h->compressed_size;
        return ES_OK;
    }
    const uint8_t *data;
    size_t len;
    rc = read_body(c, h, 0, c->meta->codec != PQ_UNCOMPRESSED, &data, &len);
    if (rc != ES_OK)
        return rc;
    if ((uint64_t)h->num_values > (uint64_t)len * 8 + 8)
        return failf(c, ES_ERR_FORMAT, "page %u: dictionary of %d values in %zu bytes", c->page_no,
                     h->num_values, len);
    /* The dictionary's bytes must outlive later pages: its buffer changes places
     * with the dictionary buffer of the previous chunk. */
    if (data == c->page)
        swap_buffers(&c->page, &c->page_cap, &c->dict_data, &c->dict_cap);
    else
        swap_buffers(&c->raw, &c->raw_cap, &c->dict_data, &c->dict_cap);
    char err[200];
    rc = pq_values_decode(c->leaf->type, c->leaf->type_length, PQ_ENC_PLAIN, data, len,
                          (size_t)h->num_values, NULL, 0, 0, &c->dict_values, err, sizeof err);
    if (rc == -2)
        return failf(c, ES_ERR_NOMEM, "out of memory");
    if (rc < 0)
        return failf(c, ES_ERR_FORMAT, "page %u: dictionary: %s", c->page_no, err);
    c->n_dict = (size_t)h->num_values;
    return ES_OK;
}

/* v1 levels: RLE with a 4-byte length, or BIT_PACKED; advances p and n. */
static int levels_v1(pq_column *c, int encoding, int max, uint8_t *out, size_t count,
                     const uint8_t **p, size_t *n, const char *what)
{
    if (max == 0) {
        memset(out, 0, count);
        return ES_OK;
    }
    size_t len;
    if (encoding == PQ_ENC_RLE) {
        if (*n < 4)
            return failf(c, ES_ERR_FORMAT, "page %u: %s levels: length runs past the page", c->page_no, what);
        len = (size_t)((*p)[0] | (*p)[1] << 8 | (*p)[2] << 16 | (uint32_t)(*p)[3] << 24);
        *p += 4;
        *n -= 4;
    } else {
        len = (count * (size_t)pq_bit_width((uint32_t)max) + 7) / 8;
    }
    if (len > *n)
        return failf(c, ES_ERR_FORMAT, "page %u: %s levels: %zu bytes run past the page (%zu left)",
                     c->page_no, what, len, *n);
    char err[200];
    if (pq_levels_decode(encoding, *p, len, max, out, count, what, err, sizeof err) < 0)
        return failf(c, ES_ERR_FORMAT, "page %u: %s", c->page_no, err);
    *p += len;
    *n -= len;
    return ES_OK;
}

static int levels_v2(pq_column *c, const uint8_t *p, size_t len, int max, uint8_t *out,
                     size_t count, const char *what)
{
    if (max == 0) {
        memset(out, 0, count);
        return ES_OK;
    }
    char err[200];
    if (pq_levels_decode(PQ_ENC_RLE, p, len, max, out, count, what, err, sizeof err) < 0)
        return failf(c, ES_ERR_FORMAT, "page %u: %s", c->page_no, err);
    return ES_OK;
}

static int check_entries(pq_column *c, const pq_page_header *h, size_t bytes)
{
    uint64_t n = (uint64_t)h->num_values;
    if (n > c->entries_left)
        return failf(c, ES_ERR_FORMAT, "page %u: %llu values, but the chunk has only %llu left of the %lld it declares",
                     c->page_no, (unsigned long long)n, (unsigned long long)c->entries_left,
                     (long long)c->meta->num_values);
    if (n > MAX_ENTRIES || n > (uint64_t)bytes * 8 + (1u << 20))
        return failf(c, ES_ERR_FORMAT, "page %u: %llu values in %zu bytes: not believable",
                     c->page_no, (unsigned long long)n, bytes);
    if (reserve(&c->def, &c->def_cap, n + 1) || reserve(&c->rep, &c->rep_cap, n + 1))
        return failf(c, ES_ERR_NOMEM, "out of memory");
    return ES_OK;
}

static int decode_values(pq_column *c, int encoding, const uint8_t *data, size_t len, size_t page_bytes)
{
    const pq_leaf *l = c->leaf;
    uint32_t nv = 0;
    for (uint32_t i = 0; i < c->n; i++)
        nv += c->def[i] == l->max_def;
    c->n_vals = nv;
    if (!c->want_values)
        return ES_OK;
    size_t limit = (size_t)page_bytes * 64 + (1u << 20);
    if (limit > MAX_PAGE)
        limit = MAX_PAGE;
    char err[200];
    const pq_value *dict = c->has_dict && c->want_values ? c->dict_values.vals : NULL;
    int rc = pq_values_decode(l->type, l->type_length, encoding, data, len, nv, dict, c->n_dict,
                              limit, &c->values, err, sizeof err);
    if (rc == -2)
        return failf(c, ES_ERR_NOMEM, "out of memory");
    if (rc < 0)
        return failf(c, ES_ERR_FORMAT, "page %u: %s", c->page_no, err);
    return ES_OK;
}

static int data_page_v1(pq_column *c, const pq_page_header *h)
{
    int rc = check_sizes(c, h, c->meta->codec == PQ_UNCOMPRESSED);
    const uint8_t *p;
    size_t n;
    if (rc == ES_OK)
        rc = read_body(c, h, 0, c->meta->codec != PQ_UNCOMPRESSED, &p, &n);
    if (rc == ES_OK)
        rc = check_entries(c, h, n);
    if (rc != ES_OK)
        return rc;
    c->n = (uint32_t)h->num_values;
    rc = levels_v1(c, h->rep_encoding, c->leaf->max_rep, c->rep, c->n, &p, &n, "repetition");
    if (rc == ES_OK)
        rc = levels_v1(c, h->def_encoding, c->leaf->max_def, c->def, c->n, &p, &n, "definition");
    if (rc == ES_OK)
        rc = decode_values(c, h->encoding, p, n, (size_t)h->uncompressed_size);
    return rc;
}

static int data_page_v2(pq_column *c, const pq_page_header *h)
{
    int compressed = c->meta->codec != PQ_UNCOMPRESSED && h->is_compressed;
    int rc = check_sizes(c, h, !compressed);
    if (rc != ES_OK)
        return rc;
    uint64_t lv = (uint64_t)h->rep_length + (uint64_t)h->def_length;
    if (lv > (uint64_t)h->compressed_size || lv > (uint64_t)h->uncompressed_size)
        return failf(c, ES_ERR_FORMAT, "page %u: %llu bytes of levels in a page of %d", c->page_no,
                     (unsigned long long)lv, h->compressed_size);
    const uint8_t *p;
    size_t n;
    rc = read_body(c, h, (size_t)lv, compressed, &p, &n);
    if (rc == ES_OK)
        rc = check_entries(c, h, (size_t)h->uncompressed_size);
    if (rc != ES_OK)
        return rc;
    c->n = (uint32_t)h->num_values;
    rc = levels_v2(c, c->raw, (size_t)h->rep_length, c->leaf->max_rep, c->rep, c->n, "repetition");
    if (rc == ES_OK)
        rc = levels_v2(c, c->raw + h->rep_length, (size_t)h->def_length, c->leaf->max_def, c->def,
                       c->n, "definition");
    if (rc == ES_OK)
        rc = decode_values(c, h->encoding, p, n, (size_t)h->uncompressed_size);
    if (rc == ES_OK && c->n_vals != c->n - (uint32_t)h->num_nulls)
        rc = failf(c, ES_ERR_FORMAT, "page %u: levels give %u values, the header %d values and %d nulls",
                   c->page_no, c->n_vals, h->num_values, h->num_nulls);
    return rc;
}

/* A data page that *skip entries cover whole is passed over unread. */
static int skip_page(pq_column *c, const pq_page_header *h, uint64_t *skip)
{
    uint64_t n = (uint64_t)h->num_values;
    if ((uint64_t)h->compressed_size > c->end - c->pos)
        return failf(c, ES_ERR_FORMAT, "page %u: compressed size %d runs past the column chunk",
                     c->page_no, h->compressed_size);
    if (n > c->entries_left)
        return failf(c, ES_ERR_FORMAT, "page %u: %llu values, but the chunk has only %llu left",
                     c->page_no, (unsigned long long)n, (unsigned long long)c->entries_left);
    c->pos += (uint64_t)h->compressed_size;
    c->entries_left -= n;
    *skip -= n;
    c->pages_skipped++;
    return ES_OK;
}

static int is_data_page(int type)
{
    return type == PQ_PAGE_DATA || type == PQ_PAGE_DATA_V2;
}

/* Loads the next data page, passing over those that `skip` (entries still to
 * skip; NULL: none) covers whole. 1: loaded, 0: chunk done, negative: error. */
static int next_page(pq_column *c, uint64_t *skip)
{
    for (;;) {
        if (c->entries_left == 0)
            return 0; /* whatever follows (index pages, padding) is not ours */
        if (c->pos >= c->end)
            return failf(c, ES_ERR_FORMAT, "column chunk ends after %llu of the %lld values it declares",
                         (unsigned long long)((uint64_t)c->meta->num_values - c->entries_left),
                         (long long)c->meta->num_values);
        pq_page_header h;
        int rc = read_header(c, &h);
        if (rc != ES_OK)
            return rc;
        c->n = c->i = c->vi = c->n_vals = 0;
        if (skip && is_data_page(h.type) && h.num_values > 0 && (uint64_t)h.num_values <= *skip) {
            rc = skip_page(c, &h, skip);
            if (rc != ES_OK)
                return rc;
            c->page_no++;
            continue;
        }
        switch (h.type) {
        case PQ_PAGE_DICTIONARY:
            rc = dictionary_page(c, &h);
            break;
        case PQ_PAGE_DATA:
            rc = data_page_v1(c, &h);
            break;
        case PQ_PAGE_DATA_V2:
            rc = data_page_v2(c, &h);
            break;
        default: /* index pages and kinds we do not know: skip */
            if ((uint64_t)h.compressed_size > c->end - c->pos)
                return failf(c, ES_ERR_FORMAT, "page %u: compressed size %d runs past the column chunk",
                             c->page_no, h.compressed_size);
            c->pos += (uint64_t)h.compressed_size;
            break;
        }
        if (rc != ES_OK)
            return rc;
        c->page_no++;
        if (is_data_page(h.type)) {
            c->entries_left -= c->n;
            c->pages_decoded++;
            return 1;
        }
    }
}

int pq_column_next(pq_column *c, pq_entry *e)
{
    if (c->status)
        return c->status;
    while (c->i >= c->n) {
        int rc = next_page(c, NULL);
        if (rc <= 0)
            return rc;
    }
    e->def = c->def[c->i];
    e->rep = c->rep[c->i];
    e->ptr = NULL;
    e->len = 0;
    if (e->def == c->leaf->max_def && c->want_values) {
        const pq_value *v = &c->values.vals[c->vi++];
        e->ptr = v->ptr;
        e->len = v->len;
    }
    c->i++;
    return 1;
}

/* Moves the cursor n entries on inside the current page. */
static void advance(pq_column *c, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        c->vi += c->def[c->i + k] == c->leaf->max_def && c->want_values;
    c->i += n;
}

int pq_column_skip(pq_column *c, uint64_t n)
{
    if (c->status)
        return c->status;
    if (c->leaf->max_rep != 0)
        return failf(c, ES_ERR_INTERNAL, "skipping rows of a repeated column");
    uint64_t here = c->n - c->i;
    if (n <= here) {
        advance(c, (uint32_t)n);
        return ES_OK;
    }
    n -= here;
    c->i = c->n;
    while (n > 0) {
        int rc = next_page(c, &n);
        if (rc < 0)
            return rc;
        if (rc == 0 && n > 0)
            return failf(c, ES_ERR_FORMAT, "column chunk ends %llu values early",
                         (unsigned long long)n);
        uint32_t k = n < c->n ? (uint32_t)n : c->n;
        advance(c, k);
        n -= k;
    }
    return ES_OK;
}

int pq_column_walk(pq_column *c, pq_page_header *h, uint64_t *body)
{
    if (c->status)
        return c->status;
    if (c->entries_left == 0)
        return 0;
    if (c->pos >= c->end)
        return failf(c, ES_ERR_FORMAT, "column chunk ends after %llu of the %lld values it declares",
                     (unsigned long long)((uint64_t)c->meta->num_values - c->entries_left),
                     (long long)c->meta->num_values);
    int rc = read_header(c, h);
    if (rc != ES_OK)
        return rc;
    if ((uint64_t)h->compressed_size > c->end - c->pos)
        return failf(c, ES_ERR_FORMAT, "page %u: compressed size %d runs past the column chunk",
                     c->page_no, h->compressed_size);
    if (is_data_page(h->type)) {
        if ((uint64_t)h->num_values > c->entries_left)
            return failf(c, ES_ERR_FORMAT, "page %u: %d values, but the chunk has only %llu left",
                         c->page_no, h->num_values, (unsigned long long)c->entries_left);
        c->entries_left -= (uint64_t)h->num_values;
    }
    *body = c->pos;
    c->pos += (uint64_t)h->compressed_size;
    c->page_no++;
    return 1;
}

void pq_column_release(pq_column *c)
{
    free(c->hdr);
    free(c->raw);
    free(c->page);
    pq_decompress_free(c->zstate);
    free(c->dict_data);
    free(c->def);
    free(c->rep);
    pq_value_buf_release(&c->values);
    pq_value_buf_release(&c->dict_values);
    memset(c, 0, sizeof *c);
}
