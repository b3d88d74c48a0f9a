/* The option tables several commands share (cli_model.h): declared once, so
 * plan, simulate, validate and measure parse, refuse and document them alike. */
#include "cli_model.h"

#include <stdio.h>

/* --cost-model FILE: frame_rate and weights from calibrate's model.json, read
 * when the option comes, so flags after it override the file. */
static int read_cost_model(const cli_option *o, const char *arg, void *field, const char *command)
{
    (void)o;
    es_context *ctx = cli_context_new();
    int rc = ctx ? es_cost_model_read(ctx, arg, field) : ES_ERR_NOMEM;
    if (rc != ES_OK && command)
        fprintf(stderr, "equishard %s: %s\n", command, ctx ? es_errmsg(ctx) : "out of memory");
    es_context_free(ctx);
    return rc == ES_OK ? 0 : -2;
}

const cli_option cli_cost_model_opts[] = {
    {.name = "frame-rate", .kind = CLI_NUM, .excl = 1, .target = CLI_T_MODEL,
     CLI_AT(es_cost_model, frame_rate), .metavar = "F", .help = "feature frames per second (default 50, CosyVoice 2)"},
    CLI_OPT_NUM("w-frames", CLI_IN(CLI_T_MODEL, es_cost_model, w_frames), "A",
        "weight of frames (default 1)"),
    CLI_OPT_NUM("w-text", CLI_IN(CLI_T_MODEL, es_cost_model, w_text), "B",
        "weight of text tokens (default 0)"),
    CLI_OPT_NUM("w-speech-tokens", CLI_IN(CLI_T_MODEL, es_cost_model, w_speech_tokens), "C",
        "weight of speech tokens (default 0)"),
    CLI_OPT_NUM("w-frames-sq", CLI_IN(CLI_T_MODEL, es_cost_model, w_frames_sq), "Q",
        "weight of frames^2 (default 0)"),
    CLI_OPT_NUM("w-missing-emb", CLI_IN(CLI_T_MODEL, es_cost_model, w_missing_emb), "E",
        "weight of frames of utterances without an\n"
        "embedding (default 0)"),
    CLI_OPT_NUM("w-overhead", CLI_IN(CLI_T_MODEL, es_cost_model, w_overhead), "U",
        "cost of each utterance (default 0)"),
    CLI_OPT_NUM("w-batch", CLI_IN(CLI_T_MODEL, es_cost_model, w_batch), "B",
        "cost of each batch (default 0); a batch pads:\n"
        "n x its longest (docs/COST_MODEL.md)"),
    {.name = "cost-model", .kind = CLI_CUSTOM, .has_arg = 1, .target = CLI_T_MODEL,
     .offset = 0, .fn = read_cost_model, .metavar = "FILE",
     .help = "frame_rate and weights from `equishard calibrate`'s\n"
             "model.json (flags after it override); the plan and\n"
             "simulate's JSON record its path and xxh3 digest"},
};
const size_t cli_cost_model_opt_count = sizeof cli_cost_model_opts / sizeof cli_cost_model_opts[0];

const cli_option cli_filter_opts[] = {
    CLI_OPT_NUM("min-length", CLI_IN(CLI_T_MODEL, es_cost_model, min_length), "N", "default 100"),
    CLI_OPT_NUM("max-length", CLI_IN(CLI_T_MODEL, es_cost_model, max_length), "N", "default 40960"),
    {.name = "token-min-length", .kind = CLI_UINT, .target = CLI_T_MODEL,
     CLI_AT(es_cost_model, token_min_length), .max = UINT32_MAX, .metavar = "N",
     .help = "default 1 (text tokens; see --tokenizer)"},
    {.name = "token-max-length", .kind = CLI_UINT, .target = CLI_T_MODEL,
     CLI_AT(es_cost_model, token_max_length), .max = UINT32_MAX, .metavar = "N",
     .help = "default 200"},
    CLI_OPT_NUM("min-output-input-ratio",
        CLI_IN(CLI_T_MODEL, es_cost_model, min_output_input_ratio), "R",
        "default 0.0005"),
    CLI_OPT_NUM("max-output-input-ratio",
        CLI_IN(CLI_T_MODEL, es_cost_model, max_output_input_ratio), "R",
        "default 1"),
    {.name = "require-speech-token", .kind = CLI_FLAG, .target = CLI_T_MODEL, .ival = 1,
     CLI_AT(es_cost_model, require_speech_token),
     .help = "drop utterances without speech tokens (default:\n"
             "when the table has speech tokens at all, as\n"
             "CosyVoice's filter)"},
    {.name = "no-require-speech-token", .kind = CLI_FLAG, .target = CLI_T_MODEL, .ival = 0,
     CLI_AT(es_cost_model, require_speech_token), .help = "never drop them"},
};
const size_t cli_filter_opt_count = sizeof cli_filter_opts / sizeof cli_filter_opts[0];

const cli_option cli_measure_opts[] = {
    {.name = "threads", .short_name = 'j', .kind = CLI_INT, .min = 1, .target = CLI_T_MEASURE,
     CLI_AT(es_measure_settings, threads), .metavar = "N",
     .help = "measure N shards at once (default: all cores)"},
    {.name = "root", .kind = CLI_STR, .target = CLI_T_MEASURE, CLI_AT(es_measure_settings, root),
     .metavar = "DIR", .help = "resolve relative paths inside lists against DIR\n"
                               "(default: the current directory, as the loaders do)"},
    {.name = "on-error", .kind = CLI_ENUM, .en = ES_ENUM_ON_ERROR, .target = CLI_T_MEASURE,
     CLI_AT(es_measure_settings, on_error),
     .help = "fail (default): stop at the first problem, exit 2;\n"
             "skip: leave bad shards/utterances out and list them"},
    {.name = "hash", .kind = CLI_FLAG, .ival = 1, .target = CLI_T_MEASURE,
     CLI_AT(es_measure_settings, hash),
     .help = "add the xxh3-64 of every audio object (reads all bytes)"},
    {.name = "quiet", .short_name = 'q', .kind = CLI_FLAG, .ival = 1, .target = CLI_T_LIST,
     CLI_AT(cli_list_opts, quiet),
     .help = "no progress line, no summary line (warnings stay)"},
    {.name = "speech-tokens", .kind = CLI_STR, .target = CLI_T_LIST,
     CLI_AT(cli_list_opts, speech_tokens), .metavar = "SRC",
     .help = "speech_tokens of each row = the length of its key's\n"
             "list in SRC (CosyVoice utt2speech_token.pt); 0 without\n"
             "one; the counts are reported on stderr"},
};
const size_t cli_measure_opt_count = sizeof cli_measure_opts / sizeof cli_measure_opts[0];

const cli_option cli_tok_opts[] = {
    {.name = "tokenizer", .kind = CLI_STR, .target = CLI_T_TOKENIZER,
     CLI_AT(cli_tokenizer_opts, path), .metavar = "PATH",
     .help = "count each transcript's text tokens with the recipe's\n"
             "tokenizer: a folder with vocab.json + merges.txt\n"
             "(CosyVoice2-0.5B/CosyVoice-BlankEN) or tokenizer.json;\n"
             "the token filters need them and are not applied without"},
    {.name = "specials", .kind = CLI_STR, .target = CLI_T_TOKENIZER,
     CLI_AT(cli_tokenizer_opts, specials), .metavar = "SET",
     .help = "cosyvoice2 (default), cosyvoice3 or none: the special\n"
             "tokens the recipe's tokenizer class adds"},
    {.name = "symbol-table", .kind = CLI_STR, .target = CLI_T_TOKENIZER,
     CLI_AT(cli_tokenizer_opts, symbol_table), .metavar = "FILE",
     .help = "count them as WeNet's CharTokenizer does (the label\n"
             "--loader wenet filters on): units.txt, \"SYMBOL ID\" lines"},
    {.name = "non-lang-syms", .kind = CLI_STR, .target = CLI_T_TOKENIZER,
     CLI_AT(cli_tokenizer_opts, non_lang_syms), .metavar = "FILE",
     .help = "its non_lang_syms ({xxx}, <xxx> or [xxx], one a line)"},
    {.name = "split-with-space", .kind = CLI_FLAG, .ival = 1, .target = CLI_T_TOKENIZER,
     CLI_AT(cli_tokenizer_opts, split_with_space),
     .help = "its split_with_space (a token per word, not per character)"},
};
const size_t cli_tok_opt_count = sizeof cli_tok_opts / sizeof cli_tok_opts[0];

const char cli_cost_model_heading[] =
    "cost model (cost = w_frames*frames + w_text*text + w_speech_tokens*tokens\n"
    "            + w_frames_sq*frames^2 + w_missing_emb*[no embedding]*frames + w_overhead):\n";
const char cli_filter_heading[] =
    "the loader's filter (CosyVoice processor.filter; lengths in 10 ms frames):\n";
const char cli_measure_heading[] =
    "when inputs are lists (measured on the fly, as `equishard measure`):\n";
