/* es_tokenizer (equishard.h) is a model plus the state of the thread using it.
 * Code that encodes in parallel (es_measure) shares t->m and gives each thread
 * a tok_state of its own. */
#ifndef ES_TOKENIZER_H
#define ES_TOKENIZER_H

#include "text/tok_model.h"

struct es_tokenizer {
    tok_model m;
    tok_state st;
};

#endif
