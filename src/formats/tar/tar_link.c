#include "formats/tar/tar_link.h"

#include <archive_entry.h>
#include <stdio.h>
#include <string.h>

/* A link to a link to …: tarfile recurses without bound; we stop here. */
#define MAX_DEPTH 16

/* What os.path.normpath does to a member name, less ".." (a shard's names
 * have none): "./" segments and repeated slashes dropped. */
static void normalize(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    while (*in && o + 1 < cap) {
        if ((in[0] == '.' && in[1] == '/') && (o == 0 || out[o - 1] == '/')) {
            in += 2;
        } else if (in[0] == '/' && o > 0 && out[o - 1] == '/') {
            in++;
        } else {
            out[o++] = *in++;
        }
    }
    while (o > 1 && out[o - 1] == '/')
        o--;
    out[o] = '\0';
}

static struct archive *open_again(es_tar_link *l, const char *path)
{
    struct archive *a = archive_read_new();
    if (!a)
        return NULL;
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    if (es_shard_file_open(a, &l->file, path) != ARCHIVE_OK) {
        archive_read_free(a);
        return NULL;
    }
    return a;
}

/* The header number of the last member before `limit` named `target`, or -1. */
static int64_t find(es_tar_link *l, const char *path, const char *target, uint64_t limit)
{
    struct archive *a = open_again(l, path);
    struct archive_entry *e;
    char want[4096], name[4096];
    int64_t found = -1;
    normalize(target, want, sizeof want);
    for (uint64_t i = 0; a && i < limit && es_archive_header_ok(archive_read_next_header(a, &e)); i++) {
        const char *n = archive_entry_pathname(e);
        normalize(n ? n : "", name, sizeof name);
        if (strcmp(name, want) == 0)
            found = (int64_t)i;
    }
    if (a)
        archive_read_free(a);
    return found;
}

int es_tar_link_open(es_context *ctx, es_tar_link *l, const char *path, const char *member,
                     const char *target, uint64_t index)
{
    memset(l, 0, sizeof *l);
    char want[4096];
    snprintf(want, sizeof want, "%s", target);
    for (int depth = 0; depth < MAX_DEPTH; depth++) {
        int64_t at = find(l, path, want, index);
        if (at < 0)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: a hard link to %s, which no member "
                           "before it is named (Python's tarfile cannot read it either)", path,
                           member, want);
        struct archive *a = open_again(l, path);
        struct archive_entry *e = NULL;
        for (int64_t i = 0; a && i <= at; i++)
            if (!es_archive_header_ok(archive_read_next_header(a, &e))) {
                archive_read_free(a);
                a = NULL;
            }
        if (!a)
            return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: its hard-link target %s cannot be "
                           "read again (the shard changed?)", path, member, want);
        const char *next = archive_entry_hardlink(e);
        if (next) { /* a link to a link: its own target, before it */
            snprintf(want, sizeof want, "%s", next);
            index = (uint64_t)at;
            archive_read_free(a);
            continue;
        }
        if (archive_entry_filetype(e) != AE_IFREG) {
            archive_read_free(a);
            return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: a hard link to %s, which is not a "
                           "regular file", path, member, want);
        }
        l->a = a;
        l->size = archive_entry_size_is_set(e) ? (uint64_t)archive_entry_size(e) : 0;
        return ES_OK;
    }
    return es_fail(ctx, ES_ERR_FORMAT, "%s: member %s: more than %d hard links in a chain", path,
                   member, MAX_DEPTH);
}

void es_tar_link_close(es_tar_link *l)
{
    if (l->a)
        archive_read_free(l->a);
    l->a = NULL;
}
