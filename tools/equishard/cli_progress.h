/* The progress line every long command shows on a terminal, and the numbers it
 * is made of. Only stderr that is a terminal gets the line, repainted at most
 * CLI_PROGRESS_HZ times a second (a monotonic clock, read once per callback:
 * clock_gettime is a vDSO call, no system call); a pipe or --quiet gets none.
 * The formatting and the rate limit are pure functions, tested on their own
 * (tests/cli/test_progress_format.c). Needs only the C library. */
#ifndef ES_CLI_PROGRESS_H
#define ES_CLI_PROGRESS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_PROGRESS_HZ 10

typedef struct cli_progress {
    int enabled;      /* stderr is a terminal and not --quiet: the line is painted */
    const char *what; /* "measure" */
    const char *unit; /* "shards": what done/total count */
    double start;     /* monotonic seconds at init */
    double last;      /* when the line was last painted; < 0: never */
} cli_progress;

/* 1 while a progress line is on the terminal (not yet cleared): a signal
 * handler clears it first, so that its message starts on a line of its own. */
extern volatile sig_atomic_t cli_progress_on_line;

/* Starts the clock; the line is painted only when stderr is a terminal and
 * quiet is 0. `what` and `unit` are borrowed. */
void cli_progress_init(cli_progress *p, const char *what, const char *unit, int quiet);
/* es_progress_fn: user is a cli_progress. */
void cli_progress_update(void *user, size_t done, size_t total);
/* Starts the clock again (a line set up before a stage it waits for). */
void cli_progress_restart(cli_progress *p);
/* Clears the line (when one was painted). */
void cli_progress_end(cli_progress *p);
/* Seconds since init. */
double cli_progress_elapsed(const cli_progress *p);
/* Monotonic seconds. */
double cli_progress_now(void);

/* Whether to repaint at `now` when the line was last painted at `last` (< 0:
 * never): the first call, the last item (done == total) and anything at least
 * 1/CLI_PROGRESS_HZ s after the last paint. */
int cli_progress_due(double now, double last, size_t done, size_t total);

/* n with a space between groups of three digits: 4725 -> "4 725". */
const char *cli_group(char *buf, size_t len, uint64_t n);
/* Seconds as M:SS, or H:MM:SS from an hour on (rounded up: an ETA of 0.2 s
 * reads 0:01); "?" for a negative or non-finite value. */
const char *cli_clock(char *buf, size_t len, double seconds);
/* Bytes as "512 B", "1.2 kB", "740.0 MB", "3.1 GB" (powers of 1000, one decimal). */
const char *cli_bytes(char *buf, size_t len, uint64_t bytes);

/* The line, without "\r": "measure: 4 725 / 6 250 shards  75%  1 830 shards/s  ETA 0:01".
 * Rate and ETA are left out until elapsed > 0 and done > 0; the percent and
 * ETA when total is 0. Returns buf. */
const char *cli_progress_format(char *buf, size_t len, const char *what, const char *unit,
                                size_t done, size_t total, double elapsed);

#endif
