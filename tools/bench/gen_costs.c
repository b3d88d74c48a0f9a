/* Writes a synthetic cost table FILE, as `equishard measure` writes one, for
 * benchmarking the CLI's plan path:
 *
 *   gen_costs N_UTTS UTTS_PER_SHARD OUT.tsv
 *
 * The rows are bench_plan's (log-normal durations, median 5 s; speakers in order,
 * UTTS_PER_SHARD utterances a shard, a shorter last shard), with a CosyVoice-like
 * absolute shard path. One row in 100 000 has a key that needs escaping in the
 * table or in JSON (TAB, quote, backslash, a control byte, UTF-8, a byte that is
 * not UTF-8), so byte-for-byte comparisons of plan outputs cover those paths.
 * The table is built and written in slices of 1 M rows (a header each time would
 * make a concatenated table; instead each slice goes through the library's
 * writer into memory and only the first keeps its two header lines), so memory
 * stays small at 50 M rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costs/cost_table.h"
#include "synth_rows.h"

static const char *const odd_keys[] = {
    "tab\there", "quote\"and\\slash", "ctl\001byte", "utf8_\xc3\xa9t\xc3\xa9_\xe4\xb8\xad",
    "latin1_\xe9t\xe9", "cr\rlf\nkey", "lone\xed\xa0\x80surrogate", "truncated\xe4\xb8",
};

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: gen_costs N_UTTS UTTS_PER_SHARD OUT.tsv\n");
        return 2;
    }
    size_t n = strtoull(argv[1], NULL, 10), per_shard = strtoull(argv[2], NULL, 10);
    FILE *out = fopen(argv[3], "wb");
    if (!out || !per_shard) {
        perror(argv[3]);
        return 2;
    }
    es_context *ctx = es_context_new();
    char key[64], shard[96], spk[16];
    size_t speaker = 0, left_in_speaker = 0;
    enum { SLICE = 1000000 };
    for (size_t from = 0; from < n; from += SLICE) {
        es_cost_table *t = es_cost_table_new();
        size_t to = from + SLICE < n ? from + SLICE : n;
        for (size_t i = from; i < to; i++) {
            synth_next_utterance(&speaker, &left_in_speaker);
            if (i % 100000 == 99999)
                snprintf(key, sizeof key, "%s_%zu", odd_keys[(i / 100000) % 8], i);
            else
                snprintf(key, sizeof key, "%zu_%zu_%06zu", speaker, i / 977, i % 977);
            snprintf(shard, sizeof shard, "/data/libritts/parquet/parquet_%09zu.tar", i / per_shard);
            snprintf(spk, sizeof spk, "%zu", speaker);
            es_cost_row r = synth_row(key, shard, i % per_shard, spk, lognormal_seconds());
            if (es_cost_table_append(t, &r) != ES_OK) {
                fprintf(stderr, "out of memory\n");
                return 3;
            }
        }
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (!mem || es_cost_table_write_stream(ctx, t, mem, "memory", 0) != ES_OK) {
            fprintf(stderr, "write: %s\n", es_errmsg(ctx));
            return 3;
        }
        fclose(mem);
        /* skip the magic line and the header row after the first slice */
        const char *p = buf;
        if (from > 0)
            for (int lines = 0; lines < 2; lines++)
                p = strchr(p, '\n') + 1;
        if (fwrite(p, 1, len - (size_t)(p - buf), out) != len - (size_t)(p - buf)) {
            perror(argv[3]);
            return 3;
        }
        free(buf);
        es_cost_table_free(t);
    }
    es_context_free(ctx);
    if (fclose(out) != 0) {
        perror(argv[3]);
        return 3;
    }
    return 0;
}
