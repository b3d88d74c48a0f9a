/* es_plan_settings.build_progress in row passes (plan_internal.h). */
#include "plan_internal.h"

void es_plan_progress(const es_plan *p, unsigned pass, size_t part, size_t parts)
{
    if (!p->s.build_progress)
        return;
    size_t n = p->table->n;
    /* part/parts of a pass in rows; in double: n·part may pass 2^64 */
    size_t within = parts ? (size_t)((double)n * (double)part / (double)parts) : n;
    if (within > n)
        within = n;
    p->s.build_progress(p->s.build_progress_user, (size_t)pass * n + within,
                        (size_t)PLAN_PASSES * n);
}
