#include "cli_progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t cli_progress_on_line;

double cli_progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_init(cli_progress *p, const char *what, const char *unit, int quiet)
{
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->what = what;
    p->unit = unit;
    p->start = cli_progress_now();
    p->last = -1;
}

void cli_progress_restart(cli_progress *p)
{
    p->start = cli_progress_now();
    p->last = -1;
}

double cli_progress_elapsed(const cli_progress *p)
{
    return cli_progress_now() - p->start;
}

int cli_progress_due(double now, double last, size_t done, size_t total)
{
    return last < 0 || done == total || now - last >= 1.0 / CLI_PROGRESS_HZ;
}

const char *cli_group(char *buf, size_t len, uint64_t n)
{
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    size_t o = 0;
    for (int i = 0; i < nd && o + 2 < len; i++) {
        if (i > 0 && (nd - i) % 3 == 0)
            buf[o++] = ' ';
        buf[o++] = digits[i];
    }
    if (len)
        buf[o < len ? o : len - 1] = '\0';
    return buf;
}

const char *cli_clock(char *buf, size_t len, double seconds)
{
    if (!isfinite(seconds) || seconds < 0 || seconds > 1e9) {
        snprintf(buf, len, "?");
        return buf;
    }
    unsigned long long s = (unsigned long long)ceil(seconds);
    if (s >= 3600)
        snprintf(buf, len, "%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, len, "%llu:%02llu", s / 60, s % 60);
    return buf;
}

const char *cli_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = {"kB", "MB", "GB", "TB", "PB"};
    if (bytes < 1000) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1000;
    size_t u = 0;
    /* the next unit once this one would print 1000.0 */
    while (v >= 999.95 && u + 1 < sizeof units / sizeof units[0])
        v /= 1000, u++;
    snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

const char *cli_progress_format(char *buf, size_t len, const char *what, const char *unit,
                                size_t done, size_t total, double elapsed)
{
    char d[32], t[32], r[32], e[32];
    int n = snprintf(buf, len, "%s: %s / %s %s", what, cli_group(d, sizeof d, done),
                     cli_group(t, sizeof t, total), unit);
    if (n < 0 || (size_t)n >= len)
        return buf;
    if (total)
        n += snprintf(buf + n, len - (size_t)n, "  %3u%%",
                      (unsigned)((double)done * 100 / (double)total));
    if (n < 0 || (size_t)n >= len || !(elapsed > 0) || done == 0)
        return buf;
    double rate = (double)done / elapsed;
    n += snprintf(buf + n, len - (size_t)n, "  %s %s/s",
                  cli_group(r, sizeof r, (uint64_t)(rate + 0.5)), unit);
    if (n >= 0 && (size_t)n < len && total && done < total)
        snprintf(buf + n, len - (size_t)n, "  ETA %s",
                 cli_clock(e, sizeof e, (double)(total - done) / rate));
    return buf;
}

void cli_progress_update(void *user, size_t done, size_t total)
{
    cli_progress *p = user;
    if (!p->enabled)
        return;
    double now = cli_progress_now();
    if (!cli_progress_due(now, p->last, done, total))
        return;
    p->last = now;
    char line[256];
    cli_progress_format(line, sizeof line, p->what, p->unit, done, total, now - p->start);
    /* \033[K: a shorter line leaves nothing of the longer one before it */
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    cli_progress_on_line = 1;
}

void cli_progress_end(cli_progress *p)
{
    if (p->enabled && p->last >= 0) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    cli_progress_on_line = 0;
    p->last = -1;
}
