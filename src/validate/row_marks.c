/* es_row_marks: the embedding flags and speech-token counts measure sets on
 * its rows, with the sources loaded once and applied to a table or to the
 * pieces of one (es_measure_to_file's units), so that the result is the same
 * whether the rows come whole or in pieces: every row is set from its own key
 * and speaker only. es_cost_table_mark_embeddings and
 * es_cost_table_set_speech_tokens are one load + one apply. */
#include <stdlib.h>
#include <string.h>

#include "costs/cost_table.h"
#include "validate/sources/emb_set.h"

struct es_row_marks {
    const es_emb_sources *src; /* borrowed; NULL without embedding sources */
    es_emb_set *utt, *spk;     /* embedding keys */
    es_utt2spk u2s;            /* speakers, when src->utt2spk */
    es_emb_set *tokens;        /* utt2speech_token.pt, lengths only */
    unsigned char *used;       /* per tokens entry: some row had its key */
    es_speech_token_stats st;  /* rows_set, rows_without so far */
};

static int load_emb(es_context *ctx, es_row_marks *m, const es_emb_sources *src)
{
    int rc = ES_OK;
    if (src->utt_emb)
        rc = es_emb_set_load_at(ctx, src->utt_emb, src->utt_keys, src->root, 0, &m->utt);
    if (rc == ES_OK && src->spk_emb)
        rc = es_emb_set_load_at(ctx, src->spk_emb, src->spk_keys, src->root, 1, &m->spk);
    if (rc == ES_OK && src->utt2spk)
        rc = es_utt2spk_read(ctx, src->utt2spk, &m->u2s);
    return rc;
}

static int load_tokens(es_context *ctx, es_row_marks *m, const char *src)
{
    if (!(m->tokens = es_emb_set_new(src)))
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", src);
    m->tokens->lengths_only = 1;
    int rc = es_torch_load(ctx, src, m->tokens);
    if (rc == ES_OK && m->tokens->has_floats)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: holds floats, not speech token lists (an "
                     "embedding file?)", src);
    if (rc == ES_OK && !(m->used = calloc(m->tokens->n + 1, 1)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", src);
    return rc;
}

ES_API int es_row_marks_new(es_context *ctx, const es_emb_sources *emb, const char *speech_tokens,
                            es_row_marks **out)
{
    es_clear_error(ctx);
    if (!out)
        return es_fail(ctx, ES_ERR_USAGE, "es_row_marks_new: out is NULL");
    es_row_marks *m = calloc(1, sizeof *m);
    if (!m)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    m->src = emb;
    int rc = emb ? load_emb(ctx, m, emb) : ES_OK;
    if (rc == ES_OK && speech_tokens)
        rc = load_tokens(ctx, m, speech_tokens);
    if (rc != ES_OK) {
        es_row_marks_free(m);
        m = NULL;
    }
    *out = m;
    return rc;
}

static void mark_row(es_row_marks *m, es_cost_row *row)
{
    if (m->utt) {
        row->flags &= ~(uint32_t)ES_FLAG_UTT_EMB;
        if (es_emb_set_find(m->utt, row->key) >= 0)
            row->flags |= ES_FLAG_UTT_EMB;
    }
    if (m->spk) {
        const char *spk = m->src->utt2spk ? es_utt2spk_get(&m->u2s, row->key) : row->spk;
        row->flags &= ~(uint32_t)ES_FLAG_SPK_EMB;
        if (spk && spk[0] && es_emb_set_find(m->spk, spk) >= 0)
            row->flags |= ES_FLAG_SPK_EMB;
    }
    if (m->tokens) {
        ptrdiff_t e = es_emb_set_find(m->tokens, row->key);
        row->speech_tokens = e >= 0 ? m->tokens->len[e] : 0;
        if (e >= 0)
            m->used[e] = 1;
        m->st.rows_set += e >= 0;
        m->st.rows_without += e < 0;
    }
}

ES_API int es_row_marks_apply(es_context *ctx, es_row_marks *m, es_cost_table *t)
{
    if (!m || !t)
        return es_fail(ctx, ES_ERR_USAGE, "es_row_marks_apply: no marks or table");
    for (size_t i = 0; i < t->n; i++)
        mark_row(m, &t->rows[i]);
    return ES_OK;
}

ES_API void es_row_marks_stats(const es_row_marks *m, es_speech_token_stats *st)
{
    *st = m ? m->st : (es_speech_token_stats){0, 0, 0};
    st->unknown_keys = 0;
    for (size_t e = 0; m && m->tokens && e < m->tokens->n; e++)
        st->unknown_keys += !m->used[e];
}

ES_API void es_row_marks_free(es_row_marks *m)
{
    if (!m)
        return;
    es_emb_set_free(m->utt);
    es_emb_set_free(m->spk);
    es_utt2spk_release(&m->u2s);
    es_emb_set_free(m->tokens);
    free(m->used);
    free(m);
}

int es_cost_table_mark_embeddings(es_context *ctx, es_cost_table *t, const es_emb_sources *src)
{
    es_clear_error(ctx);
    if (!t || !src)
        return es_fail(ctx, ES_ERR_USAGE, "mark embeddings: no table or sources");
    es_row_marks *m = NULL;
    int rc = es_row_marks_new(ctx, src, NULL, &m);
    if (rc == ES_OK)
        rc = es_row_marks_apply(ctx, m, t);
    es_row_marks_free(m);
    return rc;
}

int es_cost_table_set_speech_tokens(es_context *ctx, es_cost_table *t, const char *src,
                                    es_speech_token_stats *stats)
{
    es_clear_error(ctx);
    if (stats)
        *stats = (es_speech_token_stats){0, 0, 0};
    if (!t || !src)
        return es_fail(ctx, ES_ERR_USAGE, "speech tokens: no table or source");
    es_row_marks *m = NULL;
    int rc = es_row_marks_new(ctx, NULL, src, &m);
    if (rc == ES_OK)
        rc = es_row_marks_apply(ctx, m, t);
    if (rc == ES_OK && stats)
        es_row_marks_stats(m, stats);
    es_row_marks_free(m);
    return rc;
}
