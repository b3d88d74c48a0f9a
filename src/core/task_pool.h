/* A few helper threads that run a batch of tasks beside the caller and then
 * sleep: for short parallel bursts repeated thousands of times (the parquet
 * writer's page compression, one burst per few pages). OpenMP's threads spin
 * between such regions (libgomp's default wait policy): on a 2-core machine
 * that spinning took a core from the thread making the next pages — 40 % of a
 * ZSTD reshard's CPU (docs/PERFORMANCE.md). Here waits block on a condition
 * variable. Which thread runs a task is not fixed: tasks must be independent. */
#ifndef ES_CORE_TASK_POOL_H
#define ES_CORE_TASK_POOL_H

typedef struct es_task_pool es_task_pool;

/* A pool of `helpers` threads (0: the caller runs every task). NULL when out
 * of memory or no thread could be started. */
es_task_pool *es_task_pool_new(unsigned helpers);

/* Runs task(arg, i) for i in [0, n) on the caller and the helpers; returns
 * when all have finished. */
void es_task_pool_run(es_task_pool *p, unsigned n, void (*task)(void *arg, unsigned i),
                      void *arg);

void es_task_pool_free(es_task_pool *p);

#endif
