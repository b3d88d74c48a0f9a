/* Fuzzes the tar shard reader (libarchive + member grouping + audio probes) on
 * arbitrary bytes: it must end every input with records, BAD utterances or one
 * error, never a crash, leak or hang. The reader opens paths, so each input is
 * written to a private temporary file first.
 *
 * Each input is read twice, with the plain-header scanner (tar_scan.h) and
 * with every header through libarchive; the two readings must give the same
 * results, rows and messages, or the harness aborts: the scanner is only
 * allowed to be faster. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RESULTS 1024

typedef struct reading {
    int n;
    int rc[MAX_RESULTS];
    es_cost_row row[MAX_RESULTS];
    char key[MAX_RESULTS][256], spk[MAX_RESULTS][256];
    char msg[MAX_RESULTS][sizeof(es_context)];
} reading;

/* src into dst[cap], cut to fit */
static void keep(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    n = n < cap ? n : cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void read_all(const char *path, int hash, int libarchive_only, reading *out)
{
    es_reader_opts opts = {.hash = hash, .probe_buffer = 1 << 20,
                           .libarchive_only = libarchive_only};
    es_context ctx = {0};
    const es_format_ops *tar = es_format_named("tar");
    es_shard_reader *r;
    out->n = 0;
    int rc = tar->open(&ctx, path, "fuzz.tar", &opts, &r);
    if (rc != ES_OK) {
        out->rc[out->n] = rc;
        keep(out->msg[out->n++], sizeof out->msg[0], ctx.msg);
        return;
    }
    for (;;) {
        es_cost_row row;
        memset(&row, 0, sizeof row);
        ctx.msg[0] = '\0';
        rc = tar->next(&ctx, r, &row);
        int i = out->n++;
        out->rc[i] = rc;
        keep(out->msg[i], sizeof out->msg[0], rc == ES_NEXT_RECORD ? "" : ctx.msg);
        memset(&out->row[i], 0, sizeof out->row[i]);
        if (rc == ES_NEXT_RECORD) {
            out->row[i] = row;
            keep(out->key[i], sizeof out->key[0], row.key);
            keep(out->spk[i], sizeof out->spk[0], row.spk);
        }
        if (rc <= 0 || out->n == MAX_RESULTS)
            break;
    }
    tar->close(r);
}

static int same_row(const es_cost_row *a, const es_cost_row *b)
{
    return a->pos == b->pos && a->sample_rate == b->sample_rate && a->channels == b->channels &&
           a->samples == b->samples && a->audio_bytes == b->audio_bytes &&
           a->text_len == b->text_len && a->flags == b->flags && a->hash == b->hash &&
           a->text_tokens == b->text_tokens;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static reading fast, slow;
    const char *path = fuzz_write_input("tar", data, size);
    if (!path)
        return 0;
    int hash = size & 1;
    read_all(path, hash, 0, &fast);
    read_all(path, hash, 1, &slow);
    unlink(path);
    int same = fast.n == slow.n;
    for (int i = 0; same && i < fast.n; i++)
        same = fast.rc[i] == slow.rc[i] && strcmp(fast.msg[i], slow.msg[i]) == 0 &&
               strcmp(fast.key[i], slow.key[i]) == 0 && strcmp(fast.spk[i], slow.spk[i]) == 0 &&
               same_row(&fast.row[i], &slow.row[i]);
    if (!same) {
        fprintf(stderr, "the header scanner and libarchive read this input differently\n");
        for (int i = 0; i < fast.n || i < slow.n; i++)
            fprintf(stderr, "%d: scanner %d %s %s | libarchive %d %s %s\n", i,
                    i < fast.n ? fast.rc[i] : 99, i < fast.n ? fast.key[i] : "",
                    i < fast.n ? fast.msg[i] : "", i < slow.n ? slow.rc[i] : 99,
                    i < slow.n ? slow.key[i] : "", i < slow.n ? slow.msg[i] : "");
        abort();
    }
    return 0;
}
