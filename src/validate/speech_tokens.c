/* es_cost_table_set_speech_tokens: the `speech_tokens` column from CosyVoice's
 * utt2speech_token.pt (a torch zip, or a plain pickle, of a dict str → list of
 * int), read with the validator's strict unpickler (sources/). */
#include <stdlib.h>

#include "costs/cost_table.h"
#include "validate/sources/emb_set.h"

int es_cost_table_set_speech_tokens(es_context *ctx, es_cost_table *t, const char *src,
                                    es_speech_token_stats *stats)
{
    es_clear_error(ctx);
    es_speech_token_stats st = {0, 0, 0};
    if (stats)
        *stats = st;
    if (!t || !src)
        return es_fail(ctx, ES_ERR_USAGE, "speech tokens: no table or source");
    es_emb_set *set = es_emb_set_new(src);
    if (!set)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", src);
    set->lengths_only = 1;
    int rc = es_torch_load(ctx, src, set);
    if (rc == ES_OK && set->has_floats)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: holds floats, not speech token lists (an "
                     "embedding file?)", src);
    /* which source keys the table names: per source entry */
    unsigned char *used = rc == ES_OK ? calloc(set->n + 1, 1) : NULL;
    if (rc == ES_OK && !used)
        rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", src);
    for (size_t i = 0; rc == ES_OK && i < t->n; i++) {
        es_cost_row *row = &t->rows[i];
        ptrdiff_t e = es_emb_set_find(set, row->key);
        row->speech_tokens = e >= 0 ? set->len[e] : 0;
        if (e >= 0)
            used[e] = 1;
        st.rows_set += e >= 0;
        st.rows_without += e < 0;
    }
    for (size_t e = 0; rc == ES_OK && e < set->n; e++)
        st.unknown_keys += !used[e];
    if (rc == ES_OK && stats)
        *stats = st;
    free(used);
    es_emb_set_free(set);
    return rc;
}
