/* Baselines for tools/bench/bench_parquet.sh: what measuring a CosyVoice parquet
 * shard must cost at least — decompressing the pages of the columns it needs.
 *
 *   bench_parquet_pages decompress FILE...   read + decompress only: every page of
 *       the needed columns (utt, audio_data, text, spk, speech_token,
 *       utt_embedding, spk_embedding) is pread into a reused buffer and
 *       decompressed into another (libsnappy / libzstd / zlib, as the reader
 *       calls them); page offsets are found before the clock starts
 *   bench_parquet_pages decode FILE...       our page decoder without audio probes:
 *       the reader's column pass (pread, decompress, levels, values) over the same
 *       columns, timed whole
 *   bench_parquet_pages extract FILE OUT     writes the needed columns' compressed
 *       page payloads back to back (for ZSTD files: a multi-frame .zst that
 *       `zstd -d` reads)
 *
 * Prints "seconds bytes_out" for the first two modes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "formats/parquet/codec/pq_codec.h"
#include "formats/parquet/codec/pq_column.h"
#include "formats/parquet/codec/pq_file.h"
#include "formats/parquet/codec/pq_meta.h"
#include "bench_clock.h"

static const char *const needed[] = {"utt", "audio_data", "text", "spk", "speech_token",
                                     "utt_embedding", "spk_embedding"};
#define N_NEEDED (sizeof needed / sizeof needed[0])

typedef struct page {
    int codec;
    int fd;
    uint64_t off;  /* compressed payload in the file */
    size_t n, out;
    uint8_t *data; /* extract mode only */
} page;

typedef struct pages {
    page *p;
    size_t n, cap;
} pages;

static void die(const char *msg, const char *arg)
{
    fprintf(stderr, "bench_parquet_pages: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    exit(2);
}

/* Collects where the compressed payload of every page of one column chunk is. */
static void collect_chunk(const es_pq_file *f, const pq_column_meta *m, pages *out, int load)
{
    uint64_t pos = (uint64_t)m->data_page_offset;
    if (m->dictionary_page_offset > 0 && (uint64_t)m->dictionary_page_offset < pos)
        pos = (uint64_t)m->dictionary_page_offset;
    uint64_t end = pos + (uint64_t)m->total_compressed_size;
    uint8_t hdr[65536];
    while (pos < end) {
        size_t want = end - pos < sizeof hdr ? (size_t)(end - pos) : sizeof hdr;
        if (pread(f->fd, hdr, want, (off_t)pos) != (ssize_t)want)
            die("read error", f->path);
        pq_page_header h;
        size_t used;
        char err[200];
        if (pq_page_header_decode(hdr, want, &h, &used, err, sizeof err) != 0)
            die("bad page header", f->path);
        pos += used;
        size_t skip = h.type == PQ_PAGE_DATA_V2 ? (size_t)(h.def_length + h.rep_length) : 0;
        int compressed = m->codec != PQ_UNCOMPRESSED && !(h.type == PQ_PAGE_DATA_V2 && !h.is_compressed);
        if (compressed && h.type != PQ_PAGE_INDEX) {
            if (out->n == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 256;
                out->p = realloc(out->p, out->cap * sizeof *out->p);
            }
            page *p = &out->p[out->n++];
            p->codec = m->codec;
            p->fd = f->fd;
            p->off = pos + skip;
            p->n = (size_t)h.compressed_size - skip;
            p->out = (size_t)h.uncompressed_size - skip;
            p->data = load ? malloc(p->n + 1) : NULL;
            if (load && (!p->data || pread(f->fd, p->data, p->n, (off_t)p->off) != (ssize_t)p->n))
                die("read error", f->path);
        }
        pos += (uint64_t)h.compressed_size;
    }
}

/* The file stays open (its fd is used by the pages) until exit. */
static void collect(const char *path, pages *out, int load)
{
    es_context ctx = {0};
    es_pq_file *f;
    if (es_pq_file_open(&ctx, path, &f) != ES_OK)
        die(ctx.msg, NULL);
    for (uint32_t g = 0; g < f->meta.n_row_groups; g++)
        for (size_t c = 0; c < N_NEEDED; c++) {
            const pq_leaf *l = es_pq_file_column(f, needed[c]);
            if (l)
                collect_chunk(f, &f->meta.row_groups[g].columns[l->index], out, load);
        }
}

static void decompress(int argc, char **argv)
{
    pages ps = {0};
    for (int i = 0; i < argc; i++)
        collect(argv[i], &ps, 0);
    size_t max_in = 1, max_out = 1, total = 0;
    for (size_t i = 0; i < ps.n; i++) {
        max_in = ps.p[i].n > max_in ? ps.p[i].n : max_in;
        max_out = ps.p[i].out > max_out ? ps.p[i].out : max_out;
    }
    uint8_t *in = malloc(max_in), *buf = malloc(max_out);
    char err[200];
    void *zstate = NULL; /* one decompressor for all pages, as a column cursor keeps it */
    double t = now();
    for (size_t i = 0; i < ps.n; i++) {
        const page *p = &ps.p[i];
        if (pread(p->fd, in, p->n, (off_t)p->off) != (ssize_t)p->n)
            die("read error", NULL);
        if (pq_decompress(p->codec, &zstate, in, p->n, buf, p->out, err, sizeof err) < 0)
            die(err, NULL);
        total += p->out;
    }
    printf("%.4f %zu\n", now() - t, total);
    pq_decompress_free(zstate);
    free(in);
    free(buf);
}

static void decode(int argc, char **argv)
{
    size_t values = 0;
    pq_column col = {0}; /* reused, as the reader reuses its cursors */
    double t = now();
    for (int i = 0; i < argc; i++) {
        es_context ctx = {0};
        es_pq_file *f;
        if (es_pq_file_open(&ctx, argv[i], &f) != ES_OK)
            die(ctx.msg, NULL);
        for (uint32_t g = 0; g < f->meta.n_row_groups; g++)
            for (size_t c = 0; c < N_NEEDED; c++) {
                const pq_leaf *l = es_pq_file_column(f, needed[c]);
                if (!l)
                    continue;
                /* as the reader: values for strings and audio, levels for lists */
                int want = l->def_list == 0;
                if (pq_column_open(&col, f, g, l, want) != ES_OK)
                    die(col.err, argv[i]);
                pq_entry e;
                int rc;
                while ((rc = pq_column_next(&col, &e)) == 1)
                    values += e.len;
                if (rc < 0)
                    die(col.err, argv[i]);
            }
        es_pq_file_close(f);
    }
    printf("%.4f %zu\n", now() - t, values);
    pq_column_release(&col);
}

static void extract(const char *path, const char *out)
{
    pages ps = {0};
    collect(path, &ps, 1);
    FILE *fp = fopen(out, "wb");
    if (!fp)
        die("cannot write", out);
    for (size_t i = 0; i < ps.n; i++)
        fwrite(ps.p[i].data, 1, ps.p[i].n, fp);
    fclose(fp);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "decompress") == 0)
        decompress(argc - 2, argv + 2);
    else if (argc >= 3 && strcmp(argv[1], "decode") == 0)
        decode(argc - 2, argv + 2);
    else if (argc == 4 && strcmp(argv[1], "extract") == 0)
        extract(argv[2], argv[3]);
    else
        die("usage: bench_parquet_pages decompress|decode FILE... | extract FILE OUT", NULL);
    return 0;
}
