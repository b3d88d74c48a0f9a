/* Added tokens: the tokenizer's own (tokenizer_config.json's
 * added_tokens_decoder, tokenizer.json's added_tokens) and the recipe's
 * specials, which CosyVoice2Tokenizer / CosyVoice3Tokenizer register with
 * add_special_tokens after loading (cosyvoice/tokenizer/tokenizer.py). They are
 * cut out of the raw text before anything else, leftmost-longest, as HF's
 * aho-corasick split does; every one here is normalized=false, so it is
 * matched on the text as given, before NFC. */
#include "text/tok_model.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/grow.h"

/* CosyVoice3Tokenizer's list: eos_token, then additional_special_tokens, in the
 * order add_special_tokens registers them. CosyVoice2Tokenizer's is the first
 * 20 (the fixture's added_tokens_cosyvoice{2,3}.tsv list the ids). */
static const char *const cosyvoice_specials[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|endofprompt|>", "[breath]", "<strong>",
    "</strong>", "[noise]", "[laughter]", "[cough]", "[clucking]", "[accent]", "[quick_breath]",
    "<laughter>", "</laughter>", "[hissing]", "[sigh]", "[vocalized-noise]", "[lipsmack]",
    "[mn]", "<|endofsystem|>", "[AA]", "[AA0]", "[AA1]", "[AA2]", "[AE]", "[AE0]", "[AE1]",
    "[AE2]", "[AH]", "[AH0]", "[AH1]", "[AH2]", "[AO]", "[AO0]", "[AO1]", "[AO2]", "[AW]",
    "[AW0]", "[AW1]", "[AW2]", "[AY]", "[AY0]", "[AY1]", "[AY2]", "[B]", "[CH]", "[D]", "[DH]",
    "[EH]", "[EH0]", "[EH1]", "[EH2]", "[ER]", "[ER0]", "[ER1]", "[ER2]", "[EY]", "[EY0]",
    "[EY1]", "[EY2]", "[F]", "[G]", "[HH]", "[IH]", "[IH0]", "[IH1]", "[IH2]", "[IY]", "[IY0]",
    "[IY1]", "[IY2]", "[JH]", "[K]", "[L]", "[M]", "[N]", "[NG]", "[OW]", "[OW0]", "[OW1]",
    "[OW2]", "[OY]", "[OY0]", "[OY1]", "[OY2]", "[P]", "[R]", "[S]", "[SH]", "[T]", "[TH]",
    "[UH]", "[UH0]", "[UH1]", "[UH2]", "[UW]", "[UW0]", "[UW1]", "[UW2]", "[V]", "[W]", "[Y]",
    "[Z]", "[ZH]", "[a]", "[ai]", "[an]", "[ang]", "[ao]", "[b]", "[c]", "[ch]", "[d]", "[e]",
    "[ei]", "[en]", "[eng]", "[f]", "[g]", "[h]", "[i]", "[ian]", "[in]", "[ing]", "[iu]",
    "[ià]", "[iàn]", "[iàng]", "[iào]", "[iá]", "[ián]", "[iáng]", "[iáo]", "[iè]", "[ié]",
    "[iòng]", "[ióng]", "[iù]", "[iú]", "[iā]", "[iān]", "[iāng]", "[iāo]", "[iē]", "[iě]",
    "[iōng]", "[iū]", "[iǎ]", "[iǎn]", "[iǎng]", "[iǎo]", "[iǒng]", "[iǔ]", "[j]", "[k]", "[l]",
    "[m]", "[n]", "[o]", "[ong]", "[ou]", "[p]", "[q]", "[r]", "[s]", "[sh]", "[t]", "[u]",
    "[uang]", "[ue]", "[un]", "[uo]", "[uà]", "[uài]", "[uàn]", "[uàng]", "[uá]", "[uái]",
    "[uán]", "[uáng]", "[uè]", "[ué]", "[uì]", "[uí]", "[uò]", "[uó]", "[uā]", "[uāi]", "[uān]",
    "[uāng]", "[uē]", "[uě]", "[uī]", "[uō]", "[uǎ]", "[uǎi]", "[uǎn]", "[uǎng]", "[uǐ]",
    "[uǒ]", "[vè]", "[w]", "[x]", "[y]", "[z]", "[zh]", "[à]", "[ài]", "[àn]", "[àng]", "[ào]",
    "[á]", "[ái]", "[án]", "[áng]", "[áo]", "[è]", "[èi]", "[èn]", "[èng]", "[èr]", "[é]",
    "[éi]", "[én]", "[éng]", "[ér]", "[ì]", "[ìn]", "[ìng]", "[í]", "[ín]", "[íng]", "[ò]",
    "[òng]", "[òu]", "[ó]", "[óng]", "[óu]", "[ù]", "[ùn]", "[ú]", "[ún]", "[ā]", "[āi]",
    "[ān]", "[āng]", "[āo]", "[ē]", "[ēi]", "[ēn]", "[ēng]", "[ě]", "[ěi]", "[ěn]", "[ěng]",
    "[ěr]", "[ī]", "[īn]", "[īng]", "[ō]", "[ōng]", "[ōu]", "[ū]", "[ūn]", "[ǎ]", "[ǎi]",
    "[ǎn]", "[ǎng]", "[ǎo]", "[ǐ]", "[ǐn]", "[ǐng]", "[ǒ]", "[ǒng]", "[ǒu]", "[ǔ]", "[ǔn]",
    "[ǘ]", "[ǚ]", "[ǜ]",
};
enum { N_COSYVOICE3 = sizeof cosyvoice_specials / sizeof cosyvoice_specials[0], N_COSYVOICE2 = 20 };

int tok_added_add(tok_added *a, const char *s, size_t n, uint32_t id)
{
    if (n == 0 || n > UINT32_MAX)
        return ES_ERR_FORMAT;
    void *tok = a->tok;
    if (es_grow(&tok, &a->cap, a->n + 1, sizeof *a->tok, 32) != 0)
        return ES_ERR_NOMEM;
    a->tok = tok;
    char *copy = es_arena_strndup(&a->strs, s, n);
    if (!copy)
        return ES_ERR_NOMEM;
    a->tok[a->n++] = (tok_added_token){copy, (uint32_t)n, id};
    return ES_OK;
}

static int by_first_then_longest(const void *pa, const void *pb)
{
    const tok_added_token *a = pa, *b = pb;
    unsigned ca = (unsigned char)a->s[0], cb = (unsigned char)b->s[0];
    if (ca != cb)
        return ca < cb ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return memcmp(a->s, b->s, a->len);
}

void tok_added_finish(tok_added *a)
{
    if (a->n)
        qsort(a->tok, a->n, sizeof *a->tok, by_first_then_longest);
    size_t i = 0;
    for (unsigned b = 0; b <= 256; b++) {
        while (i < a->n && (unsigned char)a->tok[i].s[0] < b)
            i++;
        a->first[b] = (uint32_t)i;
    }
}

const tok_added_token *tok_added_match(const tok_added *a, const char *text, size_t n, size_t i)
{
    unsigned b = (unsigned char)text[i];
    for (uint32_t k = a->first[b]; k < a->first[b + 1]; k++) {
        const tok_added_token *t = &a->tok[k];
        if (t->len <= n - i && memcmp(text + i, t->s, t->len) == 0)
            return t; /* longest first */
    }
    return NULL;
}

uint32_t tok_added_find(const tok_added *a, const char *s, size_t n)
{
    for (size_t k = 0; k < a->n; k++)
        if (a->tok[k].len == n && memcmp(a->tok[k].s, s, n) == 0)
            return a->tok[k].id;
    return TOK_NONE;
}

void tok_added_release(tok_added *a)
{
    free(a->tok);
    es_arena_release(&a->strs);
    memset(a, 0, sizeof *a);
}

uint64_t tok_specials_digest(void)
{
    uint64_t h = N_COSYVOICE3;
    for (size_t i = 0; i < N_COSYVOICE3; i++)
        h = h * 0x100000001b3ull ^ XXH3_64bits(cosyvoice_specials[i], strlen(cosyvoice_specials[i]));
    return h;
}

int tok_specials_resolve(tok_model *m, const tok_vocab *v)
{
    free(m->special_vocab_id);
    m->special_vocab_id = malloc(N_COSYVOICE3 * sizeof *m->special_vocab_id);
    if (!m->special_vocab_id)
        return ES_ERR_NOMEM;
    m->n_special = N_COSYVOICE3;
    for (size_t i = 0; i < N_COSYVOICE3; i++)
        m->special_vocab_id[i] = tok_vocab_get(v, cosyvoice_specials[i], strlen(cosyvoice_specials[i]));
    return ES_OK;
}

static int in_vocab(const tok_model *m, uint32_t id)
{
    return id < m->n_vocab_ids && (m->vocab_ids[id / 64] >> (id % 64) & 1);
}

/* HF's AddedVocabulary.add_tokens: a token already added keeps its id, one in
 * the model's vocab gets that id, a new one gets max(vocab size, largest added
 * id + 1). */
static int add_special(tok_model *m, size_t which)
{
    const char *s = cosyvoice_specials[which];
    size_t n = strlen(s);
    if (tok_added_find(&m->added, s, n) != TOK_NONE)
        return ES_OK;
    uint32_t id = which < m->n_special ? m->special_vocab_id[which] : TOK_NONE;
    if (id == TOK_NONE) {
        size_t next = m->n_vocab;
        for (size_t k = 0; k < m->added.n; k++)
            if (m->added.tok[k].id >= next)
                next = (size_t)m->added.tok[k].id + 1;
        if (next >= TOK_NONE)
            return ES_ERR_FORMAT;
        id = (uint32_t)next;
    }
    return tok_added_add(&m->added, s, n, id);
}

int tok_add_specials(es_context *ctx, tok_model *m, const char *which)
{
    size_t count;
    if (strcmp(which, "cosyvoice2") == 0)
        count = N_COSYVOICE2, m->specials = "cosyvoice2";
    else if (strcmp(which, "cosyvoice3") == 0)
        count = N_COSYVOICE3, m->specials = "cosyvoice3";
    else if (strcmp(which, "none") == 0)
        count = 0, m->specials = "none";
    else
        return es_fail(ctx, ES_ERR_USAGE,
                       "specials '%s': expected cosyvoice2, cosyvoice3 or none", which);
    for (size_t i = 0; i < count; i++) {
        int rc = add_special(m, i);
        if (rc != ES_OK)
            return es_fail(ctx, rc, "%s: adding special token %s: %s", m->path ? m->path : "",
                           cosyvoice_specials[i], rc == ES_ERR_NOMEM ? "out of memory" : "no id left");
    }
    tok_added_finish(&m->added);
    /* len(tokenizer): the vocab's ids and every added id outside them */
    m->vocab_size = m->n_vocab;
    for (size_t i = 0; i < m->added.n; i++)
        m->vocab_size += !in_vocab(m, m->added.tok[i].id);
    return ES_OK;
}
