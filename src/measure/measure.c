/* es_measure: inputs → work units → rows, in parallel over units (OpenMP), merged
 * back in input order so the table is byte-identical for any thread count.
 *
 * Error policy (es_on_error): with FAIL, the first problem in input order is the
 * call's error; units after a failed one are not started. With SKIP, a bad
 * utterance is left out, a shard that cannot be read is left out whole (rows read
 * before the problem included: a plan must not name a shard known to be broken),
 * and each is listed as a skip. */
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costs/cost_table.h"
#include "measure/work_units.h"
#include "readers/reader.h"

/* Largest audio object the libsndfile probe may buffer (mp3/ogg members). */
#define PROBE_BUFFER (256u << 20)

typedef struct unit_result {
    es_cost_table *rows;
    int status;  /* ES_OK or the unit's failure */
    char *error; /* message when status != ES_OK (FAIL mode) */
} unit_result;

typedef struct run {
    const es_measure_settings *s;
    es_reader_opts opts;
    es_work work;
    unit_result *results;
    _Atomic size_t first_failed; /* FAIL mode: lowest failed unit index */
    _Atomic size_t done;
} run;

/* Records a problem for unit u: a skip in SKIP mode, the unit's error in FAIL
 * mode. Returns nonzero when the unit must stop. */
static int problem(run *r, size_t u, es_context *ctx, int status)
{
    unit_result *res = &r->results[u];
    if (r->s->on_error == ES_ON_ERROR_SKIP) {
        if (es_cost_table_add_skip(res->rows, es_errmsg(ctx)) != ES_OK) {
            res->status = ES_ERR_NOMEM;
            res->error = strdup("out of memory");
            return 1;
        }
        return 0;
    }
    res->status = status;
    res->error = strdup(es_errmsg(ctx));
    size_t cur = atomic_load(&r->first_failed);
    while (u < cur && !atomic_compare_exchange_weak(&r->first_failed, &cur, u))
        ;
    return 1;
}

static int append(run *r, size_t u, const es_cost_row *row, es_context *ctx)
{
    if (es_cost_table_append(r->results[u].rows, row) == ES_OK)
        return 0;
    es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", row->shard);
    r->results[u].status = ES_ERR_NOMEM;
    r->results[u].error = strdup(es_errmsg(ctx));
    return 1;
}

/* A shard that fails as a whole in SKIP mode loses its rows, keeps its skips. */
static void drop_rows(es_cost_table *t)
{
    t->n = 0;
}

static void measure_shard(run *r, size_t u, es_context *ctx)
{
    const es_unit *unit = &r->work.units[u];
    uint8_t head[ES_SNIFF_BYTES];
    long n = es_sniff_file(ctx, unit->path, head);
    const es_reader_ops *ops = n < 0 ? NULL : es_reader_for(head, (size_t)n);
    if (n >= 0 && !ops)
        es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: %s", unit->path,
                "not a shard equishard can read (tar, tar.gz, tar.zst, parquet)");
    es_shard_reader *reader = NULL;
    if (!ops || ops->open(ctx, unit->path, unit->shard, &r->opts, &reader) != ES_OK) {
        problem(r, u, ctx, n < 0 ? ES_ERR_IO : ES_ERR_FORMAT);
        return;
    }
    es_cost_row row;
    int rc;
    while ((rc = ops->next(ctx, reader, &row)) != ES_NEXT_END) {
        if (rc == ES_NEXT_RECORD && append(r, u, &row, ctx))
            break;
        if (rc == ES_NEXT_BAD && problem(r, u, ctx, ES_ERR_FORMAT))
            break;
        if (rc < 0) {
            drop_rows(r->results[u].rows);
            char msg[1100];
            snprintf(msg, sizeof msg, "%s (shard left out)", es_errmsg(ctx));
            if (r->s->on_error == ES_ON_ERROR_SKIP)
                es_fail(ctx, rc, "%s", msg);
            problem(r, u, ctx, rc);
            break;
        }
    }
    ops->close(reader);
}

static void measure_items(run *r, size_t u, es_context *ctx)
{
    const es_unit *unit = &r->work.units[u];
    for (size_t i = unit->begin; i < unit->end; i++) {
        es_cost_row row;
        int rc = es_manifest_measure(ctx, unit->m, i, r->s->root, &r->opts, &row);
        if (rc == ES_NEXT_RECORD ? append(r, u, &row, ctx) : problem(r, u, ctx, ES_ERR_FORMAT))
            return;
    }
}

static void run_unit(run *r, size_t u)
{
    unit_result *res = &r->results[u];
    if (u > atomic_load(&r->first_failed))
        return; /* FAIL mode: an earlier unit failed; its error is the answer */
    es_context ctx = {{0}};
    res->rows = es_cost_table_new();
    if (!res->rows) {
        res->status = ES_ERR_NOMEM;
        res->error = strdup("out of memory");
        return;
    }
    if (r->work.units[u].m)
        measure_items(r, u, &ctx);
    else
        measure_shard(r, u, &ctx);
}

static void report_progress(run *r)
{
    size_t done = atomic_fetch_add(&r->done, 1) + 1;
    if (r->s->progress && omp_get_thread_num() == 0)
        r->s->progress(r->s->progress_user, done, r->work.n);
}

/* Merges unit results in order. Returns the first failure in FAIL mode. */
static int merge(es_context *ctx, run *r, es_cost_table *out)
{
    for (size_t u = 0; u < r->work.n; u++) {
        unit_result *res = &r->results[u];
        if (res->status != ES_OK)
            return es_fail(ctx, res->status, "%s", res->error ? res->error : "out of memory");
        if (!res->rows)
            return es_fail(ctx, ES_ERR_INTERNAL, "unit %zu was not measured", u);
        if (es_cost_table_move_into(out, res->rows) != ES_OK)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    return ES_OK;
}

ES_API void es_measure_defaults(es_measure_settings *s)
{
    memset(s, 0, sizeof *s);
    s->on_error = ES_ON_ERROR_FAIL;
}

ES_API int es_measure(es_context *ctx, const es_measure_settings *s,
                      const char *const *inputs, size_t n_inputs, es_cost_table **out)
{
    es_clear_error(ctx);
    if (!out)
        return es_fail(ctx, ES_ERR_USAGE, "es_measure: out is NULL");
    *out = NULL;
    if (!s || (!inputs && n_inputs) || s->threads < 0 ||
        (s->on_error != ES_ON_ERROR_FAIL && s->on_error != ES_ON_ERROR_SKIP))
        return es_fail(ctx, ES_ERR_USAGE, "es_measure: invalid settings");
    if (n_inputs == 0)
        return es_fail(ctx, ES_ERR_USAGE, "es_measure: no inputs");

    run r = {.s = s, .opts = {s->hash, PROBE_BUFFER}};
    atomic_init(&r.first_failed, SIZE_MAX);
    atomic_init(&r.done, 0);
    int rc = es_work_expand(ctx, &r.work, inputs, n_inputs, s->root);
    es_cost_table *table = rc == ES_OK ? es_cost_table_new() : NULL;
    r.results = rc == ES_OK ? calloc(r.work.n + 1, sizeof *r.results) : NULL;
    if (rc == ES_OK && (!table || !r.results))
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    if (rc == ES_OK) {
        int threads = s->threads > 0 ? s->threads : omp_get_max_threads();
        long n_units = (long)r.work.n;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (long u = 0; u < n_units; u++) {
            run_unit(&r, (size_t)u);
            report_progress(&r);
        }
        rc = merge(ctx, &r, table);
    }
    for (size_t u = 0; r.results && u < r.work.n; u++) {
        es_cost_table_free(r.results[u].rows);
        free(r.results[u].error);
    }
    free(r.results);
    es_work_release(&r.work);
    if (rc != ES_OK) {
        es_cost_table_free(table);
        return rc;
    }
    *out = table;
    return ES_OK;
}
