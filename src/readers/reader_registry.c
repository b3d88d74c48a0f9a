#include "readers/reader.h"
#include "text/tok_model.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Adding a format: write reader_<format>.c with its ops and list it here. */
static const es_reader_ops *const readers[] = {
    &es_reader_tar,
    &es_reader_parquet,
};

const es_reader_ops *es_reader_for(const uint8_t *head, size_t n)
{
    const es_reader_ops *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++) {
        int b = readers[i]->bid(head, n);
        if (b > best_bid) {
            best_bid = b;
            best = readers[i];
        }
    }
    return best;
}

long es_sniff_file(es_context *ctx, const char *path, uint8_t *head)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return es_fail(ctx, -1, "%s: cannot open: %s", path, strerror(errno));
    size_t n = fread(head, 1, ES_SNIFF_BYTES, fp);
    int bad = ferror(fp);
    int e = errno;
    fclose(fp);
    if (bad)
        return es_fail(ctx, -1, "%s: cannot read: %s", path, strerror(e));
    return (long)n;
}

void es_reader_text_tokens(const es_reader_opts *o, const char *s, size_t n, es_cost_row *row)
{
    row->text_tokens = 0;
    if (o->tok && tok_encode(NULL, o->tok, o->tok_state, s, n) == ES_OK)
        row->text_tokens = o->tok_state->n_ids > UINT32_MAX ? UINT32_MAX
                                                            : (uint32_t)o->tok_state->n_ids;
}
