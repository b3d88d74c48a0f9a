/* --recipe / --set (cli_recipe.h). */
#include "cli_recipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_model.h"

cli_recipe_opts cli_recipe;

static int set_recipe(const cli_option *o, const char *arg, void *field, const char *command)
{
    (void)o, (void)field, (void)command;
    if (!cli_recipe.read)
        cli_recipe.path = arg;
    return 0;
}

static int add_set(const cli_option *o, const char *arg, void *field, const char *command)
{
    (void)field;
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return -1;
    if (cli_recipe.read)
        return 0;
    if (cli_recipe.n_sets == CLI_RECIPE_MAX_SETS) {
        if (command)
            cli_option_bad(command, o, arg, "at most 64 of them");
        return -2;
    }
    cli_recipe.sets[cli_recipe.n_sets++] = arg;
    return 0;
}

const cli_option cli_recipe_opts_table[] = {
    {.name = "recipe", .kind = CLI_CUSTOM, .has_arg = 1, .fn = set_recipe, .metavar = "FILE",
     .help = "the training recipe's yaml (CosyVoice's hyperpyyaml, WeNet's\n"
             "train yaml): its filter, shuffle, sort, batch, frame rate\n"
             "and tokenizer are the defaults; flags override them"},
    {.name = "set", .kind = CLI_CUSTOM, .has_arg = 1, .fn = add_set, .metavar = "NAME=VALUE",
     .want = "NAME=VALUE",
     .help = "a top-level value of the recipe, as the training script\n"
             "overrides it (e.g. qwen_pretrain_path=DIR); repeatable"},
};
const size_t cli_recipe_opt_count = sizeof cli_recipe_opts_table / sizeof cli_recipe_opts_table[0];

static void free_recipe(void)
{
    es_recipe_free(cli_recipe.r);
    cli_recipe.r = NULL;
}

int cli_recipe_load(const cli_command *c, void *const targets[CLI_T_COUNT], int argc,
                    char **argv)
{
    static const char *const names[] = {"recipe", "set", NULL};
    cli_recipe.path = NULL;
    cli_recipe.n_sets = 0;
    cli_recipe.read = 0;
    cli_options_prescan(c, targets, argc, argv, names);
    cli_recipe.read = 1;
    if (!cli_recipe.path) {
        if (cli_recipe.n_sets) {
            fprintf(stderr, "equishard %s: --set names a value of the recipe: give --recipe FILE\n",
                    c->name);
            return -1;
        }
        return 0;
    }
    es_context *ctx = cli_context_new();
    int rc = ctx ? es_recipe_read(ctx, cli_recipe.path, cli_recipe.sets, cli_recipe.n_sets,
                                  &cli_recipe.r)
                 : ES_ERR_NOMEM;
    if (rc != ES_OK)
        fprintf(stderr, "equishard %s: %s\n", c->name, ctx ? es_errmsg(ctx) : "out of memory");
    es_context_free(ctx);
    if (rc != ES_OK)
        return -1;
    atexit(free_recipe);
    es_recipe_get_info(cli_recipe.r, &cli_recipe.info);
    return 0;
}

int cli_recipe_tokenizer(const char *command, const char *const *inputs, size_t n)
{
    const es_recipe_info *in = &cli_recipe.info;
    cli_tokenizer_opts *t = &cli_tokenizer;
    if (!cli_recipe.r || t->path || t->symbol_table || t->specials || t->non_lang_syms ||
        t->split_with_space)
        return 0;
    int measures = 0;
    for (size_t i = 0; i < n && !measures; i++)
        measures = !es_is_cost_table(inputs[i]);
    if (!measures) /* a cost table keeps the counts it was measured with */
        return 0;
    if (in->tokenizer_unresolved) {
        fprintf(stderr, "equishard %s: %s\n", command, in->tokenizer_note);
        return -1;
    }
    if (*in->tokenizer_note)
        fprintf(stderr, "equishard %s: note: %s\n", command, in->tokenizer_note);
    const char *file = in->tokenizer ? in->tokenizer : in->symbol_table;
    if (file && access(file, R_OK) != 0) { /* say where the path came from */
        fprintf(stderr, "equishard %s: %s: the recipe's tokenizer %s cannot be read (relative "
                        "paths resolve against the current directory, as in training): run from "
                        "the recipe's folder, or give %s\n", command, in->path, file,
                in->tokenizer ? "--tokenizer DIR" : "--symbol-table FILE");
        return -1;
    }
    t->path = in->tokenizer;
    t->specials = in->tokenizer ? in->specials : NULL;
    t->symbol_table = in->symbol_table;
    t->non_lang_syms = in->symbol_table ? in->non_lang_syms : NULL;
    t->split_with_space = in->symbol_table ? in->split_with_space : 0;
    return 0;
}

int cli_recipe_refuse_loader(int given, es_loader loader)
{
    if (!cli_recipe.r || !given || loader == cli_recipe.info.loader)
        return 0;
    cli_error("--loader %s, but %s is a %s recipe", es_enum_name(ES_ENUM_LOADER, loader), cli_recipe.info.path,
              es_enum_name(ES_ENUM_LOADER, cli_recipe.info.loader));
    return -1;
}
