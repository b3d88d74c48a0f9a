/* es_measure_to_file: es_measure's units, written to the output in unit order
 * as they finish (costs/cost_stream.h), so the table is never whole in memory.
 *
 * Order: units are handed out in increasing order (OpenMP dynamic schedule);
 * whichever thread finishes a unit hands every finished unit from `next` on to
 * the sink, under one mutex, so rows reach the file in unit order whatever
 * the thread count. A unit's rows are freed once written.
 *
 * Memory: a thread does not start unit u until u < next + window, so at most
 * `window` units' rows are held while a slow unit holds up the ones after it.
 * No deadlock: every unit below u was handed out before u and is running or
 * done, so `next` advances. What stays per unit is its es_unit_result (24
 * bytes, rows freed) and one byte of `done`.
 *
 * Errors: the first failure in unit order (a unit's, with ES_ON_ERROR_FAIL,
 * or the sink's) stops the run; units not started are skipped and the
 * temporary file is removed, so nothing appears at the path. */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "costs/cost_stream.h"
#include "measure/measure_job.h"
#include "text/tok_identity.h"
#include "text/tokenizer.h"

/* Units in flight ahead of the oldest unwritten one, per thread. */
#define WINDOW_PER_THREAD 4

typedef struct stream_run {
    es_measure_job *j;
    es_rows_fn fn;
    void *user;
    es_cost_stream *out;
    es_cost_table *skips;  /* what was left out, copied from each unit, in unit order */
    es_context ctx;        /* the sink's errors (fn, the writer); used under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next;           /* first unit not yet written */
    size_t window;
    unsigned char *done;   /* per unit: measured, waiting to be written */
    int status;            /* first failure, ES_OK while going on */
} stream_run;

/* Copies the unit's skips (not its arena: that holds the rows' strings). */
static int keep_skips(es_cost_table *dst, const es_cost_table *t)
{
    for (size_t i = 0; i < t->n_skips; i++) {
        const es_cost_skip *k = &t->skips[i];
        if (es_cost_table_add_skip(dst, k->msg, k->shard, k->key, k->pos) != ES_OK)
            return ES_ERR_NOMEM;
    }
    return ES_OK;
}

/* Writes unit u (measured) and frees its rows. Called with mu held. */
static int write_unit(stream_run *r, size_t u)
{
    es_unit_result *res = &r->j->results[u];
    int rc = es_unit_check(&r->ctx, res, u);
    if (rc != ES_OK)
        return rc;
    rc = r->fn ? r->fn(&r->ctx, r->user, res->rows) : ES_OK;
    if (rc != ES_OK && !r->ctx.msg[0])
        es_fail(&r->ctx, rc, "measure: stopped by the rows callback (status %d)", rc);
    if (rc == ES_OK)
        rc = es_cost_stream_put(r->out, res->rows);
    if (rc == ES_OK && keep_skips(r->skips, res->rows) != ES_OK)
        rc = es_fail(&r->ctx, ES_ERR_NOMEM, "out of memory");
    es_cost_table_free(res->rows);
    res->rows = NULL;
    return rc;
}

/* Waits until unit u is inside the window; 1 when the run has stopped. */
static int wait_turn(stream_run *r, size_t u)
{
    pthread_mutex_lock(&r->mu);
    while (r->status == ES_OK && u >= r->next + r->window)
        pthread_cond_wait(&r->cv, &r->mu);
    int stopped = r->status != ES_OK;
    pthread_mutex_unlock(&r->mu);
    return stopped;
}

/* Unit u is measured: writes it and every finished unit after it, in order. */
static void finished(stream_run *r, size_t u)
{
    pthread_mutex_lock(&r->mu);
    r->done[u] = 1;
    size_t n = r->j->work.n;
    while (r->status == ES_OK && r->next < n && r->done[r->next]) {
        int rc = write_unit(r, r->next++);
        if (rc != ES_OK) {
            r->status = rc;
            atomic_store(&r->j->first_failed, 0); /* units not started stay so */
        }
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static int run_all(stream_run *r, int threads)
{
    es_measure_job *j = r->j;
    struct tok_state *states = calloc((size_t)threads, sizeof *states);
    if (!states)
        return es_fail(&r->ctx, ES_ERR_NOMEM, "out of memory");
    long n = (long)j->work.n;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long i = 0; i < n; i++) {
        if (!wait_turn(r, (size_t)i)) {
            es_measure_unit(j, (size_t)i, &states[omp_get_thread_num()]);
            finished(r, (size_t)i);
        }
        es_measure_progress(j, (size_t)n);
    }
    for (int t = 0; t < threads; t++)
        tok_state_release(&states[t]);
    free(states);
    return r->status;
}

/* The stream's header inputs: which data-dependent columns can appear. */
static unsigned may_columns(const es_measure_job *j)
{
    unsigned may = j->opts.tok ? ES_STREAM_MAY_TOKENS : 0;
    for (size_t u = 0; u < j->work.n && !(may & ES_STREAM_MAY_STATS); u++)
        if (!j->work.units[u].m) /* a shard: its stat is recorded */
            may |= ES_STREAM_MAY_STATS;
    return may;
}

static int stream_job(stream_run *r, const char *path)
{
    es_measure_job *j = r->j;
    char *tokenizer = NULL;
    if (j->opts.tok && !(tokenizer = es_tok_identity_text(j->opts.tok)))
        return es_fail(&r->ctx, ES_ERR_NOMEM, "out of memory");
    int rc = es_cost_stream_open(&r->ctx, path, may_columns(j), tokenizer, &r->out);
    free(tokenizer);
    if (rc != ES_OK)
        return rc;
    int threads = j->s.threads > 0 ? j->s.threads : omp_get_max_threads();
    r->window = (size_t)threads * WINDOW_PER_THREAD;
    atomic_store(&j->done, 0);
    rc = run_all(r, threads);
    if (rc == ES_OK && r->next != j->work.n)
        rc = es_fail(&r->ctx, ES_ERR_INTERNAL, "measure: %zu of %zu units written", r->next,
                     j->work.n);
    if (rc != ES_OK) {
        es_cost_stream_abort(r->out);
        return rc;
    }
    return es_cost_stream_commit(r->out);
}

ES_API int es_measure_to_file(es_context *ctx, const es_measure_settings *s,
                              const char *const *inputs, size_t n_inputs, const char *path,
                              es_rows_fn fn, void *user, es_cost_table **skips)
{
    es_clear_error(ctx);
    if (skips)
        *skips = NULL;
    if (!path)
        return es_fail(ctx, ES_ERR_USAGE, "es_measure_to_file: path is NULL");
    stream_run r = {.fn = fn, .user = user, .status = ES_OK};
    es_context_copy_settings(&r.ctx, ctx); /* the writer's file is the caller's output */
    int rc = es_measure_job_new(ctx, s, inputs, n_inputs, &r.j);
    if (rc != ES_OK)
        return rc;
    r.skips = es_cost_table_new();
    r.done = calloc(r.j->work.n + 1, 1);
    if (!r.skips || !r.done) {
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    } else {
        pthread_mutex_init(&r.mu, NULL);
        pthread_cond_init(&r.cv, NULL);
        if ((rc = stream_job(&r, path)) != ES_OK)
            es_fail(ctx, rc, "%s", r.ctx.msg[0] ? r.ctx.msg : "out of memory");
        pthread_cond_destroy(&r.cv);
        pthread_mutex_destroy(&r.mu);
    }
    free(r.done);
    es_measure_job_free(r.j);
    if (rc == ES_OK && skips)
        *skips = r.skips;
    else
        es_cost_table_free(r.skips);
    return rc;
}
