/* equishard measure [-j N] [-o costs.tsv|costs.tsv.zst] [--hash]
 *                   [--utt-emb SRC] [--spk-emb SRC] [--speech-tokens SRC]
 *                   [--on-error fail|skip] [--root DIR] [--quiet] LIST...
 * (under mpirun/srun: cmd_measure_mpi.c) */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cli_recipe.h"
#include "measure.h"

static const char intro[] =
    "usage: equishard measure [OPTIONS] LIST...\n"
    "\n"
    "Measures every utterance of the inputs into a cost table (TSV; zstd when the\n"
    "output name ends in .zst). LIST is a shard list (one shard path per line), a\n"
    "single tar/tar.gz/tar.zst or CosyVoice parquet shard, a WeNet raw list (JSON\n"
    "lines) or a Kaldi data directory; formats are detected from content.\n"
    "\n";

static const char outro[] =
    "--root also resolves the relative paths inside --utt-emb and --spk-emb lists.\n"
    "Started by mpirun, mpiexec or srun (when built with MPI), the processes share\n"
    "the shards (-j threads each) and rank 0 writes the same table one process would.\n";

static const cli_option own[] = {
    CLI_OPT_STR("output", 'o', CLI_AT(measure_args, output), "FILE",
        "write the table here (default or \"-\": standard output)"),
    CLI_OPT_STR("utt-emb", 0, CLI_AT(measure_args, emb.utt_emb), "SRC",
        "set the utt_emb flag of rows whose key has an embedding in\n"
        "SRC (utt2embedding.pt, .npy + --utt-keys, parquet)"),
    CLI_OPT_STR("spk-emb", 0, CLI_AT(measure_args, emb.spk_emb), "SRC",
        "set spk_emb for rows whose speaker has one in SRC"),
    CLI_OPT_STR("utt-keys", 0, CLI_AT(measure_args, emb.utt_keys), "FILE",
        "key list of a .npy --utt-emb"),
    CLI_OPT_STR("spk-keys", 0, CLI_AT(measure_args, emb.spk_keys), "FILE",
        "key list of a .npy --spk-emb"),
};

static int parse_args(int argc, char **argv, measure_args *a)
{
    const cli_table tables[] = {
        CLI_TABLE(NULL, own),
        CLI_SHARED(NULL, cli_measure),
        CLI_SHARED(NULL, cli_tok),
        CLI_RECIPE_TABLE(NULL),
    };
    const cli_command cmd = {"measure", intro, outro, tables, sizeof tables / sizeof tables[0]};
    es_measure_defaults(&a->s);
    memset(&a->emb, 0, sizeof a->emb);
    a->output = "-";
    a->list = (cli_list_opts){0};
    void *const targets[CLI_T_COUNT] = {a, NULL, &a->s, &a->list, &cli_tokenizer};
    if (cli_recipe_load(&cmd, targets, argc, argv)) /* its tokenizer */
        return -1;
    int rc = cli_options_parse(&cmd, targets, argc, argv);
    if (rc)
        return rc;
    if (cli_tokenizer_check("measure"))
        return -1;
    if (optind >= argc)
        return cli_usage_error(&cmd, "no LIST given");
    a->emb.root = a->s.root; /* --root resolves inside --utt-emb/--spk-emb lists too */
    a->inputs = (const char *const *)argv + optind;
    a->n_inputs = (size_t)(argc - optind);
    return cli_recipe_tokenizer("measure", a->inputs, a->n_inputs);
}

/* -o FILE: rows go to the file as units finish (es_measure_to_file), so the
 * table is never whole in memory; each unit's rows get the embedding flags and
 * speech tokens first, from sources loaded once (es_row_marks). Standard
 * output keeps the whole-table path: nothing is printed unless all succeeded. */
typedef struct stream_state {
    es_row_marks *marks;   /* NULL without --utt-emb/--spk-emb/--speech-tokens */
    size_t truncated, unsupported;
    cli_tally tally;       /* for the summary line */
} stream_state;

static int on_rows(es_context *ctx, void *user, es_cost_table *rows)
{
    stream_state *st = user;
    int rc = st->marks ? es_row_marks_apply(ctx, st->marks, rows) : ES_OK;
    cli_count_problems(rows, &st->truncated, &st->unsupported);
    cli_tally_add(&st->tally, rows);
    return rc;
}

static int measure_to_file(es_context *ctx, measure_args *a, cli_progress *progress)
{
    stream_state st = {NULL, 0, 0, {0}};
    int emb = a->emb.utt_emb || a->emb.spk_emb;
    int rc = emb || a->list.speech_tokens
                 ? es_row_marks_new(ctx, emb ? &a->emb : NULL, a->list.speech_tokens, &st.marks)
                 : ES_OK;
    es_cost_table *skips = NULL;
    if (rc == ES_OK)
        rc = es_measure_to_file(ctx, &a->s, a->inputs, a->n_inputs, a->output, on_rows, &st,
                                &skips);
    cli_progress_end(progress);
    int exit_code = rc == ES_OK ? EXIT_OK : cli_fail(es_errmsg(ctx), rc);
    if (rc == ES_OK && a->list.speech_tokens) {
        es_speech_token_stats counts;
        es_row_marks_stats(st.marks, &counts);
        cli_report_speech_tokens(a->list.speech_tokens, &counts);
    }
    if (rc == ES_OK)
        cli_report_problems(skips, st.truncated, st.unsupported);
    if (rc == ES_OK)
        cli_measure_summary(&st.tally, cli_progress_elapsed(progress), a->output, a->list.quiet);
    cli_tally_free(&st.tally);
    es_cost_table_free(skips);
    es_row_marks_free(st.marks);
    return exit_code;
}

int cmd_measure(int argc, char **argv)
{
    measure_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    const char *const read[] = {a.emb.utt_emb, a.emb.spk_emb, a.emb.utt_keys, a.emb.spk_keys,
                                a.list.speech_tokens, cli_tokenizer.path, cli_tokenizer.symbol_table,
                                cli_tokenizer.non_lang_syms};
    if (cli_refuse_output_input("measure", a.output, a.inputs, a.n_inputs) ||
        cli_refuse_output_input("measure", a.output, read, sizeof read / sizeof read[0]))
        return EXIT_BAD_INPUT;
    es_context *tctx = cli_context_new();
    if (!tctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    rc = cli_load_tokenizer(tctx, &a.s);
    if (rc != ES_OK) {
        int code = cli_fail(es_errmsg(tctx), rc);
        es_context_free(tctx);
        return code;
    }
    es_context_free(tctx);
#if HAVE_MPI
    if (cli_launched_by_mpi())
        return measure_mpi(&a);
#endif
    cli_progress progress;
    cli_progress_init(&progress, "measure", "shards", a.list.quiet);
    a.s.progress = cli_progress_update;
    a.s.progress_user = &progress;

    es_context *ctx = cli_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    if (strcmp(a.output, "-") != 0) {
        rc = measure_to_file(ctx, &a, &progress);
        es_context_free(ctx);
        return rc;
    }
    es_cost_table *table = NULL;
    rc = es_measure(ctx, &a.s, a.inputs, a.n_inputs, &table);
    cli_progress_end(&progress);
    int exit_code = rc == ES_OK ? measure_output(ctx, &a, table, &progress)
                                : cli_fail(es_errmsg(ctx), rc);
    es_context_free(ctx);
    return exit_code;
}
