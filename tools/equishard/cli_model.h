/* Command-line flags shared by the commands that model the loader (plan,
 * simulate, validate): the cost model, CosyVoice's filter, and the measure
 * settings used when inputs are lists. Each command appends these option
 * tables to its own and hands unknown option ids to the *_option() functions. */
#ifndef ES_CLI_MODEL_H
#define ES_CLI_MODEL_H

#include <getopt.h>

#include "cli.h"

/* Option ids 1000..1099 belong to the cost model and filter, 1100..1149 to
 * measure settings; commands use other values for their own options. */
enum {
    CLI_MODEL_FIRST = 1000,
    CLI_MEASURE_FIRST = 1100,
    /* measure settings, by id, so commands can map short options (-j, -q) */
    CLI_OPT_THREADS = CLI_MEASURE_FIRST, CLI_OPT_ROOT, CLI_OPT_ON_ERROR, CLI_OPT_HASH,
    CLI_OPT_QUIET, CLI_OPT_SPEECH_TOKENS, CLI_OPT_TOKENIZER, CLI_OPT_SPECIALS,
    CLI_OPT_SYMBOL_TABLE, /* then --non-lang-syms, --split-with-space */
    CLI_OPT_SYMBOL_TABLE_END = CLI_OPT_SYMBOL_TABLE + 3,
};

/* getopt_long entries; copy them into the command's table before its {0}. */
extern const struct option cli_model_options[];
extern const size_t cli_model_option_count;
extern const struct option cli_measure_options[];
extern const size_t cli_measure_option_count;

/* Usage text for the options above. */
extern const char cli_model_usage[];
extern const char cli_measure_usage[];

/* Applies one option. Returns 1 when id was one of the table's, 0 when it is
 * not, -1 (after printing why) when its value is bad. */
int cli_model_option(int id, const char *arg, es_cost_model *m, const char *command);
int cli_measure_option(int id, const char *arg, es_measure_settings *s, int *quiet,
                       const char **speech_tokens, const char *command);

/* Builds a {0}-terminated option table: own entries, then the shared ones.
 * Returns a malloc'd array. */
struct option *cli_join_options(const struct option *own, size_t n_own, int with_model,
                                int with_measure);

/* Parses a double / unsigned 64-bit value strictly; returns 0 or -1. */
int cli_parse_double(const char *s, double *out);
int cli_parse_u64(const char *s, unsigned long long *out);

#endif
