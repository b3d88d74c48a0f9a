/* Reshard mode, the parquet copy: CosyVoice parquet sources streamed row by row
 * into new parquet files that CosyVoice's unchanged loader reads.
 *
 * A parquet file stores each column contiguously, while rows arrive from the
 * sources one at a time and scattered over all N new files. When every new
 * file of the range can be open at once, they are written column by column
 * together (reshard_parquet_direct.c); otherwise through a spool per new file
 * (reshard_parquet_spool.c). Either way the files get the first source's
 * schema, one row group, PLAIN pages (pq_write.c), and the same bytes.
 * Nothing is held whole but one row of one leaf of one source, and one page
 * per open file.
 *
 * What both ways share is in reshard_parquet_rows.c (reshard_parquet_run.h);
 * this file picks the way and writes the maps. Each source is read with a
 * cursor per leaf, a row of a leaf ending where the next entry
 * with repetition level 0 begins. The row's `utt` must equal the cost table's
 * key: a file that changed since it was measured is an error, not a silent
 * mix-up.
 *
 * Check: while writing, a hash chain per new file and leaf runs over the
 * segments; every written file is read back through the parquet reader and
 * its segments, rebuilt from what the reader returns, must give the same chain
 * and row count.
 *
 * Beside the files, as make_parquet_list.py writes them: utt2parquet_N.json
 * (utt → file) and spk2parquet_N.json (spk → file, first-appearance order;
 * rows without a speaker have no entry),
 * listed by utt2data.list and spk2data.list. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "costs/cost_table.h"
#include "formats/parquet/reshard_parquet_run.h"

/* ---- utt2parquet / spk2parquet ---------------------------------------------------- */

/* A JSON object as Python's json.dump(obj, f, ensure_ascii=False, indent=2) writes it. */
static int write_json(es_context *ctx, es_outdir *d, const char *name, json_t *obj)
{
    char *text = obj ? json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    if (!text)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: cannot be written (out of memory, or a key "
                       "that is not UTF-8)", name);
    es_strbuf sb = {text, strlen(text), strlen(text) + 1, 0, 0};
    int rc = es_outdir_write_text(ctx, d, name, &sb);
    free(text);
    return rc;
}

int reshard_parquet_maps(es_context *ctx, const reshard_job *job)
{
    const es_plan *p = job->p;
    uint32_t N = p->reshard->n_shards;
    json_t **utt = calloc(N, sizeof *utt), **spk = calloc(N, sizeof *spk);
    int rc = utt && spk ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    es_strbuf path = {0}, utt_list = {0}, spk_list = {0};
    for (uint32_t t = 0; rc == ES_OK && t < N; t++) {
        utt[t] = json_object();
        spk[t] = json_object();
        if (!utt[t] || !spk[t])
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    /* items are in source order: the order of the rows in each new file */
    for (size_t i = 0; rc == ES_OK && i < job->n_items; i++) {
        const copy_item *it = &job->items[i];
        const es_cost_row *row = &p->table->rows[it->row];
        char name[64];
        reshard_job_shard_name(job, it->target, name, sizeof name);
        path.len = 0;
        es_strbuf_printf(&path, "%s/%s", job->d->final_path, name);
        json_t *value = path.oom ? NULL : json_string(path.buf);
        if (!value || json_object_set_new(utt[it->target], row->key, value) != 0)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: utt %s: not UTF-8, so not a JSON key", row->shard,
                         row->key);
        else if (row->spk[0] && /* a null speaker has no entry */
                 !json_object_get(spk[it->target], row->spk) &&
                 json_object_set_new(spk[it->target], row->spk, json_string(path.buf)) != 0)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: spk %s: not UTF-8, so not a JSON key", row->shard,
                         row->spk);
    }
    for (uint32_t t = 0; rc == ES_OK && t < N; t++) {
        char u[64], s[64];
        snprintf(u, sizeof u, "utt2parquet_%09u.json", t);
        snprintf(s, sizeof s, "spk2parquet_%09u.json", t);
        es_strbuf_printf(&utt_list, "%s/%s\n", job->d->final_path, u);
        es_strbuf_printf(&spk_list, "%s/%s\n", job->d->final_path, s);
        rc = write_json(ctx, job->d, u, utt[t]);
        if (rc == ES_OK)
            rc = write_json(ctx, job->d, s, spk[t]);
    }
    if (rc == ES_OK)
        rc = es_outdir_write_text(ctx, job->d, "utt2data.list", &utt_list);
    if (rc == ES_OK)
        rc = es_outdir_write_text(ctx, job->d, "spk2data.list", &spk_list);
    for (uint32_t t = 0; t < N && utt && spk; t++) {
        json_decref(utt[t]);
        json_decref(spk[t]);
    }
    free(utt);
    free(spk);
    es_strbuf_release(&path);
    es_strbuf_release(&utt_list);
    es_strbuf_release(&spk_list);
    return rc;
}

int reshard_copy_parquet(es_context *ctx, reshard_job *job, uint32_t t0, uint32_t t1)
{
    pq_run run = {.p = job->p, .job = job};
    run.targets = calloc(job->p->reshard->n_shards, sizeof *run.targets);
    int rc = !run.targets                    ? es_fail(ctx, ES_ERR_NOMEM, "out of memory")
             : rp_direct_fits(&run, t0, t1) ? rp_copy_direct(ctx, &run, t0, t1)
                                            : rp_copy_spooled(ctx, &run, t0, t1);
    for (uint32_t l = 0; run.cols && l < run.L; l++) {
        pq_column_release(&run.cols[l]);
        es_strbuf_release(&run.seg[l]);
    }
    free(run.cols);
    free(run.look);
    free(run.has_look);
    free(run.seg);
    free(run.digest);
    free(run.buf);
    free(run.index);
    free(run.targets);
    free(run.direct);
    free(run.direct_fp);
    pq_page_queue_release(&run.direct_queue);
    pq_writer_release(&run.w);
    pq_write_schema_release(&run.schema);
    return rc;
}
