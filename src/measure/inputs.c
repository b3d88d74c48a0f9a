/* es_load_inputs: the "COSTS | LIST…" argument of plan, simulate and validate.
 * Each input that is a cost table is read; the others are measured together
 * (one es_measure call, so they share its threads); the parts are joined in
 * argument order, as concatenating their tables would. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "costs/cost_table.h"

/* `name`: the input the part came from (for the message). Parts counted with
 * different tokenizers are refused: their text_tokens would not compare. */
static int append_table(es_context *ctx, es_cost_table *all, es_cost_table *part, const char *name)
{
    if (all->tokenizer && part->tokenizer && strcmp(all->tokenizer, part->tokenizer) != 0) {
        es_cost_table_free(part);
        return es_fail(ctx, ES_ERR_USAGE, "%s: text_tokens counted with another tokenizer than "
                       "the inputs before it (# tokenizer: %s); measure all with one", name,
                       all->tokenizer);
    }
    int rc = es_cost_table_move_into(all, part);
    es_cost_table_free(part);
    return rc == ES_OK ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
}

/* Measures the run of non-table inputs [begin, end) and appends the result. */
static int measure_run(es_context *ctx, const es_measure_settings *s, const char *const *inputs,
                       size_t begin, size_t end, es_cost_table *all)
{
    if (begin == end)
        return ES_OK;
    es_cost_table *part = NULL;
    int rc = es_measure(ctx, s, inputs + begin, end - begin, &part);
    return rc == ES_OK ? append_table(ctx, all, part, inputs[begin]) : rc;
}

/* s->read_progress over the tables' bytes: those of the tables before this one,
 * of all, and of this one (a file that grew while read is held at its size). */
typedef struct read_watch {
    const es_measure_settings *s;
    uint64_t before, total, size;
} read_watch;

static void table_read(void *user, uint64_t bytes)
{
    read_watch *w = user;
    uint64_t in = bytes < w->size ? bytes : w->size;
    w->s->read_progress(w->s->read_progress_user, (size_t)(w->before + in), (size_t)w->total);
}

static uint64_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

ES_API int es_load_inputs(es_context *ctx, const es_measure_settings *s,
                          const char *const *inputs, size_t n, es_cost_table **out)
{
    es_clear_error(ctx);
    if (!out || !s || (!inputs && n))
        return es_fail(ctx, ES_ERR_USAGE, "es_load_inputs: invalid arguments");
    *out = NULL;
    if (n == 0)
        return es_fail(ctx, ES_ERR_USAGE, "no inputs: give a cost table or shard lists");
    es_cost_table *all = es_cost_table_new();
    if (!all)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    es_cost_table_huge_pages(all, es_ctx_huge_pages(ctx));
    int rc = ES_OK;
    size_t run = 0;
    read_watch w = {s, 0, 0, 0};
    for (size_t i = 0; s->read_progress && i < n; i++)
        w.total += es_is_cost_table(inputs[i]) ? size_of(inputs[i]) : 0;
    for (size_t i = 0; i < n && rc == ES_OK; i++) {
        if (!es_is_cost_table(inputs[i]))
            continue;
        rc = measure_run(ctx, s, inputs, run, i, all);
        es_cost_table *part = NULL;
        w.size = s->read_progress ? size_of(inputs[i]) : 0;
        if (rc == ES_OK)
            rc = es_cost_table_read_watched(ctx, inputs[i], s->read_progress ? table_read : NULL,
                                            &w, &part);
        if (rc == ES_OK)
            rc = append_table(ctx, all, part, inputs[i]);
        w.before += w.size;
        if (rc == ES_OK && s->read_progress)
            s->read_progress(s->read_progress_user, (size_t)w.before, (size_t)w.total);
        run = i + 1;
    }
    if (rc == ES_OK)
        rc = measure_run(ctx, s, inputs, run, n, all);
    if (rc != ES_OK) {
        es_cost_table_free(all);
        return rc;
    }
    *out = all;
    return ES_OK;
}
