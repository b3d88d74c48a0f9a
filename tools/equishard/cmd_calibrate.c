/* equishard calibrate --steps LOG... [options] COSTS [-o model.json]
 *
 * Step times logged by the trainer (equishard.loaders' EQUISHARD_STEP_LOG, or
 * any trainer writing the same JSON lines) → the cost model's weights, by
 * es_calibrate. Prints the fit (R², held-out errors, which terms matter) and
 * writes model.json for `plan/simulate/validate --cost-model`. Inputs are told
 * apart by content: cost tables are COSTS, anything else given is a log. */
#include <dirent.h>
#include <getopt.h> /* optind */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_options.h"

static const char intro[] =
    "usage: equishard calibrate --steps LOG... [OPTIONS] COSTS... [-o model.json]\n"
    "\n"
    "Fits the cost model's weights (seconds per frame, per frame^2, per text and\n"
    "speech token, per utterance, per batch) to the step times the trainer logged,\n"
    "by non-negative least squares over each step's padded batch (n x the longest,\n"
    "as the loader pads). Reports R^2, the median and 95th-percentile relative\n"
    "error on held-out steps, and each term's share and worth. docs/COST_MODEL.md.\n"
    "\n";

static const char outro[] =
    "Exit 2 with one line on a log line that cannot be read, a key the table lacks\n"
    "or names twice, too few steps, a degenerate log (every step the same time), or\n"
    "a fit that is no model (every weight 0, values not finite, a held-out R^2\n"
    "below 0 without --allow-negative-r2).\n";

typedef struct list {
    char **v;
    size_t n, cap;
} list;

static int push(list *l, const char *s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v, l->cap = cap;
    }
    return (l->v[l->n] = strdup(s)) ? (l->n++, 0) : -1;
}

static void release(list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int jsonl(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 6 && !strcmp(d->d_name + n - 6, ".jsonl");
}

/* A log, or a folder's *.jsonl in name order. */
static int add_log(list *logs, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return push(logs, path);
    struct dirent **names;
    int n = scandir(path, &names, jsonl, by_name);
    if (n < 0) {
        fprintf(stderr, "equishard calibrate: %s: cannot list the folder\n", path);
        return -1;
    }
    int rc = n ? 0 : -1;
    if (!n)
        fprintf(stderr, "equishard calibrate: %s: no *.jsonl step logs in the folder\n", path);
    for (int i = 0; i < n; i++) {
        char *full = malloc(strlen(path) + strlen(names[i]->d_name) + 2);
        if (rc == 0 && full) {
            size_t len = strlen(path);
            int slash = len && path[len - 1] == '/';
            sprintf(full, "%s%s%s", path, slash ? "" : "/", names[i]->d_name);
            rc = push(logs, full);
        }
        free(full);
        free(names[i]);
    }
    free(names);
    return rc;
}

typedef struct calib_args {
    es_calibrate_settings s;
    list logs;
    const char *output;
    int quiet, steps_given;
} calib_args;

/* --steps LOG: a log, or a folder's *.jsonl (field: the calib_args). */
static int add_steps(const cli_option *o, const char *arg, void *field, const char *command)
{
    (void)o, (void)command;
    calib_args *a = field;
    a->steps_given = 1;
    return add_log(&a->logs, arg) ? -2 : 0;
}

/* --terms "frames,frames_sq,..." → mask; -1 on an unknown name. */
static int parse_terms(const cli_option *o, const char *arg, void *field, const char *command)
{
    (void)o, (void)command;
    uint32_t *mask = field;
    char buf[256];
    if (strlen(arg) >= sizeof buf)
        return -1;
    strcpy(buf, arg);
    *mask = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int j = 0; j < ES_TERM_COUNT; j++)
            if (!strcmp(es_enum_name(ES_ENUM_COST_TERM, j) + 2, tok) || !strcmp(es_enum_name(ES_ENUM_COST_TERM, j), tok))
                *mask |= 1u << j, found = 1;
        if (!found)
            return -1;
    }
    return *mask ? 0 : -1;
}

static const cli_option own[] = {
    {.name = "steps", .kind = CLI_CUSTOM, .has_arg = 1, .fn = add_steps, .offset = 0,
     .metavar = "LOG",
     .help = "a step log (JSON lines {\"rank\", \"step\", \"keys\",\n"
             "\"seconds\"}), or a folder: its *.jsonl; repeatable,\n"
             "and further inputs that are not cost tables are logs"},
    {.name = "output", .short_name = 'o', .kind = CLI_STR, CLI_AT(calib_args, output),
     .metavar = "FILE", .help = "write model.json (atomically); without it, report only"},
    {.name = "frame-rate", .kind = CLI_NUM, .excl = 1, CLI_AT(calib_args, s.model.frame_rate),
     .metavar = "F", .help = "feature frames per second (default 50, CosyVoice 2)"},
    {.name = "warmup", .kind = CLI_UINT, CLI_AT(calib_args, s.warmup), .metavar = "N",
     .help = "steps dropped at the start of each rank's log (default 3)"},
    {.name = "holdout-every", .kind = CLI_UINT, .min = 2, CLI_AT(calib_args, s.holdout_every),
     .metavar = "N", .help = "every N-th step is held out and evaluated (default 5)"},
    {.name = "outlier-mads", .kind = CLI_NUM, CLI_AT(calib_args, s.outlier_mads), .metavar = "X",
     .help = "drop fitted steps beyond X scaled MADs of the relative\n"
             "residual, then refit once (default 5; 0 = keep all)"},
    {.name = "terms", .kind = CLI_CUSTOM, .has_arg = 1, .fn = parse_terms,
     CLI_AT(calib_args, s.terms), .metavar = "LIST",
     .want = "term names (frames, frames_sq, text, speech_tokens, missing_emb, overhead, batch)",
     .help = "terms that may be fitted, comma-separated, of frames,\n"
             "frames_sq, text, speech_tokens, missing_emb, overhead,\n"
             "batch (default all)"},
    {.name = "time-field", .kind = CLI_STR, CLI_AT(calib_args, s.time_field), .metavar = "NAME",
     .help = "the logs' key of the step time (default seconds)"},
    {.name = "allow-negative-r2", .kind = CLI_FLAG, .ival = 1,
     CLI_AT(calib_args, s.allow_negative_r2),
     .help = "write the model even when its held-out R^2 is below 0\n"
             "(it predicts held-out steps worse than their mean)"},
    {.name = "quiet", .short_name = 'q', .kind = CLI_FLAG, .ival = 1, CLI_AT(calib_args, quiet),
     .help = "no report"},
};

static void report(const es_calibration *c, const es_calibrate_settings *s)
{
    es_calibration_info in;
    es_calibration_get_info(c, &in);
    printf("calibrate: %zu steps read; %zu warm-up dropped (first %u per rank and log), %zu "
           "outlier(s) dropped (> %g scaled MADs), %zu fitted, %zu held out\n",
           in.steps_read, in.warmup_dropped, s->warmup, in.outliers_dropped, s->outlier_mads,
           in.fit_steps, in.held_out_steps);
    printf("  %-16s %14s %8s  %s\n", "term", "weight (s)", "share", "held-out median error without it");
    for (int j = 0; j < ES_TERM_COUNT; j++) {
        es_calibration_term t;
        es_calibration_term_info(c, j, &t);
        if (!t.fitted) {
            printf("  %-16s %14s %8s  (no signal in the log, or not in --terms)\n", t.name, "0", "-");
            continue;
        }
        printf("  %-16s %14.6g %7.2f%%  %.2f%%\n", t.name, t.weight, 100 * t.share,
               100 * t.median_error_without);
    }
    printf("fit: R^2 %.4f (held out %.4f); held-out relative error: median %.2f%%, p95 %.2f%% "
           "(fitted steps: median %.2f%%)\n",
           in.r2_fit, in.r2_held_out, 100 * in.median_error, 100 * in.p95_error,
           100 * in.median_error_fit);
}

int cmd_calibrate(int argc, char **argv)
{
    const cli_table tables[] = {CLI_TABLE(NULL, own)};
    const cli_command cmd = {"calibrate", intro, outro, tables, 1};
    calib_args a = {0};
    es_calibrate_defaults(&a.s);
    list costs = {0};
    void *const targets[CLI_T_COUNT] = {&a};
    int rc = cli_options_parse(&cmd, targets, argc, argv);
    if (rc > 0) {
        release(&a.logs);
        return EXIT_OK;
    }
    for (int i = optind; rc == 0 && i < argc; i++)
        rc = es_is_cost_table(argv[i]) ? push(&costs, argv[i]) : add_log(&a.logs, argv[i]);
    if (rc == 0 && (!a.steps_given || !costs.n || !a.logs.n))
        rc = cli_usage_error(&cmd, "--steps LOG and a cost table (COSTS) are required");
    if (rc == 0 && a.output &&
        (cli_refuse_output_input("calibrate", a.output, (const char *const *)argv + optind,
                                 (size_t)(argc - optind)) ||
         cli_refuse_output_input("calibrate", a.output, (const char *const *)a.logs.v,
                                 a.logs.n)))
        rc = -1;
    es_calibrate_settings s = a.s;
    list logs = a.logs;
    const char *output = a.output;
    int quiet = a.quiet;
    es_context *ctx = cli_context_new();
    es_cost_table *t = NULL;
    es_calibration *cal = NULL;
    int st = ES_OK;
    if (rc == 0) {
        es_measure_settings ms;
        es_measure_defaults(&ms);
        /* on a terminal, unless -q: "read: D / T bytes" for the tables, then
         * "calibrate: D / T bytes" for the step logs */
        cli_progress reading, line;
        cli_progress_init(&reading, "read", "bytes", quiet);
        ms.read_progress = reading.enabled ? cli_progress_update : NULL;
        ms.read_progress_user = &reading;
        st = es_load_inputs(ctx, &ms, (const char *const *)costs.v, costs.n, &t);
        cli_progress_end(&reading);
        cli_progress_init(&line, "calibrate", "bytes", quiet);
        s.progress = line.enabled ? cli_progress_update : NULL;
        s.progress_user = &line;
        if (st == ES_OK)
            st = es_calibrate(ctx, &s, t, (const char *const *)logs.v, logs.n, &cal);
        cli_progress_end(&line);
        if (st == ES_OK && !quiet)
            report(cal, &s);
        if (st == ES_OK && output) {
            st = es_calibration_write_json(ctx, cal, output, (const char *const *)costs.v, costs.n);
            if (st == ES_OK && !quiet && strcmp(output, "-") != 0)
                printf("wrote %s\n", output);
        }
        if (st != ES_OK)
            rc = cli_fail(es_errmsg(ctx), st);
    } else {
        rc = EXIT_BAD_INPUT;
    }
    es_calibration_free(cal);
    es_cost_table_free(t);
    es_context_free(ctx);
    release(&logs), release(&costs);
    return rc;
}
