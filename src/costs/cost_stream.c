/* es_cost_stream (cost_stream.h): the header once both data-dependent columns
 * are decided, the spool until then, the rows straight to the output after. */
#include "costs/cost_stream.h"
#include "costs/cost_spool.h"

#include <stdlib.h>
#include <string.h>

struct es_cost_stream {
    es_table_writer out;
    unsigned undecided; /* ES_STREAM_MAY_* whose column has not appeared yet */
    int stats, tokens;  /* the columns that have appeared */
    int header_done;
    char *tokenizer;
    es_cost_spool spool;
    size_t rows;        /* written to out */
};

int es_cost_stream_open(es_context *ctx, const char *path, unsigned may, const char *tokenizer,
                        es_cost_stream **out)
{
    *out = NULL;
    es_cost_stream *s = calloc(1, sizeof *s);
    if (!s || (tokenizer && !(s->tokenizer = strdup(tokenizer)))) {
        free(s);
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    }
    s->undecided = may & (ES_STREAM_MAY_STATS | ES_STREAM_MAY_TOKENS);
    s->out = (es_table_writer){.ctx = ctx, .path = path};
    int rc = es_atomic_open(ctx, &s->out.file, path);
    if (rc != ES_OK) {
        free(s->tokenizer);
        free(s);
        return rc;
    }
    if ((rc = es_tw_init(&s->out, es_tw_zstd_name(path))) != ES_OK) {
        es_cost_stream_abort(s);
        return rc;
    }
    *out = s;
    return ES_OK;
}

/* What t tells about the undecided columns (cost_table_write.c's rules). */
static void decide(es_cost_stream *s, const es_cost_table *t)
{
    if ((s->undecided & ES_STREAM_MAY_STATS) && t->shard_stats.n) {
        s->stats = 1;
        s->undecided &= ~(unsigned)ES_STREAM_MAY_STATS;
    }
    for (size_t i = 0; (s->undecided & ES_STREAM_MAY_TOKENS) && i < t->n; i++)
        if (t->rows[i].text_tokens > 0) {
            s->tokens = 1;
            s->undecided &= ~(unsigned)ES_STREAM_MAY_TOKENS;
        }
}

/* The header as decided so far (what has not appeared never will), then the
 * rows spooled while it was not known. */
static int start(es_cost_stream *s)
{
    s->header_done = 1;
    int rc = es_tw_header(&s->out, s->stats, s->tokens, s->tokenizer);
    s->rows = s->spool.rows;
    return rc == ES_OK ? es_cost_spool_drain(&s->spool, &s->out, s->stats, s->tokens) : rc;
}

int es_cost_stream_put(es_cost_stream *s, const es_cost_table *t)
{
    decide(s, t);
    int rc = ES_OK;
    if (!s->header_done && !s->undecided)
        rc = start(s);
    if (rc != ES_OK || !s->header_done)
        return rc == ES_OK ? es_cost_spool_put(s->out.ctx, &s->spool, t) : rc;
    /* as es_cost_table_write: a large zstd table is compressed in a second thread */
    if (s->rows + t->n > ES_TW_PIPE_ROWS)
        es_tw_pipe(&s->out);
    s->out.stat_shard = NULL; /* t's strings are not the last table's */
    for (size_t i = 0; i < t->n && rc == ES_OK; i++)
        rc = es_tw_row(&s->out, &t->rows[i], t, s->stats, s->tokens);
    s->rows += t->n;
    return rc;
}

static void release(es_cost_stream *s)
{
    es_cost_spool_release(&s->spool);
    es_tw_release(&s->out);
    free(s->tokenizer);
    free(s);
}

int es_cost_stream_commit(es_cost_stream *s)
{
    int rc = s->header_done ? ES_OK : start(s);
    rc = es_tw_end(&s->out, rc);
    es_context *ctx = s->out.ctx;
    es_atomic_file file = s->out.file;
    release(s);
    if (rc != ES_OK) {
        es_atomic_abort(&file);
        return rc;
    }
    return es_atomic_commit(ctx, &file);
}

void es_cost_stream_abort(es_cost_stream *s)
{
    if (!s)
        return;
    es_tw_end(&s->out, ES_ERR_IO); /* stops the compressing thread, ends no frame */
    es_atomic_file file = s->out.file;
    release(s);
    es_atomic_abort(&file);
}
