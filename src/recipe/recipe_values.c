/* What both recipe readers fill the recipe with: owned strings, and the
 * filter both processor.filter functions share (recipe_internal.h). */
#include "recipe/recipe_internal.h"

#include <stdlib.h>
#include <string.h>

int es_recipe_keep(ry_doc *d, es_recipe *r, const char *s, const char **out)
{
    *out = NULL;
    if (!s)
        return ES_OK;
    char *copy = r->n_strings < sizeof r->strings / sizeof r->strings[0] ? strdup(s) : NULL;
    if (!copy)
        return es_fail(d->ctx, ES_ERR_NOMEM, "%s: out of memory", d->path);
    r->strings[r->n_strings++] = copy;
    *out = copy;
    return ES_OK;
}

int es_recipe_filter(ry_doc *d, yaml_node_t *map, es_cost_model *m)
{
    uint64_t tmin, tmax;
    int rc = ry_number(d, map, "max_length", 10240, &m->max_length);
    if (rc == ES_OK)
        rc = ry_number(d, map, "min_length", 10, &m->min_length);
    if (rc == ES_OK)
        rc = ry_whole(d, map, "token_max_length", UINT32_MAX, 200, &tmax);
    if (rc == ES_OK)
        rc = ry_whole(d, map, "token_min_length", UINT32_MAX, 1, &tmin);
    if (rc == ES_OK)
        rc = ry_number(d, map, "min_output_input_ratio", 0.0005, &m->min_output_input_ratio);
    if (rc == ES_OK)
        rc = ry_number(d, map, "max_output_input_ratio", 1, &m->max_output_input_ratio);
    if (rc == ES_OK) {
        m->token_max_length = (uint32_t)tmax;
        m->token_min_length = (uint32_t)tmin;
    }
    return rc;
}
