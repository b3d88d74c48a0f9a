/* es_cost_spool (cost_spool.h): rows held back, on disk, until the table's
 * header is known. */
#include "costs/cost_spool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { BASE_COLUMNS = 12 }; /* key … hash: the columns every table has */

int es_cost_spool_put(es_context *ctx, es_cost_spool *sp, const es_cost_table *t)
{
    if (!sp->w.file.fp) {
        /* tmpfile(): unlinked at once, so no name is left behind by a crash */
        FILE *fp = tmpfile();
        if (!fp)
            return es_fail(ctx, ES_ERR_IO, "temporary file for measured rows: %s",
                           strerror(errno));
        sp->w = (es_table_writer){.ctx = ctx, .path = "(temporary rows)", .file.fp = fp};
        int rc = es_tw_init(&sp->w, 0);
        if (rc != ES_OK)
            return rc;
    }
    sp->w.stat_shard = NULL; /* t's strings are not the last table's */
    int rc = ES_OK;
    for (size_t i = 0; i < t->n && rc == ES_OK; i++)
        rc = es_tw_row(&sp->w, &t->rows[i], t, 1, 1);
    sp->rows += t->n;
    return rc;
}

/* Cuts the columns that did not appear out of one spooled line (n bytes, with
 * its '\n'); returns the new length. */
static size_t cut(char *line, size_t n, int stats, int tokens)
{
    if (!tokens) { /* the last field, with the TAB before it */
        char *tab = memrchr(line, '\t', n);
        if (tab) {
            *tab = '\n';
            n = (size_t)(tab - line) + 1;
        }
    }
    if (!stats) { /* "\tsize\tmtime": from the 12th TAB to the 14th, or to the '\n' */
        char *tab[BASE_COLUMNS + 2], *p = line, *end = line + n;
        int k = 0;
        while (k < BASE_COLUMNS + 2 && (p = memchr(p, '\t', (size_t)(end - p))))
            tab[k++] = p++;
        if (k >= BASE_COLUMNS) {
            char *from = tab[BASE_COLUMNS - 1], *to = k > BASE_COLUMNS + 1 ? tab[k - 1] : end - 1;
            memmove(from, to, (size_t)(end - to));
            n -= (size_t)(to - from);
        }
    }
    return n;
}

int es_cost_spool_drain(es_cost_spool *sp, es_table_writer *out, int stats, int tokens)
{
    if (!sp->w.file.fp)
        return ES_OK;
    int rc = es_tw_flush(&sp->w);
    if (rc == ES_OK && (fflush(sp->w.file.fp) != 0 || fseek(sp->w.file.fp, 0, SEEK_SET) != 0))
        rc = es_fail(out->ctx, ES_ERR_IO, "temporary file for measured rows: %s",
                     strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    for (size_t i = 0; rc == ES_OK && i < sp->rows; i++) {
        if ((n = getline(&line, &cap, sp->w.file.fp)) <= 0) {
            rc = es_fail(out->ctx, ES_ERR_IO, "temporary file for measured rows: read failed");
            break;
        }
        rc = es_tw_bytes(out, line, cut(line, (size_t)n, stats, tokens));
    }
    free(line);
    es_cost_spool_release(sp);
    return rc;
}

void es_cost_spool_release(es_cost_spool *sp)
{
    if (sp->w.file.fp) {
        es_tw_release(&sp->w);
        fclose(sp->w.file.fp);
    }
    memset(sp, 0, sizeof *sp);
}
