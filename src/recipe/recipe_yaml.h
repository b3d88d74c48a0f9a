/* A training recipe's yaml as libyaml reads it, with hyperpyyaml's references
 * resolved on the way: `!ref <name>` is the top-level value `name` (a dotted
 * `<a.b>` goes into mappings), a string of several references is substituted
 * and, when arithmetic, evaluated; `!new:`, `!name:` and `!apply:` nodes stay
 * the mappings and sequences they are written as (their tag names the
 * function). Overrides (`--set NAME=VALUE`) replace top-level values before
 * anything resolves, as hyperpyyaml's `overrides` do.
 *
 * Every accessor reports a problem as one line "FILE:LINE: WHAT: problem" in
 * the document's context (ES_ERR_FORMAT). */
#ifndef ES_RECIPE_YAML_H
#define ES_RECIPE_YAML_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "core/context.h"

typedef struct ry_extra ry_extra; /* nodes made here: overrides, evaluated references */

typedef struct ry_doc {
    yaml_document_t doc;
    int loaded;
    const char *path;
    es_context *ctx;
    ry_extra *extra;
    char **set_names;     /* overrides: top-level name -> node */
    yaml_node_t **set_nodes;
    size_t n_sets;
} ry_doc;

/* Parses text[0..len) (the file at path, for messages). ES_ERR_FORMAT with
 * libyaml's problem and line; a document whose root is not a mapping too. */
int ry_load(es_context *ctx, ry_doc *d, const char *path, const char *text, size_t len);
void ry_free(ry_doc *d);

/* An override "NAME=VALUE" of a top-level NAME the document has; VALUE is a
 * plain scalar. ES_ERR_USAGE otherwise. */
int ry_set(ry_doc *d, const char *assignment);

/* The top-level value `name` (an override first), resolved; NULL when absent. */
int ry_top(ry_doc *d, const char *name, yaml_node_t **out);

/* n with its references followed (n itself when it has none). */
int ry_resolve(ry_doc *d, yaml_node_t *n, yaml_node_t **out);

/* The resolved value of `key` in mapping `map`; *out NULL when absent. */
int ry_key(ry_doc *d, yaml_node_t *map, const char *key, yaml_node_t **out);

/* The `!ref <name>` a mapping's key holds before resolving ("qwen_pretrain_path"),
 * copied into buf; "" when the value is not a single reference. */
void ry_ref_name(ry_doc *d, yaml_node_t *map, const char *key, char *buf, size_t size);

/* The function a `!name:`/`!new:`/`!apply:` node calls ("a.b.filter"), or NULL. */
const char *ry_function(const yaml_node_t *n);
/* Its last dotted part ("filter"), or NULL. */
const char *ry_function_name(const yaml_node_t *n);

unsigned long ry_line(const yaml_node_t *n);

/* Values of map[key] (resolved), or dflt when the key is absent. `what`
 * names the value in messages. A number is a plain int or float (true and
 * false are 1 and 0, as Python's bool is an int); a whole number also fits
 * [0, max]. A string is any scalar (NULL for null). */
int ry_number(ry_doc *d, yaml_node_t *map, const char *key, double dflt, double *out);
int ry_whole(ry_doc *d, yaml_node_t *map, const char *key, double max, uint64_t dflt,
             uint64_t *out);
int ry_bool(ry_doc *d, yaml_node_t *map, const char *key, int dflt, int *out);
int ry_string(ry_doc *d, yaml_node_t *map, const char *key, const char *dflt, const char **out);

/* A scalar's text, or NULL for null / a non-scalar. */
const char *ry_scalar(const yaml_node_t *n);

#endif
