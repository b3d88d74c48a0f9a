/* Option tables shared by several commands (cli_options.h): the cost model and
 * CosyVoice's filter (plan, simulate, validate), the measure settings used when
 * inputs are lists (measure, plan, simulate), and the text tokenizer (measure,
 * plan, simulate, validate). Each command lists them after its own table, with
 * the heading it wants, and points the targets at its own structs. */
#ifndef ES_CLI_MODEL_H
#define ES_CLI_MODEL_H

#include "cli.h"
#include "cli_options.h"

/* What the measure table writes besides es_measure_settings (CLI_T_LIST). */
typedef struct cli_list_opts {
    int quiet;                 /* -q, --quiet: no progress line, no summary */
    const char *speech_tokens; /* --speech-tokens SRC, or NULL */
} cli_list_opts;

/* CLI_T_MODEL: --frame-rate, the weights, --cost-model (applied in argv order,
 * so flags after it override the file). */
extern const cli_option cli_cost_model_opts[];
extern const size_t cli_cost_model_opt_count;
/* CLI_T_MODEL: the loader's filter. */
extern const cli_option cli_filter_opts[];
extern const size_t cli_filter_opt_count;
/* CLI_T_MEASURE and CLI_T_LIST: -j/--threads, --root, --on-error, --hash,
 * -q/--quiet, --speech-tokens. */
extern const cli_option cli_measure_opts[];
extern const size_t cli_measure_opt_count;
/* CLI_T_TOKENIZER: --tokenizer, --specials, --symbol-table, --non-lang-syms,
 * --split-with-space. */
extern const cli_option cli_tok_opts[];
extern const size_t cli_tok_opt_count;

/* A cli_table of one of the shared tables above (prefix: cli_cost_model,
 * cli_filter, cli_measure, cli_tok). */
#define CLI_SHARED(heading, prefix) {(heading), prefix##_opts, prefix##_opt_count}

/* The headings plan and simulate use. */
extern const char cli_cost_model_heading[];
extern const char cli_filter_heading[];
extern const char cli_measure_heading[];

#endif
