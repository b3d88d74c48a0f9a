/* Command-line options as declared tables (git's parse-options idea): each
 * command lists its options once, with kind, bounds, target field and help,
 * and this layer builds the getopt_long array, applies the options in argv
 * order, prints one uniform line for a bad value and writes the option part of
 * --help. Hand-written option switches drifted from their usage text and each
 * worded its errors its own way; a table cannot.
 *
 * Invariants: tables are static const; a long name appears once among the
 * tables of one command; -h/--help is added by the layer to every command. */
#ifndef ES_CLI_OPTIONS_H
#define ES_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Which object an option writes: the command's own struct, or one of the
 * shared ones (the shared tables in cli_model.c use these). */
typedef enum cli_target {
    CLI_T_CMD = 0,   /* the command's own argument struct */
    CLI_T_MODEL,     /* es_cost_model */
    CLI_T_MEASURE,   /* es_measure_settings */
    CLI_T_LIST,      /* cli_list_opts: --quiet, --speech-tokens */
    CLI_T_TOKENIZER, /* cli_tokenizer_opts (the global cli_tokenizer) */
    CLI_T_COUNT
} cli_target;

typedef enum cli_kind {
    CLI_FLAG,   /* no argument: stores .ival into an int */
    CLI_UINT,   /* whole number (cli_parse_u64) in [.min, .max]; stored by .size */
    CLI_INT,    /* whole number (cli_parse_int: 0..INT_MAX) >= .min; stored by .size */
    CLI_I64,    /* any whole number strtoll reads entirely; int64_t */
    CLI_NUM,    /* finite number (cli_parse_double) >= .min (> .min with .excl) */
    CLI_ANYNUM, /* any number strtod reads entirely (inf, nan too); double */
    CLI_STR,    /* const char *: the argument itself */
    CLI_ENUM,   /* a named value of es_enum .en (cli_parse_enum) into an int-sized enum */
    CLI_CUSTOM, /* .fn decides */
} cli_kind;

typedef struct cli_option cli_option;

/* A custom option: field is the target's byte at .offset. Returns 0, -1 for a
 * bad value (the layer prints the uniform line with .want), or -2 when it
 * printed why itself (cli_option_bad or its own line). */
typedef int (*cli_option_fn)(const cli_option *o, const char *arg, void *field,
                             const char *command);

struct cli_option {
    const char *name;    /* long name without "--" */
    char short_name;     /* 0: none */
    cli_kind kind;
    int has_arg;         /* all kinds but CLI_FLAG take one; CLI_CUSTOM says */
    cli_target target;
    size_t offset, size; /* the field in the target (size: whole numbers) */
    unsigned long long min, max; /* CLI_UINT/CLI_INT bounds; max 0: the field type's */
    double dmin;         /* CLI_NUM lower bound */
    int excl;            /* CLI_NUM: the bound is excluded */
    int zero_is_one;     /* whole numbers: 0 is stored as 1 (num_workers 0) */
    int ival;            /* CLI_FLAG: the value stored */
    int en;              /* CLI_ENUM: the es_enum */
    cli_option_fn fn;    /* CLI_CUSTOM */
    const char *metavar; /* shown after the name; CLI_ENUM default: its names a|b|c */
    const char *want;    /* what a bad value should have been; default from the kind */
    const char *help;    /* '\n' starts a continuation line */
};

/* A field of struct type T, for the tables. */
#define CLI_AT(T, field) .offset = offsetof(T, field), .size = sizeof(((T *)0)->field)
/* The same in a shared target (CLI_T_TOKENIZER, ...), not the command's own. */
#define CLI_IN(target_, T, field) .target = (target_), CLI_AT(T, field)

/* The records most tables are made of, one vocabulary for every command (a
 * file's own shorthand drifted in arity and meaning). AT is CLI_AT(...) or
 * CLI_IN(...); SH the short letter or 0; every other field is as declared
 * above, so a record these do not fit is written out in full. */
#define CLI_OPT_STR(name_, sh, AT, meta, text)                                                   \
    {.name = (name_), .short_name = (sh), .kind = CLI_STR, AT, .metavar = (meta), .help = (text)}
/* A whole number >= lo, at most the field type's largest. */
#define CLI_OPT_UINT(name_, sh, lo, AT, meta, text)                                              \
    {.name = (name_), .short_name = (sh), .kind = CLI_UINT, .min = (lo), AT, .metavar = (meta), \
     .help = (text)}
/* A finite number >= 0. */
#define CLI_OPT_NUM(name_, AT, meta, text)                                                       \
    {.name = (name_), .kind = CLI_NUM, AT, .metavar = (meta), .help = (text)}
/* Any number strtod reads (inf, nan: the thresholds that switch a check off). */
#define CLI_OPT_ANYNUM(name_, AT, meta, text)                                                    \
    {.name = (name_), .kind = CLI_ANYNUM, AT, .metavar = (meta), .help = (text)}
/* A flag that stores value (1: turns a default off on; 0: --no-... turns it off). */
#define CLI_OPT_FLAG(name_, sh, value, AT, text)                                                 \
    {.name = (name_), .short_name = (sh), .kind = CLI_FLAG, .ival = (value), AT, .help = (text)}

/* One group of options, printed under its heading (NULL: none). */
typedef struct cli_table {
    const char *heading;
    const cli_option *opts;
    size_t n;
} cli_table;
#define CLI_TABLE(heading, opts) {(heading), (opts), sizeof(opts) / sizeof((opts)[0])}

typedef struct cli_command {
    const char *name;  /* "plan": the messages say "equishard plan: ..." */
    const char *intro; /* usage line and description, before the options */
    const char *outro; /* after them, or NULL */
    const cli_table *tables;
    size_t n_tables;
} cli_command;

/* Parses argv (getopt_long, so operands may come anywhere; optind is left at
 * the first of them), applying each option to targets[o->target] in argv
 * order. Returns 0; 1 after printing --help or --version on stdout; -1 after
 * printing why on stderr: one line "equishard CMD: ..." (a bad value, a
 * missing one, an unknown option with the nearest known one as "did you
 * mean --NAME?", an ambiguous abbreviation, "-name" for --name), then the
 * usage line(s) and "see 'equishard CMD --help'" (cli_options_hint), never the
 * whole help, which would scroll the line away. */
int cli_options_parse(const cli_command *c, void *const targets[CLI_T_COUNT], int argc,
                      char **argv);

/* What a prescan found first among the options (0: neither). */
enum { CLI_ASKED_HELP = 1, CLI_ASKED_VERSION = 2 };

/* A first pass: applies only the options named in names (NULL-terminated), in
 * argv order, silently ignoring bad values and anything else; the options
 * that choose the defaults later flags override. Returns CLI_ASKED_HELP or
 * CLI_ASKED_VERSION when -h/--help or --version is among the options (the
 * first of them), else 0. */
int cli_options_prescan(const cli_command *c, void *const targets[CLI_T_COUNT], int argc,
                        char **argv, const char *const *names);

/* Writes the intro, the option lines of every table, and the outro. */
void cli_options_usage(const cli_command *c, FILE *out);

/* "equishard VERSION" on stdout: every command's --version. */
void cli_print_version(void);

/* On stderr: the usage line(s) of the intro (up to its first blank line) and
 * "see 'equishard CMD --help'": what follows every refusal of the command line. */
void cli_options_hint(const cli_command *c);

/* A command line the options accept but the command cannot run (a required
 * option or operand missing, two that exclude each other): the line
 * "equishard CMD: <message>" and cli_options_hint; returns -1. */
int cli_usage_error(const cli_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The uniform line "equishard CMD: bad value 'ARG' for --NAME: WANT" (and,
 * during cli_options_parse, cli_options_hint); -2. A NULL command (a prescan)
 * prints nothing. */
int cli_option_bad(const char *command, const cli_option *o, const char *arg, const char *want);

#endif
