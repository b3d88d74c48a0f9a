/* --recipe FILE and --set NAME=VALUE (measure, plan, simulate, validate): the
 * training recipe's yaml read before the other options (a prescan), so its
 * filter, batching and tokenizer are the defaults every explicit flag then
 * overrides, wherever on the line it stands. */
#ifndef ES_CLI_RECIPE_H
#define ES_CLI_RECIPE_H

#include "cli.h"
#include "cli_options.h"

#define CLI_RECIPE_MAX_SETS 64

typedef struct cli_recipe_opts {
    const char *path;                      /* --recipe, or NULL */
    const char *sets[CLI_RECIPE_MAX_SETS]; /* --set, in argv order */
    size_t n_sets;
    int read;                              /* the prescan is done: the options are
                                              no-ops in the main parse */
    es_recipe *r;                          /* loaded (freed at exit) */
    es_recipe_info info;
} cli_recipe_opts;
extern cli_recipe_opts cli_recipe;

/* The options (their targets are the global above). */
extern const cli_option cli_recipe_opts_table[];
extern const size_t cli_recipe_opt_count;
#define CLI_RECIPE_TABLE(heading) {(heading), cli_recipe_opts_table, cli_recipe_opt_count}

/* The prescan of --recipe and --set, then the recipe read. Returns 0 (with or
 * without one: cli_recipe.r), or -1 after one line on stderr naming the file
 * and problem (exit 2). */
int cli_recipe_load(const cli_command *c, void *const targets[CLI_T_COUNT], int argc,
                    char **argv);

/* With a recipe read, a --loader given (given: the command line had one;
 * loader: its value) that names another loader than the recipe's: one line
 * on stderr and -1 (exit 2). 0 otherwise (no recipe, no --loader, or the same
 * loader). */
int cli_recipe_refuse_loader(int given, es_loader loader);

/* After the main parse: when no tokenizer option was given and an input is to
 * be measured (not a cost table), the recipe's tokenizer goes into
 * cli_tokenizer; a tokenizer path the recipe leaves to the training script is
 * then one line on stderr and -1 (exit 2); a kind equishard does not count, a
 * note. 0 otherwise. */
int cli_recipe_tokenizer(const char *command, const char *const *inputs, size_t n);

#endif
