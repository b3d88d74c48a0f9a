#include "cli_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_FRAME_RATE = CLI_MODEL_FIRST, OPT_W_FRAMES, OPT_W_TEXT, OPT_W_SPEECH_TOKENS,
    OPT_W_FRAMES_SQ, OPT_W_MISSING_EMB, OPT_W_OVERHEAD, OPT_MIN_LENGTH, OPT_MAX_LENGTH,
    OPT_TOKEN_MIN, OPT_TOKEN_MAX, OPT_MIN_RATIO, OPT_MAX_RATIO, OPT_REQUIRE_SPEECH_TOKEN,
    OPT_NO_REQUIRE_SPEECH_TOKEN, OPT_COST_MODEL, OPT_W_BATCH, OPT_MODEL_END,
    OPT_THREADS = CLI_OPT_THREADS, OPT_ROOT = CLI_OPT_ROOT, OPT_ON_ERROR = CLI_OPT_ON_ERROR,
    OPT_HASH = CLI_OPT_HASH, OPT_QUIET = CLI_OPT_QUIET, OPT_SPEECH_TOKENS = CLI_OPT_SPEECH_TOKENS,
    OPT_TOKENIZER = CLI_OPT_TOKENIZER, OPT_SPECIALS = CLI_OPT_SPECIALS,
};

const struct option cli_model_options[] = {
    {"frame-rate", required_argument, NULL, OPT_FRAME_RATE},
    {"w-frames", required_argument, NULL, OPT_W_FRAMES},
    {"w-text", required_argument, NULL, OPT_W_TEXT},
    {"w-speech-tokens", required_argument, NULL, OPT_W_SPEECH_TOKENS},
    {"w-frames-sq", required_argument, NULL, OPT_W_FRAMES_SQ},
    {"w-missing-emb", required_argument, NULL, OPT_W_MISSING_EMB},
    {"w-overhead", required_argument, NULL, OPT_W_OVERHEAD},
    {"min-length", required_argument, NULL, OPT_MIN_LENGTH},
    {"max-length", required_argument, NULL, OPT_MAX_LENGTH},
    {"token-min-length", required_argument, NULL, OPT_TOKEN_MIN},
    {"token-max-length", required_argument, NULL, OPT_TOKEN_MAX},
    {"min-output-input-ratio", required_argument, NULL, OPT_MIN_RATIO},
    {"max-output-input-ratio", required_argument, NULL, OPT_MAX_RATIO},
    {"require-speech-token", no_argument, NULL, OPT_REQUIRE_SPEECH_TOKEN},
    {"no-require-speech-token", no_argument, NULL, OPT_NO_REQUIRE_SPEECH_TOKEN},
    {"cost-model", required_argument, NULL, OPT_COST_MODEL},
    {"w-batch", required_argument, NULL, OPT_W_BATCH},
};
const size_t cli_model_option_count = sizeof cli_model_options / sizeof cli_model_options[0];

const struct option cli_measure_options[] = {
    {"threads", required_argument, NULL, OPT_THREADS},
    {"root", required_argument, NULL, OPT_ROOT},
    {"on-error", required_argument, NULL, OPT_ON_ERROR},
    {"hash", no_argument, NULL, OPT_HASH},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"speech-tokens", required_argument, NULL, OPT_SPEECH_TOKENS},
    {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
    {"specials", required_argument, NULL, OPT_SPECIALS},
    CLI_SYMBOL_TABLE_OPTIONS(CLI_OPT_SYMBOL_TABLE),
};
const size_t cli_measure_option_count = sizeof cli_measure_options / sizeof cli_measure_options[0];

const char cli_model_usage[] =
    "cost model (cost = w_frames*frames + w_text*text + w_speech_tokens*tokens\n"
    "            + w_frames_sq*frames^2 + w_missing_emb*[no embedding]*frames + w_overhead):\n"
    "      --frame-rate F            feature frames per second (default 50, CosyVoice 2)\n"
    "      --w-frames A  --w-text B  --w-speech-tokens C  --w-frames-sq Q\n"
    "      --w-missing-emb E  --w-overhead U  --w-batch B  weights (default 1 0 ... 0);\n"
    "                                a batch pads: n x its longest (docs/COST_MODEL.md)\n"
    "      --cost-model FILE         frame_rate and weights from `equishard calibrate`'s\n"
    "                                model.json (flags after it override); the plan and\n"
    "                                simulate's JSON record its path and xxh3 digest\n"
    "the loader's filter (CosyVoice processor.filter; lengths in 10 ms frames):\n"
    "      --min-length N            default 100\n"
    "      --max-length N            default 40960\n"
    "      --token-min-length N      default 1 (text tokens; see --tokenizer)\n"
    "      --token-max-length N      default 200\n"
    "      --min-output-input-ratio R  --max-output-input-ratio R  (default 0.0005, 1)\n"
    "      --require-speech-token    drop utterances without speech tokens (default:\n"
    "                                when the table has speech tokens at all, as\n"
    "                                CosyVoice's filter; --no-require-speech-token: never)\n";

const char cli_measure_usage[] =
    "when inputs are lists (measured on the fly, as `equishard measure`):\n"
    "      --threads N  --root DIR  --on-error fail|skip  --hash  --quiet\n"
    "      --speech-tokens SRC       speech_tokens of each row = the length of its\n"
    "                                list in SRC (utt2speech_token.pt); 0 without one\n"
    "      --tokenizer PATH          count text tokens with the recipe's tokenizer (e.g.\n"
    "                                CosyVoice2-0.5B/CosyVoice-BlankEN): the token filters\n"
    "                                need them and are not applied without\n"
    "      --specials SET            cosyvoice2 (default), cosyvoice3 or none\n"
    "      --symbol-table FILE       count text tokens as WeNet's CharTokenizer does\n"
    "                                (--loader wenet's label): units.txt, \"SYMBOL ID\" lines\n"
    "      --non-lang-syms FILE      its non_lang_syms file ({xxx}, <xxx>, [xxx] a line)\n"
    "      --split-with-space        its split_with_space (words, not characters)\n";

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

static int bad_value(const char *command, int id, const char *arg, const char *want)
{
    const char *name = "?";
    for (size_t i = 0; i < cli_model_option_count; i++)
        if (cli_model_options[i].val == id)
            name = cli_model_options[i].name;
    for (size_t i = 0; i < cli_measure_option_count; i++)
        if (cli_measure_options[i].val == id)
            name = cli_measure_options[i].name;
    fprintf(stderr, "equishard %s: --%s needs %s, got '%s'\n", command, name, want, arg);
    return -1;
}

int cli_model_option(int id, const char *arg, es_cost_model *m, const char *command)
{
    if (id < CLI_MODEL_FIRST || id >= OPT_MODEL_END)
        return 0;
    if (id == OPT_REQUIRE_SPEECH_TOKEN || id == OPT_NO_REQUIRE_SPEECH_TOKEN) {
        m->require_speech_token = id == OPT_REQUIRE_SPEECH_TOKEN;
        return 1;
    }
    if (id == OPT_COST_MODEL) {
        es_context *ctx = es_context_new();
        int rc = ctx ? es_cost_model_read(ctx, arg, m) : ES_ERR_NOMEM;
        if (rc != ES_OK)
            fprintf(stderr, "equishard %s: %s\n", command, ctx ? es_errmsg(ctx) : "out of memory");
        es_context_free(ctx);
        return rc == ES_OK ? 1 : -1;
    }
    if (id == OPT_W_BATCH) {
        double v;
        if (cli_parse_double(arg, &v) || v < 0)
            return bad_value(command, id, arg, "a number >= 0");
        m->w_batch = v;
        return 1;
    }
    if (id == OPT_TOKEN_MIN || id == OPT_TOKEN_MAX) {
        unsigned long long v;
        if (cli_parse_u64(arg, &v) || v > UINT32_MAX)
            return bad_value(command, id, arg, "a whole number");
        *(id == OPT_TOKEN_MIN ? &m->token_min_length : &m->token_max_length) = (uint32_t)v;
        return 1;
    }
    double v;
    if (cli_parse_double(arg, &v) || v < 0 || (id == OPT_FRAME_RATE && v == 0))
        return bad_value(command, id, arg, id == OPT_FRAME_RATE ? "a positive number" : "a number >= 0");
    double *field[] = {&m->frame_rate, &m->w_frames, &m->w_text, &m->w_speech_tokens,
                       &m->w_frames_sq, &m->w_missing_emb, &m->w_overhead, &m->min_length,
                       &m->max_length, NULL, NULL, &m->min_output_input_ratio,
                       &m->max_output_input_ratio};
    *field[id - CLI_MODEL_FIRST] = v;
    return 1;
}

int cli_measure_option(int id, const char *arg, es_measure_settings *s, int *quiet,
                       const char **speech_tokens, const char *command)
{
    switch (id) {
    case OPT_SPEECH_TOKENS: *speech_tokens = arg; return 1;
    case OPT_TOKENIZER: cli_tokenizer.path = arg; return 1;
    case OPT_SPECIALS: cli_tokenizer.specials = arg; return 1;
    case CLI_OPT_SYMBOL_TABLE:
    case CLI_OPT_SYMBOL_TABLE + 1:
    case CLI_OPT_SYMBOL_TABLE + 2: return cli_symbol_table_option(id, CLI_OPT_SYMBOL_TABLE, arg);
    case OPT_THREADS:
        if (cli_parse_int(arg, &s->threads) || s->threads == 0)
            return bad_value(command, id, arg, "a positive number");
        return 1;
    case OPT_ROOT: s->root = arg; return 1;
    case OPT_HASH: s->hash = 1; return 1;
    case OPT_QUIET: *quiet = 1; return 1;
    case OPT_ON_ERROR:
        if (cli_parse_enum(ES_ENUM_ON_ERROR, arg, &s->on_error))
            return bad_value(command, id, arg, "fail or skip");
        return 1;
    default:
        return 0;
    }
}

struct option *cli_join_options(const struct option *own, size_t n_own, int with_model,
                                int with_measure)
{
    size_t n = n_own + (with_model ? cli_model_option_count : 0) +
               (with_measure ? cli_measure_option_count : 0);
    struct option *all = calloc(n + 1, sizeof *all);
    if (!all)
        return NULL;
    size_t at = 0;
    for (size_t i = 0; i < n_own; i++)
        all[at++] = own[i];
    for (size_t i = 0; with_model && i < cli_model_option_count; i++)
        all[at++] = cli_model_options[i];
    for (size_t i = 0; with_measure && i < cli_measure_option_count; i++)
        all[at++] = cli_measure_options[i];
    return all;
}
