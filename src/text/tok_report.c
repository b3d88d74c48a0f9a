/* The tokenizer's identity as cost tables and reports record it, and the
 * "text_tokens" object of plan.json, simulate's and validate's JSON (issue 11):
 * one implementation for the three. */
#include "text/tok_report.h"

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

int es_tok_identity_check(const char *text, size_t n)
{
    json_t *o = json_loadb(text, n, JSON_REJECT_DUPLICATES, NULL);
    static const char *const keys[] = {"kind", "path", "files", "specials", "digest"};
    int ok = json_is_object(o) && json_is_integer(json_object_get(o, "vocab_size"));
    for (size_t i = 0; ok && i < sizeof keys / sizeof keys[0]; i++)
        ok = json_is_string(json_object_get(o, keys[i]));
    json_decref(o);
    return ok;
}

json_t *es_token_report(const es_cost_model *m, const es_token_gap_counts *g, const char *note,
                        json_t *tokenizer, const char *table_tokenizer)
{
    if (!tokenizer && table_tokenizer)
        tokenizer = json_loads(table_tokenizer, 0, NULL);
    json_t *o = json_pack("{s:o, s:s, s:I, s:I}", "tokenizer", tokenizer ? tokenizer : json_null(),
                          "count", m->token_chars > 0 ? "text_len" : "text_tokens",
                          "rows_counted", (json_int_t)g->counted, "rows_without",
                          (json_int_t)g->unknown);
    if (o && g->unknown)
        json_object_set_new(o, "note", json_string(note));
    return o;
}
