/* The SVG charts of the reports (report_svg.h): bars per category, histograms,
 * horizontal bars. One layout for all: title and note on top, the legend
 * under them, the plot, tick values on both axes, axis names with units. */
#include "report_svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W = 960, H = 360, RIGHT = 150, TOP = 74, BOTTOM = 52 };
/* The left margin: 84 px for tick values, wider for horizontal bars' labels
 * (set by each chart before it draws). */
static int left_px = 84;
#define PLOT_W (double)(W - left_px - RIGHT)
#define PLOT_H (double)(H - TOP - BOTTOM)

void rs_text(FILE *fp, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", fp); break;
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '"': fputs("&quot;", fp); break;
        default: fputc(*s, fp);
        }
    }
}

double rs_nice_step(double range, int want)
{
    if (!(range > 0) || !isfinite(range))
        return 1;
    double raw = range / (want > 0 ? want : 1), p = pow(10, floor(log10(raw)));
    static const double m[] = {1, 2, 2.5, 5, 10};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i] * p >= raw * (1 - 1e-9))
            return m[i] * p;
    return 10 * p;
}

/* Decimals that print every multiple of step exactly (0.25: 2). */
static int decimals(double step)
{
    int d = 0;
    while (d < 9) {
        double s = step * pow(10, d);
        if (fabs(s - round(s)) < 1e-6 * (s > 1 ? s : 1))
            break;
        d++;
    }
    return d;
}

static void header(FILE *fp, const char *id, const char *title, const char *note)
{
    fprintf(fp, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"");
    rs_text(fp, id);
    fprintf(fp, "\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
                "font-size=\"12\">\n<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n",
            W, H, W, H, W, H);
    fprintf(fp, "<text class=\"title\" x=\"%d\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", left_px);
    rs_text(fp, title);
    fputs("</text>\n", fp);
    if (note) {
        fprintf(fp, "<text class=\"note\" x=\"%d\" y=\"38\" fill=\"#444\">", left_px);
        rs_text(fp, note);
        fputs("</text>\n", fp);
    }
}

/* Legend entries left to right under the note; a swatch (filled, hatched or a
 * line) and its text. Returns the next x. */
static double legend_item(FILE *fp, double x, const char *kind, const char *color, const char *dash,
                          const char *text)
{
    const double y = 56;
    fputs("<g class=\"legend-item\">", fp);
    if (!strcmp(kind, "line"))
        fprintf(fp, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-width=\"2\"%s%s%s/>", x, x + 18, y - 4, y - 4, color,
                dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    else
        fprintf(fp, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>", x,
                y - 9, !strcmp(kind, "hatch") ? "url(#es-hatch)" : color);
    fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\">", x + 22, y);
    rs_text(fp, text);
    fputs("</text></g>\n", fp);
    return x + 22 + 6.6 * (double)strlen(text) + 18;
}

/* The y axis from lo to hi: grid lines and tick values (as % of pct_ref when
 * it is > 0), and the axis name turned along it. */
static void y_axis(FILE *fp, double lo, double hi, double pct_ref, const char *label)
{
    double dlo = pct_ref > 0 ? 100 * lo / pct_ref : lo, dhi = pct_ref > 0 ? 100 * hi / pct_ref : hi;
    /* a zoomed axis (in % of the mean) is cut in quarters, so both ends have a value */
    double step = pct_ref > 0 ? (dhi - dlo) / 4 : rs_nice_step(dhi - dlo, 5);
    int d = decimals(step);
    fputs("<g class=\"axis y\">\n", fp);
    fprintf(fp, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", left_px, left_px,
            TOP, H - BOTTOM);
    for (double t = ceil(dlo / step - 1e-9) * step; t <= dhi + step * 1e-9; t += step) {
        double v = pct_ref > 0 ? t * pct_ref / 100 : t;
        double y = TOP + PLOT_H - (hi > lo ? (v - lo) / (hi - lo) * PLOT_H : 0);
        fprintf(fp, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#ddd\"/>"
                    "<text class=\"tick\" x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%.*f%s</text>\n",
                left_px - 4, left_px + PLOT_W, y, y, left_px - 7, y + 4, d, fabs(t) < step * 1e-9 ? 0 : t,
                pct_ref > 0 ? " %" : "");
    }
    fprintf(fp, "<text class=\"axis-label\" transform=\"translate(18 %.1f) rotate(-90)\" "
                "text-anchor=\"middle\">", TOP + PLOT_H / 2);
    rs_text(fp, label);
    fputs("</text>\n</g>\n", fp);
}

/* A numeric x axis from lo to hi with tick values. */
static void x_axis_num(FILE *fp, double lo, double hi, const char *label)
{
    double step = rs_nice_step(hi - lo, 8);
    int d = decimals(step);
    fputs("<g class=\"axis x\">\n", fp);
    fprintf(fp, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", left_px,
            left_px + PLOT_W, H - BOTTOM, H - BOTTOM);
    for (double t = ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
        double x = left_px + (hi > lo ? (t - lo) / (hi - lo) * PLOT_W : 0);
        fprintf(fp, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>"
                    "<text class=\"tick\" x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%.*f</text>\n",
                x, x, H - BOTTOM, H - BOTTOM + 5, x, H - BOTTOM + 18, d,
                fabs(t) < step * 1e-9 ? 0 : t);
    }
    fprintf(fp, "<text class=\"axis-label\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
            left_px + PLOT_W / 2, H - 10);
    rs_text(fp, label);
    fputs("</text>\n</g>\n", fp);
}

static const char hatch_def[] =
    "<defs><pattern id=\"es-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
    "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f3c9c9\"/>"
    "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c33\" stroke-width=\"2\"/></pattern></defs>\n";

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void rs_bars_svg(FILE *fp, const rs_bars *c)
{
    left_px = 84;
    header(fp, c->id, c->title, c->note);
    fputs(hatch_def, fp);
    double x = left_px;
    fputs("<g class=\"legend\">\n", fp);
    for (size_t s = 0; s < c->n_series; s++)
        x = legend_item(fp, x, "rect", c->series[s].color, NULL, c->series[s].name);
    for (size_t s = 0; s < c->n_series; s++)
        if (c->series[s].cut > 0) {
            x = legend_item(fp, x, "hatch", NULL, NULL, c->series[s].cut_name);
            break;
        }
    for (size_t l = 0; l < c->n_lines; l++)
        x = legend_item(fp, x, "line", c->lines[l].color, c->lines[l].dash, c->lines[l].label);
    fputs("</g>\n", fp);
    double lo = c->y_lo, hi = c->y_hi > c->y_lo ? c->y_hi : c->y_lo + 1;
    y_axis(fp, lo, hi, c->pct_ref, c->y_label);
#define YPX(v) (TOP + PLOT_H - ((v) < lo ? 0 : ((v) > hi ? hi - lo : (v) - lo)) / (hi - lo) * PLOT_H)
    /* categories: a slot each, its series side by side */
    double slot = c->n ? PLOT_W / (double)c->n : PLOT_W;
    double bw = (slot * 0.8) / (double)(c->n_series ? c->n_series : 1);
    size_t every = 1;
    while (slot * (double)every < 34)
        every++;
    fputs("<g class=\"axis x\">\n", fp);
    fprintf(fp, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", left_px,
            left_px + PLOT_W, H - BOTTOM, H - BOTTOM);
    for (size_t i = 0; i < c->n; i += every)
        fprintf(fp, "<text class=\"tick\" x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%zu</text>\n",
                left_px + slot * ((double)i + 0.5), H - BOTTOM + 16, i);
    fprintf(fp, "<text class=\"axis-label\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
            left_px + PLOT_W / 2, H - 10);
    rs_text(fp, c->x_label);
    fputs("</text>\n</g>\n<g class=\"bars\">\n", fp);
    for (size_t s = 0; s < c->n_series; s++) {
        const rs_series *se = &c->series[s];
        for (size_t i = 0; i < c->n; i++) {
            double v = se->v[i], x0 = left_px + slot * (double)i + slot * 0.1 + bw * (double)s;
            double top = se->cut > 0 && v > se->cut ? se->cut : v;
            double y0 = YPX(top), y1 = YPX(lo);
            fprintf(fp, "<rect class=\"bar\" data-series=\"");
            rs_text(fp, se->name);
            fprintf(fp, "\" data-cat=\"%zu\" data-value=\"%.6f\" x=\"%.2f\" y=\"%.2f\" "
                        "width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>",
                    i, v, x0, y0, bw > 1.5 ? bw - 0.5 : bw, y1 - y0, se->color);
            rs_text(fp, se->name);
            fprintf(fp, ", %s %zu: %.6g</title></rect>\n", "rank", i, v);
            if (top < v) {
                double ya = YPX(v);
                fprintf(fp, "<rect class=\"skipped\" data-cat=\"%zu\" data-value=\"%.6f\" "
                            "x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                            "fill=\"url(#es-hatch)\"/>\n",
                        i, v - top, x0, ya, bw > 1.5 ? bw - 0.5 : bw, y0 - ya);
            }
        }
    }
    fputs("</g>\n", fp);
    /* reference lines, their labels in the right margin, at least 14 px apart */
    double *ys = malloc(sizeof *ys * (c->n_lines + 1) * 2); /* (y, line) pairs */
    if (ys) {
        for (size_t l = 0; l < c->n_lines; l++) {
            ys[2 * l] = YPX(c->lines[l].y);
            ys[2 * l + 1] = (double)l;
        }
        qsort(ys, c->n_lines, 2 * sizeof *ys, cmp_dbl);
        double last = -1e9;
        for (size_t k = 0; k < c->n_lines; k++) {
            size_t l = (size_t)ys[2 * k + 1];
            const rs_line *ln = &c->lines[l];
            double y = ys[2 * k], ly = y + 4 > last + 14 ? y + 4 : last + 14;
            last = ly;
            fprintf(fp, "<g class=\"ref\"><line x1=\"%d\" x2=\"%.1f\" y1=\"%.2f\" y2=\"%.2f\" "
                        "stroke=\"%s\" stroke-width=\"2\"%s%s%s/>",
                    left_px, left_px + PLOT_W + 4, y, y, ln->color, ln->dash ? " stroke-dasharray=\"" : "",
                    ln->dash ? ln->dash : "", ln->dash ? "\"" : "");
            fprintf(fp, "<text class=\"ref-label\" x=\"%.1f\" y=\"%.2f\" fill=\"%s\">",
                    left_px + PLOT_W + 8, ly, ln->color);
            rs_text(fp, ln->label);
            fputs("</text></g>\n", fp);
        }
    }
    free(ys);
#undef YPX
    fputs("</svg>\n", fp);
}

void rs_hist_svg(FILE *fp, const rs_hist *h)
{
    left_px = 84;
    header(fp, h->id, h->title, h->note);
    double x = left_px;
    fputs("<g class=\"legend\">\n", fp);
    x = legend_item(fp, x, "rect", "#4a7ebb", NULL, h->name);
    for (size_t m = 0; m < h->n_marks; m++)
        x = legend_item(fp, x, "line", h->marks[m].color, "5 3", h->marks[m].label);
    fputs("</g>\n", fp);
    uint64_t top = 1;
    for (size_t i = 0; i < h->n; i++)
        if (h->count[i] > top)
            top = h->count[i];
    double hi_y = rs_nice_step((double)top, 4) * ceil((double)top / rs_nice_step((double)top, 4));
    if (hi_y < 1)
        hi_y = 1;
    y_axis(fp, 0, hi_y, 0, h->y_label);
    double lo = h->n ? h->edge[0] : 0, hi = h->n ? h->edge[h->n] : 1;
    for (size_t m = 0; m < h->n_marks; m++) { /* bounds inside the data's reach widen the axis */
        double mx = h->marks[m].x;
        if (mx < lo && mx >= lo - (hi - lo))
            lo = mx;
        if (mx > hi && mx <= hi + (hi - lo))
            hi = mx;
    }
    if (lo > 0 && lo < (hi - lo) * 0.25)
        lo = 0;
    x_axis_num(fp, lo, hi, h->x_label);
#define XPX(v) (left_px + ((v) - lo) / (hi - lo) * PLOT_W)
    fputs("<g class=\"bins\">\n", fp);
    for (size_t i = 0; i < h->n; i++) {
        double x0 = XPX(h->edge[i]), x1 = XPX(h->edge[i + 1]);
        double y0 = TOP + PLOT_H - (double)h->count[i] / hi_y * PLOT_H;
        fprintf(fp, "<rect class=\"bin\" data-lo=\"%.17g\" data-hi=\"%.17g\" data-count=\"%llu\" "
                    "x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#4a7ebb\" "
                    "stroke=\"#fff\" stroke-width=\"0.5\"><title>%.6g to %.6g: %llu</title></rect>\n",
                h->edge[i], h->edge[i + 1], (unsigned long long)h->count[i], x0, y0, x1 - x0,
                TOP + PLOT_H - y0, h->edge[i], h->edge[i + 1], (unsigned long long)h->count[i]);
    }
    fputs("</g>\n", fp);
    double last = -1e9;
    for (size_t m = 0; m < h->n_marks; m++) {
        double mx = h->marks[m].x;
        if (mx < lo || mx > hi)
            continue; /* the legend says where it is */
        double px = XPX(mx), ly = TOP + 12 > last + 14 ? TOP + 12 : last + 14;
        last = ly;
        fprintf(fp, "<g class=\"ref\"><line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%d\" "
                    "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>"
                    "<text class=\"ref-label\" x=\"%.2f\" y=\"%.1f\" fill=\"%s\">",
                px, px, TOP, H - BOTTOM, h->marks[m].color, px + 4, ly, h->marks[m].color);
        rs_text(fp, h->marks[m].label);
        fputs("</text></g>\n", fp);
    }
#undef XPX
    fputs("</svg>\n", fp);
}

void rs_hbars_svg(FILE *fp, const rs_hbars *c)
{
    size_t longest = 0;
    for (size_t i = 0; i < c->n; i++)
        longest = strlen(c->label[i]) > longest ? strlen(c->label[i]) : longest;
    left_px = 84 + (longest > 10 ? (int)(7 * (longest - 10)) : 0);
    if (left_px > 320)
        left_px = 320;
    header(fp, c->id, c->title, NULL);
    fputs("<g class=\"legend\">\n", fp);
    legend_item(fp, left_px, "rect", c->color, NULL, c->name);
    fputs("</g>\n", fp);
    double max = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i] > max)
            max = c->v[i];
    double step = rs_nice_step(max > 0 ? max : 1, 6), hi = step * ceil((max > 0 ? max : 1) / step);
    x_axis_num(fp, 0, hi, c->x_label);
    double row = c->n ? PLOT_H / (double)c->n : PLOT_H;
    fprintf(fp, "<g class=\"axis y\"><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" "
                "stroke=\"#000\"/>\n", left_px, left_px, TOP, H - BOTTOM);
    for (size_t i = 0; i < c->n; i++) {
        double y = TOP + row * (double)i;
        fprintf(fp, "<text class=\"tick\" x=\"%d\" y=\"%.2f\" text-anchor=\"end\" "
                    "font-size=\"%d\">", left_px - 6, y + row / 2 + 4, row < 13 ? 9 : 12);
        rs_text(fp, c->label[i]);
        fputs("</text>\n", fp);
    }
    fputs("</g>\n<g class=\"bars\">\n", fp);
    for (size_t i = 0; i < c->n; i++) {
        double y = TOP + row * (double)i, w = c->v[i] / hi * PLOT_W;
        fputs("<rect class=\"bar\" data-cat=\"", fp);
        rs_text(fp, c->label[i]);
        fprintf(fp, "\" data-value=\"%.6f\" x=\"%d\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                    "fill=\"%s\"><title>", c->v[i], left_px, y + row * 0.1, w, row * 0.8, c->color);
        rs_text(fp, c->label[i]);
        fprintf(fp, ": %.6g</title></rect>\n", c->v[i]);
    }
    fputs("</g>\n</svg>\n", fp);
}

size_t rs_bin(const double *v, size_t n, size_t max_bins, double min_width, double **edge,
              uint64_t **count)
{
    *edge = NULL, *count = NULL;
    if (n == 0 || max_bins == 0)
        return 0;
    double lo = v[0], hi = v[0];
    for (size_t i = 1; i < n; i++) {
        if (v[i] < lo)
            lo = v[i];
        if (v[i] > hi)
            hi = v[i];
    }
    double w = rs_nice_step(hi - lo, (int)max_bins);
    if (w < min_width)
        w = min_width;
    double start = floor(lo / w) * w;
    size_t bins = (size_t)floor((hi - start) / w) + 1;
    while (bins > max_bins + 1) { /* rounding: widen until it fits */
        w = rs_nice_step(w * 1.01 * (double)max_bins, (int)max_bins);
        start = floor(lo / w) * w;
        bins = (size_t)floor((hi - start) / w) + 1;
    }
    *edge = malloc(sizeof **edge * (bins + 1));
    *count = calloc(bins, sizeof **count);
    if (!*edge || !*count) {
        free(*edge), free(*count);
        *edge = NULL, *count = NULL;
        return 0;
    }
    for (size_t b = 0; b <= bins; b++)
        (*edge)[b] = start + w * (double)b;
    for (size_t i = 0; i < n; i++) {
        size_t b = bins - 1; /* the last bin whose left edge v[i] reaches */
        while (b > 0 && v[i] < (*edge)[b])
            b--;
        if (b + 1 == bins && v[i] >= (*edge)[bins]) /* past the last edge: rounding */
            (*edge)[bins] = v[i] + w * 1e-9;
        (*count)[b]++;
    }
    return bins;
}
