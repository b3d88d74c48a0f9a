/* The recipe object (equishard.h, es_recipe_read) and the readers of the two
 * recipe kinds, each filling it from its own part of the yaml. */
#ifndef ES_RECIPE_INTERNAL_H
#define ES_RECIPE_INTERNAL_H

#include "recipe/recipe_yaml.h"

struct es_recipe {
    es_recipe_info info;
    char *strings[8]; /* owned copies the info's strings point at */
    size_t n_strings;
    char note[512];
};

/* A copy of s (may be NULL) owned by r. ES_ERR_NOMEM via d's context. */
int es_recipe_keep(ry_doc *d, es_recipe *r, const char *s, const char **out);

/* CosyVoice: the stages of `pipeline` (data_pipeline, resolved). */
int es_recipe_cosyvoice(ry_doc *d, yaml_node_t *pipeline, es_recipe *r);
/* WeNet: dataset_conf (resolved) and the top-level tokenizer settings. */
int es_recipe_wenet(ry_doc *d, yaml_node_t *conf, es_recipe *r);

/* The processors' filter defaults, the same in CosyVoice's and WeNet's
 * processor.filter: what a key the recipe leaves out runs with. */
int es_recipe_filter(ry_doc *d, yaml_node_t *map, es_cost_model *m);

#endif
