#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_exit_code(int status)
{
    switch (status) {
    case ES_OK:
        return EXIT_OK;
    case ES_ERR_USAGE:
    case ES_ERR_IO:
    case ES_ERR_FORMAT:
    case ES_ERR_UNSUPPORTED:
        return EXIT_BAD_INPUT;
    default:
        return EXIT_INTERNAL;
    }
}

static const char *command_name;

void cli_set_command(const char *name)
{
    command_name = name;
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (command_name)
        fprintf(stderr, "equishard %s: ", command_name);
    else
        fputs("equishard: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_fail(const char *message, int status)
{
    cli_error("%s", message);
    return cli_exit_code(status);
}

int cli_write_error(es_context *ctx, int rc, const char *path)
{
    if (rc == ES_ERR_NOMEM)
        cli_error("%s: out of memory", path);
    else if (rc != ES_OK)
        cli_error("%s", es_errmsg(ctx));
    return rc;
}

void cli_tally_add(cli_tally *t, const es_cost_table *rows)
{
    const char *prev = NULL; /* a table interns its rows' shard names: one
                                pointer for a run of rows of one shard */
    for (size_t i = 0; i < es_cost_table_size(rows); i++) {
        es_cost_row row;
        es_cost_table_row(rows, i, &row);
        t->rows++;
        t->audio_bytes += row.audio_bytes;
        if (row.sample_rate)
            t->seconds += (double)row.samples / row.sample_rate;
        if (row.shard == prev)
            continue;
        prev = row.shard;
        if (!t->last_shard || strcmp(t->last_shard, row.shard) != 0) {
            char *copy = strdup(row.shard);
            if (!copy) /* only the summary's count suffers */
                continue;
            free(t->last_shard);
            t->last_shard = copy;
            t->shards++;
        }
    }
}

void cli_tally_free(cli_tally *t)
{
    free(t->last_shard);
    t->last_shard = NULL;
}

void cli_measure_summary(const cli_tally *t, double elapsed, const char *output, int quiet)
{
    if (quiet)
        return;
    char rows[32], shards[32], bytes[32], audio[32];
    if (t->seconds >= 3600)
        snprintf(audio, sizeof audio, "%.1f h", t->seconds / 3600);
    else
        snprintf(audio, sizeof audio, "%.1f s", t->seconds);
    cli_error("measured %s utterance%s in %s shard%s (%s of audio, %s) in %.1f s%s%s",
              cli_group(rows, sizeof rows, t->rows), t->rows == 1 ? "" : "s",
              cli_group(shards, sizeof shards, t->shards), t->shards == 1 ? "" : "s", audio,
              cli_bytes(bytes, sizeof bytes, t->audio_bytes), elapsed,
              output ? " -> " : "",
              !output ? "" : strcmp(output, "-") == 0 ? "standard output" : output);
}

int cli_parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

int cli_parse_u64(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (*s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* Tells what --on-error skip left out, and rows whose audio was not trusted. */
void cli_report_problems(const es_cost_table *skips, size_t truncated, size_t unsupported)
{
    size_t n = 0;
    while (es_cost_table_skip(skips, n))
        n++;
    if (n) {
        cli_error("left out %zu problem(s):", n);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "  %s\n", es_cost_table_skip(skips, i));
    }
    if (truncated)
        cli_error("warning: %zu utterance(s) flagged 'truncated': the audio header claims "
                  "more data than present", truncated);
    if (unsupported)
        cli_error("warning: %zu utterance(s) flagged 'unsupported': audio format not probed, "
                  "samples unknown", unsupported);
}

void cli_count_problems(const es_cost_table *t, size_t *truncated, size_t *unsupported)
{
    for (size_t i = 0; i < es_cost_table_size(t); i++) {
        es_cost_row row;
        es_cost_table_row(t, i, &row);
        *truncated += (row.flags & ES_FLAG_TRUNCATED) != 0;
        *unsupported += (row.flags & ES_FLAG_UNSUPPORTED) != 0;
    }
}

void cli_report_table_problems(const es_cost_table *t)
{
    size_t truncated = 0, unsupported = 0;
    cli_count_problems(t, &truncated, &unsupported);
    cli_report_problems(t, truncated, unsupported);
}

void cli_report_speech_tokens(const char *src, const es_speech_token_stats *st)
{
    cli_error("speech tokens from %s: %zu row(s) set, %zu row(s) without (speech_tokens 0), "
              "%zu key(s) not in the inputs", src, st->rows_set, st->rows_without, st->unknown_keys);
}

int cli_set_speech_tokens(es_context *ctx, es_cost_table *t, const char *src)
{
    es_speech_token_stats st;
    int rc = es_cost_table_set_speech_tokens(ctx, t, src, &st);
    if (rc == ES_OK)
        cli_report_speech_tokens(src, &st);
    return rc;
}

cli_tokenizer_opts cli_tokenizer;

static void free_tokenizer(void)
{
    es_tokenizer_free(cli_tokenizer.t);
    cli_tokenizer.t = NULL;
}

int cli_tokenizer_check(const char *command)
{
    const cli_tokenizer_opts *o = &cli_tokenizer;
    const char *why = NULL;
    if (o->path && o->symbol_table)
        why = "--tokenizer and --symbol-table name two tokenizers; give the recipe's one";
    else if (!o->symbol_table && (o->non_lang_syms || o->split_with_space))
        why = "--non-lang-syms and --split-with-space are options of --symbol-table (WeNet's "
              "CharTokenizer); give it too";
    else if (o->symbol_table && o->specials)
        why = "--specials is an option of --tokenizer (CosyVoice's Qwen2 tokenizer), not of "
              "--symbol-table";
    if (why)
        fprintf(stderr, "equishard %s: %s\n", command, why);
    return why ? -1 : 0;
}

int cli_load_tokenizer(es_context *ctx, es_measure_settings *s)
{
    const cli_tokenizer_opts *o = &cli_tokenizer;
    if (!o->path && !o->symbol_table)
        return ES_OK;
    if (!cli_tokenizer.t) {
        int rc = o->path ? es_tokenizer_load(ctx, o->path, o->specials, &cli_tokenizer.t)
                         : es_tokenizer_load_symbols(ctx, o->symbol_table, o->non_lang_syms,
                                                     o->split_with_space, &cli_tokenizer.t);
        if (rc != ES_OK)
            return rc;
        atexit(free_tokenizer);
    }
    if (s)
        s->tokenizer = cli_tokenizer.t;
    return ES_OK;
}

int cli_measure_inputs(es_context *ctx, es_measure_settings *s, int quiet,
                       const char *const *inputs, size_t n, es_cost_table **out)
{
    int trc = cli_load_tokenizer(ctx, s);
    if (trc != ES_OK)
        return trc;
    /* the summary only when something was measured: tables are only read */
    size_t lists = 0;
    for (size_t i = 0; i < n; i++)
        lists += !es_is_cost_table(inputs[i]);
    cli_progress progress, reading;
    cli_progress_init(&progress, "measure", "shards", quiet);
    s->progress = cli_progress_update;
    s->progress_user = &progress;
    /* the tables' own line: "read: D / T bytes" */
    cli_progress_init(&reading, "read", "bytes", quiet);
    s->read_progress = reading.enabled ? cli_progress_update : NULL;
    s->read_progress_user = &reading;
    int rc = es_load_inputs(ctx, s, inputs, n, out);
    cli_progress_end(&reading);
    cli_progress_end(&progress);
    s->progress = NULL;
    s->read_progress = NULL;
    if (rc == ES_OK && lists) {
        cli_tally tally = {0};
        cli_tally_add(&tally, *out);
        cli_measure_summary(&tally, cli_progress_elapsed(&progress), NULL, quiet);
        cli_tally_free(&tally);
    }
    return rc;
}

int cli_load_inputs(es_context *ctx, es_measure_settings *s, int quiet, const char *speech_tokens,
                    const char *const *inputs, size_t n, es_cost_table **out)
{
    int rc = cli_measure_inputs(ctx, s, quiet, inputs, n, out);
    if (rc == ES_OK)
        cli_report_table_problems(*out);
    if (rc == ES_OK && speech_tokens)
        rc = cli_set_speech_tokens(ctx, *out, speech_tokens);
    return rc;
}

int cli_parse_enum_int(es_enum e, const char *arg, int *out)
{
    _Static_assert(sizeof(es_plan_mode) == sizeof(int) && sizeof(es_loader) == sizeof(int),
                   "public enums are int-sized");
    return es_enum_value(e, arg, out) == ES_OK ? 0 : -1;
}

int cli_refuse_output_input(const char *command, const char *output, const char *const *inputs,
                            size_t n)
{
    struct stat out, in;
    /* "-", a path not there yet, a device or a FIFO: nothing an input could be */
    if (!output || strcmp(output, "-") == 0 || stat(output, &out) != 0 ||
        !(S_ISREG(out.st_mode) || S_ISDIR(out.st_mode)))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (inputs[i] && stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev &&
            in.st_ino == out.st_ino) {
            fprintf(stderr, "equishard %s: output %s is the input %s: writing it would replace "
                            "what is read; write to another path\n", command, output, inputs[i]);
            return -1;
        }
    return 0;
}
