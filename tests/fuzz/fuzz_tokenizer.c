/* Fuzzes the text tokenizer (src/text/) with arbitrary bytes: ES_OK with at
 * least one id per non-empty text, every id inside the vocab, or, for bytes
 * that are not UTF-8, ES_ERR_FORMAT with one line naming the offset; never a
 * crash, a hang (long words are n log n) or a leak. The model is the real
 * CosyVoice 3 one when ../shared/fixtures/tokenizers/qwen2 (or $ES_TOKENIZER)
 * is there, else a small byte-level vocab built here with a few merges and
 * the same specials. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static void put_char(es_strbuf *v, uint32_t c)
{
    if (c == '"' || c == '\\')
        es_strbuf_putc(v, '\\');
    if (c < 0x80) {
        es_strbuf_putc(v, (char)c);
    } else {
        es_strbuf_putc(v, (char)(0xC0 | c >> 6));
        es_strbuf_putc(v, (char)(0x80 | (c & 63)));
    }
}

/* 256 byte symbols plus merges of a few ASCII pairs and their results. */
static es_tokenizer *small_model(void)
{
    static const char *const merges[] = {"t h", "th e", "a n", "Ġ t", "h e", "Ġt he", "i n", "in g",
                                         "Ġ a", "e r", "o n", "Ġ Ġ", "ĠĠ ĠĠ", "1 2"};
    es_strbuf v = {0}, m = {0};
    es_strbuf_putc(&v, '{');
    for (unsigned b = 0; b < 256; b++) {
        es_strbuf_printf(&v, "%s\"", b ? ", " : "");
        put_char(&v, tok_byte_char(b));
        es_strbuf_printf(&v, "\": %u", b);
    }
    es_strbuf_puts(&m, "#version: 0.2\n");
    for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++) {
        const char *sp = strchr(merges[i], ' ');
        es_strbuf_printf(&v, ", \"%.*s%s\": %zu", (int)(sp - merges[i]), merges[i], sp + 1, 256 + i);
        es_strbuf_printf(&m, "%s\n", merges[i]);
    }
    es_strbuf_putc(&v, '}');
    es_tokenizer *t = calloc(1, sizeof *t);
    if (!t || tok_model_from_memory(NULL, &t->m, v.buf, v.len, m.buf, m.len, NULL, 0) != ES_OK ||
        tok_add_specials(NULL, &t->m, "cosyvoice3") != ES_OK)
        abort();
    t->m.vocab_size = 256 + sizeof merges / sizeof merges[0] + t->m.added.n;
    es_strbuf_release(&v);
    es_strbuf_release(&m);
    return t;
}

static es_tokenizer *model(void)
{
    static es_tokenizer *t;
    if (t)
        return t;
    const char *paths[] = {getenv("ES_TOKENIZER"), "../shared/fixtures/tokenizers/qwen2",
                           "../../shared/fixtures/tokenizers/qwen2"};
    for (size_t i = 0; i < 3 && !t; i++)
        if (paths[i] && es_tokenizer_load(NULL, paths[i], "cosyvoice3", &t) != ES_OK)
            t = NULL;
    if (!t)
        t = small_model();
    return t; /* kept for the process's life, as libFuzzer runs many inputs */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    es_tokenizer *t = model();
    es_context *ctx = es_context_new();
    if (!ctx)
        return 0;
    const uint32_t *ids;
    size_t n;
    int rc = es_tokenizer_encode(ctx, t, (const char *)data, size, &ids, &n);
    if (rc == ES_OK) {
        check((n > 0) == (size > 0));
        for (size_t i = 0; i < n; i++)
            check(ids[i] < t->m.vocab_size);
        size_t count;
        check(es_tokenizer_encode(ctx, t, (const char *)data, size, NULL, &count) == ES_OK &&
              count == n);
    } else {
        check(rc == ES_ERR_FORMAT);
        check(strncmp(es_errmsg(ctx), "text: byte ", 11) == 0);
        check(strchr(es_errmsg(ctx), '\n') == NULL);
    }
    es_context_free(ctx);
    return 0;
}
