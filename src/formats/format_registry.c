/* The shard formats equishard knows: the one file that names them. */
#include "formats/format.h"
#include "formats/reshard_job.h"
#include "plan/plan_internal.h"

#include <string.h>

extern const es_format_ops es_format_tar;     /* formats/tar/tar_format.c */
extern const es_format_ops es_format_parquet; /* formats/parquet/parquet_format.c */

/* Adding a format: its folder under src/formats/ with its table, and a line here. */
static const es_format_ops *const formats[] = {
    &es_format_tar,
    &es_format_parquet,
};

#define N_FORMATS (sizeof formats / sizeof formats[0])

const es_format_ops *es_format_for(const uint8_t *head, size_t n)
{
    const es_format_ops *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; i < N_FORMATS; i++) {
        int b = formats[i]->bid(head, n);
        if (b > best_bid) {
            best_bid = b;
            best = formats[i];
        }
    }
    return best;
}

const es_format_ops *es_format_for_reshard(es_reshard_format f)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (formats[i]->reshard_copy && formats[i]->reshard_format == f)
            return formats[i];
    return formats[0];
}

void es_reshard_shard_name(const es_plan *p, uint32_t i, char *buf, size_t len)
{
    const plan_reshard *r = p->reshard;
    es_format_for_reshard(r->format)->reshard_shard_name(r->compress, i, buf, len);
}

size_t es_format_count(void)
{
    return N_FORMATS;
}

const es_format_ops *es_format_at(size_t i)
{
    return i < N_FORMATS ? formats[i] : NULL;
}

const es_format_ops *es_format_named(const char *name)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (strcmp(formats[i]->name, name) == 0)
            return formats[i];
    return NULL;
}
