/* equishard report OUTDIR [--svg FILE]: a plan's metrics and per-rank loads as a
 * table, and optionally an SVG bar chart of rank cost (mean and lower bound
 * drawn as lines). Reads OUTDIR/plan.json only, so it works on any plan. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"

static const char intro[] =
    "usage: equishard report OUTDIR [--svg FILE]\n"
    "\n"
    "Prints a plan's metrics and per-rank load (OUTDIR/plan.json, as written by\n"
    "`equishard plan`).\n"
    "\n";

typedef struct report_args {
    const char *svg;
} report_args;

static const cli_option own[] = {
    {.name = "svg", .kind = CLI_STR, CLI_AT(report_args, svg), .metavar = "FILE",
     .help = "also draw per-rank cost as an SVG bar chart (mean and\n"
             "lower bound as lines)"},
};

static double num(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static int print_table(json_t *plan)
{
    json_t *m = json_object_get(plan, "metrics"), *ranks = json_object_get(plan, "ranks");
    json_t *params = json_object_get(plan, "parameters");
    if (!json_is_object(m) || !json_is_array(ranks))
        return -1;
    printf("%s mode, %lld ranks x %lld workers\n",
           json_string_value(json_object_get(params, "mode")) ? json_string_value(json_object_get(params, "mode")) : "?",
           (long long)num(params, "world_size"), (long long)num(params, "workers"));
    printf("%6s %14s %11s %12s %8s %8s\n", "rank", "cost", "utterances", "frames", "batches", "vs mean");
    double total = 0;
    size_t i;
    json_t *r;
    json_array_foreach(ranks, i, r) total += num(r, "cost");
    double mean = json_array_size(ranks) ? total / json_array_size(ranks) : 0;
    json_array_foreach(ranks, i, r)
    {
        printf("%6lld %14.1f %11lld %12lld %8lld %+7.2f%%\n", (long long)num(r, "rank"),
               num(r, "cost"), (long long)num(r, "utterances"), (long long)num(r, "frames"),
               (long long)num(r, "batches"), mean > 0 ? 100 * (num(r, "cost") / mean - 1) : 0);
    }
    json_t *filtered = json_object_get(m, "filtered");
    const char *reason;
    json_t *count;
    long long dropped = 0;
    json_object_foreach(filtered, reason, count) dropped += json_integer_value(count);
    printf("imbalance %.4f%%  gap to lower bound %.4f%%  batch spread %lld  retention %.2f%%  "
           "step straggler %.4f\nkept %lld  filtered %lld\n",
           100 * num(m, "imbalance"), 100 * num(m, "lower_bound_gap"),
           (long long)num(m, "batch_spread"), 100 * num(m, "retention"), num(m, "step_straggler"),
           (long long)num(m, "kept"), dropped);
    json_object_foreach(filtered, reason, count) if (json_integer_value(count) > 0)
        printf("  filtered %-16s %lld\n", reason, (long long)json_integer_value(count));
    return 0;
}

/* A bar per rank, scaled to the largest; the mean dashed, the lower bound dotted. */
static int write_svg(es_context *ctx, json_t *plan, const char *path)
{
    json_t *ranks = json_object_get(plan, "ranks"), *m = json_object_get(plan, "metrics");
    size_t n = json_array_size(ranks), i;
    json_t *r;
    double max = num(m, "lower_bound"), total = 0;
    json_array_foreach(ranks, i, r)
    {
        total += num(r, "cost");
        if (num(r, "cost") > max)
            max = num(r, "cost");
    }
    double mean = n ? total / n : 0, width = 800, height = 300, left = 60, top = 30;
    double bar = n ? (width - left - 10) / n : 0;
    /* Built in memory, then written the way every output is (es_write_output:
     * atomic, honours the umask, "-" is standard output). */
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (!fp)
        return ES_ERR_NOMEM;
    fprintf(fp, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n", width, height + 50);
    fprintf(fp, "<text x=\"%.0f\" y=\"18\">cost per rank (imbalance %.3f%%)</text>\n", left,
            100 * num(m, "imbalance"));
    json_array_foreach(ranks, i, r)
    {
        double h = max > 0 ? num(r, "cost") / max * height : 0;
        fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#4a7ebb\">"
                    "<title>rank %zu: %.1f</title></rect>\n",
                left + i * bar, top + height - h, bar > 2 ? bar - 1 : bar, h, i, num(r, "cost"));
    }
    double ym = max > 0 ? top + height - mean / max * height : top + height;
    double yl = max > 0 ? top + height - num(m, "lower_bound") / max * height : top + height;
    fprintf(fp, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#c33\" "
                "stroke-dasharray=\"6 4\"/><text x=\"4\" y=\"%.2f\">mean</text>\n",
            left, width - 10, ym, ym, ym + 4);
    fprintf(fp, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#333\" "
                "stroke-dasharray=\"2 3\"/><text x=\"4\" y=\"%.2f\">bound</text>\n",
            left, width - 10, yl, yl, yl + 14);
    fprintf(fp, "<text x=\"%.0f\" y=\"%.0f\">ranks 0..%zu</text>\n</svg>\n", left,
            top + height + 20, n ? n - 1 : 0);
    int bad = fclose(fp) != 0;
    int rc = bad ? ES_ERR_NOMEM : es_write_output(ctx, path, text, len);
    free(text);
    return rc;
}

/* OUTDIR/plan.json, or NULL after one line that says what OUTDIR is instead:
 * missing, a file, a folder without a plan (the common slip: the folder of
 * the inputs, or a plan not written yet), or a plan.json that is no JSON. */
static json_t *load_plan(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        cli_error("%s: %s", dir, strerror(errno));
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        cli_error("%s is not a folder: give the OUTDIR 'equishard plan -o OUTDIR' wrote", dir);
        return NULL;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        cli_error("%s has no plan.json: not a plan folder (write one with 'equishard plan -o %s "
                  "...')", dir, dir);
        return NULL;
    }
    json_error_t err;
    json_t *plan = json_load_file(path, 0, &err);
    if (!plan && err.line > 0)
        cli_error("%s: line %d: %s", path, err.line, err.text);
    else if (!plan)
        cli_error("%s: %s", path, err.text);
    return plan;
}

int cmd_report(int argc, char **argv)
{
    const cli_table tables[] = {CLI_TABLE(NULL, own)};
    const cli_command cmd = {"report", intro, NULL, tables, 1};
    report_args a = {0};
    void *const targets[CLI_T_COUNT] = {&a};
    int prc = cli_options_parse(&cmd, targets, argc, argv);
    if (prc)
        return prc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    const char *svg = a.svg;
    if (optind >= argc)
        return cli_usage_error(&cmd, "no OUTDIR given"), EXIT_BAD_INPUT;
    if (optind + 1 != argc)
        return cli_usage_error(&cmd, "one OUTDIR at a time, not %d", argc - optind),
               EXIT_BAD_INPUT;
    json_t *plan = load_plan(argv[optind]);
    if (!plan)
        return EXIT_BAD_INPUT;
    char path[4096];
    snprintf(path, sizeof path, "%s/plan.json", argv[optind]);
    const char *const read[] = {path};
    if (cli_refuse_output_input("report", svg, read, 1)) {
        json_decref(plan);
        return EXIT_BAD_INPUT;
    }
    int rc = print_table(plan);
    if (rc)
        cli_error("%s/plan.json: not a plan (no \"metrics\"/\"ranks\")", argv[optind]);
    else if (svg) {
        es_context *ctx = es_context_new();
        int st = ctx ? write_svg(ctx, plan, svg) : ES_ERR_NOMEM;
        if (st == ES_ERR_NOMEM)
            cli_error("%s: out of memory", svg);
        else if (st != ES_OK)
            cli_error("%s", es_errmsg(ctx));
        rc = st == ES_OK ? 0 : -1;
        es_context_free(ctx);
    }
    json_decref(plan);
    return rc ? EXIT_BAD_INPUT : EXIT_OK;
}
