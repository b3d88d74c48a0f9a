/* The synthetic corpus the plan benchmarks share (bench_plan.c in memory,
 * gen_costs.c as a FILE), so both measure the same data: log-normal durations
 * (median 5 s, sigma 0.75, clipped 1.1-35 s; 24 kHz), speakers of 20-419
 * utterances in order as make_parquet_list.py fills shards, about 14 text
 * characters a second. A fixed-seed xorshift64*: same sequence every run. */
#ifndef ES_BENCH_SYNTH_ROWS_H
#define ES_BENCH_SYNTH_ROWS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <equishard/equishard.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline double uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return ((rng_state * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

static inline double lognormal_seconds(void)
{
    double u1 = uniform() + 1e-12, u2 = uniform();
    double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
    double s = exp(log(5.0) + 0.75 * z);
    return s < 1.1 ? 1.1 : s > 35 ? 35 : s;
}

/* Before each utterance: moves to the next speaker when this one is used up. */
static inline void synth_next_utterance(size_t *speaker, size_t *left_in_speaker)
{
    if (*left_in_speaker == 0) {
        ++*speaker;
        *left_in_speaker = 20 + (size_t)(uniform() * 400);
    }
    --*left_in_speaker;
}

/* A measured-looking row of `sec` seconds (strings borrowed). */
static inline es_cost_row synth_row(const char *key, const char *shard, uint64_t pos,
                                    const char *spk, double sec)
{
    es_cost_row r = {key, shard, pos, 24000, 1, (uint64_t)(sec * 24000), (uint64_t)(sec * 48000),
                     (uint32_t)(sec * 14), 0, spk, ES_FLAG_AUDIO | ES_FLAG_TEXT, 0, 0};
    return r;
}

#endif
