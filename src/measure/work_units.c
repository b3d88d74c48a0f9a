#include "core/grow.h"
#include "measure/work_units.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_stream.h"
#include "core/line_reader.h"
#include "core/path.h"
#include "core/utf8.h"
#include "formats/format.h"
#include "readers/reader.h"

/* Utterances per manifest unit: enough to amortise scheduling, small enough to
 * balance threads on a list of a few hundred files. */
#define ITEMS_PER_UNIT 32

static es_unit *add_unit(es_work *w)
{
    if (w->n == w->cap) {
        void *p = w->units;
        if (es_grow(&p, &w->cap, w->cap + 1, sizeof *w->units, 64))
            return NULL;
        w->units = p;
    }
    es_unit *u = &w->units[w->n++];
    memset(u, 0, sizeof *u);
    return u;
}

static int add_shard(es_context *ctx, es_work *w, const char *shard, size_t len, const char *root)
{
    char buf[4096];
    const char *name = es_arena_strndup(&w->strings, shard, len);
    const char *path = name ? es_resolve_path(root, name, buf, sizeof buf) : NULL;
    const char *owned = path == name ? name : path ? es_arena_strndup(&w->strings, path, strlen(path)) : NULL;
    es_unit *u = owned ? add_unit(w) : NULL;
    if (!u)
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    u->path = owned;
    u->shard = name;
    return ES_OK;
}

static int add_manifest(es_context *ctx, es_work *w, es_manifest *m)
{
    void *p = w->manifests;
    if (es_grow(&p, &w->cap_manifests, w->n_manifests + 1, sizeof *w->manifests, 4)) {
        es_manifest_free(m);
        return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
    }
    w->manifests = p;
    w->manifests[w->n_manifests++] = m;
    for (size_t i = 0; i < m->n; i += ITEMS_PER_UNIT) {
        es_unit *u = add_unit(w);
        if (!u)
            return es_fail(ctx, ES_ERR_NOMEM, "out of memory");
        u->m = m;
        u->begin = i;
        u->end = i + ITEMS_PER_UNIT < m->n ? i + ITEMS_PER_UNIT : m->n;
    }
    return ES_OK;
}

/* A shard list's first entry must be there: when it is not, the paths resolve
 * against another folder, or the file is no shard list at all (a CSV, a
 * manifest of another toolkit), and measuring it would only list failures. */
static int check_first_entry(es_context *ctx, const char *list, unsigned long lineno,
                             const char *entry, size_t n, const char *root)
{
    char name[4096], buf[4096], hint[1100];
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), entry);
    struct stat st;
    if (stat(es_resolve_path(root, name, buf, sizeof buf), &st) == 0 || errno != ENOENT)
        return ES_OK;
    return es_fail(ctx, ES_ERR_IO, "%s: line %lu: %s not found: read as a shard list (one path a "
                   "line), whose %s; if it is not a shard list: %s", list, lineno, name,
                   name[0] == '/' ? "paths are absolute here" : es_root_hint(root, hint, sizeof hint),
                   ES_INPUT_FORMATS);
}

/* A shard list: one shard path per line (blank lines ignored). */
static int expand_shard_list(es_context *ctx, es_work *w, const char *path, const char *root)
{
    es_line_reader lr;
    int e = es_line_reader_open(&lr, path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(e));
    int rc = ES_OK, got, any = 0;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) > 0) {
        const char *p = lr.line;
        size_t n = es_strip(&p, lr.len);
        if (lr.has_nul)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: line %lu: NUL byte; not a shard list", path,
                         lr.lineno);
        else if (n) {
            rc = any ? ES_OK : check_first_entry(ctx, path, lr.lineno, p, n, root);
            if (rc == ES_OK)
                rc = add_shard(ctx, w, p, n, root);
            any = 1;
        }
    }
    if (rc == ES_OK && got < 0)
        rc = es_line_reader_fail(ctx, &lr, path);
    if (rc == ES_OK && !any)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: empty list: no shards, no utterances", path);
    es_line_reader_close(&lr);
    return rc;
}

static int is_text(const uint8_t *head, size_t n)
{
    return memchr(head, '\0', n) == NULL;
}

/* A manifest (a raw list, a Kaldi directory) as its registered format parses it. */
static int expand_manifest(es_context *ctx, es_work *w, const es_manifest_ops *ops,
                           const char *path)
{
    es_manifest *m;
    int rc = ops->parse(ctx, path, &m);
    return rc == ES_OK ? add_manifest(ctx, w, m) : rc;
}

static int expand_file(es_context *ctx, es_work *w, const char *path, const char *root)
{
    uint8_t head[ES_SNIFF_BYTES];
    long n = es_sniff_file(ctx, path, head);
    if (n < 0)
        return ES_ERR_IO;
    if (es_format_for(head, (size_t)n))
        return add_shard(ctx, w, path, strlen(path), NULL);
    if (n == 0)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: empty file: no shards, no utterances", path);
    if (!is_text(head, (size_t)n))
        return es_fail(ctx, ES_ERR_UNSUPPORTED,
                       "%s: unrecognised format: %s", path, ES_INPUT_FORMATS);
    const es_manifest_ops *manifest = es_manifest_for(0, head, (size_t)n);
    if (manifest)
        return expand_manifest(ctx, w, manifest, path);
    return expand_shard_list(ctx, w, path, root);
}

int es_work_expand(es_context *ctx, es_work *w, const char *const *inputs, size_t n,
                   const char *root)
{
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0)
            return es_fail(ctx, ES_ERR_IO, "%s: %s", inputs[i], strerror(errno));
        int rc;
        const es_manifest_ops *dir = S_ISDIR(st.st_mode) ? es_manifest_for(1, NULL, 0) : NULL;
        if (S_ISDIR(st.st_mode)) {
            rc = dir ? expand_manifest(ctx, w, dir, inputs[i])
                     : es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: a directory, and no manifest "
                               "format reads directories", inputs[i]);
        } else {
            rc = expand_file(ctx, w, inputs[i], root);
        }
        if (rc != ES_OK)
            return rc;
    }
    return ES_OK;
}

void es_work_release(es_work *w)
{
    for (size_t i = 0; i < w->n_manifests; i++)
        es_manifest_free(w->manifests[i]);
    free(w->manifests);
    free(w->units);
    es_arena_release(&w->strings);
    memset(w, 0, sizeof *w);
}
