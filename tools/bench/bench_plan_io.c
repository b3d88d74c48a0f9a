/* The CLI's plan path in phases, on a cost table FILE:
 *
 *   bench_plan_io COSTS.tsv K W shard|batch|batch-writes|read|read-warm OUTDIR
 *
 * ("read": only the first phase, for profiling the reader. "read-warm": the
 * read, then three times the table freed and read again into the same memory:
 * malloc is told to keep what is freed (no mmap, no trim), so those reads show
 * the parser without the cost of mapping fresh pages, which on this project's
 * paravirtualised machine is more than half of a first read. "batch-writes":
 * batch mode with OUTDIR written five times over, for the writing thread's
 * time, which varies from one write to the next here; OUTDIR on a tmpfs
 * keeps the disk out of it.)
 * Prints the seconds and bytes of each phase: reading the table
 * (es_cost_table_read), planning (es_plan_build), writing OUTDIR
 * (es_plan_write; in batch mode the table is compressed for costs.tsv.zst
 * during the build, es_cost_table_compress_ahead, as the CLI does), and, for
 * batch mode, writing the table as zstd into
 * /dev/null the way es_plan_write writes OUTDIR/costs.tsv.zst (so the rest of
 * the write, the JSONL and plan.json, is the difference). GB/s are per core:
 * every phase runs on one thread. */
#include <dirent.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "costs/cost_table.h"
#include "bench_clock.h"

static double dir_bytes(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    double sum = 0;
    char path[4096];
    struct stat st;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name), k = strlen(suffix);
        if (n < k || strcmp(e->d_name + n - k, suffix))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0)
            sum += (double)st.st_size;
    }
    if (d)
        closedir(d);
    return sum;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: bench_plan_io COSTS.tsv K W shard|batch|batch-writes|read|read-warm OUTDIR\n");
        return 2;
    }
    int warm = strcmp(argv[4], "read-warm") == 0;
    if (warm) {
        mallopt(M_MMAP_MAX, 0);            /* every block from the heap ...      */
        mallopt(M_TRIM_THRESHOLD, INT_MAX); /* ... and the heap never given back */
    }
    es_context *ctx = es_context_new();
    struct stat st;
    stat(argv[1], &st);
    double t0 = now(), c0 = cpu();
    es_cost_table *t = NULL;
    if (es_cost_table_read(ctx, argv[1], &t) != ES_OK) {
        fprintf(stderr, "%s\n", es_errmsg(ctx));
        return 1;
    }
    double t_read = now() - t0, c_read = cpu() - c0;
    printf("read   %8.3f s  cpu %8.3f s  %7.3f GB/s of cpu  (%zu rows, %.2f GB)\n", t_read, c_read,
           st.st_size / c_read / 1e9, es_cost_table_size(t), st.st_size / 1e9);

    for (int again = 0; warm && again < 3; again++) {
        es_cost_table_free(t);
        t = NULL;
        t0 = now(), c0 = cpu();
        if (es_cost_table_read(ctx, argv[1], &t) != ES_OK) {
            fprintf(stderr, "%s\n", es_errmsg(ctx));
            return 1;
        }
        c_read = cpu() - c0;
        printf("again  %8.3f s  cpu %8.3f s  %7.3f GB/s of cpu  (same memory, already mapped)\n",
               now() - t0, c_read, st.st_size / c_read / 1e9);
    }
    if (strcmp(argv[4], "read") == 0 || warm)
        return 0;
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = (uint32_t)atoi(argv[2]);
    s.workers = (uint32_t)atoi(argv[3]);
    s.mode = strncmp(argv[4], "batch", 5) == 0 ? ES_PLAN_BATCH : ES_PLAN_SHARD;
    int writes = strcmp(argv[4], "batch-writes") == 0 ? 5 : 1;
    es_plan *p = NULL;
    t0 = now(), c0 = cpu();
    /* as the CLI: batch mode's costs.tsv.zst compressed while the plan is built */
    if (s.mode == ES_PLAN_BATCH && es_cost_table_compress_ahead(ctx, t) != ES_OK) {
        fprintf(stderr, "%s\n", es_errmsg(ctx));
        return 1;
    }
    if (es_plan_build(ctx, &s, t, &p) != ES_OK) {
        fprintf(stderr, "%s\n", es_errmsg(ctx));
        return 1;
    }
    printf("build  %8.3f s  cpu %8.3f s\n", now() - t0, cpu() - c0);

    double t_write = 0, c_write = 0, lists = 0;
    for (int w = 0; w < writes; w++) { /* each write replaces the OUTDIR before */
        double u0, s0, u1, s1;
        thread_cpu(&u0, &s0);
        t0 = now(), c0 = cpu();
        if (es_plan_write(ctx, p, argv[5], (const char *const *)&argv[1], 1) != ES_OK) {
            fprintf(stderr, "%s\n", es_errmsg(ctx));
            return 1;
        }
        t_write = now() - t0, c_write = cpu() - c0;
        thread_cpu(&u1, &s1);
        lists = dir_bytes(argv[5], s.mode == ES_PLAN_BATCH ? ".jsonl" : ".list");
        printf("write  %8.3f s  cpu %8.3f s  (%s %.2f GB)\n", t_write, c_write,
               s.mode == ES_PLAN_BATCH ? "jsonl" : "lists", lists / 1e9);
        if (s.mode == ES_PLAN_BATCH) {
            /* es_plan_write's own thread formats and writes the lower half of
             * the ranks' JSONL and plan.json (a second thread the upper half;
             * costs.tsv.zst comes from the image compressed during the build):
             * its rate counts the lower half's bytes only */
            double lower = 0;
            struct stat st;
            char path[4096];
            for (unsigned r = 0; r < (unsigned)s.world_size / 2; r++) {
                snprintf(path, sizeof path, "%s/rank-%05u.batches.jsonl", argv[5], r);
                if (stat(path, &st) == 0)
                    lower += (double)st.st_size;
            }
            printf("jsonl (ranks < K/2: %.2f GB) + plan.json, calling thread  user %8.3f s  sys %8.3f s  "
                   "%7.3f GB/s of user cpu\n", lower / 1e9, u1 - u0, s1 - s0, lower / (u1 - u0) / 1e9);
        }
    }
    if (s.mode == ES_PLAN_BATCH) {
        FILE *null = fopen("/dev/null", "wb");
        t0 = now(), c0 = cpu();
        es_cost_table_write_stream(ctx, t, null, "/dev/null", 1);
        double t_zst = now() - t0, c_zst = cpu() - c0;
        fclose(null);
        printf("costs.tsv.zst %8.3f s  cpu %8.3f s; jsonl + plan.json ~ %.3f s  cpu %.3f s  "
               "%7.3f GB/s of cpu\n", t_zst, c_zst, t_write - t_zst, c_write - c_zst,
               lists / (c_write - c_zst) / 1e9);
    }
    es_plan_free(p);
    es_cost_table_free(t);
    es_context_free(ctx);
    return 0;
}
