/* `mpirun -np N equishard measure …` / `srun equishard measure …` (beyond one machine).
 *
 * Every rank reads the same lists into the same units (es_measure_job_new) and
 * measures its share of them; ranks 1..N-1 send their results as parts to rank
 * 0 (cli_mpi_measure, mpi_measure_job.c), which merges them in unit order into
 * exactly the table es_measure gives, writes it and reports as the one-process
 * command does.
 *
 * Failures: every step ends in the same collective status exchange
 * (cli_mpi_agree), so a failed rank never leaves the others waiting; the lowest
 * failing rank's message reaches rank 0, which prints it, and every rank returns
 * the same exit code. A shard that fails to measure is not a step failure: it
 * travels in the part, and rank 0's merge reports the first failed unit in list
 * order, as the one-process run does. */
#include <stdlib.h>

#include "measure.h"
#include "mpi_measure_job.h"

int measure_mpi(measure_args *a)
{
    cli_mpi m;
    if (cli_mpi_init(&m) != 0)
        return cli_fail("MPI_Init failed", ES_ERR_INTERNAL);
    cli_progress progress;
    es_measure_job *job;
    cli_mpi_measure(&m, &a->s, a->inputs, a->n_inputs, 0, a->list.quiet, &progress, &job);
    int exit_code = EXIT_OK, rc;
    if (m.rank == 0) {
        es_cost_table *table = NULL;
        if (m.status != ES_OK)
            exit_code = cli_fail(m.msg, m.status);
        else if ((rc = es_measure_job_finish(m.ctx, job, &table)) == ES_OK)
            exit_code = measure_output(m.ctx, a, table, &progress);
        else
            exit_code = cli_fail(es_errmsg(m.ctx), rc);
    }
    exit_code = cli_mpi_share_exit(exit_code);
    es_measure_job_free(job);
    cli_mpi_finish(&m);
    return exit_code;
}
