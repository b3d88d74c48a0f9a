/* Writing the cost table (docs/COST_TABLE.md).
 *
 * Format, version 1 (the reader in cost_table_read.c is its other half):
 *
 *   #equishard-costs v1
 *   key  shard  pos  sample_rate  channels  samples  audio_bytes  text_len
 *   speech_tokens  spk  flags  hash                       (one TAB-separated line)
 *   ...one TAB-separated line per utterance, '\n'-terminated, in table order...
 *
 * - Integers are plain decimal digits: no sign, no spaces, no leading zeros.
 * - String columns (key, shard, spk) hold the bytes as they are (UTF-8 or not),
 *   except that TAB, LF, CR and backslash are written as the two-character
 *   escapes \t \n \r \\ (keys come from tar member names, which may contain any
 *   byte but NUL). No other escapes exist.
 * - An empty string is an empty field ("" is written as nothing between two
 *   TABs); "-" in a string column is the literal one-character string "-".
 * - flags: the flag names (es_flag_name) joined by ',' in bit order, "-" for none.
 * - hash: 16 lowercase hex digits when the row has the `hashed` flag, else "-"
 *   (a hash value without the flag is not written).
 * - A table that knows its shards' files as measure found them adds two columns
 *   after hash (v1 readers ignore trailing columns): shard_size, the file's size
 *   in bytes, and shard_mtime, its modification time as SECONDS.NNNNNNNNN; both
 *   "-" for a row whose shard has none (raw-list and Kaldi items).
 * - text_tokens (the recipe tokenizer's count): the last column, written only
 *   when some row has a token count (text_tokens > 0: measured with a tokenizer), so tables
 *   measured without one stay as they were; "-" where unknown (0 with a
 *   non-empty transcript), else decimal (0 for an empty transcript).
 * - A path ending in ".zst" gets one zstd frame (level 3); readers detect zstd by
 *   its magic bytes, not by name.
 *
 * Speed: 10 M rows must take seconds, so rows are formatted by hand into one
 * large buffer (no per-field stdio) that is flushed to the file or compressor
 * (table_writer.c). This file writes a table held whole in memory; measure's
 * `-o FILE` writes rows as they are measured (cost_stream.c), the same bytes.
 */
#include "costs/cost_table.h"
#include "costs/table_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_all(es_table_writer *w, const es_cost_table *t)
{
    int tokens = 0;
    for (size_t i = 0; i < t->n && !tokens; i++)
        tokens = t->rows[i].text_tokens > 0;
    int stats = t->shard_stats.n > 0;
    /* A table of more than a buffer or two is compressed in a second thread. */
    if (t->n > ES_TW_PIPE_ROWS)
        es_tw_pipe(w);
    int rc = es_tw_header(w, stats, tokens, t->tokenizer);
    for (size_t i = 0; rc == ES_OK && i < t->n; i++)
        rc = es_tw_row(w, &t->rows[i], t, stats, tokens);
    return es_tw_end(w, rc);
}

ES_API int es_cost_table_write(es_context *ctx, const es_cost_table *t, const char *path)
{
    es_clear_error(ctx);
    if (!t || !path)
        return es_fail(ctx, ES_ERR_USAGE, "es_cost_table_write: table and path are required");
    es_table_writer w = {.ctx = ctx, .path = path};
    int rc = es_atomic_open(ctx, &w.file, path);
    if (rc != ES_OK)
        return rc;
    rc = es_tw_init(&w, es_tw_zstd_name(path));
    if (rc == ES_OK)
        rc = write_all(&w, t);
    es_tw_release(&w);
    if (rc != ES_OK) {
        es_atomic_abort(&w.file);
        return rc;
    }
    return es_atomic_commit(ctx, &w.file);
}

int es_cost_table_write_stream(es_context *ctx, const es_cost_table *t, FILE *fp,
                               const char *name, int zstd)
{
    es_table_writer w = {.ctx = ctx, .path = name, .file.fp = fp};
    int rc = es_tw_init(&w, zstd);
    if (rc == ES_OK)
        rc = write_all(&w, t);
    es_tw_release(&w);
    return rc;
}

ES_API int es_cost_table_write_fd(es_context *ctx, const es_cost_table *t, int fd, int zstd)
{
    es_clear_error(ctx);
    if (!t || fd < 0)
        return es_fail(ctx, ES_ERR_USAGE, "es_cost_table_write_fd: table and fd are required");
    const char *name = "(output)";
    int dup_fd = dup(fd); /* fclose below must not close the caller's descriptor */
    FILE *fp = dup_fd >= 0 ? fdopen(dup_fd, "wb") : NULL;
    if (!fp) {
        if (dup_fd >= 0)
            close(dup_fd);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot write: %s", name, strerror(errno));
    }
    int rc = es_cost_table_write_stream(ctx, t, fp, name, zstd);
    if (fclose(fp) != 0 && rc == ES_OK)
        rc = es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", name, strerror(errno));
    return rc;
}
