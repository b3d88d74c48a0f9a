/* equishard calibrate --steps LOG... [options] COSTS [-o model.json]
 *
 * Step times logged by the trainer (equishard.loaders' EQUISHARD_STEP_LOG, or
 * any trainer writing the same JSON lines) → the cost model's weights, by
 * es_calibrate. Prints the fit (R², held-out errors, which terms matter) and
 * writes model.json for `plan/simulate/validate --cost-model`. Inputs are told
 * apart by content: cost tables are COSTS, anything else given is a log. */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_model.h"

static const char usage_text[] =
    "usage: equishard calibrate --steps LOG... [OPTIONS] COSTS... [-o model.json]\n"
    "\n"
    "Fits the cost model's weights (seconds per frame, per frame^2, per text and\n"
    "speech token, per utterance, per batch) to the step times the trainer logged,\n"
    "by non-negative least squares over each step's padded batch (n x the longest,\n"
    "as the loader pads). Reports R^2, the median and 95th-percentile relative\n"
    "error on held-out steps, and each term's share and worth. docs/COST_MODEL.md.\n"
    "\n"
    "      --steps LOG           a step log (JSON lines {\"rank\", \"step\", \"keys\",\n"
    "                            \"seconds\"}), or a folder: its *.jsonl; repeatable,\n"
    "                            and further inputs that are not cost tables are logs\n"
    "  -o, --output FILE         write model.json (atomically); without it, report only\n"
    "      --frame-rate F        feature frames per second (default 50, CosyVoice 2)\n"
    "      --warmup N            steps dropped at the start of each rank's log (default 3)\n"
    "      --holdout-every N     every N-th step is held out and evaluated (default 5)\n"
    "      --outlier-mads X      drop fitted steps beyond X scaled MADs of the relative\n"
    "                            residual, then refit once (default 5; 0 = keep all)\n"
    "      --terms LIST          terms that may be fitted, comma-separated, of frames,\n"
    "                            frames_sq, text, speech_tokens, missing_emb, overhead,\n"
    "                            batch (default all)\n"
    "      --time-field NAME     the logs' key of the step time (default seconds)\n"
    "  -q, --quiet               no report\n"
    "  -h, --help\n"
    "\n"
    "Exit 2 with one line on a log line that cannot be read, a key the table lacks,\n"
    "too few steps, or a degenerate log (every step the same time).\n";

enum { OPT_STEPS = 1, OPT_FRAME_RATE, OPT_WARMUP, OPT_HOLDOUT, OPT_OUTLIER, OPT_TERMS, OPT_TIME };

static const struct option options[] = {
    {"steps", required_argument, NULL, OPT_STEPS},
    {"output", required_argument, NULL, 'o'},
    {"frame-rate", required_argument, NULL, OPT_FRAME_RATE},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"holdout-every", required_argument, NULL, OPT_HOLDOUT},
    {"outlier-mads", required_argument, NULL, OPT_OUTLIER},
    {"terms", required_argument, NULL, OPT_TERMS},
    {"time-field", required_argument, NULL, OPT_TIME},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

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

/* "frames,frames_sq,..." → mask; -1 on an unknown name. */
static int parse_terms(const char *arg, uint32_t *mask)
{
    char buf[256];
    if (strlen(arg) >= sizeof buf)
        return -1;
    strcpy(buf, arg);
    *mask = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int j = 0; j < ES_TERM_COUNT; j++)
            if (!strcmp(es_cost_term_name(j) + 2, tok) || !strcmp(es_cost_term_name(j), tok))
                *mask |= 1u << j, found = 1;
        if (!found)
            return -1;
    }
    return *mask ? 0 : -1;
}

static int own_option(int c, const char *arg, es_calibrate_settings *s)
{
    unsigned long long v;
    double d;
    const char *want = "a whole number >= 0";
    switch (c) {
    case OPT_FRAME_RATE:
        if (!cli_parse_double(arg, &d) && d > 0)
            return s->model.frame_rate = d, 0;
        want = "a positive number";
        break;
    case OPT_WARMUP:
        if (!cli_parse_u64(arg, &v) && v <= UINT32_MAX)
            return s->warmup = (uint32_t)v, 0;
        break;
    case OPT_HOLDOUT:
        if (!cli_parse_u64(arg, &v) && v >= 2 && v <= UINT32_MAX)
            return s->holdout_every = (uint32_t)v, 0;
        want = "a whole number >= 2";
        break;
    case OPT_OUTLIER:
        if (!cli_parse_double(arg, &d) && d >= 0)
            return s->outlier_mads = d, 0;
        want = "a number >= 0";
        break;
    case OPT_TERMS:
        if (!parse_terms(arg, &s->terms))
            return 0;
        want = "term names (frames, frames_sq, text, speech_tokens, missing_emb, overhead, batch)";
        break;
    case OPT_TIME: s->time_field = arg; return 0;
    default: return -1;
    }
    fprintf(stderr, "equishard calibrate: bad value '%s': %s wanted\n", arg, want);
    return -1;
}

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
    es_calibrate_settings s;
    es_calibrate_defaults(&s);
    list logs = {0}, costs = {0};
    const char *output = NULL;
    int c, quiet = 0, rc = 0, steps_given = 0;
    optind = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "o:qh", options, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage_text, stdout);
            release(&logs);
            return EXIT_OK;
        }
        if (c == 'o')
            output = optarg;
        else if (c == 'q')
            quiet = 1;
        else if (c == OPT_STEPS)
            rc = add_log(&logs, optarg), steps_given = 1;
        else if (c == '?' || own_option(c, optarg, &s))
            rc = -1;
    }
    for (int i = optind; rc == 0 && i < argc; i++)
        rc = es_is_cost_table(argv[i]) ? push(&costs, argv[i]) : add_log(&logs, argv[i]);
    if (rc == 0 && (!steps_given || !costs.n || !logs.n)) {
        fprintf(stderr, "equishard calibrate: --steps LOG and a cost table (COSTS) are "
                        "required\n%s", usage_text);
        rc = -1;
    }
    es_context *ctx = es_context_new();
    es_cost_table *t = NULL;
    es_calibration *cal = NULL;
    int st = ES_OK;
    if (rc == 0) {
        es_measure_settings ms;
        es_measure_defaults(&ms);
        st = es_load_inputs(ctx, &ms, (const char *const *)costs.v, costs.n, &t);
        if (st == ES_OK)
            st = es_calibrate(ctx, &s, t, (const char *const *)logs.v, logs.n, &cal);
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
