/* The charts of `report --svg` and of the HTML report (`report --html`,
 * `simulate --html`): SVG text written to a FILE (a memstream), every chart
 * with a title, axes with tick values, units and a legend. Same input, same
 * bytes: numbers are printed with fixed formats and nothing reads the clock.
 *
 * Every chart is a <svg class="chart" id="ID">; the parts a reader (or a
 * test) looks for have classes: "title", "axis x" / "axis y" groups whose
 * <text class="tick"> hold the tick values, "legend", "bar" (data-series,
 * data-cat, data-value), "bin" (data-lo, data-hi, data-count: the edges as
 * %.17g, so a reader recomputing a bin's count compares the same doubles),
 * "ref" lines and their "ref-label". */
#ifndef ES_REPORT_SVG_H
#define ES_REPORT_SVG_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One series of a bar chart: a value per category. With cut > 0, the part of
 * a bar above cut is drawn hatched (what the join cut skips). */
typedef struct rs_series {
    const char *name;  /* the legend's text */
    const char *color; /* fill, "#rrggbb" */
    const double *v;   /* n values */
    double cut;        /* > 0: the part above is drawn as skipped */
    const char *cut_name; /* the legend's text for that part */
} rs_series;

/* A horizontal reference line (the mean, the lower bound, the join cut),
 * labelled in the right margin; labels too close are moved apart. */
typedef struct rs_line {
    const char *label; /* "mean", "lower bound" */
    double y;
    const char *color;
    const char *dash; /* stroke-dasharray, or NULL for solid */
} rs_line;

typedef struct rs_bars {
    const char *id, *title;
    const char *x_label, *y_label; /* with units: "rank", "cost (frames)" */
    const char *note;              /* one line under the title (the zoom), or NULL */
    size_t n;                      /* categories (ranks) */
    const rs_series *series;
    size_t n_series;
    const rs_line *lines;
    size_t n_lines;
    double y_lo, y_hi; /* the y axis; bars start at y_lo (a zoomed axis says so in note) */
    double pct_ref;    /* > 0: the y ticks are % of this value */
} rs_bars;

/* A vertical mark on a histogram's x axis (a filter bound). */
typedef struct rs_mark {
    const char *label;
    double x;
    const char *color;
} rs_mark;

typedef struct rs_hist {
    const char *id, *title, *x_label, *y_label, *note;
    const char *name; /* the bins' legend text */
    size_t n;         /* bins */
    const double *edge;     /* n + 1 edges: bin i is [edge[i], edge[i+1]) */
    const uint64_t *count;  /* n counts */
    const rs_mark *marks;
    size_t n_marks;
} rs_hist;

/* Horizontal bars, one per labelled row (hours per speaker). */
typedef struct rs_hbars {
    const char *id, *title, *x_label, *name, *color;
    size_t n;
    const char *const *label;
    const double *v;
} rs_hbars;

void rs_bars_svg(FILE *fp, const rs_bars *c);
void rs_hist_svg(FILE *fp, const rs_hist *h);
void rs_hbars_svg(FILE *fp, const rs_hbars *c);

/* Text with &, <, >, " escaped for HTML and SVG. */
void rs_text(FILE *fp, const char *s);

/* A tick step near range/want: 1, 2, 2.5 or 5 times a power of ten. */
double rs_nice_step(double range, int want);

/* Histogram bins over values v[0..n-1]: at most max_bins of one nice width
 * (at least min_width, 1 for counts), from a multiple of it below the least
 * value. Fills *edge (n_bins + 1, malloc'd) and *count (n_bins, malloc'd);
 * a value lands in the last bin whose edge it reaches. Returns n_bins, 0 for
 * no values or out of memory (then nothing to free). */
size_t rs_bin(const double *v, size_t n, size_t max_bins, double min_width, double **edge,
              uint64_t **count);

#endif
