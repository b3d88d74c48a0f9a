/* The benchmarks' clocks (tools/bench/, the C ones): wall seconds on the monotonic
 * clock, and the process's CPU seconds (on a shared machine a single-threaded
 * phase's CPU time is steadier than its wall time). */
#ifndef ES_BENCH_CLOCK_H
#define ES_BENCH_CLOCK_H

#include <sys/resource.h>
#include <time.h>

static inline double bench_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double now(void) { return bench_seconds(CLOCK_MONOTONIC); }
static inline double cpu(void) { return bench_seconds(CLOCK_PROCESS_CPUTIME_ID); }
/* The calling thread's alone (what a phase did on it while helpers ran beside),
 * user and system time apart: the system part of a phase that writes files
 * also holds the page cache's reclaim, which varies from run to run here. */
static inline void thread_cpu(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

#endif
