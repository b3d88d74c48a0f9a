/* The equishard command line: one file per subcommand, sharing these helpers.
 * Uses only the public headers: include/equishard/equishard.h and its
 * experimental tier, equishard_experimental.h (which includes it). */
#ifndef ES_CLI_H
#define ES_CLI_H

#include <equishard/equishard_experimental.h>

#include "cli_progress.h"

/* Exit codes users' scripts rely on (README.md lists them); never renumber. */
enum {
    EXIT_OK = 0,
    EXIT_PROBLEMS = 1, /* checks found problems */
    EXIT_BAD_INPUT = 2, /* bad usage or unreadable input */
    EXIT_INTERNAL = 3, /* out of memory or a bug */
};

/* The command being run ("plan"), named by main before it dispatches: every
 * line the CLI prints on stderr starts "equishard plan: " (cli_error,
 * cli_fail), so a script's log says which step failed; "equishard: " before
 * one is named. The library's messages (es_errmsg) name file and row and
 * never this prefix: the CLI adds it once. */
void cli_set_command(const char *name);
/* Prints the prefix, the message as printf formats it, and a newline on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "equishard CMD: <message>" to stderr and returns the exit code for status. */
int cli_fail(const char *message, int status);

/* After a library call that wrote `path` returned rc: its one line on stderr
 * when rc is not ES_OK ("PATH: out of memory" for ES_ERR_NOMEM, which may have
 * left ctx without a message, or no ctx at all). Returns rc. */
int cli_write_error(es_context *ctx, int rc, const char *path);

/* "did you mean": of the n names, the one nearest to typed (len bytes, not
 * NUL-terminated): a typo away ('_' for '-' and case count as the same), or
 * the known name typed with more after it, or typed as its start; NULL when
 * none is near. Ties go to the earlier name. */
const char *cli_suggest(const char *typed, size_t len, const char *const *names, size_t n);

/* es_context_new with the settings the environment gives (cli_context.c):
 * every context the command makes comes from here. NULL: out of memory. */
es_context *cli_context_new(void);

/* Exit code for a library status. */
int cli_exit_code(int status);

/* What a measure read, for its one-line summary on stderr: rows, distinct
 * shard-list entries (consecutive rows of one entry count it once; a raw list
 * or Kaldi directory is one), the audio's bytes and seconds. Added to unit by
 * unit (measure -o FILE) or from a whole table. */
typedef struct cli_tally {
    uint64_t rows, shards, audio_bytes;
    double seconds;
    char *last_shard; /* the shard of the last row added (malloc'd) */
} cli_tally;
void cli_tally_add(cli_tally *t, const es_cost_table *rows);
void cli_tally_free(cli_tally *t);
/* "equishard CMD: measured 24 utterances in 3 shards (34.4 s of audio, 1.2 MB)
 * in 0.1 s -> costs.tsv" on stderr (output "-": standard output; NULL: no
 * arrow); nothing when quiet. */
void cli_measure_summary(const cli_tally *t, double elapsed, const char *output, int quiet);

/* Tells on stderr what --on-error skip left out of a table, and how many rows
 * carry the 'truncated' or 'unsupported' flag. */
void cli_report_table_problems(const es_cost_table *t);
/* The same in parts, for rows that are not kept (measure -o FILE): counts
 * added to over the pieces, then the report with the table of skips. */
void cli_count_problems(const es_cost_table *t, size_t *truncated, size_t *unsupported);
void cli_report_problems(const es_cost_table *skips, size_t truncated, size_t unsupported);
/* The --speech-tokens line (below). */
void cli_report_speech_tokens(const char *src, const es_speech_token_stats *st);

/* es_load_inputs with a progress line on stderr (unless quiet). */
int cli_measure_inputs(es_context *ctx, es_measure_settings *s, int quiet,
                       const char *const *inputs, size_t n, es_cost_table **out);

/* cli_measure_inputs and the report above,
 * then --speech-tokens (speech_tokens may be NULL): what plan and simulate do
 * with their "COSTS | LIST..." arguments. */
int cli_load_inputs(es_context *ctx, es_measure_settings *s, int quiet, const char *speech_tokens,
                    const char *const *inputs, size_t n, es_cost_table **out);

/* --speech-tokens SRC: es_cost_table_set_speech_tokens, and one line on stderr
 * with its counts (rows set, rows without, keys the inputs lack). */
int cli_set_speech_tokens(es_context *ctx, es_cost_table *t, const char *src);

/* Parses a named enum value (es_enum_value: "shard", "cpu", …) into the enum
 * field at out (every public enum is int-sized); returns 0, or -1 (out untouched). */
#define cli_parse_enum(e, arg, out) cli_parse_enum_int((e), (arg), (int *)(out))
int cli_parse_enum_int(es_enum e, const char *arg, int *out);

/* --tokenizer PATH / --specials SET of the commands that measure lists: loaded
 * once by cli_load_tokenizer (freed at exit), then es_measure counts every
 * transcript's text tokens with it. */
typedef struct cli_tokenizer_opts {
    const char *path;      /* NULL: no tokenizer */
    const char *specials;  /* NULL: cosyvoice2 */
    const char *symbol_table;  /* --symbol-table: WeNet's CharTokenizer instead */
    const char *non_lang_syms; /* --non-lang-syms */
    int split_with_space;      /* --split-with-space */
    es_tokenizer *t;       /* loaded */
} cli_tokenizer_opts;
extern cli_tokenizer_opts cli_tokenizer;

/* Loads the tokenizer cli_tokenizer names (once: --tokenizer, or
 * --symbol-table with its options) into s->tokenizer (s may be NULL); ES_OK
 * without one, ES_ERR_USAGE for both or for WeNet's options without
 * --symbol-table. */
int cli_load_tokenizer(es_context *ctx, es_measure_settings *s);
/* The combination given is one tokenizer; else prints why (naming command)
 * and returns -1. */
int cli_tokenizer_check(const char *command);

/* 0 when output (a file or OUTDIR; "-", NULL and paths not there yet pass)
 * is none of inputs[0 .. n) by device and inode (NULL entries are skipped);
 * else prints why, naming command, and returns -1: the command exits 2 before
 * it writes anything. */
int cli_refuse_output_input(const char *command, const char *output, const char *const *inputs,
                            size_t n);

/* Strict parsers of option values; each returns 0, or -1 (out untouched).
 * cli_parse_int: 0..INT_MAX; cli_parse_u64: no sign; cli_parse_double: finite;
 * cli_parse_i64: any whole number strtoll reads entirely (--epoch, --epochs). */
int cli_parse_int(const char *s, int *out);
int cli_parse_u64(const char *s, unsigned long long *out);
int cli_parse_double(const char *s, double *out);
int cli_parse_i64(const char *s, int64_t *out);

/* 1 when an MPI launcher started this process as one of several (mpirun,
 * mpiexec, srun): then measure and plan run as MPI ranks (mpi_util.c, built
 * when meson finds MPI: call only #if HAVE_MPI). Never initialises MPI. */
int cli_launched_by_mpi(void);

int cmd_calibrate(int argc, char **argv);
int cmd_describe(int argc, char **argv);
int cmd_measure(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);

#endif
