/* equishard measure [-j N] [-o costs.tsv|costs.tsv.zst] [--hash]
 *                   [--utt-emb SRC] [--spk-emb SRC] [--speech-tokens SRC]
 *                   [--on-error fail|skip] [--root DIR] [--quiet] LIST...
 * (under mpirun/srun: measure_mpi.c) */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "measure.h"

static const char usage_text[] =
    "usage: equishard measure [OPTIONS] LIST...\n"
    "\n"
    "Measures every utterance of the inputs into a cost table (TSV; zstd when the\n"
    "output name ends in .zst). LIST is a shard list (one shard path per line), a\n"
    "single tar/tar.gz/tar.zst or CosyVoice parquet shard, a WeNet raw list (JSON\n"
    "lines) or a Kaldi data directory; formats are detected from content.\n"
    "\n"
    "  -o, --output FILE      write the table here (default or \"-\": standard output)\n"
    "  -j, --threads N        measure N shards at once (default: all cores)\n"
    "      --hash             add the xxh3-64 of every audio object (reads all bytes)\n"
    "      --utt-emb SRC      set the utt_emb flag of rows whose key has an embedding in\n"
    "                         SRC (utt2embedding.pt, .npy + --utt-keys, parquet)\n"
    "      --spk-emb SRC      set spk_emb for rows whose speaker has one in SRC\n"
    "      --utt-keys FILE, --spk-keys FILE   key lists of .npy sources\n"
    "      --speech-tokens SRC  set speech_tokens of each row to the length of its\n"
    "                         key's list in SRC (CosyVoice utt2speech_token.pt); rows\n"
    "                         without one get 0; the counts are reported on stderr\n"
    "      --tokenizer PATH   count each transcript's text tokens (column text_tokens) with\n"
    "                         the recipe's tokenizer: a folder with vocab.json + merges.txt\n"
    "                         (CosyVoice2-0.5B/CosyVoice-BlankEN) or tokenizer.json\n"
    "      --specials SET     cosyvoice2 (default), cosyvoice3 or none: the special tokens\n"
    "                         the recipe's tokenizer class adds\n"
    "      --symbol-table FILE  count them as WeNet's CharTokenizer does (the label\n"
    "                         --loader wenet filters on): units.txt, \"SYMBOL ID\" lines\n"
    "      --non-lang-syms FILE  its non_lang_syms ({xxx}, <xxx> or [xxx], one a line)\n"
    "      --split-with-space its split_with_space (a token per word, not per character)\n"
    "      --on-error MODE    fail (default): stop at the first problem, exit 2;\n"
    "                         skip: leave bad shards/utterances out and list them\n"
    "      --root DIR         resolve relative paths inside lists (LIST, --utt-emb,\n"
    "                         --spk-emb) against DIR\n"
    "                         (default: the current directory, as the loaders do)\n"
    "  -q, --quiet            no progress line\n"
    "  -h, --help             this text\n"
    "\n"
    "Started by mpirun, mpiexec or srun (when built with MPI), the processes share\n"
    "the shards (-j threads each) and rank 0 writes the same table one process would.\n";

static int parse_args(int argc, char **argv, measure_args *a)
{
    enum { OPT_HASH = 256, OPT_ON_ERROR, OPT_ROOT, OPT_UTT_EMB, OPT_SPK_EMB, OPT_UTT_KEYS, OPT_SPK_KEYS,
           OPT_SPEECH_TOKENS, OPT_TOKENIZER, OPT_SPECIALS, OPT_SYMBOL_TABLE };
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"threads", required_argument, NULL, 'j'},
        {"utt-emb", required_argument, NULL, OPT_UTT_EMB}, {"spk-emb", required_argument, NULL, OPT_SPK_EMB},
        {"utt-keys", required_argument, NULL, OPT_UTT_KEYS}, {"spk-keys", required_argument, NULL, OPT_SPK_KEYS},
        {"speech-tokens", required_argument, NULL, OPT_SPEECH_TOKENS},
        {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
        {"specials", required_argument, NULL, OPT_SPECIALS},
        CLI_SYMBOL_TABLE_OPTIONS(OPT_SYMBOL_TABLE),
        {"hash", no_argument, NULL, OPT_HASH},    {"on-error", required_argument, NULL, OPT_ON_ERROR},
        {"root", required_argument, NULL, OPT_ROOT}, {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    es_measure_defaults(&a->s);
    memset(&a->emb, 0, sizeof a->emb);
    a->output = "-";
    a->speech_tokens = NULL;
    a->quiet = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:j:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': a->output = optarg; break;
        case 'j':
            if (cli_parse_int(optarg, &a->s.threads) || a->s.threads == 0) {
                fprintf(stderr, "equishard measure: -j needs a positive number, got '%s'\n", optarg);
                return -1;
            }
            break;
        case OPT_HASH: a->s.hash = 1; break;
        case OPT_UTT_EMB: a->emb.utt_emb = optarg; break;
        case OPT_SPK_EMB: a->emb.spk_emb = optarg; break;
        case OPT_UTT_KEYS: a->emb.utt_keys = optarg; break;
        case OPT_SPK_KEYS: a->emb.spk_keys = optarg; break;
        case OPT_SPEECH_TOKENS: a->speech_tokens = optarg; break;
        case OPT_TOKENIZER: cli_tokenizer.path = optarg; break;
        case OPT_SPECIALS: cli_tokenizer.specials = optarg; break;
        case OPT_ON_ERROR:
            if (cli_parse_enum(ES_ENUM_ON_ERROR, optarg, &a->s.on_error)) {
                fprintf(stderr, "equishard measure: --on-error is fail or skip, got '%s'\n", optarg);
                return -1;
            }
            break;
        case OPT_ROOT: a->s.root = optarg; break;
        case 'q': a->quiet = 1; break;
        case 'h': fputs(usage_text, stdout); return 1;
        default:
            if (cli_symbol_table_option(c, OPT_SYMBOL_TABLE, optarg))
                break;
            fputs(usage_text, stderr);
            return -1;
        }
    }
    if (cli_tokenizer_check("measure"))
        return -1;
    if (optind >= argc) {
        fprintf(stderr, "equishard measure: no LIST given\n%s", usage_text);
        return -1;
    }
    a->emb.root = a->s.root; /* --root resolves inside --utt-emb/--spk-emb lists too */
    a->inputs = (const char *const *)argv + optind;
    a->n_inputs = (size_t)(argc - optind);
    return 0;
}

int measure_output(es_context *ctx, const measure_args *a, es_cost_table *table)
{
    int rc = ES_OK;
    if (a->emb.utt_emb || a->emb.spk_emb)
        rc = es_cost_table_mark_embeddings(ctx, table, &a->emb);
    if (rc == ES_OK && a->speech_tokens)
        rc = cli_set_speech_tokens(ctx, table, a->speech_tokens);
    if (rc == ES_OK)
        rc = strcmp(a->output, "-") == 0 ? es_cost_table_write_fd(ctx, table, 1, 0)
                                         : es_cost_table_write(ctx, table, a->output);
    int exit_code = rc == ES_OK ? EXIT_OK : cli_fail(es_errmsg(ctx), rc);
    cli_report_table_problems(table);
    es_cost_table_free(table);
    return exit_code;
}

int cmd_measure(int argc, char **argv)
{
    measure_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    es_context *tctx = es_context_new();
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
    if (measure_launched_by_mpi())
        return measure_mpi(&a);
#endif
    cli_progress progress;
    cli_progress_init(&progress, "measure", a.quiet);
    a.s.progress = cli_progress_update;
    a.s.progress_user = &progress;

    es_context *ctx = es_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    es_cost_table *table = NULL;
    rc = es_measure(ctx, &a.s, a.inputs, a.n_inputs, &table);
    cli_progress_end(&progress);
    int exit_code = rc == ES_OK ? measure_output(ctx, &a, table) : cli_fail(es_errmsg(ctx), rc);
    es_context_free(ctx);
    return exit_code;
}
