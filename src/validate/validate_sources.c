/* es_validate: embeddings from their sources (sources/), checked against the
 * utterances that should have them (a cost table or utt2spk), with speakers
 * from utt2spk, the table or the parquet `spk` column. Builds the matrices
 * es_vrun validates and adds what only the sources know: missing embeddings,
 * entries of the wrong dimension, duplicate audio. (Measure's embedding flags
 * are set in row_marks.c.) */
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "core/grow.h"
#include "core/prefault.h"
#include "costs/cost_table.h"
#include "validate/sources/emb_set.h"
#include "validate/validate_result.h"

typedef struct vs {
    es_context *ctx;
    const es_validate_settings *s;
    const es_emb_sources *src;
    const es_cost_table *table;
    es_emb_set *utt, *spk;
    es_utt2spk u2s;
    es_strmap table_spk;   /* table key → speaker, when no utt2spk */
    const char **utts;     /* the utterances that should have embeddings, in order */
    size_t n_utts;
    const char **spk_of_entry; /* utt set entry → its speaker, as missing() found it
                                  (NULL: not looked up), for speaker_ids() */
    es_strmap speaker_id;  /* speaker → id + 1 */
    const char **speakers; /* by id */
    size_t n_speakers, cap_speakers;
    size_t dim;
    es_validate_result *r;
    uint64_t read_before, read_total; /* s->progress: bytes of the files before this one, of all */
    uint64_t file_size;               /* the source file being read */
} vs;

static int nomem(vs *v) { return es_fail(v->ctx, ES_ERR_NOMEM, "validate: out of memory"); }

/* The speaker of an utterance ("" when unknown); entry is its utt-set entry or -1. */
static const char *speaker_of(const vs *v, const char *utt, ptrdiff_t entry)
{
    const char *s = NULL;
    if (v->src->utt2spk)
        s = es_utt2spk_get(&v->u2s, utt);
    else if (v->table) {
        const es_strmap_slot *slot = es_strmap_get(&v->table_spk, utt, strlen(utt));
        s = slot ? slot->value : NULL;
    } else if (entry >= 0 && v->utt && v->utt->spk)
        s = v->utt->spk[entry];
    return s ? s : "";
}

/* Id of a speaker, numbering new ones in order of appearance; -1 for "". */
static int speaker_id(vs *v, const char *spk, int32_t *id)
{
    *id = -1;
    size_t n = strlen(spk);
    if (!n)
        return ES_OK;
    const es_strmap_slot *slot = es_strmap_get(&v->speaker_id, spk, n);
    if (slot) {
        *id = (int32_t)((uintptr_t)slot->value - 1);
        return ES_OK;
    }
    if (v->n_speakers == v->cap_speakers) {
        void *p = v->speakers;
        if (es_grow(&p, &v->cap_speakers, v->cap_speakers + 1, sizeof *v->speakers, 64))
            return nomem(v);
        v->speakers = p;
    }
    if (es_strmap_put(&v->speaker_id, spk, n, (const void *)(uintptr_t)(v->n_speakers + 1)))
        return nomem(v);
    v->speakers[v->n_speakers] = es_strmap_get(&v->speaker_id, spk, n)->key;
    *id = (int32_t)v->n_speakers++;
    return ES_OK;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

/* The set's progress hook: bytes of the file being read, as s->progress's
 * done of all the files (a zip member's bytes may pass the file's: held). */
static void source_read(void *user, uint64_t bytes)
{
    vs *v = user;
    uint64_t in = bytes < v->file_size ? bytes : v->file_size;
    v->s->progress(v->s->progress_user, (size_t)(v->read_before + in), (size_t)v->read_total);
}

/* One source file (and its key list) read: done passes both. */
static void source_done(vs *v, uint64_t bytes)
{
    v->read_before += bytes;
    if (v->s->progress)
        v->s->progress(v->s->progress_user, (size_t)v->read_before, (size_t)v->read_total);
}

static int load_set(vs *v, const char *path, const char *keys, int speakers, es_emb_set **out)
{
    v->file_size = file_size(path);
    int rc = es_emb_set_load_watched(v->ctx, path, keys, v->src->root, speakers,
                                     v->s->progress ? source_read : NULL, v, out);
    if (rc == ES_OK)
        source_done(v, v->file_size + file_size(keys));
    return rc;
}

static int load(vs *v)
{
    const es_emb_sources *src = v->src;
    int rc = ES_OK;
    const char *files[] = {src->utt_emb, src->utt_emb ? src->utt_keys : NULL, src->spk_emb,
                           src->spk_emb ? src->spk_keys : NULL, src->utt2spk};
    for (size_t i = 0; v->s->progress && i < sizeof files / sizeof files[0]; i++)
        v->read_total += file_size(files[i]);
    if (src->utt_emb)
        rc = load_set(v, src->utt_emb, src->utt_keys, 0, &v->utt);
    if (rc == ES_OK && src->spk_emb)
        rc = load_set(v, src->spk_emb, src->spk_keys, 1, &v->spk);
    if (rc == ES_OK && src->utt2spk) {
        rc = es_utt2spk_read(v->ctx, src->utt2spk, &v->u2s);
        if (rc == ES_OK)
            source_done(v, file_size(src->utt2spk));
    }
    if (rc == ES_OK && !src->utt_emb && !src->spk_emb && !v->table)
        rc = es_fail(v->ctx, ES_ERR_USAGE, "validate: nothing to validate: no embedding source "
                     "and no utterance list");
    for (size_t i = 0; rc == ES_OK && v->table && !src->utt2spk && i < v->table->n; i++) {
        const es_cost_row *row = &v->table->rows[i];
        if (row->spk[0] && es_strmap_put(&v->table_spk, row->key, strlen(row->key), row->spk))
            rc = nomem(v);
    }
    return rc;
}

/* The utterances that should have embeddings: the table's keys, else
 * utt2spk's, else (a parquet source) the rows of the utt source, with and
 * without a vector. None otherwise. */
static int universe(vs *v)
{
    int parquet = v->utt && (v->utt->spk || v->utt->n_absent);
    size_t n = v->table ? v->table->n : v->src->utt2spk ? v->u2s.n
             : parquet ? v->utt->n + v->utt->n_absent : 0;
    v->utts = malloc((n ? n : 1) * sizeof *v->utts);
    if (!v->utts)
        return nomem(v);
    /* utt2spk names each utterance once (es_utt2spk_read refuses a second line) */
    if (!v->table && v->src->utt2spk) {
        if (n) /* (an empty utt2spk has no array) */
            memcpy(v->utts, v->u2s.utts, n * sizeof *v->utts);
        v->n_utts = n;
        return ES_OK;
    }
    es_strmap seen = {0};
    for (size_t i = 0; i < n; i++) {
        const char *k = v->table ? v->table->rows[i].key
                      : i < v->utt->n ? v->utt->keys[i] : v->utt->absent[i - v->utt->n];
        int existed;
        es_strmap_slot *slot = es_strmap_insert(&seen, k, strlen(k), &existed);
        if (!slot) {
            es_strmap_release(&seen);
            return nomem(v);
        }
        if (!existed) /* a list may name an utterance twice */
            v->utts[v->n_utts++] = k;
    }
    es_strmap_release(&seen);
    return ES_OK;
}

static void missing(vs *v)
{
    /* Speakers that should have an embedding: those of the utterances. */
    es_strmap spk_seen = {0};
    size_t n_spk = 0;
    if (v->utt && v->utt->n)
        v->spk_of_entry = calloc(v->utt->n, sizeof *v->spk_of_entry); /* (NULL: looked up again) */
    for (size_t i = 0; i < v->n_utts; i++) {
        const char *u = v->utts[i];
        ptrdiff_t e = v->utt ? es_emb_set_find(v->utt, u) : -1;
        if (v->utt && e < 0)
            es_vresult_add(v->r, ES_CHECK_MISSING_UTT_EMB, 0, u, ES_NO_ROW, 0, NULL, ES_NO_ROW, i);
        const char *s = speaker_of(v, u, e);
        if (e >= 0 && v->spk_of_entry)
            v->spk_of_entry[e] = s;
        size_t sn = strlen(s);
        if (!sn || es_strmap_get(&spk_seen, s, sn))
            continue;
        if (es_strmap_put(&spk_seen, s, sn, "")) {
            v->r->oom = 1;
            break;
        }
        if (v->spk && es_emb_set_find(v->spk, s) < 0)
            es_vresult_add(v->r, ES_CHECK_MISSING_SPK_EMB, 1, s, ES_NO_ROW, 0, NULL, ES_NO_ROW, n_spk);
        n_spk++;
    }
    /* Without a list of utterances, a parquet source's null rows are the news. */
    for (size_t i = 0; !v->n_utts && v->spk && i < v->spk->n_absent; i++)
        es_vresult_add(v->r, ES_CHECK_MISSING_SPK_EMB, 1, v->spk->absent[i], ES_NO_ROW, 0, NULL,
                       ES_NO_ROW, i);
    v->r->info.utterances = v->n_utts;
    v->r->info.speakers = n_spk;
    es_strmap_release(&spk_seen);
}

/* The entries of a set with the expected dimension, as a matrix (the set's own
 * values when they are already contiguous); others get wrong_dim. */
typedef struct mat {
    es_emb_matrix m;
    const char **keys;
    size_t *src_row;
    float *owned;
} mat;

static int build_matrix(vs *v, const es_emb_set *set, int is_speaker, mat *out)
{
    size_t d = v->dim, k = 0, contiguous = 1;
    out->keys = malloc((set->n ? set->n : 1) * sizeof *out->keys);
    out->src_row = malloc((set->n ? set->n : 1) * sizeof *out->src_row);
    if (!out->keys || !out->src_row)
        return nomem(v);
    for (size_t i = 0; i < set->n; i++) {
        if (set->len[i] != d) {
            es_vresult_add(v->r, ES_CHECK_WRONG_DIM, is_speaker, set->keys[i], i, set->len[i], NULL,
                           ES_NO_ROW, i);
            continue;
        }
        contiguous &= set->off[i] == k * d;
        out->keys[k] = set->keys[i];
        out->src_row[k++] = i;
    }
    const float *data = set->vals;
    if (!contiguous) {
        size_t nd = k * d;
        out->owned = malloc((nd ? nd : 1) * sizeof *out->owned);
        if (!out->owned)
            return nomem(v);
        es_prefault_write(out->owned, nd * sizeof *out->owned, /* (core/prefault.h) */
                          es_ctx_huge_pages(v->ctx));
        for (size_t j = 0; j < k; j++)
            memcpy(out->owned + j * d, set->vals + set->off[out->src_row[j]], d * sizeof *out->owned);
        data = out->owned;
    }
    out->m = (es_emb_matrix){data, ES_DTYPE_F32, k, d, out->keys};
    return ES_OK;
}

static void mat_free(mat *m)
{
    free(m->keys);
    free(m->src_row);
    free(m->owned);
}

/* Speaker ids: the speaker matrix's rows first (id = row), then the rest. */
static int speaker_ids(vs *v, const mat *um, const mat *sm, int32_t **ids)
{
    int32_t id;
    for (size_t i = 0; sm && i < sm->m.n; i++)
        if (speaker_id(v, sm->keys[i], &id) != ES_OK)
            return ES_ERR_NOMEM;
    *ids = malloc((um->m.n ? um->m.n : 1) * sizeof **ids);
    if (!*ids)
        return nomem(v);
    for (size_t i = 0; i < um->m.n; i++) {
        size_t e = um->src_row[i];
        const char *s = v->spk_of_entry && v->spk_of_entry[e] ? v->spk_of_entry[e]
                                                              : speaker_of(v, um->keys[i], (ptrdiff_t)e);
        if (speaker_id(v, s, &(*ids)[i]) != ES_OK)
            return ES_ERR_NOMEM;
    }
    return ES_OK;
}

/* Identical audio bytes (xxh3 from measure --hash) under different keys. */
static void duplicate_audio(vs *v)
{
    const es_cost_table *t = v->table;
    size_t cap = 16;
    while (t && cap < 2 * t->n)
        cap *= 2;
    size_t *slot = t ? calloc(cap, sizeof *slot) : NULL; /* row + 1 */
    if (t && !slot) {
        v->r->oom = 1;
        return;
    }
    for (size_t i = 0; t && i < t->n; i++) {
        const es_cost_row *row = &t->rows[i];
        if (!(row->flags & ES_FLAG_HASHED))
            continue;
        size_t h = (size_t)row->hash & (cap - 1);
        while (slot[h] && t->rows[slot[h] - 1].hash != row->hash)
            h = (h + 1) & (cap - 1);
        if (!slot[h])
            slot[h] = i + 1;
        else if (strcmp(t->rows[slot[h] - 1].key, row->key) != 0)
            es_vresult_add(v->r, ES_CHECK_DUPLICATE_AUDIO, 0, row->key, ES_NO_ROW, 0,
                           t->rows[slot[h] - 1].key, ES_NO_ROW, i);
    }
    free(slot);
}

static size_t first_len(const es_emb_set *s) { return s && s->n ? s->len[0] : 0; }

static int check(vs *v)
{
    v->dim = v->s->dim ? v->s->dim : first_len(v->utt) ? first_len(v->utt) : first_len(v->spk);
    int rc = universe(v);
    if (rc != ES_OK)
        return rc;
    missing(v);
    mat um = {0}, sm = {0};
    int32_t *ids = NULL;
    if (v->utt)
        rc = build_matrix(v, v->utt, 0, &um);
    if (rc == ES_OK && v->spk)
        rc = build_matrix(v, v->spk, 1, &sm);
    if (rc == ES_OK && v->utt)
        rc = speaker_ids(v, &um, v->spk ? &sm : NULL, &ids);
    if (rc == ES_OK) {
        es_validate_settings s = *v->s;
        s.dim = v->dim; /* wrong dimensions are already reported per entry */
        es_vset uset = {&um.m, um.src_row}, sset = {&sm.m, sm.src_row};
        es_emb_speakers sp = {ids, v->n_speakers};
        rc = es_vrun(v->ctx, &s, v->utt ? &uset : NULL, v->spk ? &sset : NULL, ids ? &sp : NULL, 0,
                     v->r);
        v->r->settings.dim = v->s->dim;
    }
    if (rc == ES_OK)
        duplicate_audio(v);
    for (size_t i = 0; rc == ES_OK && v->table && i < v->table->n_skips; i++)
        es_vresult_add(v->r, ES_CHECK_UNREADABLE, ES_KIND_DATA, v->table->skips[i].msg, ES_NO_ROW, 0, NULL,
                       ES_NO_ROW, i);
    free(ids);
    mat_free(&um);
    mat_free(&sm);
    return rc;
}

static void release(vs *v)
{
    es_emb_set_free(v->utt);
    es_emb_set_free(v->spk);
    es_utt2spk_release(&v->u2s);
    es_strmap_release(&v->table_spk);
    es_strmap_release(&v->speaker_id);
    free(v->speakers);
    free(v->utts);
    free(v->spk_of_entry);
}

int es_validate(es_context *ctx, const es_validate_settings *s, const es_emb_sources *src,
                const es_cost_table *table, es_validate_result **out)
{
    es_clear_error(ctx);
    if (!out || !src)
        return es_fail(ctx, ES_ERR_USAGE, "validate: no sources or result pointer");
    *out = NULL;
    es_validate_settings defaults;
    if (!s) {
        es_validate_defaults(&defaults);
        s = &defaults;
    }
    vs v;
    memset(&v, 0, sizeof v);
    v.ctx = ctx;
    v.s = s;
    v.src = src;
    v.table = table;
    int rc = es_vcheck_settings(ctx, s);
    if (rc == ES_OK && !(v.r = es_vresult_new()))
        rc = nomem(&v);
    if (rc == ES_OK)
        rc = load(&v);
    if (rc == ES_OK)
        rc = check(&v);
    if (rc == ES_OK)
        rc = es_vresult_finish(ctx, v.r);
    release(&v);
    if (rc != ES_OK) {
        es_validate_result_free(v.r);
        return rc;
    }
    *out = v.r;
    return ES_OK;
}
