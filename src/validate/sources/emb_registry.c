/* es_emb_set_load: the embedding source chosen by content (emb_source.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "readers/reader.h"
#include "validate/sources/emb_source.h"

/* Adding a format: its ops in its own file, listed here. */
static const es_emb_source_ops *const sources[] = {
    &es_emb_source_torch,
    &es_emb_source_npy,
    &es_emb_source_parquet,
};

const es_emb_source_ops *es_emb_source_for(const uint8_t *head, size_t n)
{
    const es_emb_source_ops *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
        int b = sources[i]->bid(head, n);
        if (b > best_bid) {
            best_bid = b;
            best = sources[i];
        }
    }
    return best;
}

int es_emb_set_load(es_context *ctx, const char *path, const char *keys_path, int speakers,
                    es_emb_set **out)
{
    return es_emb_set_load_at(ctx, path, keys_path, NULL, speakers, out);
}

int es_emb_set_load_at(es_context *ctx, const char *path, const char *keys_path, const char *root,
                       int speakers, es_emb_set **out)
{
    return es_emb_set_load_watched(ctx, path, keys_path, root, speakers, NULL, NULL, out);
}

int es_emb_set_load_watched(es_context *ctx, const char *path, const char *keys_path,
                            const char *root, int speakers, void (*progress)(void *, uint64_t),
                            void *progress_user, es_emb_set **out)
{
    *out = NULL;
    /* the readers' sniff: regular files only, so a FIFO or a device given as a
     * source is refused instead of waited on forever */
    _Static_assert(ES_EMB_SNIFF_BYTES <= ES_SNIFF_BYTES, "the sniff reads ES_SNIFF_BYTES");
    unsigned char head[ES_SNIFF_BYTES];
    long got = es_sniff_file(ctx, path, head);
    if (got < 0) {
        char msg[sizeof ctx->msg]; /* the sniff's line, under ES_ERR_IO */
        snprintf(msg, sizeof msg, "%s", es_errmsg(ctx));
        return es_fail(ctx, ES_ERR_IO, "%s", msg);
    }
    size_t n = (size_t)got;
    es_emb_set *s = es_emb_set_new(path);
    if (!s)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    s->progress = progress;
    s->progress_user = progress_user;
    s->no_huge = !es_ctx_huge_pages(ctx);
    s->strings.no_huge = s->no_huge;
    const es_emb_source_ops *src = es_emb_source_for(head, n);
    es_emb_load_args args = {keys_path, root, speakers};
    int rc = src ? src->load(ctx, path, &args, s)
                 : es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: not an embedding source (torch .pt, "
                           "pickle, .npy, CosyVoice parquet or a list of parquet files)", path);
    if (rc == ES_OK && keys_path && !(head[0] == 0x93 && n >= 6))
        rc = es_fail(ctx, ES_ERR_USAGE, "%s: a key list is only used with a .npy source", path);
    if (rc != ES_OK) {
        es_emb_set_free(s);
        return rc;
    }
    *out = s;
    return ES_OK;
}
