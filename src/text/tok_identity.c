/* The tokenizer's identity as measure records it in the cost table (so a plan
 * counts tokens as the table did): the "# tokenizer:" line, which plan.json,
 * simulate's and validate's JSON report (es_token_report, loader/cost_model.c). */
#include "text/tok_identity.h"

#include <stdio.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/utf8.h"
#include "text/tokenizer.h"

/* s as a JSON string jansson accepts: bytes that are not UTF-8 become U+FFFD. */
static json_t *lossy_string(const char *s)
{
    es_strbuf sb = {0};
    const unsigned char *c = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)c);
    while (n > 0) {
        size_t len = es_utf8_sequence(c, n);
        if (len == 0)
            es_strbuf_puts(&sb, "\xEF\xBF\xBD");
        else
            es_strbuf_append(&sb, (const char *)c, len);
        len += !len;
        c += len;
        n -= len;
    }
    json_t *j = sb.oom ? NULL : json_string(sb.buf ? sb.buf : "");
    es_strbuf_release(&sb);
    return j;
}

json_t *es_tok_identity(const tok_model *m)
{
    char digest[32];
    snprintf(digest, sizeof digest, "xxh3-64:%016llx", (unsigned long long)m->digest);
    return json_pack("{s:s, s:o, s:o, s:I, s:s, s:s}", "kind",
                     m->chr ? tok_char_kind(m->chr) : "qwen2_bpe", "path", lossy_string(m->path),
                     "files", lossy_string(m->files), "vocab_size", (json_int_t)m->vocab_size,
                     "specials", m->specials ? m->specials : "none", "digest", digest);
}

char *es_tok_identity_text(const tok_model *m)
{
    json_t *o = es_tok_identity(m);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}
