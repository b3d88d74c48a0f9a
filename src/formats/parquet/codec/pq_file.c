#include "formats/parquet/codec/pq_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read whole, the footer must fit in memory; a footer larger than this is not a
 * CosyVoice shard (1000 rows × 8 columns take a few hundred kilobytes). */
#define MAX_FOOTER (256u << 20)

int es_pq_magic(const uint8_t *head, size_t n)
{
    return n >= 4 && memcmp(head, "PAR1", 4) == 0;
}

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -1 : 1;
        got += (size_t)r;
    }
    return 0;
}

/* ---- schema tree → leaves ------------------------------------------------------ */

typedef struct walker {
    es_pq_file *f;
    uint32_t next;  /* next schema element to visit */
    char err[200];
    int oom;
} walker;

typedef struct level_state {
    uint8_t def, rep, def_field, def_list;
    uint32_t top; /* top-level field element */
    uint32_t depth, path[PQ_MAX_SCHEMA_DEPTH];
} level_state;

static int add_leaf(walker *w, uint32_t idx, const level_state *ls)
{
    es_pq_file *f = w->f;
    const pq_schema_elem *e = &f->meta.schema[idx];
    if (e->type < 0) {
        snprintf(w->err, sizeof w->err, "schema: leaf %s has no type", e->name);
        return -1;
    }
    if (e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length <= 0) {
        snprintf(w->err, sizeof w->err, "schema: %s: FIXED_LEN_BYTE_ARRAY without a length", e->name);
        return -1;
    }
    pq_leaf *l = &f->leaves[f->n_leaves];
    l->index = f->n_leaves++;
    l->schema_index = idx;
    l->name = f->meta.schema[ls->top].name;
    l->type = e->type;
    l->type_length = e->type_length;
    l->max_def = ls->def;
    l->max_rep = ls->rep;
    l->def_field = ls->def_field;
    l->def_list = ls->def_list;
    l->depth = ls->depth;
    memcpy(l->path, ls->path, sizeof l->path);
    return 0;
}

static int walk(walker *w, uint32_t idx, level_state ls, int depth)
{
    es_pq_file *f = w->f;
    const pq_schema_elem *e = &f->meta.schema[idx];
    if (depth > PQ_MAX_SCHEMA_DEPTH) { /* also bounds the recursion */
        snprintf(w->err, sizeof w->err, "schema: nested deeper than %d", PQ_MAX_SCHEMA_DEPTH);
        return -1;
    }
    if (depth == 1)
        ls.top = idx;
    ls.path[ls.depth++] = idx;
    if (e->repetition == PQ_OPTIONAL)
        ls.def++;
    if (e->repetition == PQ_REPEATED) {
        ls.def++;
        ls.rep++;
        if (!ls.def_list)
            ls.def_list = ls.def;
    }
    if (depth == 1) /* a repeated top-level field is never null, only empty */
        ls.def_field = e->repetition == PQ_REPEATED ? (uint8_t)(ls.def - 1) : ls.def;
    if (e->num_children == 0)
        return add_leaf(w, idx, &ls);
    for (int32_t c = 0; c < e->num_children; c++) {
        if (w->next >= f->meta.n_schema) {
            snprintf(w->err, sizeof w->err, "schema: %s claims %d children, the schema ends first",
                     e->name, e->num_children);
            return -1;
        }
        if (walk(w, w->next++, ls, depth + 1) < 0)
            return -1;
    }
    return 0;
}

static int build_leaves(es_context *ctx, es_pq_file *f)
{
    const pq_file_meta *m = &f->meta;
    f->leaves = calloc(m->n_schema, sizeof *f->leaves);
    if (!f->leaves)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", f->path);
    walker w = {.f = f, .next = 1};
    level_state ls = {0};
    if (m->schema[0].num_children == 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: schema has no columns", f->path);
    int rc = 0;
    for (int32_t c = 0; rc == 0 && c < m->schema[0].num_children; c++) {
        if (w.next >= m->n_schema) {
            snprintf(w.err, sizeof w.err, "schema: the root claims %d columns, the schema ends first",
                     m->schema[0].num_children);
            rc = -1;
        } else {
            rc = walk(&w, w.next++, ls, 1);
        }
    }
    if (rc == 0 && w.next != m->n_schema) {
        snprintf(w.err, sizeof w.err, "schema: %u elements, the tree uses %u", m->n_schema, w.next);
        rc = -1;
    }
    if (rc < 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: %s", f->path, w.err);
    for (uint32_t i = 0; i < f->n_leaves; i++) {
        uint32_t n = 0;
        for (uint32_t j = 0; j < f->n_leaves; j++)
            n += f->leaves[j].name == f->leaves[i].name;
        f->leaves[i].field_leaves = n;
    }
    return ES_OK;
}

/* ---- row groups against the schema ----------------------------------------------- */

/* Whether chunk c's path_in_schema names leaf l. */
static int path_matches(const es_pq_file *f, const pq_leaf *l, const pq_column_meta *c)
{
    if (c->n_path != l->depth)
        return 0;
    for (uint32_t i = 0; i < l->depth; i++)
        if (strcmp(c->path[i], f->meta.schema[l->path[i]].name) != 0)
            return 0;
    return 1;
}

static int check_row_groups(es_context *ctx, es_pq_file *f)
{
    for (uint32_t g = 0; g < f->meta.n_row_groups; g++) {
        const pq_row_group *rg = &f->meta.row_groups[g];
        if (rg->n_columns != f->n_leaves)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u has %u column chunks, the schema %u leaves",
                           f->path, g, rg->n_columns, f->n_leaves);
        for (uint32_t c = 0; c < rg->n_columns; c++) {
            const pq_column_meta *cm = &rg->columns[c];
            if (!path_matches(f, &f->leaves[c], cm))
                return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: chunk %u's path does not match the schema",
                               f->path, g, f->leaves[c].name, c);
            if (cm->type != f->leaves[c].type)
                return es_fail(ctx, ES_ERR_FORMAT, "%s: row group %u, column %s: chunk type %s, schema type %s",
                               f->path, g, f->leaves[c].name, pq_type_name(cm->type),
                               pq_type_name(f->leaves[c].type));
        }
    }
    return ES_OK;
}

/* ---- open ------------------------------------------------------------------ */

static int read_footer(es_context *ctx, es_pq_file *f)
{
    uint8_t head[4], tail[8];
    if (f->size < 12)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: %llu bytes: too short for parquet (truncated?)",
                       f->path, (unsigned long long)f->size);
    if (read_at(f->fd, head, 4, 0) || read_at(f->fd, tail, 8, f->size - 8))
        return es_fail(ctx, ES_ERR_IO, "%s: cannot read: %s", f->path, strerror(errno));
    if (memcmp(head, "PAR1", 4) != 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: no PAR1 magic at the start: not parquet", f->path);
    if (memcmp(tail + 4, "PAR1", 4) != 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: no PAR1 magic at the end: truncated%s", f->path,
                       memcmp(tail + 4, "PARE", 4) == 0 ? " or encrypted (PARE)" : "");
    uint32_t len = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
                   (uint32_t)tail[3] << 24;
    if ((uint64_t)len > f->size - 12)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: footer length %u past the file (%llu bytes)",
                       f->path, len, (unsigned long long)f->size);
    if (len > MAX_FOOTER)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: footer of %u bytes: larger than %u",
                       f->path, len, MAX_FOOTER);
    f->data_end = f->size - 8 - len;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", f->path);
    if (read_at(f->fd, buf, len, f->data_end)) {
        free(buf);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot read the footer: %s", f->path, strerror(errno));
    }
    char err[200];
    int rc = pq_file_meta_decode(buf, len, &f->meta, err, sizeof err);
    free(buf);
    if (rc == -2)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", f->path);
    if (rc < 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: footer: %s", f->path, err);
    return ES_OK;
}

int es_pq_file_open(es_context *ctx, const char *path, es_pq_file **out)
{
    *out = NULL;
    es_pq_file *f = calloc(1, sizeof *f);
    if (!f)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    f->path = path;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        free(f);
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat st;
    int rc = fstat(f->fd, &st) == 0 ? ES_OK
             : es_fail(ctx, ES_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    f->size = (uint64_t)st.st_size;
    if (rc == ES_OK)
        rc = read_footer(ctx, f);
    if (rc == ES_OK)
        rc = build_leaves(ctx, f);
    if (rc == ES_OK)
        rc = check_row_groups(ctx, f);
    if (rc != ES_OK) {
        es_pq_file_close(f);
        return rc;
    }
    *out = f;
    return ES_OK;
}

void es_pq_file_close(es_pq_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    pq_file_meta_release(&f->meta);
    free(f->leaves);
    free(f);
}

const pq_leaf *es_pq_file_column(const es_pq_file *f, const char *name)
{
    for (uint32_t i = 0; i < f->n_leaves; i++)
        if (strcmp(f->leaves[i].name, name) == 0)
            return &f->leaves[i];
    return NULL;
}

void es_pq_file_column_names(const es_pq_file *f, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < f->n_leaves && used < n; i++) {
        if (i && f->leaves[i].name == f->leaves[i - 1].name)
            continue; /* struct fields share their top-level name */
        int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", f->leaves[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}
