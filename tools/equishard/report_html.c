/* The HTML report (report_html.h): sections in the order a reader asks their
 * questions (does the recipe's split waste data? is the plan balanced? what
 * did the filter drop? what is in the data?), each chart drawn by
 * report_svg.c. Only numbers from the simulation's JSON, plan.json and the
 * cost table appear; nothing depends on the clock or the host. */
#include "report_html.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report_svg.h"

static const char *const C_RECIPE = "#d9822b", *const C_SHARD = "#4a7ebb",
                         *const C_BATCH = "#5a9e4b";

static double num(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static const char *str(json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

json_t *report_load_json(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j && err.line > 0)
        cli_error("%s: line %d: %s", path, err.line, err.text);
    else if (!j)
        cli_error("%s: %s", path, err.text);
    return j;
}

int report_sim_json(es_context *ctx, const es_simulate_result *r, json_t **out)
{
    *out = NULL;
    FILE *tmp = tmpfile();
    if (!tmp) { /* ctx has no message for this one: say it here */
        cli_error("temporary file: %s", strerror(errno));
        return ES_ERR_IO;
    }
    int rc = es_simulate_write_json_fd(ctx, r, fileno(tmp));
    if (rc == ES_OK) {
        rewind(tmp);
        json_error_t err;
        *out = json_loadf(tmp, 0, &err);
        rc = *out ? ES_OK : ES_ERR_NOMEM;
    }
    fclose(tmp);
    return rc;
}

/* The cost unit a model's weights give: frames alone, seconds when calibrated. */
static const char *cost_unit(json_t *model)
{
    if (json_is_object(json_object_get(model, "source")))
        return "seconds";
    if (num(model, "w_frames") == 1 && num(model, "w_text") == 0 &&
        num(model, "w_speech_tokens") == 0 && num(model, "w_frames_sq") == 0 &&
        num(model, "w_missing_emb") == 0 && num(model, "w_overhead") == 0)
        return "feature frames";
    return "cost units";
}

void report_cost_chart(FILE *fp, const char *id, const char *title, json_t *ranks,
                       double lower_bound, json_t *cost_model)
{
    size_t n = json_array_size(ranks), i;
    double *v = calloc(n ? n : 1, sizeof *v), total = 0, lo = INFINITY, hi = 0;
    if (!v)
        return;
    json_t *r;
    json_array_foreach(ranks, i, r)
    {
        v[i] = num(r, "cost");
        total += v[i];
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    double mean = n ? total / (double)n : 0;
    /* The zoom: the least of these half-ranges (as a fraction of the mean) that
     * holds every bar and the bound with room to spare; 0.5 % at least, so a
     * 0.1 % difference is a fifth of the half-height. Past 50 %: from 0. */
    static const double halves[] = {0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5};
    double dev = 0;
    if (mean > 0) {
        dev = fmax(fabs(hi - mean), fabs(mean - lo)) / mean;
        if (lower_bound > 0)
            dev = fmax(dev, fabs(lower_bound - mean) / mean);
    }
    double half = 0;
    for (size_t k = 0; k < sizeof halves / sizeof halves[0] && !half; k++)
        if (dev * 1.15 <= halves[k])
            half = halves[k];
    char note[256], ylabel[96];
    const char *unit = cost_unit(cost_model);
    rs_bars c = {.id = id, .title = title, .x_label = "rank", .n = n};
    if (half > 0 && mean > 0) {
        c.y_lo = mean * (1 - half), c.y_hi = mean * (1 + half), c.pct_ref = mean;
        snprintf(note, sizeof note, "y axis from %.1f %% to %.1f %% of the mean (%.1f %s); "
                 "bars start at the axis' foot", 100 * (1 - half), 100 * (1 + half), mean, unit);
        snprintf(ylabel, sizeof ylabel, "cost, %% of the mean");
    } else {
        double step = rs_nice_step(fmax(hi, lower_bound) > 0 ? fmax(hi, lower_bound) : 1, 5);
        c.y_lo = 0, c.y_hi = step * ceil(fmax(hi, lower_bound) / step + 1e-9);
        snprintf(note, sizeof note, "y axis from 0 (ranks differ by more than 50 %% of the mean)");
        snprintf(ylabel, sizeof ylabel, "cost (%s)", unit);
    }
    c.note = note, c.y_label = ylabel;
    rs_series s = {.name = "cost of the rank", .color = C_SHARD, .v = v};
    char lmean[64], lbound[64];
    snprintf(lmean, sizeof lmean, "mean %.1f", mean);
    snprintf(lbound, sizeof lbound, "lower bound %.1f", lower_bound);
    rs_line lines[2] = {{lmean, mean, "#c33", "6 4"}, {lbound, lower_bound, "#222", "2 3"}};
    c.series = &s, c.n_series = 1, c.lines = lines, c.n_lines = lower_bound > 0 ? 2 : 1;
    rs_bars_svg(fp, &c);
    free(v);
}

/* ---- the recipe's split against the plan --------------------------------------- */

static void pct_cell(FILE *fp, double v) { fprintf(fp, "<td>%.2f %%</td>", 100 * v); }

/* The split's name: the recipe's own, or a plan replayed (simulate --plan). */
static void split_name(FILE *fp, json_t *params)
{
    const char *plan = json_string_value(json_object_get(params, "plan"));
    if (plan) {
        fputs("the plan ", fp);
        rs_text(fp, plan);
        fputs(" as the loaders feed it", fp);
    } else {
        fputs(str(params, "loader"), fp);
        fputs("'s own split", fp);
    }
}

static void section_split(FILE *fp, json_t *sim)
{
    json_t *params = json_object_get(sim, "parameters"), *plans = json_object_get(sim, "plan");
    json_t *epochs = json_object_get(sim, "epochs"), *sum = json_object_get(sim, "summary");
    json_t *shard = json_object_get(plans, "shard"), *batch = json_object_get(plans, "batch");
    int has_shard = json_is_true(json_object_get(shard, "available"));
    int has_batch = json_is_true(json_object_get(batch, "available"));
    size_t k = (size_t)num(params, "world_size"), e;
    fputs("<section id=\"split\">\n<h2>The recipe's own split against the plan</h2>\n", fp);
    fputs("<p class=\"headline\" id=\"headline\">", fp);
    split_name(fp, params);
    fprintf(fp, " trains <b>%.2f %%</b> of the batches ", 100 * num(sum, "retention"));
    json_t *ep0 = json_array_get(epochs, 0);
    if (json_array_size(epochs) == 1)
        fprintf(fp, "of epoch %lld", (long long)num(ep0, "epoch"));
    else
        fprintf(fp, "of epochs %lld to %lld", (long long)num(ep0, "epoch"),
                (long long)num(json_array_get(epochs, json_array_size(epochs) - 1), "epoch"));
    fputs(" (under the join every rank trains as many as the rank with the fewest)", fp);
    if (has_shard)
        fprintf(fp, "; the shard plan <b>%.2f %%</b>", 100 * num(shard, "retention"));
    if (has_batch)
        fprintf(fp, ", the batch plan <b>%.2f %%</b>", 100 * num(batch, "retention"));
    fprintf(fp, ". %zu rank(s) &times; %lld worker(s), %s batching.</p>\n", k,
            (long long)num(params, "workers"), str(params, "batch_type"));
    /* the table: per epoch */
    fputs("<table id=\"split-table\"><thead><tr><th>epoch</th><th>join cut (batches per "
          "rank)</th><th>retention</th><th>batches skipped</th><th>utterances skipped</th>"
          "<th>hours skipped</th><th>step-time straggler</th>",
          fp);
    if (has_shard)
        fputs("<th>shard plan: retention</th>", fp);
    if (has_batch)
        fputs("<th>batch plan: retention</th>", fp);
    fputs("</tr></thead><tbody>\n", fp);
    json_t *ep;
    json_array_foreach(epochs, e, ep)
    {
        json_t *st = json_object_get(ep, "step_time");
        fprintf(fp, "<tr><td>%lld</td><td>%.2f</td>", (long long)num(ep, "epoch"),
                num(ep, "min_batches"));
        pct_cell(fp, num(ep, "retention"));
        fprintf(fp, "<td>%.2f</td><td>%.1f</td><td>%.4f</td><td>%.3f (%s)</td>",
                num(ep, "skipped_batches"), num(ep, "skipped_utterances"),
                num(ep, "skipped_hours"), num(st, "straggler"), str(st, "unit"));
        if (has_shard)
            pct_cell(fp, num(shard, "retention"));
        if (has_batch)
            pct_cell(fp, num(batch, "retention"));
        fputs("</tr>\n", fp);
    }
    fputs("</tbody></table>\n<p class=\"how\">The step-time straggler is the mean over the "
          "trained steps of the slowest rank's predicted step time over the ranks' mean "
          "(1.000: no rank waits).</p>\n",
          fp);
    /* retention side by side */
    const char *labels[3];
    double vals[3];
    size_t n = 0;
    char own[160];
    const char *plan_dir = json_string_value(json_object_get(params, "plan"));
    snprintf(own, sizeof own, "%s", plan_dir ? "the plan replayed" : str(params, "loader"));
    if (!plan_dir)
        strncat(own, "'s own split", sizeof own - strlen(own) - 1);
    labels[n] = own, vals[n++] = 100 * num(sum, "retention");
    if (has_shard)
        labels[n] = "shard plan", vals[n++] = 100 * num(shard, "retention");
    if (has_batch)
        labels[n] = "batch plan", vals[n++] = 100 * num(batch, "retention");
    rs_hbars rc = {.id = "chart-retention", .title = "Share of the data trained under the join",
                   .x_label = "retention (% of the epoch's batches trained)",
                   .name = "retention", .color = C_SHARD, .n = n, .label = labels, .v = vals};
    if (n > 1) { /* side by side; one alone is the headline's */
        fputs("<figure>\n", fp);
        rs_hbars_svg(fp, &rc);
        fputs("</figure>\n", fp);
    }
    /* batches per rank, per epoch */
    double *v = calloc(3 * (k ? k : 1), sizeof *v);
    if (!v)
        return;
    json_array_foreach(epochs, e, ep)
    {
        json_t *ranks = json_object_get(ep, "ranks"), *r;
        size_t i;
        double top = 0;
        json_array_foreach(ranks, i, r) if (i < k) v[i] = num(r, "batches");
        rs_series s[3];
        size_t ns = 0;
        char sname[160], title[96], cutname[96], lcut[64];
        snprintf(sname, sizeof sname, "%s", own);
        snprintf(cutname, sizeof cutname, "skipped by the join cut");
        s[ns++] = (rs_series){sname, C_RECIPE, v, num(ep, "min_batches"), cutname};
        if (has_shard) {
            json_array_foreach(json_object_get(shard, "ranks"), i, r) if (i < k) v[k + i] =
                num(r, "batches");
            s[ns++] = (rs_series){"shard plan", C_SHARD, v + k, 0, NULL};
        }
        if (has_batch) {
            json_array_foreach(json_object_get(batch, "ranks"), i, r) if (i < k) v[2 * k + i] =
                num(r, "batches");
            s[ns++] = (rs_series){"batch plan", C_BATCH, v + 2 * k, 0, NULL};
        }
        for (size_t q = 0; q < ns * k; q++) {
            size_t si = q / k;
            top = s[si].v[q % k] > top ? s[si].v[q % k] : top;
        }
        double step = rs_nice_step(top > 0 ? top : 1, 5);
        snprintf(title, sizeof title, "Batches per rank, epoch %lld", (long long)num(ep, "epoch"));
        snprintf(lcut, sizeof lcut, "join cut %.2f", num(ep, "min_batches"));
        char note[200], id[48];
        snprintf(note, sizeof note, "the cut skips %.2f batches, %.1f utterances, %.4f h of audio; "
                 "retention %.2f %%", num(ep, "skipped_batches"), num(ep, "skipped_utterances"),
                 num(ep, "skipped_hours"), 100 * num(ep, "retention"));
        snprintf(id, sizeof id, "chart-batches-%lld", (long long)num(ep, "epoch"));
        rs_line cut = {lcut, num(ep, "min_batches"), "#c33", "6 4"};
        rs_bars c = {.id = id, .title = title, .x_label = "rank",
                     .y_label = "batches (expected over the shuffle draws)", .note = note, .n = k,
                     .series = s, .n_series = ns, .lines = &cut, .n_lines = 1, .y_lo = 0,
                     .y_hi = step * ceil(top / step + 1e-9)};
        fputs("<figure>\n", fp);
        rs_bars_svg(fp, &c);
        fputs("</figure>\n", fp);
    }
    free(v);
    fputs("</section>\n", fp);
}

/* ---- cost per rank --------------------------------------------------------------- */

/* The lower bound a plan side's metrics imply: max cost / (1 + gap). */
static double bound_of(json_t *side)
{
    double max = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(side, "ranks"), i, r) max = fmax(max, num(r, "cost"));
    return max / (1 + num(side, "lower_bound_gap"));
}

static void section_cost(FILE *fp, const report_html_in *in)
{
    fputs("<section id=\"cost\">\n<h2>Cost per rank</h2>\n", fp);
    json_t *params = json_object_get(in->plan ? in->plan : in->sim, "parameters");
    json_t *model = json_object_get(params, "cost_model");
    if (in->plan) {
        json_t *m = json_object_get(in->plan, "metrics");
        char title[96];
        snprintf(title, sizeof title, "Cost per rank, this %s plan (imbalance %.4f %%)",
                 str(params, "mode"), 100 * num(m, "imbalance"));
        fputs("<figure>\n", fp);
        report_cost_chart(fp, "chart-cost", title, json_object_get(in->plan, "ranks"),
                          num(m, "lower_bound"), model);
        fputs("</figure>\n", fp);
    }
    json_t *plans = json_object_get(in->sim, "plan");
    static const char *const modes[] = {"shard", "batch"};
    for (size_t i = 0; i < 2; i++) {
        json_t *side = json_object_get(plans, modes[i]);
        if (!json_is_true(json_object_get(side, "available")))
            continue;
        if (in->plan && !strcmp(str(params, "mode"), modes[i]))
            continue; /* planned again, it is the chart above */
        char title[128], id[32];
        snprintf(title, sizeof title, "Cost per rank, %s plan of the same data (imbalance %.4f %%)",
                 modes[i], 100 * num(side, "imbalance"));
        snprintf(id, sizeof id, "chart-cost-%s", modes[i]);
        fputs("<figure>\n", fp);
        report_cost_chart(fp, id, title, json_object_get(side, "ranks"), bound_of(side), model);
        fputs("</figure>\n", fp);
    }
    fputs("<p class=\"how\">Each bar is a rank's summed cost. The dashed line is the mean, the "
          "dotted one the lower bound no plan can beat (the mean, or the largest shard). The y "
          "axis is zoomed around the mean as its note says.</p>\n</section>\n", fp);
}

/* ---- the data: lengths, filter, tokens, speakers ------------------------------- */

static void hist(FILE *fp, const char *id, const char *title, const char *x_label,
                 const char *name, const double *v, size_t n, double min_width, const rs_mark *marks,
                 size_t n_marks, const char *note)
{
    double *edge;
    uint64_t *count;
    size_t bins = rs_bin(v, n, 30, min_width, &edge, &count);
    rs_hist h = {.id = id, .title = title, .x_label = x_label, .y_label = "utterances",
                 .note = note, .name = name, .n = bins, .edge = edge, .count = count,
                 .marks = marks, .n_marks = n_marks};
    fputs("<figure>\n", fp);
    rs_hist_svg(fp, &h);
    fputs("</figure>\n", fp);
    free(edge);
    free(count);
}

static void filtered_table(FILE *fp, json_t *filtered, double kept)
{
    fputs("<table id=\"filtered\"><thead><tr><th>dropped by the filter, reason</th>"
          "<th>utterances</th></tr></thead><tbody>\n", fp);
    const char *reason;
    json_t *count;
    double total = 0;
    json_object_foreach(filtered, reason, count)
    {
        total += num(filtered, reason);
        fputs("<tr><td>", fp);
        rs_text(fp, reason);
        fprintf(fp, "</td><td>%lld</td></tr>\n", (long long)json_integer_value(count));
    }
    fprintf(fp, "<tr class=\"total\"><td>all reasons</td><td>%.0f</td></tr>\n"
                "<tr class=\"total\"><td>kept</td><td>%.0f</td></tr>\n</tbody></table>\n",
            total, kept);
}

typedef struct spk_sec {
    const char *spk;
    double sec;
} spk_sec;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const spk_sec *)a)->spk, ((const spk_sec *)b)->spk);
}

static int by_hours(const void *a, const void *b)
{
    const spk_sec *x = a, *y = b;
    if (x->sec != y->sec)
        return x->sec > y->sec ? -1 : 1;
    return strcmp(x->spk, y->spk);
}

static void speakers(FILE *fp, const es_cost_table *t)
{
    size_t n = es_cost_table_size(t), m = 0;
    spk_sec *s = malloc(sizeof *s * (n ? n : 1));
    if (!s)
        return;
    for (size_t i = 0; i < n; i++) {
        es_cost_row r;
        es_cost_table_row(t, i, &r);
        s[i].spk = *r.spk ? r.spk : "(no speaker)";
        s[i].sec = r.sample_rate ? (double)r.samples / r.sample_rate : 0;
    }
    qsort(s, n, sizeof *s, by_name);
    for (size_t i = 0; i < n; i++) { /* one per speaker, summed in row order of the sort */
        if (m && !strcmp(s[m - 1].spk, s[i].spk))
            s[m - 1].sec += s[i].sec;
        else
            s[m++] = s[i];
    }
    qsort(s, m, sizeof *s, by_hours);
    fprintf(fp, "<section id=\"speakers\">\n<h2>Audio per speaker</h2>\n<p>%zu speaker(s); all "
                "rows, before the filter.</p>\n", m);
    const char *label[20];
    double v[20];
    size_t parts = m > 20 ? 2 : 1;
    /* hours; minutes or seconds when the largest speaker has less than an hour
     * or a minute */
    double div = m && s[0].sec < 60 ? 1 : m && s[0].sec < 3600 ? 60 : 3600;
    for (size_t p = 0; p < parts; p++) {
        size_t first = p == 0 ? 0 : m - 10, cnt = parts == 1 ? m : 10;
        for (size_t i = 0; i < cnt; i++)
            label[i] = s[first + i].spk, v[i] = s[first + i].sec / div;
        rs_hbars c = {.id = parts == 1 ? "chart-speakers" : p ? "chart-speakers-bottom"
                                                              : "chart-speakers-top",
                      .title = parts == 1 ? "Audio per speaker"
                               : p      ? "Audio per speaker: the 10 with the least"
                                        : "Audio per speaker: the 10 with the most",
                      .x_label = div == 1 ? "audio (seconds)" : div == 60 ? "audio (minutes)"
                                                                  : "audio (hours)",
                      .name = div == 1 ? "seconds of audio" : div == 60 ? "minutes of audio"
                                                                        : "hours of audio", .color = C_BATCH,
                      .n = cnt, .label = label, .v = v};
        fputs("<figure>\n", fp);
        rs_hbars_svg(fp, &c);
        fputs("</figure>\n", fp);
    }
    fputs("</section>\n", fp);
    free(s);
}

static void section_data(FILE *fp, const report_html_in *in)
{
    json_t *params = json_object_get(in->sim ? in->sim : in->plan, "parameters");
    json_t *filter = json_object_get(params, "filter");
    json_t *filtered = in->sim ? json_object_get(json_object_get(in->sim, "input"), "filtered")
                               : json_object_get(json_object_get(in->plan, "metrics"), "filtered");
    double kept = in->sim ? num(json_object_get(in->sim, "input"), "kept")
                          : num(json_object_get(in->plan, "metrics"), "kept");
    const es_cost_table *t = in->table;
    size_t n = t ? es_cost_table_size(t) : 0;
    fputs("<section id=\"lengths\">\n<h2>Utterance lengths and the filter</h2>\n", fp);
    double *v = malloc(sizeof *v * (n ? n : 1));
    if (t && v) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            es_cost_row r;
            es_cost_table_row(t, i, &r);
            if (r.sample_rate)
                v[m++] = (double)r.samples / r.sample_rate;
        }
        char lmin[64], lmax[64], note[160];
        double mn = num(filter, "min_length") / 100, mx = num(filter, "max_length") / 100;
        snprintf(lmin, sizeof lmin, "min_length %.2f s", mn);
        snprintf(lmax, sizeof lmax, "max_length %.2f s", mx);
        snprintf(note, sizeof note, "%zu utterance(s) with audio, all before the filter; its "
                 "bounds in seconds (its units are 10 ms frames)", m);
        rs_mark marks[2] = {{lmin, mn, "#c33"}, {lmax, mx, "#222"}};
        hist(fp, "chart-lengths", "Utterance length", "length (seconds)", "utterances", v, m,
             0, marks, 2, note);
    } else
        fputs("<p class=\"missing\">No cost table: the lengths and counts need the measured "
              "rows.</p>\n", fp);
    filtered_table(fp, filtered, kept);
    fputs("</section>\n", fp);
    if (!t || !v) {
        free(v);
        return;
    }
    fputs("<section id=\"tokens\">\n<h2>Text and speech tokens</h2>\n", fp);
    size_t m = 0, counted = 0;
    for (size_t i = 0; i < n; i++) {
        es_cost_row r;
        es_cost_table_row(t, i, &r);
        counted += r.text_tokens > 0 || (r.flags & ES_FLAG_NO_TOKENS);
    }
    for (size_t i = 0; i < n; i++) {
        es_cost_row r;
        es_cost_table_row(t, i, &r);
        if (!(r.flags & ES_FLAG_TEXT))
            continue;
        if (counted && !(r.text_tokens > 0 || (r.flags & ES_FLAG_NO_TOKENS)))
            continue;
        v[m++] = counted ? r.text_tokens : r.text_len;
    }
    rs_mark tm[2];
    char l1[64], l2[64];
    snprintf(l1, sizeof l1, "token_min_length %lld", (long long)num(filter, "token_min_length"));
    snprintf(l2, sizeof l2, "token_max_length %lld", (long long)num(filter, "token_max_length"));
    tm[0] = (rs_mark){l1, num(filter, "token_min_length"), "#c33"};
    tm[1] = (rs_mark){l2, num(filter, "token_max_length"), "#222"};
    hist(fp, "chart-text-tokens", "Text tokens per utterance",
         counted ? "text tokens (the recipe tokenizer's ids)"
                 : "characters (no token counts: measured without a tokenizer)",
         "utterances", v, m, 1, tm, 2,
         counted ? "rows with a token count" : "rows with a transcript; code points");
    m = 0;
    for (size_t i = 0; i < n; i++) {
        es_cost_row r;
        es_cost_table_row(t, i, &r);
        if (r.speech_tokens)
            v[m++] = r.speech_tokens;
    }
    if (m)
        hist(fp, "chart-speech-tokens", "Speech tokens per utterance", "speech tokens",
             "utterances", v, m, 1, NULL, 0, "rows with speech tokens");
    else
        fputs("<p class=\"missing\" id=\"no-speech-tokens\">No speech tokens in this table "
              "(tar shards, lists and Kaldi folders have none; CosyVoice parquet and "
              "--speech-tokens do).</p>\n", fp);
    fputs("</section>\n", fp);
    free(v);
    speakers(fp, t);
}

/* ---- validate's findings --------------------------------------------------------- */

static void section_validate(FILE *fp, json_t *rep)
{
    fputs("<section id=\"validate\">\n<h2>Validate's findings</h2>\n", fp);
    json_t *sum = json_object_get(rep, "summary"), *counts = json_object_get(rep, "counts");
    fprintf(fp, "<p>%lld utterance embedding(s), %lld speaker embedding(s) checked (dimension "
                "%lld, on %s).</p>\n",
            (long long)num(sum, "utt_embeddings"), (long long)num(sum, "spk_embeddings"),
            (long long)num(sum, "dim"), str(sum, "device"));
    fputs("<table id=\"validate-counts\"><thead><tr><th>check</th><th>findings</th></tr>"
          "</thead><tbody>\n", fp);
    const char *check;
    json_t *c;
    json_object_foreach(counts, check, c)
    {
        fprintf(fp, "<tr%s><td>", json_integer_value(c) ? " class=\"found\"" : "");
        rs_text(fp, check);
        fprintf(fp, "</td><td>%lld</td></tr>\n", (long long)json_integer_value(c));
    }
    fputs("</tbody></table>\n", fp);
    json_t *f = json_object_get(rep, "findings"), *x;
    size_t i;
    if (json_array_size(f)) {
        fprintf(fp, "<table id=\"validate-findings\"><thead><tr><th>check</th><th>kind</th>"
                    "<th>key</th><th>value</th></tr></thead><tbody>\n");
        json_array_foreach(f, i, x)
        {
            if (i == 50)
                break;
            char *val = json_dumps(json_object_get(x, "value"), JSON_ENCODE_ANY | JSON_COMPACT);
            fputs("<tr><td>", fp);
            rs_text(fp, str(x, "check"));
            fputs("</td><td>", fp);
            rs_text(fp, str(x, "kind"));
            fputs("</td><td>", fp);
            rs_text(fp, str(x, "key"));
            fputs("</td><td>", fp);
            rs_text(fp, val ? val : "null");
            fputs("</td></tr>\n", fp);
            free(val);
        }
        fputs("</tbody></table>\n", fp);
        if (json_array_size(f) > 50)
            fprintf(fp, "<p>… and %zu more (the JSON has them all).</p>\n",
                    json_array_size(f) - 50);
    }
    fputs("</section>\n", fp);
}

/* ---- the page ------------------------------------------------------------------- */

static const char css[] =
    "body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 12px;color:#111}"
    "h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:2px;"
    "margin-top:1.6em}figure{margin:0.8em 0}svg.chart{max-width:100%;height:auto;display:block}"
    "table{border-collapse:collapse;margin:0.6em 0;font-size:0.9em}th,td{border:1px solid #ccc;"
    "padding:2px 8px;text-align:right}th{background:#f3f3f3}td:first-child{text-align:left}"
    ".headline{font-size:1.1em;background:#fdf3e6;padding:8px;border-left:4px solid #d9822b}"
    ".how,.source{color:#444;font-size:0.9em}.missing{color:#a33}tr.found td{color:#a33}"
    "#errors{color:#a33}"
    "@media print{body{max-width:none;margin:0}section,figure{break-inside:avoid}"
    "h2{break-after:avoid}.headline{background:none}}";

/* Errors the page's script meets are written into it (#errors), for a reader and a
 * test that reads the DOM; data-charts counts the charts it found. */
static const char script[] =
    "<script>(function(){var e=document.getElementById('errors');"
    "window.addEventListener('error',function(ev){e.hidden=false;"
    "e.textContent+=String(ev.message)+'\\n';});"
    "document.documentElement.setAttribute('data-charts',"
    "String(document.querySelectorAll('svg.chart').length));})();</script>\n";

int report_html_write(es_context *ctx, const char *path, const report_html_in *in)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (!fp)
        return ES_ERR_NOMEM;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>", fp);
    rs_text(fp, in->title);
    fprintf(fp, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", css);
    rs_text(fp, in->title);
    fputs("</h1>\n<p class=\"source\">", fp);
    rs_text(fp, in->source);
    fputs("</p>\n<pre id=\"errors\" hidden></pre>\n", fp);
    if (in->sim)
        section_split(fp, in->sim);
    else {
        fputs("<section id=\"split\">\n<h2>The recipe's own split against the plan</h2>\n"
              "<p class=\"missing\">Not simulated: ", fp);
        rs_text(fp, in->sim_missing ? in->sim_missing : "no simulation");
        fputs("</p>\n</section>\n", fp);
    }
    section_cost(fp, in);
    section_data(fp, in);
    if (in->validate)
        section_validate(fp, in->validate);
    fputs(script, fp);
    fputs("</body>\n</html>\n", fp);
    int bad = fclose(fp) != 0;
    int rc = bad ? ES_ERR_NOMEM : es_write_output(ctx, path, text, len);
    free(text);
    return rc;
}
