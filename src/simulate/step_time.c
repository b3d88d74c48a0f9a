/* Predicted step time of the replayed loader (docs/COST_MODEL.md): with a calibrated cost
 * model, what each rank's step takes in seconds and how long the others wait.
 *
 * A rank's batches come from its workers in turn (the DataLoader's order: one
 * from each unfinished worker per round, as round_robin in simulate.c counts
 * them); step j of every rank is trained together, so a synchronous trainer's
 * step takes the slowest rank's time. Only the first `steps` (the join cut)
 * are trained by all. A batch's time is es_cost_batch of its padded terms as
 * the stream knows them (size, longest frames); text and speech-token maxima
 * are not tracked by the stream, so those terms count 0 here. */
#include "simulate/simulate_internal.h"
#include "loader/stream.h"

/* The next batch of a rank in DataLoader order: advances cur (round, worker). */
static size_t next_batch(const es_loader_batches *b, uint32_t W, uint64_t *cur, uint32_t *worker)
{
    for (;;) {
        uint64_t round = cur[0];
        uint32_t w = (uint32_t)cur[1];
        if (++cur[1] == W)
            cur[0]++, cur[1] = 0;
        if (b[w].n > round) {
            *worker = w;
            return (size_t)round;
        }
    }
}

void es_sim_step_times(const es_simulate_result *r, sim_epoch *ep, const es_loader_batches *ub,
                       uint64_t steps)
{
    uint32_t K = r->s.world_size, W = r->s.workers;
    for (size_t i = 0; i < 2 * (size_t)K; i++)
        ep->st_cursor[i] = 0;
    double straggler = 0;
    for (uint64_t j = 0; j < steps; j++) {
        double max = 0, sum = 0;
        for (uint32_t k = 0; k < K; k++) {
            const es_loader_batches *b = &ub[(size_t)k * W];
            uint32_t w = 0;
            size_t i = next_batch(b, W, &ep->st_cursor[2 * (size_t)k], &w);
            double n = b[w].count[i], longest = b[w].longest[i];
            double x[ES_TERM_COUNT] = {0};
            x[ES_TERM_FRAMES] = n * longest;
            x[ES_TERM_FRAMES_SQ] = n * longest * longest;
            x[ES_TERM_OVERHEAD] = n;
            x[ES_TERM_BATCH] = n > 0;
            double t = es_cost_batch(&r->s.model, x);
            ep->st_rank[k] += t;
            sum += t;
            max = t > max ? t : max;
        }
        straggler += sum > 0 ? max / (sum / K) : 1;
        ep->st_epoch += max;
        ep->st_ideal += sum / K;
    }
    ep->st_steps += (double)steps;
    ep->st_straggler += steps ? straggler / (double)steps : 0;
}

/* The expected value over trials (as es_sim_mean; this file calls nothing in
 * simulate.c, which calls it: tools/check_includes.py). */
static double per_trial(const es_simulate_result *r, double sum)
{
    return r->trials ? sum / r->trials : 0;
}

ES_API int es_simulate_step_time_info(const es_simulate_result *r, size_t e,
                                      es_simulate_step_time *out, double *rank_seconds)
{
    if (!r || !out || e >= r->n_epochs)
        return ES_ERR_USAGE;
    const sim_epoch *ep = &r->epochs[e];
    out->steps = per_trial(r, ep->st_steps);
    out->straggler = per_trial(r, ep->st_straggler);
    out->epoch_seconds = per_trial(r, ep->st_epoch);
    out->ideal_seconds = per_trial(r, ep->st_ideal);
    for (uint32_t k = 0; rank_seconds && k < r->s.world_size; k++)
        rank_seconds[k] = per_trial(r, ep->st_rank[k]);
    return ES_OK;
}
