/* What every form of `equishard plan` ends with (plan.h): the summary on
 * stdout and the exit code --max-imbalance sets, and the report of stale
 * folders removed from OUTDIR. Apart from the one-process command
 * (cmd_plan.c), which hands over to the MPI form (cmd_plan_mpi.c) and to
 * --resume-from (plan_resume.c): all three call down to here. */
#include <stdio.h>

#include "plan.h"

static void print_summary(const es_plan *p, const es_plan_settings *s, const char *outdir)
{
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    printf("%s mode: %u ranks x %u workers, %llu utterances planned, %llu filtered\n",
           es_enum_name(ES_ENUM_PLAN_MODE, s->mode),
           s->world_size, s->workers,
           (unsigned long long)m.kept, (unsigned long long)m.filtered);
    if (*m.token_note)
        printf("note: %s\n", m.token_note);
    printf("%6s %14s %11s %12s %8s\n", "rank", "cost", "utterances", "frames", "batches");
    uint32_t shown = s->world_size <= 16 ? s->world_size : 16;
    for (uint32_t r = 0; r < shown; r++) {
        es_plan_load l;
        es_plan_rank_load(p, r, -1, &l);
        printf("%6u %14.1f %11llu %12llu %8llu\n", r, l.cost, (unsigned long long)l.utterances,
               (unsigned long long)l.frames, (unsigned long long)l.batches);
    }
    if (shown < s->world_size)
        printf("   ... %u more ranks in %s/plan.json\n", s->world_size - shown, outdir);
    printf("imbalance %.4f%%, gap to lower bound %.4f%%, batch spread %llu, retention %.2f%%",
           100 * m.imbalance, 100 * m.lower_bound_gap, (unsigned long long)m.batch_spread,
           100 * m.retention);
    if (s->mode == ES_PLAN_BATCH)
        printf(", step straggler %.4f, %llu %s remainder batch(es)", m.step_straggler,
               (unsigned long long)m.remainder_batches,
               s->remainder == ES_REMAINDER_PAD ? "padded" : s->remainder == ES_REMAINDER_DROP ? "dropped" : "carried");
    es_plan_reshard_info ri;
    if (es_plan_reshard_info_get(p, &ri) == ES_OK)
        printf("\n%u shards (%u a worker), cost %.1f .. %.1f (max deviation %.4f%%); worst "
               "rank/worker deviation over %u loader permutations %.4f%%",
               ri.shards, ri.shards_per_worker, ri.shard_cost_min, ri.shard_cost_max,
               100 * ri.shard_max_deviation, ri.permutations, 100 * ri.permutation_max_deviation);
    printf(" [%s]\nwrote %s\n", m.method, outdir);
}

void plan_report_stale(void *user, const char *path, long pid)
{
    (void)user;
    cli_error("removed %s, left by an interrupted run (pid %ld)", path, pid);
}

int plan_report(const es_plan *p, const plan_args *a)
{
    print_summary(p, &a->plan, a->outdir);
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    if (a->max_imbalance >= 0 && m.imbalance > a->max_imbalance) {
        cli_error("plan imbalance %.4f%% exceeds --max-imbalance %.4f%%", 100 * m.imbalance,
                  100 * a->max_imbalance);
        return EXIT_PROBLEMS;
    }
    return EXIT_OK;
}
