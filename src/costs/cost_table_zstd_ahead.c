/* es_cost_table_compress_ahead (equishard.h): the table compressed, as
 * es_cost_table_write writes a ".zst" path, on a thread of its own while the
 * caller goes on (planning), into memory the table holds; batch mode's
 * OUTDIR/costs.tsv.zst is then those bytes (es_cost_table_write_zstd_image).
 *
 * The bytes come from es_cost_table_write_stream itself, into a stream whose
 * writes land in fixed-size chunks (fopencookie): a growing buffer would be
 * moved by realloc as it doubles, and on this project's paravirtualised
 * machine every moved page costs as much as a fresh one. Each chunk's pages
 * are mapped in one call when it is made (core/prefault.h): faulted in one by
 * one as the compressed bytes reached them, they were most of the copy's
 * time. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/direct_write.h"
#include "core/prefault.h"
#include "costs/cost_table.h"

enum { CHUNK_BYTES = 1 << 20 }; /* test_plan's image spans several */

/* bytes is aligned for O_DIRECT: the image goes to disk around the page
 * cache (core/direct_write.h). */
typedef struct image_chunk {
    struct image_chunk *next;
    size_t len;
    char *bytes; /* CHUNK_BYTES */
} image_chunk;

typedef struct es_zstd_image {
    pthread_t thread;
    const es_cost_table *t;
    es_context *ctx; /* the thread's: its failure is not the caller's error */
    image_chunk *head, *tail;
    int rc;          /* the compression's outcome, valid once joined */
    int joined;
} es_zstd_image;

static ssize_t chunk_write(void *cookie, const char *buf, size_t len)
{
    es_zstd_image *im = cookie;
    size_t done = 0;
    while (done < len) {
        image_chunk *c = im->tail;
        if (!c || c->len == CHUNK_BYTES) {
            image_chunk *n = malloc(sizeof *n);
            char *bytes = aligned_alloc(ES_DIRECT_ALIGN, CHUNK_BYTES);
            if (!n || !bytes) {
                free(n), free(bytes);
                return -1; /* the image is then dropped: compress_main's rc */
            }
            n->bytes = bytes;
            es_prefault_write(n->bytes, CHUNK_BYTES, es_ctx_huge_pages(im->ctx));
            n->next = NULL;
            n->len = 0;
            if (c)
                c->next = n;
            else
                im->head = n;
            im->tail = c = n;
        }
        size_t k = CHUNK_BYTES - c->len < len - done ? CHUNK_BYTES - c->len : len - done;
        memcpy(c->bytes + c->len, buf + done, k);
        c->len += k;
        done += k;
    }
    return (ssize_t)done;
}

static void *compress_main(void *arg)
{
    es_zstd_image *im = arg;
    cookie_io_functions_t io = {.write = chunk_write};
    FILE *fp = fopencookie(im, "w", io);
    if (!fp) {
        im->rc = ES_ERR_NOMEM;
        return NULL;
    }
    im->rc = es_cost_table_write_stream(im->ctx, im->t, fp, "costs.tsv.zst", 1);
    if (fclose(fp) != 0 && im->rc == ES_OK)
        im->rc = ES_ERR_NOMEM; /* the only way a chunk write fails */
    return NULL;
}

static void free_chunks(es_zstd_image *im)
{
    for (image_chunk *c = im->head, *next; c; c = next) {
        next = c->next;
        free(c->bytes);
        free(c);
    }
    im->head = im->tail = NULL;
}

ES_API int es_cost_table_compress_ahead(es_context *ctx, es_cost_table *t)
{
    es_clear_error(ctx);
    if (!t)
        return es_fail(ctx, ES_ERR_USAGE, "es_cost_table_compress_ahead: the table is required");
    if (t->zstd_ahead)
        return ES_OK;
    es_zstd_image *im = calloc(1, sizeof *im);
    if (!im || !(im->ctx = es_context_new_like(ctx))) {
        free(im);
        return ES_OK; /* no thread: the writer compresses, as without this call */
    }
    im->t = t;
    if (pthread_create(&im->thread, NULL, compress_main, im) != 0) {
        es_context_free(im->ctx);
        free(im);
        return ES_OK;
    }
    t->zstd_ahead = im;
    t->drop_zstd_ahead = es_cost_table_drop_zstd_image;
    return ES_OK;
}

/* Waits for the thread (once). */
static void join_image(es_zstd_image *im)
{
    if (im->joined)
        return;
    pthread_join(im->thread, NULL);
    im->joined = 1;
}

int es_cost_table_write_zstd_image(es_context *ctx, const es_cost_table *t, FILE *fp,
                                   const char *name)
{
    es_zstd_image *im = t->zstd_ahead;
    if (!im)
        return 1;
    join_image(im);
    if (im->rc != ES_OK)
        return 1; /* (out of memory there) the caller compresses instead */
    /* straight to the descriptor: whole chunks at aligned offsets go around
     * the page cache, only the last chunk's tail through it */
    if (fflush(fp) != 0)
        return es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", name, strerror(errno));
    for (const image_chunk *c = im->head; c; c = c->next)
        if (es_write_whole(fileno(fp), c->bytes, c->len,
                           es_ctx_direct_io(ctx) ? ES_DIRECT_ALIGN : SIZE_MAX) != 0)
            return es_fail(ctx, ES_ERR_IO, "%s: write failed: %s", name, strerror(errno));
    return ES_OK;
}

void es_cost_table_drop_zstd_image(es_cost_table *t)
{
    es_zstd_image *im = t->zstd_ahead;
    if (!im)
        return;
    join_image(im);
    free_chunks(im);
    es_context_free(im->ctx);
    free(im);
    t->zstd_ahead = NULL;
}
