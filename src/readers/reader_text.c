/* Text tokens of a transcript, for every reader that meets one (reader.h):
 * apart from the registry, which lists the readers, so that no reader calls
 * back into it. */
#include "readers/reader.h"
#include "text/tok_model.h"

void es_reader_text_tokens(const es_reader_opts *o, const char *s, size_t n, es_cost_row *row)
{
    row->text_tokens = 0;
    if (o->tok && tok_encode(NULL, o->tok, o->tok_state, s, n) == ES_OK)
        row->text_tokens = o->tok_state->n_ids > UINT32_MAX ? UINT32_MAX
                                                            : (uint32_t)o->tok_state->n_ids;
}
