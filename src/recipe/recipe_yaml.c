#include "recipe/recipe_yaml.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* References nest (a ref to a value holding a ref); deeper than this is a cycle. */
#define RY_MAX_DEPTH 32

struct ry_extra {
    yaml_node_t node;
    ry_extra *next;
};

static const char str_tag[] = "tag:yaml.org,2002:str";

unsigned long ry_line(const yaml_node_t *n)
{
    return n ? (unsigned long)n->start_mark.line + 1 : 0;
}

static int fail_at(ry_doc *d, const yaml_node_t *n, const char *what, const char *problem)
{
    return es_fail(d->ctx, ES_ERR_FORMAT, "%s:%lu: %s: %s", d->path, ry_line(n), what, problem);
}

int ry_load(es_context *ctx, ry_doc *d, const char *path, const char *text, size_t len)
{
    memset(d, 0, sizeof *d);
    d->ctx = ctx;
    d->path = path;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int ok = yaml_parser_load(&parser, &d->doc);
    int rc = ES_OK;
    if (!ok)
        rc = parser.error == YAML_MEMORY_ERROR
                 ? es_fail(ctx, ES_ERR_NOMEM, "%s: out of memory", path)
                 : es_fail(ctx, ES_ERR_FORMAT, "%s:%lu: not yaml: %s", path,
                           (unsigned long)(parser.problem_mark.line + 1),
                           parser.problem ? parser.problem : "unreadable");
    yaml_parser_delete(&parser);
    if (!ok)
        return rc;
    d->loaded = 1;
    yaml_node_t *root = yaml_document_get_root_node(&d->doc);
    if (!root || root->type != YAML_MAPPING_NODE)
        return es_fail(ctx, ES_ERR_FORMAT, "%s: not a recipe: the yaml is not a mapping of "
                                           "settings", path);
    return ES_OK;
}

void ry_free(ry_doc *d)
{
    if (d->loaded)
        yaml_document_delete(&d->doc);
    for (ry_extra *e = d->extra, *next; e; e = next) {
        next = e->next;
        free(e->node.data.scalar.value);
        free(e);
    }
    for (size_t i = 0; i < d->n_sets; i++)
        free(d->set_names[i]);
    free(d->set_names);
    free(d->set_nodes);
    memset(d, 0, sizeof *d);
}

/* A scalar made here (an override, an evaluated reference), freed with d:
 * plain (typed like one written in the file) or a string. */
static yaml_node_t *make_scalar(ry_doc *d, const char *text, size_t len, int plain,
                                const yaml_node_t *at)
{
    ry_extra *e = calloc(1, sizeof *e);
    char *v = malloc(len + 1);
    if (!e || !v) {
        free(e);
        free(v);
        es_fail(d->ctx, ES_ERR_NOMEM, "%s: out of memory", d->path);
        return NULL;
    }
    memcpy(v, text, len);
    v[len] = 0;
    e->node.type = YAML_SCALAR_NODE;
    e->node.tag = (yaml_char_t *)str_tag;
    e->node.data.scalar.value = (yaml_char_t *)v;
    e->node.data.scalar.length = len;
    e->node.data.scalar.style = plain ? YAML_PLAIN_SCALAR_STYLE : YAML_SINGLE_QUOTED_SCALAR_STYLE;
    if (at) {
        e->node.start_mark = at->start_mark;
        e->node.end_mark = at->end_mark;
    }
    e->next = d->extra;
    d->extra = e;
    return &e->node;
}

/* The raw (unresolved) value of key in a mapping, NULL when absent. */
static yaml_node_t *raw_key(ry_doc *d, yaml_node_t *map, const char *key, size_t klen)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&d->doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == klen &&
            memcmp(k->data.scalar.value, key, klen) == 0)
            return yaml_document_get_node(&d->doc, p->value);
    }
    return NULL;
}

static yaml_node_t *raw_top(ry_doc *d, const char *name, size_t len)
{
    for (size_t i = 0; i < d->n_sets; i++)
        if (strlen(d->set_names[i]) == len && memcmp(d->set_names[i], name, len) == 0)
            return d->set_nodes[i];
    return raw_key(d, yaml_document_get_root_node(&d->doc), name, len);
}

int ry_set(ry_doc *d, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return es_fail(d->ctx, ES_ERR_USAGE, "--set %s: not NAME=VALUE", assignment);
    size_t len = (size_t)(eq - assignment);
    yaml_node_t *was = raw_key(d, yaml_document_get_root_node(&d->doc), assignment, len);
    if (!was)
        return es_fail(d->ctx, ES_ERR_USAGE, "--set %s: %s has no top-level %.*s", assignment,
                       d->path, (int)len, assignment);
    char *name = strndup(assignment, len);
    char **names = realloc(d->set_names, (d->n_sets + 1) * sizeof *names);
    if (names)
        d->set_names = names;
    yaml_node_t **nodes = names ? realloc(d->set_nodes, (d->n_sets + 1) * sizeof *nodes) : NULL;
    if (nodes)
        d->set_nodes = nodes;
    yaml_node_t *v = name && nodes ? make_scalar(d, eq + 1, strlen(eq + 1), 1, was) : NULL;
    if (!v) {
        free(name);
        return es_fail(d->ctx, ES_ERR_NOMEM, "%s: out of memory", d->path);
    }
    /* first in the list: a later --set of the same name wins, as the last
     * override does */
    memmove(d->set_names + 1, d->set_names, d->n_sets * sizeof *names);
    memmove(d->set_nodes + 1, d->set_nodes, d->n_sets * sizeof *nodes);
    d->set_names[0] = name;
    d->set_nodes[0] = v;
    d->n_sets++;
    return ES_OK;
}

const char *ry_scalar(const yaml_node_t *n)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        return NULL;
    const char *v = (const char *)n->data.scalar.value;
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL")))
        return NULL;
    return v;
}

static int is_ref(const yaml_node_t *n)
{
    return n && n->tag && !strcmp((const char *)n->tag, "!ref") && n->type == YAML_SCALAR_NODE;
}

/* The node a reference path names: "a" or "a.b.c" (mapping keys below a). */
static int follow_path(ry_doc *d, const yaml_node_t *at, const char *name, size_t len, int depth,
                       yaml_node_t **out);
static int resolve_depth(ry_doc *d, yaml_node_t *n, int depth, yaml_node_t **out);

static int follow_path(ry_doc *d, const yaml_node_t *at, const char *name, size_t len, int depth,
                       yaml_node_t **out)
{
    const char *dot = memchr(name, '.', len);
    size_t head = dot ? (size_t)(dot - name) : len;
    yaml_node_t *n = raw_top(d, name, head);
    char what[160];
    snprintf(what, sizeof what, "!ref <%.*s>", (int)len, name);
    if (!n)
        return fail_at(d, at, what, "the recipe has no such top-level value");
    int rc = resolve_depth(d, n, depth + 1, &n);
    while (rc == ES_OK && dot) {
        const char *part = dot + 1;
        dot = memchr(part, '.', (size_t)(name + len - part));
        size_t plen = dot ? (size_t)(dot - part) : (size_t)(name + len - part);
        n = raw_key(d, n, part, plen);
        if (!n)
            return fail_at(d, at, what, "no such key");
        rc = resolve_depth(d, n, depth + 1, &n);
    }
    *out = n;
    return rc;
}

/* Arithmetic as hyperpyyaml evaluates a substituted reference string:
 * numbers, + - * / // % **, unary signs and parentheses. */
typedef struct calc {
    const char *s;
    int bad;
} calc;

static void skip_space(calc *c)
{
    while (isspace((unsigned char)*c->s))
        c->s++;
}

static double calc_expr(calc *c, int depth);

static double calc_atom(calc *c, int depth)
{
    skip_space(c);
    if (depth > RY_MAX_DEPTH) {
        c->bad = 1;
        return 0;
    }
    if (*c->s == '-' || *c->s == '+') {
        int neg = *c->s++ == '-';
        double v = calc_atom(c, depth + 1);
        return neg ? -v : v;
    }
    if (*c->s == '(') {
        c->s++;
        double v = calc_expr(c, depth + 1);
        skip_space(c);
        if (*c->s != ')')
            c->bad = 1;
        else
            c->s++;
        return v;
    }
    char *end;
    double v = strtod(c->s, &end);
    if (end == c->s || !isfinite(v))
        c->bad = 1;
    c->s = end;
    return v;
}

static double calc_power(calc *c, int depth)
{
    double v = calc_atom(c, depth);
    skip_space(c);
    if (c->s[0] == '*' && c->s[1] == '*') {
        c->s += 2;
        v = pow(v, calc_power(c, depth + 1));
    }
    return v;
}

static double calc_term(calc *c, int depth)
{
    double v = calc_power(c, depth);
    for (;;) {
        skip_space(c);
        if (c->s[0] == '*' && c->s[1] != '*') {
            c->s++;
            v *= calc_power(c, depth);
        } else if (c->s[0] == '/' && c->s[1] == '/') {
            c->s += 2;
            double r = calc_power(c, depth);
            v = r == 0 ? (c->bad = 1, 0) : floor(v / r);
        } else if (c->s[0] == '/') {
            c->s++;
            double r = calc_power(c, depth);
            v = r == 0 ? (c->bad = 1, 0) : v / r;
        } else if (c->s[0] == '%') {
            c->s++;
            double r = calc_power(c, depth);
            v = r == 0 ? (c->bad = 1, 0) : v - r * floor(v / r);
        } else {
            return v;
        }
    }
}

static double calc_expr(calc *c, int depth)
{
    double v = calc_term(c, depth);
    for (;;) {
        skip_space(c);
        if (*c->s == '+') {
            c->s++;
            v += calc_term(c, depth);
        } else if (*c->s == '-') {
            c->s++;
            v -= calc_term(c, depth);
        } else {
            return v;
        }
    }
}

/* `!ref` text: one "<path>" is that node; anything else is the text with
 * each <path> replaced by its scalar, then evaluated when arithmetic. */
static int resolve_ref(ry_doc *d, yaml_node_t *n, int depth, yaml_node_t **out)
{
    const char *v = (const char *)n->data.scalar.value;
    while (isspace((unsigned char)*v))
        v++;
    size_t len = strlen(v);
    while (len && isspace((unsigned char)v[len - 1]))
        len--;
    const char *close = memchr(v, '>', len);
    if (len > 2 && v[0] == '<' && close == v + len - 1)
        return follow_path(d, n, v + 1, len - 2, depth, out);
    char text[1024];
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        const char *end = v[i] == '<' ? memchr(v + i, '>', len - i) : NULL;
        if (!end) {
            if (w + 1 >= sizeof text)
                return fail_at(d, n, "!ref", "too long");
            text[w++] = v[i++];
            continue;
        }
        yaml_node_t *t;
        int rc = follow_path(d, n, v + i + 1, (size_t)(end - v - i - 1), depth, &t);
        if (rc != ES_OK)
            return rc;
        const char *s = ry_scalar(t);
        if (!s && t->type != YAML_SCALAR_NODE)
            return fail_at(d, n, "!ref", "a reference inside a string names a mapping or list");
        size_t sl = s ? strlen(s) : 4;
        if (w + sl >= sizeof text)
            return fail_at(d, n, "!ref", "too long");
        memcpy(text + w, s ? s : "None", sl);
        w += sl;
        i = (size_t)(end - v) + 1;
    }
    text[w] = 0;
    calc c = {text, 0};
    double x = calc_expr(&c, 0);
    skip_space(&c);
    if (!c.bad && !*c.s) {
        char num[64];
        int k = x == floor(x) && fabs(x) < 1e15 ? snprintf(num, sizeof num, "%.0f", x)
                                                 : snprintf(num, sizeof num, "%.17g", x);
        *out = make_scalar(d, num, (size_t)k, 1, n);
    } else {
        *out = make_scalar(d, text, w, 0, n);
    }
    return *out ? ES_OK : ES_ERR_NOMEM;
}

static int resolve_depth(ry_doc *d, yaml_node_t *n, int depth, yaml_node_t **out)
{
    if (depth > RY_MAX_DEPTH)
        return fail_at(d, n, "!ref", "references nest too deep (a cycle?)");
    if (!is_ref(n)) {
        *out = n;
        return ES_OK;
    }
    return resolve_ref(d, n, depth, out);
}

int ry_resolve(ry_doc *d, yaml_node_t *n, yaml_node_t **out)
{
    return resolve_depth(d, n, 0, out);
}

int ry_top(ry_doc *d, const char *name, yaml_node_t **out)
{
    yaml_node_t *n = raw_top(d, name, strlen(name));
    *out = NULL;
    return n ? ry_resolve(d, n, out) : ES_OK;
}

int ry_key(ry_doc *d, yaml_node_t *map, const char *key, yaml_node_t **out)
{
    yaml_node_t *n = raw_key(d, map, key, strlen(key));
    *out = NULL;
    return n ? ry_resolve(d, n, out) : ES_OK;
}

void ry_ref_name(ry_doc *d, yaml_node_t *map, const char *key, char *buf, size_t size)
{
    yaml_node_t *n = raw_key(d, map, key, strlen(key));
    buf[0] = 0;
    if (!is_ref(n))
        return;
    const char *v = (const char *)n->data.scalar.value;
    const char *a = strchr(v, '<'), *b = a ? strchr(a, '>') : NULL;
    if (a && b && !strchr(b + 1, '<'))
        snprintf(buf, size, "%.*s", (int)(b - a - 1), a + 1);
}

const char *ry_function(const yaml_node_t *n)
{
    const char *t = n && n->tag ? (const char *)n->tag : "";
    static const char *const kinds[] = {"!name:", "!new:", "!apply:"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strncmp(t, kinds[i], strlen(kinds[i])))
            return t + strlen(kinds[i]);
    return NULL;
}

const char *ry_function_name(const yaml_node_t *n)
{
    const char *f = ry_function(n);
    const char *dot = f ? strrchr(f, '.') : NULL;
    return dot ? dot + 1 : f;
}

/* "filter.max_length" for messages: the function's name and the key. */
static void what_of(char *buf, size_t size, const yaml_node_t *map, const char *key)
{
    const char *f = ry_function_name(map);
    snprintf(buf, size, "%s%s%s", f ? f : "", f ? "." : "", key);
}

static int plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int bool_text(const char *v, int *out)
{
    static const char *const yes[] = {"true", "True", "TRUE"}, *const no[] = {"false", "False", "FALSE"};
    for (int i = 0; i < 3; i++) {
        if (!strcmp(v, yes[i]))
            return *out = 1, 1;
        if (!strcmp(v, no[i]))
            return *out = 0, 1;
    }
    return 0;
}

int ry_number(ry_doc *d, yaml_node_t *map, const char *key, double dflt, double *out)
{
    yaml_node_t *n;
    int rc = ry_key(d, map, key, &n);
    if (rc != ES_OK)
        return rc;
    if (!n) {
        *out = dflt;
        return ES_OK;
    }
    char what[160];
    what_of(what, sizeof what, map, key);
    const char *v = ry_scalar(n);
    int b;
    if (v && plain(n) && bool_text(v, &b)) {
        *out = b;
        return ES_OK;
    }
    char *end = NULL;
    double x = v && plain(n) ? strtod(v, &end) : 0;
    if (!v || !plain(n) || end == v || *end || !isfinite(x))
        return fail_at(d, n, what, "not a number");
    *out = x;
    return ES_OK;
}

int ry_whole(ry_doc *d, yaml_node_t *map, const char *key, double max, uint64_t dflt,
             uint64_t *out)
{
    double x;
    int rc = ry_number(d, map, key, (double)dflt, &x);
    if (rc != ES_OK)
        return rc;
    if (x < 0 || x > max || x != floor(x)) {
        yaml_node_t *n;
        ry_key(d, map, key, &n);
        char what[160], problem[96];
        what_of(what, sizeof what, map, key);
        snprintf(problem, sizeof problem, "not a whole number from 0 to %.0f", max);
        return fail_at(d, n, what, problem);
    }
    *out = (uint64_t)x;
    return ES_OK;
}

int ry_bool(ry_doc *d, yaml_node_t *map, const char *key, int dflt, int *out)
{
    yaml_node_t *n;
    int rc = ry_key(d, map, key, &n);
    if (rc != ES_OK || !n) {
        *out = dflt;
        return rc;
    }
    const char *v = ry_scalar(n);
    if (v && plain(n) && bool_text(v, out))
        return ES_OK;
    char what[160];
    what_of(what, sizeof what, map, key);
    return fail_at(d, n, what, "not true or false");
}

int ry_string(ry_doc *d, yaml_node_t *map, const char *key, const char *dflt, const char **out)
{
    yaml_node_t *n;
    int rc = ry_key(d, map, key, &n);
    if (rc != ES_OK || !n) {
        *out = dflt;
        return rc;
    }
    if (n->type != YAML_SCALAR_NODE) {
        char what[160];
        what_of(what, sizeof what, map, key);
        return fail_at(d, n, what, "not a string");
    }
    *out = ry_scalar(n);
    return ES_OK;
}
