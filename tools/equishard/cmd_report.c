/* equishard report OUTDIR [--svg FILE] [--html FILE [--loader L] [--validate JSON]]:
 * a plan's metrics and per-rank loads as a table; optionally the cost-per-rank
 * chart as SVG (plan.json only, so it works on any plan), and the HTML report
 * (report_html.c), which also reads the plan's cost table and replays the
 * recipe's own split of it with the plan's settings (docs/REPORT.md). */
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
#include "report_html.h"
#include "report_plan.h"
#include "report_svg.h"

static const char intro[] =
    "usage: equishard report OUTDIR [--svg FILE] [--html FILE [--loader L] [--validate JSON]]\n"
    "\n"
    "Prints a plan's metrics and per-rank load (OUTDIR/plan.json, as written by\n"
    "`equishard plan`).\n"
    "\n";

typedef struct report_args {
    const char *svg, *html, *validate;
    es_loader loader;
} report_args;

static const cli_option own[] = {
    {.name = "svg", .kind = CLI_STR, CLI_AT(report_args, svg), .metavar = "FILE",
     .help = "also draw per-rank cost as an SVG bar chart: axes with\n"
             "values, the mean and lower bound labelled, zoomed around\n"
             "the mean (docs/REPORT.md)"},
    {.name = "html", .kind = CLI_STR, CLI_AT(report_args, html), .metavar = "FILE",
     .help = "also write the HTML report: the recipe's own split of the\n"
             "plan's data against the plan, cost per rank, lengths and\n"
             "the filter, tokens, speakers (docs/REPORT.md)"},
    {.name = "loader", .short_name = 'l', .kind = CLI_ENUM, .en = ES_ENUM_LOADER,
     CLI_AT(report_args, loader),
     .help = "the recipe whose own split --html replays (default cosyvoice)"},
    {.name = "validate", .kind = CLI_STR, CLI_AT(report_args, validate), .metavar = "JSON",
     .help = "--html: also show the findings `equishard validate --json`\n"
             "wrote"},
};

static double num(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static int print_table(const es_plan_dir *d)
{
    es_plan_dir_info in;
    es_plan_metrics m;
    es_plan_dir_get_info(d, &in);
    es_plan_dir_metrics(d, &m);
    if (!in.n_ranks)
        return -1;
    printf("%s mode, %lld ranks x %lld workers\n", es_enum_name(ES_ENUM_PLAN_MODE, (int)in.mode),
           (long long)in.world_size, (long long)in.workers);
    printf("%6s %14s %11s %12s %8s %8s\n", "rank", "cost", "utterances", "frames", "batches", "vs mean");
    double total = 0;
    es_plan_load l;
    for (uint32_t r = 0; r < in.n_ranks; r++) {
        es_plan_dir_rank_load(d, r, -1, &l);
        total += l.cost;
    }
    double mean = total / (double)in.n_ranks;
    for (uint32_t r = 0; r < in.n_ranks; r++) {
        es_plan_dir_rank_load(d, r, -1, &l);
        printf("%6lld %14.1f %11lld %12lld %8lld %+7.2f%%\n", (long long)r, l.cost,
               (long long)l.utterances, (long long)l.frames, (long long)l.batches,
               mean > 0 ? 100 * (l.cost / mean - 1) : 0);
    }
    printf("imbalance %.4f%%  gap to lower bound %.4f%%  batch spread %lld  retention %.2f%%  "
           "step straggler %.4f\nkept %lld  filtered %lld\n",
           100 * m.imbalance, 100 * m.lower_bound_gap, (long long)m.batch_spread,
           100 * m.retention, m.step_straggler, (long long)m.kept, (long long)m.filtered);
    for (size_t r = 1; r < es_enum_size(ES_ENUM_FILTER_REASON); r++)
        if (m.filtered_by_reason[r] > 0)
            printf("  filtered %-16s %lld\n", es_enum_name(ES_ENUM_FILTER_REASON, (int)r),
                   (long long)m.filtered_by_reason[r]);
    return 0;
}

/* The cost chart report_html.c draws too: axes, tick values, the mean and the
 * lower bound labelled apart, zoomed around the mean. */
static int write_svg(es_context *ctx, json_t *plan, const char *path)
{
    json_t *m = json_object_get(plan, "metrics");
    json_t *model = json_object_get(json_object_get(plan, "parameters"), "cost_model");
    char title[96];
    snprintf(title, sizeof title, "Cost per rank (imbalance %.4f %%)", 100 * num(m, "imbalance"));
    /* Built in memory, then written the way every output is (es_write_output:
     * atomic, honours the umask, "-" is standard output). */
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (!fp)
        return ES_ERR_NOMEM;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", fp);
    report_cost_chart(fp, "chart-cost", title, json_object_get(plan, "ranks"),
                      num(m, "lower_bound"), model);
    int bad = fclose(fp) != 0;
    int rc = bad ? ES_ERR_NOMEM : es_write_output(ctx, path, text, len);
    free(text);
    return rc;
}

/* The HTML report of the plan in dir: its cost table (a batch plan's
 * costs.tsv.zst, else the inputs plan.json names, as `simulate --plan`
 * finds them) and the loader's own split of it replayed with the plan's
 * settings, the plan side by side. Without a readable table the page shows
 * what plan.json has, and says why. */
static int write_html(es_context *ctx, const es_plan_dir *d, json_t *plan, const char *dir,
                      const report_args *a)
{
    char costs[4096], missing[4400] = "";
    json_t *params = json_object_get(plan, "parameters");
    const char *mode = json_string_value(json_object_get(params, "mode"));
    es_plan_dir_info info;
    es_plan_dir_get_info(d, &info);
    const char **inputs = malloc(sizeof *inputs * (info.n_inputs + 1));
    size_t n = 0;
    if (!inputs)
        return ES_ERR_NOMEM;
    snprintf(costs, sizeof costs, "%s/costs.tsv.zst", dir);
    if (mode && !strcmp(mode, "batch") && access(costs, R_OK) == 0)
        inputs[n++] = costs;
    else
        for (size_t i = 0; i < info.n_inputs; i++) {
            const char *p = es_plan_dir_input(d, i, NULL);
            if (!p || access(p, R_OK) != 0) {
                snprintf(missing, sizeof missing, "planned input %s is not readable from here "
                         "(run report where the plan was made)", p ? p : "(none)");
                n = 0;
                break;
            }
            inputs[n++] = p;
        }
    if (n == 0 && !*missing)
        snprintf(missing, sizeof missing, "plan.json names no inputs");
    es_cost_table *table = NULL;
    es_simulate_result *res = NULL;
    json_t *sim = NULL, *val = NULL;
    int rc = ES_OK;
    if (n) {
        es_measure_settings ms;
        es_measure_defaults(&ms);
        rc = cli_load_inputs(ctx, &ms, 1, NULL, inputs, n, &table);
        if (rc == ES_OK) {
            es_simulate_settings s;
            es_plan_mode pm;
            es_simulate_defaults(&s, a->loader);
            rc = es_simulate_settings_from_plan(ctx, &s, dir, &pm);
            s.plan_dir = NULL; /* the recipe's own split, the plan beside it */
            s.plan_side = 1;
            if (rc == ES_OK)
                rc = es_simulate(ctx, &s, table, &res);
            if (rc == ES_OK)
                rc = report_sim_json(ctx, res, &sim);
        }
    } else
        cli_error("%s: %s; the HTML report shows plan.json only", dir, missing);
    if (rc == ES_OK && a->validate && !(val = report_load_json(a->validate)))
        rc = ES_ERR_FORMAT;
    else if (rc != ES_OK)
        cli_error("%s", es_errmsg(ctx));
    if (rc == ES_OK) {
        char title[4200], source[4200];
        snprintf(title, sizeof title, "equishard report: %s", dir);
        snprintf(source, sizeof source, "%s plan, %lld rank(s) x %lld worker(s); the %s "
                 "loader's own split replayed with the plan's settings, epoch 0",
                 mode ? mode : "?", (long long)num(params, "world_size"),
                 (long long)num(params, "workers"), es_enum_name(ES_ENUM_LOADER, a->loader));
        report_html_in hin = {.title = title, .source = source, .plan = plan, .sim = sim,
                              .sim_missing = *missing ? missing : NULL, .table = table,
                              .validate = val};
        rc = cli_write_error(ctx, report_html_write(ctx, a->html, &hin), a->html);
    }
    json_decref(sim);
    json_decref(val);
    es_simulate_result_free(res);
    es_cost_table_free(table);
    free(inputs);
    return rc;
}

/* OUTDIR read (es_plan_dir_open), or NULL after one line that says what OUTDIR
 * is instead: missing, a file, a folder without a plan (the common slip: the
 * folder of the inputs, or a plan not written yet), or a plan.json that is no
 * plan (the reader's line: truncated, corrupt, of a newer schema). */
static es_plan_dir *load_plan(const char *dir)
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
    es_context *ctx = cli_context_new();
    es_plan_dir *d = NULL;
    if (!ctx)
        cli_error("out of memory");
    else if (es_plan_dir_open(ctx, dir, &d) != ES_OK)
        cli_error("%s", es_errmsg(ctx));
    es_context_free(ctx);
    return d;
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
    es_plan_dir *d = load_plan(argv[optind]);
    json_t *plan = d ? report_plan_view(d) : NULL;
    if (d && !plan)
        cli_error("out of memory");
    if (!plan) {
        es_plan_dir_free(d);
        return EXIT_BAD_INPUT;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/plan.json", argv[optind]);
    const char *const read[] = {path, a.validate};
    if (cli_refuse_output_input("report", svg, read, 2) ||
        cli_refuse_output_input("report", a.html, read, 2)) {
        json_decref(plan);
        es_plan_dir_free(d);
        return EXIT_BAD_INPUT;
    }
    int rc = print_table(d);
    if (rc)
        cli_error("%s/plan.json: not a plan (no \"metrics\"/\"ranks\")", argv[optind]);
    else if (svg) {
        es_context *ctx = cli_context_new();
        int st = cli_write_error(ctx, ctx ? write_svg(ctx, plan, svg) : ES_ERR_NOMEM, svg);
        rc = st == ES_OK ? 0 : -1;
        es_context_free(ctx);
    }
    if (!rc && a.html) {
        es_context *ctx = cli_context_new();
        int st = ctx ? write_html(ctx, d, plan, argv[optind], &a) : ES_ERR_NOMEM;
        if (!ctx)
            cli_error("out of memory");
        rc = st == ES_OK ? 0 : -1;
        es_context_free(ctx);
    }
    json_decref(plan);
    es_plan_dir_free(d);
    return rc ? EXIT_BAD_INPUT : EXIT_OK;
}
