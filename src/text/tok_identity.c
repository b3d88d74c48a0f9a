/* The tokenizer's identity as measure records it in the cost table (so a plan
 * counts tokens as the table did): the "# tokenizer:" line, which plan.json,
 * simulate's and validate's JSON report (es_token_report, loader/cost_model.c).
 * Paths need not be UTF-8: written by es_json_dump, a byte that is not reads
 * \udcXX, as in every other JSON output, and es_json_load_bytes reads it back. */
#include "text/tok_identity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_text.h"
#include "core/strbuf.h"
#include "text/tokenizer.h"

json_t *es_tok_identity(const tok_model *m)
{
    char digest[32];
    snprintf(digest, sizeof digest, "xxh3-64:%016llx", (unsigned long long)m->digest);
    const char *kind = m->chr ? tok_char_kind(m->chr) : "qwen2_bpe";
    return json_pack("{s:s, s:o, s:o, s:I, s:s, s:s}", "kind", kind, "path",
                     es_json_bytes(m->path ? m->path : ""), "files",
                     es_json_bytes(m->files ? m->files : ""), "vocab_size",
                     (json_int_t)m->vocab_size, "specials", m->specials ? m->specials : "none",
                     "digest", digest);
}

char *es_tok_identity_text(const tok_model *m)
{
    json_t *o = es_tok_identity(m);
    es_strbuf sb = {0};
    char *text = NULL;
    if (o && es_json_dump(&sb, o, JSON_COMPACT) == 0 && (text = malloc(sb.len + 1))) {
        memcpy(text, sb.buf, sb.len);
        text[sb.len] = '\0';
    }
    es_strbuf_release(&sb);
    json_decref(o);
    return text;
}
