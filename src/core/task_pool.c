/* Helper threads with blocking waits (task_pool.h). */
#include "core/task_pool.h"

#include <pthread.h>
#include <stdlib.h>

struct es_task_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t *threads;
    unsigned n_threads;
    /* the batch: tasks [next, n) not yet taken, `running` taken and not done */
    void (*task)(void *arg, unsigned i);
    void *arg;
    unsigned next, n, running;
    int stop;
};

/* Takes and runs tasks until the batch has none left; called and returns with mu held. */
static void take_tasks(es_task_pool *p)
{
    while (p->next < p->n) {
        unsigned i = p->next++;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        p->task(p->arg, i);
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0 && p->next == p->n)
            pthread_cond_signal(&p->done);
    }
}

static void *helper_main(void *arg)
{
    es_task_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        take_tasks(p);
        if (!p->stop)
            pthread_cond_wait(&p->work, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

es_task_pool *es_task_pool_new(unsigned helpers)
{
    es_task_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = helpers ? calloc(helpers, sizeof *p->threads) : NULL;
    if (helpers && !p->threads) {
        es_task_pool_free(p);
        return NULL;
    }
    for (unsigned i = 0; i < helpers; i++) {
        if (pthread_create(&p->threads[i], NULL, helper_main, p) != 0)
            break; /* fewer helpers: the caller takes more of each batch */
        p->n_threads++;
    }
    return p;
}

void es_task_pool_run(es_task_pool *p, unsigned n, void (*task)(void *arg, unsigned i),
                      void *arg)
{
    pthread_mutex_lock(&p->mu);
    p->task = task;
    p->arg = arg;
    p->next = 0;
    p->n = n;
    if (n > 1)
        pthread_cond_broadcast(&p->work);
    take_tasks(p);
    while (p->running > 0)
        pthread_cond_wait(&p->done, &p->mu);
    p->n = p->next = 0;
    pthread_mutex_unlock(&p->mu);
}

void es_task_pool_free(es_task_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
