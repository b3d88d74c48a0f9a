/* The embedding set (emb_set.h): the container every source fills. It calls no
 * source; picking one by content is emb_registry.c's. */
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/prefault.h"
#include "validate/sources/emb_set.h"

const char *es_printable(char *out, size_t cap, const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && s[i] && k + 1 < cap; i++) {
        if (k + 4 >= cap && i + 1 < n && s[i + 1]) {
            memcpy(out + k, "...", 3);
            k += 3;
            break;
        }
        unsigned char c = (unsigned char)s[i];
        out[k++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[k] = '\0';
    return out;
}

es_emb_set *es_emb_set_new(const char *name)
{
    es_emb_set *s = calloc(1, sizeof *s);
    if (s && !(s->name = strdup(name))) {
        free(s);
        return NULL;
    }
    return s;
}

void es_emb_set_free(es_emb_set *s)
{
    if (!s)
        return;
    free(s->name);
    free(s->keys);
    free(s->spk);
    free(s->off);
    free(s->len);
    free(s->vals);
    free(s->absent);
    es_strmap_release(&s->index);
    es_arena_release(&s->strings);
    free(s);
}

ptrdiff_t es_emb_set_find(const es_emb_set *s, const char *key)
{
    const es_strmap_slot *slot = es_strmap_get(&s->index, key, strlen(key));
    return slot ? (ptrdiff_t)((uintptr_t)slot->value - 1) : -1;
}

int es_emb_set_push(es_emb_set *s, float v)
{
    if (s->max_vals && s->n_vals >= s->max_vals)
        return ES_ERR_NOMEM;
    if (s->lengths_only) {
        s->n_vals++;
        return ES_OK;
    }
    if (s->n_vals == s->cap_vals) {
        void *p = s->vals;
        if (es_grow(&p, &s->cap_vals, s->cap_vals + 1, sizeof *s->vals, 4096))
            return ES_ERR_NOMEM;
        s->vals = p;
    }
    s->vals[s->n_vals++] = v;
    return ES_OK;
}

int es_emb_set_reserve(es_emb_set *s, size_t extra)
{
    if (s->max_vals && (extra > s->max_vals || s->n_vals > s->max_vals - extra))
        return ES_ERR_NOMEM;
    if (s->cap_vals - s->n_vals >= extra)
        return ES_OK;
    void *p = s->vals;
    if (extra > SIZE_MAX - s->n_vals ||
        es_grow(&p, &s->cap_vals, s->n_vals + extra, sizeof *s->vals, 4096))
        return ES_ERR_NOMEM;
    s->vals = p;
    return ES_OK;
}

void es_emb_set_expect(es_emb_set *s, size_t n)
{
    if (n && !s->lengths_only && es_emb_set_reserve(s, n) == ES_OK)
        if (!s->no_huge)
            es_advise_huge(s->vals + s->n_vals, n * sizeof *s->vals);
}

/* keys, off and len share s->cap: each grows from it, which moves last. */
static int grow_entries(es_emb_set *s)
{
    size_t ck = s->cap, co = s->cap, cl = s->cap;
    void *keys = s->keys, *off = s->off, *len = s->len;
    int bad = es_grow(&keys, &ck, s->n + 1, sizeof *s->keys, 256);
    s->keys = keys;
    bad |= es_grow(&off, &co, s->n + 1, sizeof *s->off, 256);
    s->off = off;
    bad |= es_grow(&len, &cl, s->n + 1, sizeof *s->len, 256);
    s->len = len;
    if (bad)
        return ES_ERR_NOMEM;
    s->cap = ck;
    return ES_OK;
}

int es_emb_set_try_add(es_emb_set *s, const char *key, size_t klen, size_t off, uint32_t len)
{
    if (s->n == s->cap && grow_entries(s) != ES_OK)
        return ES_ERR_NOMEM;
    int existed;
    es_strmap_slot *slot = es_strmap_insert(&s->index, key, klen, &existed);
    if (!slot)
        return ES_ERR_NOMEM;
    if (existed)
        return ES_ERR_FORMAT;
    slot->value = (const void *)(uintptr_t)(s->n + 1);
    s->keys[s->n] = slot->key;
    s->off[s->n] = off;
    s->len[s->n] = len;
    s->n++;
    return ES_OK;
}

int es_emb_set_add(es_context *ctx, es_emb_set *s, const char *key, size_t klen, size_t off,
                   uint32_t len)
{
    int rc = es_emb_set_try_add(s, key, klen, off, len);
    char k[128];
    if (rc == ES_ERR_FORMAT)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: key '%s' appears twice", s->name,
                       es_printable(k, sizeof k, key, klen));
    return rc == ES_OK ? ES_OK : es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", s->name);
}

int es_emb_set_add_absent(es_emb_set *s, const char *key)
{
    if (s->n_absent == s->cap_absent) {
        void *p = s->absent;
        if (es_grow(&p, &s->cap_absent, s->cap_absent + 1, sizeof *s->absent, 64))
            return ES_ERR_NOMEM;
        s->absent = p;
    }
    const char *k = es_arena_strndup(&s->strings, key, strlen(key));
    if (!k)
        return ES_ERR_NOMEM;
    s->absent[s->n_absent++] = k;
    return ES_OK;
}
