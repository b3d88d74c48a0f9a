/* The benchmarks' clocks (tools/bench/, the C ones): wall seconds on the monotonic
 * clock, and the process's CPU seconds (on a shared machine a single-threaded
 * phase's CPU time is steadier than its wall time). */
#ifndef ES_BENCH_CLOCK_H
#define ES_BENCH_CLOCK_H

#include <time.h>

static inline double bench_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double now(void) { return bench_seconds(CLOCK_MONOTONIC); }
static inline double cpu(void) { return bench_seconds(CLOCK_PROCESS_CPUTIME_ID); }

#endif
