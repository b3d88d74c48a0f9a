/* es_validate_matrices (host or device memory) and the shared es_vrun(): checks the
 * arguments, picks the device, groups utterance rows by speaker, runs a backend
 * over each matrix and turns its per-row results into findings. */
#include <stdlib.h>
#include <string.h>

#include "core/prefault.h"
#include "validate/validate_findings.h"

static int check_matrix(es_context *ctx, const es_emb_matrix *m, const char *what)
{
    if (!m)
        return ES_OK;
    if (m->dtype != ES_DTYPE_F32 && m->dtype != ES_DTYPE_F16 && m->dtype != ES_DTYPE_BF16)
        return es_fail(ctx, ES_ERR_USAGE, "validate: %s: unknown dtype %d", what, (int)m->dtype);
    if (m->n && (!m->data || m->dim == 0))
        return es_fail(ctx, ES_ERR_USAGE, "validate: %s: %zu rows but no data or dimension 0", what,
                       m->n);
    if (m->n >= UINT32_MAX || m->dim >= UINT32_MAX || (m->dim && m->n > SIZE_MAX / 8 / m->dim))
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "validate: %s: %zu x %zu is too large", what, m->n,
                       m->dim);
    return ES_OK;
}

static int check_speakers(es_context *ctx, const es_emb_matrix *utt, const es_emb_speakers *sp)
{
    if (!sp || !sp->speaker || !utt)
        return ES_OK;
    if (sp->n_speakers >= UINT32_MAX)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "validate: %zu speakers is too many", sp->n_speakers);
    for (size_t i = 0; i < utt->n; i++)
        if (sp->speaker[i] < -1 || (sp->speaker[i] >= 0 && (size_t)sp->speaker[i] >= sp->n_speakers))
            return es_fail(ctx, ES_ERR_USAGE, "validate: utterance row %zu: speaker %d not in [-1, %zu)",
                           i, (int)sp->speaker[i], sp->n_speakers);
    return ES_OK;
}

static int pick_device(es_context *ctx, const es_validate_settings *s, int on_device,
                       es_device *used)
{
    *used = ES_DEVICE_CPU;
    if (!on_device && s->device == ES_DEVICE_CPU)
        return ES_OK;
    int rc = es_cuda_probe(ctx);
    if (rc == ES_OK) {
        *used = ES_DEVICE_CUDA;
        return ES_OK;
    }
    if (on_device || s->device == ES_DEVICE_CUDA)
        return rc;
    es_clear_error(ctx); /* auto: fall back to the CPU */
    return ES_OK;
}

/* Counting sort of rows by speaker (stable): see vjob.h for the layout. */
static int group_rows(const es_context *ctx, const int32_t *speaker, size_t n, size_t n_spk,
                      uint32_t **order, size_t **seg)
{
    *order = malloc((n ? n : 1) * sizeof **order);
    *seg = calloc(n_spk + 2, sizeof **seg);
    if (!*order || !*seg)
        return -1;
    es_prefault_write(*order, n * sizeof **order, es_ctx_huge_pages(ctx));
    size_t *start = *seg;
    for (size_t i = 0; i < n; i++)
        start[(speaker && speaker[i] >= 0 ? (size_t)speaker[i] : n_spk) + 1]++;
    for (size_t s = 0; s <= n_spk; s++)
        start[s + 1] += start[s];
    size_t *fill = malloc((n_spk + 1) * sizeof *fill);
    if (!fill)
        return -1;
    memcpy(fill, start, (n_spk + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        (*order)[fill[speaker && speaker[i] >= 0 ? (size_t)speaker[i] : n_spk]++] = (uint32_t)i;
    free(fill);
    return 0;
}

/* Runs one matrix through the backend. mean/n_finite may be NULL when n_spk is 0. */
static int run_backend(es_context *ctx, const es_validate_settings *s, const es_emb_matrix *m,
                       const int32_t *speaker, size_t n_spk, es_device dev, int on_device,
                       es_row_result *res, double *mean, uint32_t *n_finite)
{
    es_vjob job = {m->data, m->dtype, m->n, m->dim, NULL, NULL, n_spk ? speaker : NULL, n_spk,
                   s->threads, res, mean, n_finite, NULL};
    uint32_t *order;
    size_t *seg;
    int rc = ES_OK;
    if (group_rows(ctx, speaker, m->n, n_spk, &order, &seg))
        rc = es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    job.order = order;
    job.seg = seg;
    if (rc == ES_OK && m->n)
        rc = dev == ES_DEVICE_CUDA ? es_vjob_run_cuda(ctx, &job, on_device)
                                   : es_vjob_run_cpu(ctx, &job);
    free(order);
    free(seg);
    return rc;
}

static void all_wrong_dim(es_validate_result *r, const es_vset *set, int is_speaker)
{
    for (size_t i = 0; i < set->m->n; i++) {
        size_t row = set->src_row ? set->src_row[i] : i;
        const char *key = set->m->keys && set->m->keys[i] ? set->m->keys[i] : "";
        es_vresult_add(r, ES_CHECK_WRONG_DIM, is_speaker, key, row, (double)set->m->dim, NULL,
                       ES_NO_ROW, row);
    }
}

/* Speaker rows as host floats for the mean comparison (*owned when copied). */
static int spk_floats(es_context *ctx, const es_emb_matrix *m, int on_device, const float **out,
                      float **owned)
{
    size_t n = m->n, d = m->dim, es = es_dtype_size(m->dtype), nd = n * d;
    if (nd == 0)
        nd = 1;
    *owned = NULL;
    if (!on_device && m->dtype == ES_DTYPE_F32) {
        *out = m->data;
        return ES_OK;
    }
    float *f = malloc(nd * sizeof *f);
    unsigned char *raw = on_device ? malloc(nd * es) : NULL;
    uint32_t *idx = on_device ? malloc((n ? n : 1) * sizeof *idx) : NULL;
    int rc = !f || (on_device && (!raw || !idx)) ? es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory")
                                                 : ES_OK;
    for (size_t i = 0; rc == ES_OK && idx && i < n; i++)
        idx[i] = (uint32_t)i;
    if (rc == ES_OK && on_device)
        rc = es_cuda_gather_rows(ctx, m->data, m->dtype, d, idx, n, raw);
    const void *src = on_device ? raw : m->data;
    for (size_t j = 0; rc == ES_OK && j < n * d; j++) {
        if (m->dtype == ES_DTYPE_F32)
            f[j] = ((const float *)src)[j];
        else if (m->dtype == ES_DTYPE_F16)
            f[j] = es_k_f16_to_f32(((const uint16_t *)src)[j]);
        else
            f[j] = es_k_bf16_to_f32(((const uint16_t *)src)[j]);
    }
    free(raw);
    free(idx);
    if (rc != ES_OK) {
        free(f);
        return rc;
    }
    *out = *owned = f;
    return ES_OK;
}

typedef struct run_state {
    es_row_result *utt_res, *spk_res;
    double *mean;
    uint32_t *n_finite;
    size_t n_spk;
    float *spk_owned;
} run_state;

static int run_utt(es_context *ctx, const es_validate_settings *s, const es_vset *utt,
                   const es_emb_speakers *sp, es_device dev, int on_device, run_state *st,
                   es_validate_result *r)
{
    const es_emb_matrix *m = utt->m;
    st->utt_res = malloc((m->n ? m->n : 1) * sizeof *st->utt_res);
    st->mean = calloc(st->n_spk * m->dim + 1, sizeof *st->mean);
    st->n_finite = calloc(st->n_spk + 1, sizeof *st->n_finite);
    if (!st->utt_res || !st->mean || !st->n_finite)
        return es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    /* 32 bytes a row written once: mapped in one call (core/prefault.h), not
     * page by page as the backend's threads reach them */
    int huge = es_ctx_huge_pages(ctx);
    es_prefault_write(st->utt_res, m->n * sizeof *st->utt_res, huge);
    es_prefault_write(st->mean, st->n_spk * m->dim * sizeof *st->mean, huge); /* (calloc's zeros stay) */
    int rc = run_backend(ctx, s, m, sp ? sp->speaker : NULL, st->n_spk, dev, on_device,
                         st->utt_res, st->mean, st->n_finite);
    if (rc == ES_OK)
        rc = es_vfind_rows(ctx, s, utt, 0, st->utt_res, on_device, r, &r->info.median_utt_norm);
    return rc;
}

static int run_spk(es_context *ctx, const es_validate_settings *s, const es_vset *spk,
                   es_device dev, int on_device, int have_means, run_state *st,
                   es_validate_result *r)
{
    const es_emb_matrix *m = spk->m;
    st->spk_res = malloc((m->n ? m->n : 1) * sizeof *st->spk_res);
    if (!st->spk_res)
        return es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    int rc = run_backend(ctx, s, m, NULL, 0, dev, on_device, st->spk_res, NULL, NULL);
    if (rc == ES_OK)
        rc = es_vfind_rows(ctx, s, spk, 1, st->spk_res, on_device, r, &r->info.median_spk_norm);
    if (rc != ES_OK || !have_means)
        return rc;
    const float *rows;
    rc = spk_floats(ctx, m, on_device, &rows, &st->spk_owned);
    if (rc == ES_OK)
        rc = es_vfind_spk_mean(ctx, s, spk, st->spk_res, rows, st->mean, st->n_finite, r);
    return rc;
}

int es_vrun(es_context *ctx, const es_validate_settings *s, const es_vset *utt,
            const es_vset *spk, const es_emb_speakers *sp, int on_device, es_validate_result *r)
{
    const es_emb_matrix *um = utt ? utt->m : NULL, *sm = spk ? spk->m : NULL;
    int rc = es_vcheck_settings(ctx, s);
    if (rc == ES_OK)
        rc = check_matrix(ctx, um, "utterance embeddings");
    if (rc == ES_OK)
        rc = check_matrix(ctx, sm, "speaker embeddings");
    if (rc == ES_OK)
        rc = check_speakers(ctx, um, sp);
    if (rc == ES_OK && sm && sp && sp->speaker && sm->n > sp->n_speakers)
        rc = es_fail(ctx, ES_ERR_USAGE, "validate: %zu speaker rows but only %zu speakers", sm->n,
                     sp->n_speakers);
    es_device dev = ES_DEVICE_CPU;
    if (rc == ES_OK)
        rc = pick_device(ctx, s, on_device, &dev);
    if (rc != ES_OK)
        return rc;
    r->info.device = dev;
    r->settings = *s;
    r->info.dim = s->dim ? s->dim : um ? um->dim : sm ? sm->dim : 0;
    run_state st = {0};
    st.n_spk = sp && sp->speaker ? sp->n_speakers : 0;
    int utt_ok = um && !(s->dim && um->dim != s->dim);
    int spk_ok = sm && !(s->dim && sm->dim != s->dim);
    if (um && !utt_ok)
        all_wrong_dim(r, utt, 0);
    if (sm && !spk_ok)
        all_wrong_dim(r, spk, 1);
    if (utt_ok) {
        r->info.utt_rows = um->n;
        rc = run_utt(ctx, s, utt, sp, dev, on_device, &st, r);
    }
    if (rc == ES_OK && spk_ok) {
        r->info.spk_rows = sm->n;
        int have_means = utt_ok && st.n_spk && um->dim == sm->dim;
        rc = run_spk(ctx, s, spk, dev, on_device, have_means, &st, r);
    }
    free(st.utt_res);
    free(st.spk_res);
    free(st.mean);
    free(st.n_finite);
    free(st.spk_owned);
    return rc;
}

static int validate(es_context *ctx, const es_validate_settings *s, const es_emb_matrix *utt,
                    const es_emb_matrix *spk, const es_emb_speakers *speakers, int on_device,
                    es_validate_result **out)
{
    es_clear_error(ctx);
    if (!out)
        return es_fail(ctx, ES_ERR_USAGE, "validate: no result pointer");
    *out = NULL;
    es_validate_settings defaults;
    if (!s) {
        es_validate_defaults(&defaults);
        s = &defaults;
    }
    es_validate_result *r = es_vresult_new();
    if (!r)
        return es_fail(ctx, ES_ERR_NOMEM, "validate: out of memory");
    es_vset u = {utt, NULL}, p = {spk, NULL};
    int rc = es_vrun(ctx, s, utt ? &u : NULL, spk ? &p : NULL, speakers, on_device, r);
    if (rc == ES_OK)
        rc = es_vresult_finish(ctx, r);
    if (rc != ES_OK) {
        es_validate_result_free(r);
        return rc;
    }
    *out = r;
    return ES_OK;
}

int es_validate_matrices(es_context *ctx, const es_validate_settings *s, const es_emb_matrix *utt,
                         const es_emb_matrix *spk, const es_emb_speakers *speakers,
                         int device_memory, es_validate_result **out)
{
    return validate(ctx, s, utt, spk, speakers, device_memory != 0, out);
}
