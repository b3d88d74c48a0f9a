#include "formats/parquet/codec/parquet_embeddings.h"

#include <stdlib.h>
#include <string.h>
#include "core/grow.h"

#include "formats/parquet/codec/pq_file.h"
#include "formats/parquet/codec/pq_rows.h"

/* While reading, rows hold offsets (strings and values move as they grow);
 * pointers are set once everything is read. */
typedef struct building {
    es_embedding_rows *out;
    size_t cap, key_cap, spk_cap, vec_cap, str_len, str_cap, val_len, val_cap;
    size_t *key_off, *spk_off, *vec_off;
} building;

static int add_string(building *b, const char *s, size_t *off)
{
    size_t n = strlen(s) + 1;
    if (es_grow((void **)&b->out->strings, &b->str_cap, b->str_len + n, 1, 256))
        return -1;
    memcpy(b->out->strings + b->str_len, s, n);
    *off = b->str_len;
    b->str_len += n;
    return 0;
}

static int add_rows(building *b, const pq_rows *utt, const pq_rows *spk, const pq_rows *emb)
{
    es_embedding_rows *o = b->out;
    size_t need = o->n + utt->n;
    if (es_grow((void **)&o->rows, &b->cap, need, sizeof *o->rows, 256) ||
        es_grow((void **)&b->key_off, &b->key_cap, need, sizeof *b->key_off, 256) ||
        es_grow((void **)&b->spk_off, &b->spk_cap, need, sizeof *b->spk_off, 256) ||
        es_grow((void **)&b->vec_off, &b->vec_cap, need, sizeof *b->vec_off, 256))
        return -1;
    for (size_t i = 0; i < utt->n; i++) {
        es_embedding_row *row = &o->rows[o->n + i];
        memset(row, 0, sizeof *row);
        if (add_string(b, utt->present[i] ? utt->bytes + utt->off[i] : "", &b->key_off[o->n + i]) ||
            add_string(b, spk && spk->present[i] ? spk->bytes + spk->off[i] : "", &b->spk_off[o->n + i]))
            return -1;
        b->vec_off[o->n + i] = b->val_len;
        if (!emb || !emb->present[i] || emb->count[i] == 0)
            continue;
        uint32_t dim = emb->count[i];
        if (es_grow((void **)&o->values, &b->val_cap, b->val_len + dim, sizeof *o->values, 256))
            return -1;
        memcpy(o->values + b->val_len, emb->floats + emb->off[i], dim * sizeof *o->values);
        b->val_len += dim;
        row->present = 1;
        row->dim = dim;
    }
    o->n += utt->n;
    return 0;
}

static void set_pointers(building *b)
{
    es_embedding_rows *o = b->out;
    for (size_t i = 0; i < o->n; i++) {
        o->rows[i].key = o->strings + b->key_off[i];
        o->rows[i].spk = o->strings + b->spk_off[i];
        o->rows[i].vec = o->rows[i].dim ? o->values + b->vec_off[i] : NULL;
    }
}

static int read_all(es_context *ctx, es_pq_file *f, const char *column, building *b)
{
    const pq_leaf *utt = es_pq_file_column(f, "utt");
    const pq_leaf *spk = es_pq_file_column(f, "spk");
    const pq_leaf *emb = es_pq_file_column(f, column);
    if (!utt)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: no utt column: not a CosyVoice shard", f->path);
    b->out->column_found = emb != NULL;
    int rc = pq_rows_check(ctx, f, utt, PQ_ROWS_STRINGS);
    if (rc == ES_OK && spk)
        rc = pq_rows_check(ctx, f, spk, PQ_ROWS_STRINGS);
    if (rc == ES_OK && emb)
        rc = pq_rows_check(ctx, f, emb, PQ_ROWS_FLOATS);
    pq_rows ru = {0}, rs = {0}, re = {0};
    pq_column cur = {0};
    for (uint32_t g = 0; rc == ES_OK && g < f->meta.n_row_groups; g++) {
        rc = pq_rows_read(ctx, f, g, utt, PQ_ROWS_STRINGS, &ru, &cur);
        if (rc == ES_OK && spk)
            rc = pq_rows_read(ctx, f, g, spk, PQ_ROWS_STRINGS, &rs, &cur);
        if (rc == ES_OK && emb)
            rc = pq_rows_read(ctx, f, g, emb, PQ_ROWS_FLOATS, &re, &cur);
        if (rc == ES_OK && add_rows(b, &ru, spk ? &rs : NULL, emb ? &re : NULL) < 0)
            rc = es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", f->path);
    }
    pq_rows_release(&ru);
    pq_rows_release(&rs);
    pq_rows_release(&re);
    pq_column_release(&cur);
    return rc;
}

int es_parquet_read_embeddings(es_context *ctx, const char *path, const char *column,
                               es_embedding_rows *out)
{
    memset(out, 0, sizeof *out);
    es_pq_file *f;
    int rc = es_pq_file_open(ctx, path, &f);
    if (rc != ES_OK)
        return rc;
    building b = {.out = out};
    rc = read_all(ctx, f, column, &b);
    if (rc == ES_OK)
        set_pointers(&b);
    free(b.key_off);
    free(b.spk_off);
    free(b.vec_off);
    es_pq_file_close(f);
    if (rc != ES_OK)
        es_embedding_rows_release(out);
    return rc;
}

void es_embedding_rows_release(es_embedding_rows *e)
{
    free(e->rows);
    free(e->strings);
    free(e->values);
    memset(e, 0, sizeof *e);
}
