/* Fuzzes the parquet writer by a round trip: for whatever file the reader
 * accepts, every leaf's level entries (all row groups, in order) are written
 * into a new file with the same schema (pq_write.c, the codec chosen by the
 * input's size) and read back through the reader; the entries must come back
 * identical, as a hash chain over (def, rep, value bytes). A writer crash, a
 * written file the reader refuses, or a changed entry aborts (a finding).
 * Seeds: the reader's (tests/fuzz/corpus/parquet). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

#include "formats/parquet/codec/pq_column.h"
#include "formats/parquet/codec/pq_file.h"
#include "formats/parquet/codec/pq_meta.h"
#include "formats/parquet/codec/pq_write.h"
#include "fuzz_shard.h"

/* Bound on the entries a case copies: keeps every case fast. */
#define MAX_ENTRIES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t chain(uint64_t h, const pq_entry *e)
{
    uint8_t lv[2] = {e->def, e->rep};
    h = XXH3_64bits_withSeed(lv, 2, h);
    return e->ptr ? XXH3_64bits_withSeed(e->ptr, e->len, h ^ e->len) : h;
}

/* Copies leaf l of every row group into the writer; 0 when the source could
 * not be read to the end (then the case is dropped: the reader's fuzzer covers
 * that), else 1 with the chain and count of what was copied. */
static int copy_leaf(const es_pq_file *f, uint32_t l, pq_writer *w, pq_column *c, uint64_t *h,
                     uint64_t *n, uint64_t *rows)
{
    *h = 0;
    *n = 0;
    *rows = 0;
    for (uint32_t rg = 0; rg < f->meta.n_row_groups; rg++) {
        if (pq_column_open(c, f, rg, &f->leaves[l], 1) != ES_OK)
            return 0;
        pq_entry e;
        int r;
        while ((r = pq_column_next(c, &e)) > 0) {
            if (++*n > MAX_ENTRIES)
                return 0;
            *h = chain(*h, &e);
            *rows += e.rep == 0;
            if (pq_writer_put(w, e.def, e.rep, e.ptr, e.len) != 0) {
                fprintf(stderr, "writer refused an entry the reader gave: %s\n", w->err);
                abort();
            }
        }
        if (r < 0)
            return 0;
    }
    return 1;
}

static void check_back(const char *out, const pq_write_schema *s, const uint64_t *want_h,
                       const uint64_t *want_n)
{
    es_context ctx = {0};
    es_pq_file *f;
    if (es_pq_file_open(&ctx, out, &f) != ES_OK) {
        fprintf(stderr, "written file does not open: %s\n", ctx.msg);
        abort();
    }
    pq_column c = {0};
    for (uint32_t l = 0; l < s->n_leaves; l++) {
        uint64_t h = 0, n = 0;
        pq_entry e;
        int r = pq_column_open(&c, f, 0, &f->leaves[l], 1) == ES_OK ? 1 : -1;
        while (r > 0 && (r = pq_column_next(&c, &e)) > 0) {
            h = chain(h, &e);
            n++;
        }
        if (r < 0 || h != want_h[l] || n != want_n[l]) {
            fprintf(stderr, "leaf %u reads back differently (%s: %llu of %llu entries)\n", l,
                    r < 0 ? c.err : "entries", (unsigned long long)n, (unsigned long long)want_n[l]);
            abort();
        }
    }
    pq_column_release(&c);
    es_pq_file_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int codecs[] = {PQ_UNCOMPRESSED, PQ_SNAPPY, PQ_ZSTD, PQ_GZIP};
    const char *in = fuzz_write_input("pqwrite-in", data, size);
    if (!in)
        return 0;
    char out[96];
    snprintf(out, sizeof out, "/tmp/es-fuzz-pqwrite-out-%ld", (long)getpid());
    es_context ctx = {0};
    es_pq_file *f;
    if (es_pq_file_open(&ctx, in, &f) != ES_OK) {
        unlink(in);
        return 0;
    }
    pq_write_schema s = {0};
    pq_writer w = {0};
    pq_column c = {0};
    uint64_t *h = calloc(f->n_leaves + 1, sizeof *h), *n = calloc(f->n_leaves + 1, sizeof *n);
    FILE *fp = fopen(out, "w+b");
    int ok = h && n && fp && pq_write_schema_copy(f, &s) == 0;
    if (ok && pq_writer_init(&w, &s, codecs[size % 4]) == 0 && pq_writer_begin(&w, fp) == 0) {
        uint64_t rows = 0, leaf_rows;
        for (uint32_t l = 0; ok && l < f->n_leaves; l++) {
            ok = pq_writer_chunk_begin(&w, l) == 0 &&
                 copy_leaf(f, l, &w, &c, &h[l], &n[l], &leaf_rows) &&
                 pq_writer_chunk_end(&w) == 0;
            rows = l == 0 ? leaf_rows : rows;
        }
        ok = ok && pq_writer_end(&w, (int64_t)rows) == 0;
        if (fp)
            fclose(fp);
        fp = NULL;
        if (ok)
            check_back(out, &s, h, n);
        pq_writer_release(&w);
    }
    if (fp)
        fclose(fp);
    if (s.raw || s.leaves)
        pq_write_schema_release(&s);
    pq_column_release(&c);
    free(h);
    free(n);
    es_pq_file_close(f);
    unlink(out);
    unlink(in);
    return 0;
}
