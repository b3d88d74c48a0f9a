/* Key lists (one key per line, for .npy rows) and Kaldi utt2spk. Both take the
 * first whitespace-separated field of every non-blank line, so a Kaldi file
 * (utt2spk, wav.scp) also serves as a key list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_stream.h"
#include "core/grow.h"
#include "core/line_reader.h"
#include "validate/sources/emb_set.h"

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* The next field of line[*i..len): *start and its length. */
static size_t field(const char *line, size_t len, size_t *i, const char **start)
{
    while (*i < len && is_space(line[*i]))
        (*i)++;
    *start = line + *i;
    size_t b = *i;
    while (*i < len && !is_space(line[*i]))
        (*i)++;
    return *i - b;
}

typedef int (*line_fn)(es_context *ctx, const char *path, unsigned long lineno, const char *line,
                       size_t len, void *user);

static int each_line(es_context *ctx, const char *path, line_fn fn, void *user)
{
    es_line_reader lr;
    int e = es_line_reader_open(&lr, path);
    if (e)
        return es_fail(ctx, ES_ERR_IO, "%s: cannot open: %s", path, es_file_stream_strerror(e));
    int rc = ES_OK, got;
    while (rc == ES_OK && (got = es_line_reader_next(&lr)) > 0) {
        if (lr.has_nul)
            rc = es_fail(ctx, ES_ERR_FORMAT, "%s: line %lu: NUL byte; not a text file", path, lr.lineno);
        else
            rc = fn(ctx, path, lr.lineno, lr.line, lr.len, user);
    }
    if (rc == ES_OK && got < 0)
        rc = es_line_reader_fail(ctx, &lr, path);
    es_line_reader_close(&lr);
    return rc;
}

/* The file's size in bytes, 0 when it cannot be had: for sizing maps. */
static uint64_t file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

typedef struct keys_run {
    es_emb_set *set;
    size_t n_rows, row_len, next;
} keys_run;

static int on_key(es_context *ctx, const char *path, unsigned long lineno, const char *line,
                  size_t len, void *user)
{
    keys_run *k = user;
    size_t i = 0;
    const char *key;
    size_t klen = field(line, len, &i, &key);
    if (!klen)
        return ES_OK;
    if (k->next == k->n_rows)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: line %lu: more keys than the %zu rows of %s", path,
                       lineno, k->n_rows, k->set->name);
    char shown[128];
    int rc = es_emb_set_try_add(k->set, key, klen, k->next * k->row_len, (uint32_t)k->row_len);
    if (rc == ES_ERR_FORMAT)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: line %lu: key '%s' appears twice", path, lineno,
                       es_printable(shown, sizeof shown, key, klen));
    if (rc != ES_OK)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    k->next++;
    return ES_OK;
}

int es_key_list_read(es_context *ctx, const char *path, es_emb_set *set, size_t n_rows,
                     size_t row_len)
{
    keys_run k = {set, n_rows, row_len, 0};
    /* one key a row: the index sized once, not rehashed as it grows (for no
     * more keys than the file has room for: a key and its newline) */
    uint64_t room = file_bytes(path) / 2;
    size_t expect = room < n_rows ? (size_t)room : n_rows;
    if (es_strmap_reserve(&set->index, set->n + expect) != 0)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    int rc = each_line(ctx, path, on_key, &k);
    if (rc == ES_OK && k.next != n_rows)
        rc = es_fail(ctx, ES_ERR_FORMAT, "%s: %zu keys for the %zu rows of %s", path, k.next, n_rows,
                     set->name);
    return rc;
}

static int on_utt2spk(es_context *ctx, const char *path, unsigned long lineno, const char *line,
                      size_t len, void *user)
{
    es_utt2spk *u = user;
    size_t i = 0;
    const char *utt, *spk;
    size_t ulen = field(line, len, &i, &utt);
    if (!ulen)
        return ES_OK;
    size_t slen = field(line, len, &i, &spk);
    char shown[128];
    if (!slen)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: line %lu: utterance '%s' has no speaker", path,
                       lineno, es_printable(shown, sizeof shown, utt, ulen));
    if (u->n == u->cap) {
        void *p = u->utts;
        if (es_grow(&p, &u->cap, u->cap + 1, sizeof *u->utts, 256))
            return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
        u->utts = p;
    }
    int existed;
    es_strmap_slot *slot = es_strmap_insert(&u->map, utt, ulen, &existed);
    if (!slot)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    if (existed)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: line %lu: utterance '%s' appears twice", path,
                       lineno, es_printable(shown, sizeof shown, utt, ulen));
    if (!(slot->value = es_arena_strndup(&u->strings, spk, slen)))
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    u->utts[u->n++] = slot->key; /* (each once: a second line for it is refused above) */
    return ES_OK;
}

int es_utt2spk_read(es_context *ctx, const char *path, es_utt2spk *out)
{
    memset(out, 0, sizeof *out);
    /* sized for a line of 32 bytes ("utt spk\n" is usually 20-40): one
     * rehash at most where lines are shorter, no great excess where longer */
    if (es_strmap_reserve(&out->map, (size_t)(file_bytes(path) / 32)) != 0)
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    int rc = each_line(ctx, path, on_utt2spk, out);
    if (rc != ES_OK)
        es_utt2spk_release(out);
    return rc;
}

void es_utt2spk_release(es_utt2spk *u)
{
    es_strmap_release(&u->map);
    es_arena_release(&u->strings);
    free(u->utts);
    memset(u, 0, sizeof *u);
}

const char *es_utt2spk_get(const es_utt2spk *u, const char *utt)
{
    const es_strmap_slot *s = es_strmap_get(&u->map, utt, strlen(utt));
    return s ? s->value : NULL;
}
