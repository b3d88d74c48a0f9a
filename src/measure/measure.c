/* es_measure: inputs → work units → rows, in parallel over units (OpenMP), merged
 * back in input order so the table is byte-identical for any thread count.
 * es_measure is es_measure_job_new + _run (every unit) + _finish; the MPI
 * command runs a share of the units per process and adds the others' results as
 * parts (measure_part.c) before _finish, so both give the same table.
 * es_measure_to_file runs the same units (es_measure_unit) but writes each as
 * soon as the units before it are written (measure_stream.c).
 *
 * Error policy (es_on_error): with FAIL, the first problem in input order is the
 * call's error; units after a failed one are not started. With SKIP, a bad
 * utterance is left out, a shard that cannot be read is left out whole (rows read
 * before the problem included: a plan must not name a shard known to be broken),
 * and each is listed as a skip. */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/path.h"
#include "formats/format.h"
#include "measure/measure_job.h"
#include "text/tok_identity.h"
#include "text/tokenizer.h"

/* Largest audio object the libsndfile probe may buffer (mp3/ogg members). */
#define PROBE_BUFFER (256u << 20)

int es_unit_fail(es_unit_result *res, int status, const char *msg)
{
    free(res->error);
    res->status = status;
    res->error = strdup(msg);
    return status;
}

int es_unit_check(es_context *ctx, const es_unit_result *res, size_t u)
{
    if (res->status != ES_OK)
        return es_fail(ctx, res->status, "%s", res->error ? res->error : "out of memory");
    if (!res->rows)
        return es_fail(ctx, ES_ERR_INTERNAL, "unit %zu was not measured", u);
    return ES_OK;
}

/* Records a problem for unit u: a skip in SKIP mode (of the utterance `row`
 * names, or of the whole shard when row is NULL), the unit's error in FAIL
 * mode. Returns nonzero when the unit must stop. */
static int problem(es_measure_job *j, size_t u, es_context *ctx, int status,
                   const es_cost_row *row)
{
    es_unit_result *res = &j->results[u];
    if (j->s.on_error == ES_ON_ERROR_SKIP) {
        const char *shard = row && row->shard ? row->shard : j->work.units[u].shard;
        const char *key = row ? (row->key ? row->key : "") : NULL;
        if (es_cost_table_add_skip(res->rows, es_errmsg(ctx), shard, key,
                                   row ? row->pos : ES_SKIP_SHARD) != ES_OK) {
            es_unit_fail(res, ES_ERR_NOMEM, "out of memory");
            return 1;
        }
        return 0;
    }
    es_unit_fail(res, status, es_errmsg(ctx));
    size_t cur = atomic_load(&j->first_failed);
    while (u < cur && !atomic_compare_exchange_weak(&j->first_failed, &cur, u))
        ;
    return 1;
}

static int append(es_measure_job *j, size_t u, const es_cost_row *row, es_context *ctx)
{
    /* Readers count tokens where there is a transcript (with a tokenizer). */
    es_cost_row r = *row;
    if (!j->opts.tok || !(r.flags & ES_FLAG_TEXT)) {
        r.text_tokens = 0;
        r.flags &= ~(uint32_t)ES_FLAG_NO_TOKENS;
    }
    row = &r;
    if (es_cost_table_append(j->results[u].rows, row) == ES_OK)
        return 0;
    es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", row->shard);
    es_unit_fail(&j->results[u], ES_ERR_NOMEM, es_errmsg(ctx));
    return 1;
}

/* A shard that fails as a whole in SKIP mode loses its rows, keeps its skips. */
static void drop_rows(es_cost_table *t)
{
    t->n = 0;
}

/* The shard file as it is before it is read, kept with its rows: reshard
 * refuses a source whose size or mtime moved since (its costs may be stale). */
static int record_stat(es_measure_job *j, size_t u, es_context *ctx)
{
    const es_unit *unit = &j->work.units[u];
    struct stat st;
    if (stat(unit->path, &st) != 0 || st.st_mtim.tv_sec < 0)
        return 0; /* opening it fails next, and says why */
    es_shard_stat s = {(uint64_t)st.st_size, st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec};
    if (es_cost_table_set_shard_stat(j->results[u].rows, unit->shard, &s) == ES_OK)
        return 0;
    es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", unit->path);
    es_unit_fail(&j->results[u], ES_ERR_NOMEM, es_errmsg(ctx));
    return 1;
}

static void measure_shard(es_measure_job *j, size_t u, const es_reader_opts *opts,
                          es_context *ctx)
{
    const es_unit *unit = &j->work.units[u];
    if (record_stat(j, u, ctx))
        return;
    uint8_t head[ES_SNIFF_BYTES];
    long n = es_sniff_file(ctx, unit->path, head);
    struct stat st;
    if (n < 0 && unit->shard[0] != '/' && stat(unit->path, &st) != 0 && errno == ENOENT) {
        /* a listed path not found: say where it was looked for */
        char msg[1100], hint[1100];
        snprintf(msg, sizeof msg, "%s", es_errmsg(ctx));
        es_fail(ctx, ES_ERR_IO, "%s (%s)", msg, es_root_hint(j->s.root, hint, sizeof hint));
    }
    const es_format_ops *ops = n < 0 ? NULL : es_format_for(head, (size_t)n);
    if (n >= 0 && !ops)
        es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: %s", unit->path,
                "not a shard equishard can read (tar, tar.gz, tar.zst, parquet)");
    es_shard_reader *reader = NULL;
    if (!ops || ops->open(ctx, unit->path, unit->shard, opts, &reader) != ES_OK) {
        problem(j, u, ctx, n < 0 ? ES_ERR_IO : ES_ERR_FORMAT, NULL);
        return;
    }
    es_cost_row row;
    int rc;
    for (;;) {
        memset(&row, 0, sizeof row); /* a bad utterance's key and pos, when the reader knows them */
        if ((rc = ops->next(ctx, reader, &row)) == ES_NEXT_END)
            break;
        if (rc == ES_NEXT_RECORD && append(j, u, &row, ctx))
            break;
        if (rc == ES_NEXT_BAD && problem(j, u, ctx, ES_ERR_FORMAT, &row))
            break;
        if (rc < 0) {
            drop_rows(j->results[u].rows);
            char msg[1100];
            snprintf(msg, sizeof msg, "%s (shard left out)", es_errmsg(ctx));
            if (j->s.on_error == ES_ON_ERROR_SKIP)
                es_fail(ctx, rc, "%s", msg);
            problem(j, u, ctx, rc, NULL);
            break;
        }
    }
    ops->close(reader);
}

static void measure_items(es_measure_job *j, size_t u, const es_reader_opts *opts,
                          es_context *ctx)
{
    const es_unit *unit = &j->work.units[u];
    for (size_t i = unit->begin; i < unit->end; i++) {
        es_cost_row row;
        int rc = es_manifest_measure(ctx, unit->m, i, j->s.root, opts, &row);
        if (rc == ES_NEXT_RECORD ? append(j, u, &row, ctx)
                                 : problem(j, u, ctx, ES_ERR_FORMAT, &row))
            return;
    }
}

void es_measure_unit(es_measure_job *j, size_t u, tok_state *st)
{
    es_unit_result *res = &j->results[u];
    if (u > atomic_load(&j->first_failed))
        return; /* FAIL mode: an earlier unit failed; its error is the answer */
    es_context ctx = {0};
    es_cost_table_free(res->rows);
    res->rows = es_cost_table_new();
    if (!res->rows) {
        es_unit_fail(res, ES_ERR_NOMEM, "out of memory");
        return;
    }
    es_cost_table_huge_pages(res->rows, j->huge_pages);
    es_reader_opts opts = j->opts;
    opts.tok_state = st;
    if (j->work.units[u].m)
        measure_items(j, u, &opts, &ctx);
    else
        measure_shard(j, u, &opts, &ctx);
}

void es_measure_progress(es_measure_job *j, size_t total)
{
    size_t done = atomic_fetch_add(&j->done, 1) + 1;
    if (j->s.progress && omp_get_thread_num() == 0)
        j->s.progress(j->s.progress_user, done, total);
}

ES_API void es_measure_defaults(es_measure_settings *s)
{
    memset(s, 0, sizeof *s);
    s->on_error = ES_ON_ERROR_FAIL;
}

ES_API int es_measure_job_new(es_context *ctx, const es_measure_settings *s,
                              const char *const *inputs, size_t n_inputs, es_measure_job **out)
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
    es_measure_job *j = calloc(1, sizeof *j);
    if (!j)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    j->s = *s;
    j->opts = (es_reader_opts){s->hash, PROBE_BUFFER, s->tokenizer ? &s->tokenizer->m : NULL,
                               NULL, 0};
    j->huge_pages = es_ctx_huge_pages(ctx);
    atomic_init(&j->first_failed, SIZE_MAX);
    atomic_init(&j->done, 0);
    int rc = es_work_expand(ctx, &j->work, inputs, n_inputs, s->root);
    if (rc == ES_OK && !(j->results = calloc(j->work.n + 1, sizeof *j->results)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    if (rc != ES_OK) {
        es_measure_job_free(j);
        return rc;
    }
    *out = j;
    return ES_OK;
}

ES_API void es_measure_job_free(es_measure_job *j)
{
    if (!j)
        return;
    for (size_t u = 0; j->results && u < j->work.n; u++) {
        es_cost_table_free(j->results[u].rows);
        free(j->results[u].error);
    }
    free(j->results);
    free(j->part);
    es_work_release(&j->work);
    free(j);
}

ES_API size_t es_measure_job_units(const es_measure_job *j) { return j ? j->work.n : 0; }

ES_API int es_measure_job_run(es_context *ctx, es_measure_job *j, const uint32_t *owner,
                              uint32_t part)
{
    es_clear_error(ctx);
    if (!j)
        return es_fail(ctx, ES_ERR_USAGE, "es_measure_job_run: job is NULL");
    size_t *mine = malloc((j->work.n + 1) * sizeof *mine), n = 0;
    if (!mine)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (size_t u = 0; u < j->work.n; u++)
        if (!owner || owner[u] == part)
            mine[n++] = u;
    atomic_store(&j->done, 0);
    int threads = j->s.threads > 0 ? j->s.threads : omp_get_max_threads();
    long n_mine = (long)n;
    /* one tokenizer state (cache, scratch) per thread */
    tok_state *states = calloc((size_t)threads, sizeof *states);
    if (!states) {
        free(mine);
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long i = 0; i < n_mine; i++) {
        es_measure_unit(j, mine[i], &states[omp_get_thread_num()]);
        es_measure_progress(j, n);
    }
    for (int t = 0; t < threads; t++)
        tok_state_release(&states[t]);
    free(states);
    free(mine);
    return ES_OK;
}

ES_API int es_measure_job_finish(es_context *ctx, es_measure_job *j, es_cost_table **out)
{
    es_clear_error(ctx);
    if (!j || !out)
        return es_fail(ctx, ES_ERR_USAGE, "es_measure_job_finish: job and out are required");
    *out = NULL;
    es_cost_table *table = es_cost_table_new();
    if (!table)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    es_cost_table_huge_pages(table, es_ctx_huge_pages(ctx));
    /* In unit order: the first failure in input order is the answer (FAIL mode). */
    int rc = ES_OK;
    for (size_t u = 0; u < j->work.n && rc == ES_OK; u++) {
        es_unit_result *res = &j->results[u];
        if ((rc = es_unit_check(ctx, res, u)) == ES_OK &&
            es_cost_table_move_into(table, res->rows) != ES_OK)
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    /* the tokenizer's identity, for the table's "# tokenizer:" line and plan.json */
    if (rc == ES_OK && j->opts.tok && !(table->tokenizer = es_tok_identity_text(j->opts.tok)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    if (rc != ES_OK) {
        es_cost_table_free(table);
        return rc;
    }
    *out = table;
    return ES_OK;
}

ES_API int es_measure(es_context *ctx, const es_measure_settings *s,
                      const char *const *inputs, size_t n_inputs, es_cost_table **out)
{
    es_clear_error(ctx);
    if (!out)
        return es_fail(ctx, ES_ERR_USAGE, "es_measure: out is NULL");
    *out = NULL;
    es_measure_job *j = NULL;
    int rc = es_measure_job_new(ctx, s, inputs, n_inputs, &j);
    if (rc == ES_OK)
        rc = es_measure_job_run(ctx, j, NULL, 0);
    if (rc == ES_OK)
        rc = es_measure_job_finish(ctx, j, out);
    es_measure_job_free(j);
    return rc;
}
