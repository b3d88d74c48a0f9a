/* Measuring one job in several processes (`mpirun equishard measure`): unit sizes,
 * the deal of units to processes, and the parts that carry a process's results
 * to the one that merges. The library never communicates; the caller moves the
 * bytes.
 *
 * A part, version 1. Integers are unsigned 64-bit little-endian ("u64"); a string
 * is a u64 byte count and the bytes (no NUL):
 *
 *   "ESPART1\n"                     8 bytes
 *   u64 units                       the job's unit count (must match the merger's)
 *   u64 records                     units measured in this part, then per unit:
 *     u64 unit                      its index in the job
 *     u64 status                    ES_OK or the failure, as a two's-complement int64
 *     string error                  the failure's message; empty when ES_OK
 *     u64 skips, then per skip      what --on-error skip left out, in shard order:
 *       string message, string shard, u64 has_key, string key, u64 pos
 *     string rows                   the unit's rows as a cost table file
 *                                   (es_cost_table_write's TSV, plain), in shard order
 *
 * Rows travel in the table's own text format, so a merged table is exactly the
 * one es_measure builds: the writer prints every field the reader fills. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "measure/measure_job.h"
#include "algo/partition.h"

static const char PART_MAGIC[8] = {'E', 'S', 'P', 'A', 'R', 'T', '1', '\n'};

/* ---- sizes and the deal ------------------------------------------------------------ */

static uint64_t file_size(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

/* Entries of a raw list or Kaldi dir: their audio files, each counted once when
 * consecutive entries are segments of the same recording. */
static uint64_t items_size(const es_measure_job *j, const es_unit *u)
{
    uint64_t sum = 0;
    const char *prev = NULL;
    for (size_t i = u->begin; i < u->end; i++) {
        const es_manifest_item *it = &u->m->items[i];
        if (it->problem || (prev && strcmp(prev, it->audio) == 0))
            continue;
        char buf[4096];
        sum += file_size(es_resolve_path(j->s.root, it->audio, buf, sizeof buf));
        prev = it->audio;
    }
    return sum;
}

ES_API int es_measure_job_sizes(es_context *ctx, const es_measure_job *j, size_t first,
                                size_t count, uint64_t *bytes)
{
    es_clear_error(ctx);
    if (!j || (!bytes && count) || first > j->work.n || count > j->work.n - first)
        return es_fail(ctx, ES_ERR_USAGE, "es_measure_job_sizes: invalid arguments");
    for (size_t i = 0; i < count; i++) {
        const es_unit *u = &j->work.units[first + i];
        bytes[i] = u->m ? items_size(j, u) : file_size(u->path);
    }
    return ES_OK;
}

ES_API int es_measure_assign(es_context *ctx, const uint64_t *bytes, size_t n, uint32_t parts,
                             uint32_t *owner)
{
    es_clear_error(ctx);
    if (parts == 0 || (n && (!bytes || !owner)))
        return es_fail(ctx, ES_ERR_USAGE, "es_measure_assign: invalid arguments");
    double *cost = malloc((n + 1) * sizeof *cost);
    if (!cost)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        cost[i] = (double)bytes[i];
    int rc = es_partition_lpt(cost, n, parts, 0, owner);
    free(cost);
    return rc == 0 ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "out of memory");
}

/* ---- writing a part ------------------------------------------------------------------ */

static void put_u64(es_strbuf *b, uint64_t v)
{
    char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (char)(v >> (8 * i));
    es_strbuf_append(b, le, sizeof le);
}

static void put_str(es_strbuf *b, const char *s, size_t n)
{
    put_u64(b, n);
    es_strbuf_append(b, s, n);
}

/* The unit's rows as TSV, through the table writer into memory. */
static int put_rows(es_context *ctx, es_strbuf *b, const es_cost_table *rows)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (!fp)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    int rc = es_cost_table_write_stream(ctx, rows, fp, "(measure part)", 0);
    if (fclose(fp) != 0 && rc == ES_OK)
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    if (rc == ES_OK)
        put_str(b, text, len);
    free(text);
    return rc;
}

static int put_record(es_context *ctx, es_strbuf *b, size_t u, const es_unit_result *res)
{
    put_u64(b, u);
    put_u64(b, (uint64_t)(int64_t)res->status);
    const char *err = res->status != ES_OK && res->error ? res->error : "";
    put_str(b, err, strlen(err));
    size_t skips = res->rows ? res->rows->n_skips : 0;
    put_u64(b, skips);
    for (size_t i = 0; i < skips; i++) {
        const es_cost_skip *k = &res->rows->skips[i];
        put_str(b, k->msg, strlen(k->msg));
        put_str(b, k->shard, strlen(k->shard));
        put_u64(b, k->key ? 1 : 0);
        put_str(b, k->key ? k->key : "", k->key ? strlen(k->key) : 0);
        put_u64(b, k->pos);
    }
    if (res->status != ES_OK || !res->rows) /* a failed unit's rows are never merged */
        return put_rows(ctx, b, &(es_cost_table){0});
    return put_rows(ctx, b, res->rows);
}

static int measured(const es_unit_result *res) { return res->rows || res->status != ES_OK; }

ES_API int es_measure_job_part(es_context *ctx, es_measure_job *j, const void **data,
                               size_t *len)
{
    es_clear_error(ctx);
    if (!j || !data || !len)
        return es_fail(ctx, ES_ERR_USAGE, "es_measure_job_part: invalid arguments");
    size_t records = 0;
    for (size_t u = 0; u < j->work.n; u++)
        records += measured(&j->results[u]);
    es_strbuf b = {0};
    es_strbuf_append(&b, PART_MAGIC, sizeof PART_MAGIC);
    put_u64(&b, j->work.n);
    put_u64(&b, records);
    int rc = ES_OK;
    for (size_t u = 0; u < j->work.n && rc == ES_OK; u++)
        if (measured(&j->results[u]))
            rc = put_record(ctx, &b, u, &j->results[u]);
    if (rc == ES_OK && b.oom)
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    if (rc != ES_OK) {
        es_strbuf_release(&b);
        return rc;
    }
    free(j->part);
    j->part = b.buf;
    j->part_len = b.len;
    *data = j->part;
    *len = j->part_len;
    return ES_OK;
}

/* ---- reading a part ------------------------------------------------------------------ */

typedef struct cursor {
    const unsigned char *p, *end;
} cursor;

static int get_u64(cursor *c, uint64_t *v)
{
    if (c->end - c->p < 8)
        return -1;
    *v = 0;
    for (int i = 0; i < 8; i++)
        *v |= (uint64_t)c->p[i] << (8 * i);
    c->p += 8;
    return 0;
}

/* A string's bytes stay in the buffer: *s points at them, *n is the count. */
static int get_str(cursor *c, const char **s, size_t *n)
{
    uint64_t len;
    if (get_u64(c, &len) || len > (uint64_t)(c->end - c->p))
        return -1;
    *s = (const char *)c->p;
    *n = (size_t)len;
    c->p += len;
    return 0;
}

static int corrupt(es_context *ctx, const char *what)
{
    return es_fail(ctx, ES_ERR_FORMAT, "measure part: %s", what);
}

static int known_status(int64_t s) { return s <= ES_OK && s >= ES_ERR_INTERNAL; }

/* Reads one record into the job's result for its unit. */
static int get_record(es_context *ctx, es_measure_job *j, cursor *c)
{
    uint64_t u, status, skips;
    const char *err, *rows;
    size_t err_len, rows_len;
    if (get_u64(c, &u) || get_u64(c, &status) || get_str(c, &err, &err_len) ||
        get_u64(c, &skips))
        return corrupt(ctx, "truncated");
    if (u >= j->work.n || !known_status((int64_t)status))
        return corrupt(ctx, "bad unit record");
    es_unit_result *res = &j->results[u];
    if (measured(res))
        return corrupt(ctx, "a unit measured twice");
    if (!(res->rows = es_cost_table_new()))
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    es_cost_table_huge_pages(res->rows, j->huge_pages);
    for (uint64_t i = 0; i < skips; i++) {
        const char *s, *sh, *k;
        size_t n, sh_n, k_n;
        uint64_t has_key, pos;
        if (get_str(c, &s, &n) || memchr(s, '\0', n) || get_str(c, &sh, &sh_n) ||
            memchr(sh, '\0', sh_n) || get_u64(c, &has_key) || get_str(c, &k, &k_n) ||
            memchr(k, '\0', k_n) || get_u64(c, &pos))
            return corrupt(ctx, "truncated");
        char *msg = strndup(s, n), *shard = strndup(sh, sh_n), *key = strndup(k, k_n);
        int rc = msg && shard && key ? es_cost_table_add_skip(res->rows, msg, shard,
                                                              has_key ? key : NULL, pos)
                                     : ES_ERR_NOMEM;
        free(msg);
        free(shard);
        free(key);
        if (rc != ES_OK)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    if (get_str(c, &rows, &rows_len))
        return corrupt(ctx, "truncated");
    es_cost_table *t = NULL;
    int rc = es_cost_table_parse_buffer(ctx, "measure part", rows, rows_len, 0, &t);
    if (rc == ES_OK && es_cost_table_move_into(res->rows, t) != ES_OK)
        rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    es_cost_table_free(t);
    if (rc == ES_OK && (int64_t)status != ES_OK) {
        res->status = (int)(int64_t)status;
        if (!(res->error = strndup(err, err_len)))
            rc = es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    return rc;
}

ES_API int es_measure_job_add_part(es_context *ctx, es_measure_job *j, const void *data,
                                   size_t len)
{
    es_clear_error(ctx);
    if (!j || (!data && len))
        return es_fail(ctx, ES_ERR_USAGE, "es_measure_job_add_part: invalid arguments");
    cursor c = {data, (const unsigned char *)data + len};
    uint64_t units, records;
    if (len < sizeof PART_MAGIC || memcmp(data, PART_MAGIC, sizeof PART_MAGIC) != 0)
        return corrupt(ctx, "not a measure part (bad magic)");
    c.p += sizeof PART_MAGIC;
    if (get_u64(&c, &units) || get_u64(&c, &records))
        return corrupt(ctx, "truncated");
    if (units != j->work.n)
        return es_fail(ctx, ES_ERR_USAGE,
                       "measure part: made from %llu units, this job has %zu (different inputs?)",
                       (unsigned long long)units, j->work.n);
    int rc = ES_OK;
    for (uint64_t r = 0; r < records && rc == ES_OK; r++)
        rc = get_record(ctx, j, &c);
    if (rc == ES_OK && c.p != c.end)
        rc = corrupt(ctx, "trailing bytes");
    return rc;
}
