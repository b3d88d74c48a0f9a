/* Text of a transcript, for every reader that meets one (reader.h): apart
 * from the registry, which lists the readers, so that no reader calls back
 * into it. */
#include "core/utf8.h"
#include "readers/reader.h"
#include "text/tok_model.h"

void es_reader_text(const es_reader_opts *o, const char *s, size_t n, es_cost_row *row)
{
    row->flags |= ES_FLAG_TEXT;
    row->text_len = 0;
    row->text_tokens = 0;
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = es_utf8_sequence((const unsigned char *)s + i, n - i))) {
            row->flags |= ES_FLAG_BAD_TEXT;
            return;
        }
    row->text_len = (uint32_t)es_utf8_length(s, n);
    es_reader_text_tokens(o, s, n, row);
}

void es_reader_text_tokens(const es_reader_opts *o, const char *s, size_t n, es_cost_row *row)
{
    row->text_tokens = 0;
    if (o->tok && tok_encode(NULL, o->tok, o->tok_state, s, n) == ES_OK) {
        row->text_tokens = o->tok_state->n_ids > UINT32_MAX ? UINT32_MAX
                                                            : (uint32_t)o->tok_state->n_ids;
        if (row->text_tokens == 0 && n > 0)
            row->flags |= ES_FLAG_NO_TOKENS; /* a count of 0, not "unknown" */
    }
}
