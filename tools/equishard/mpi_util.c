/* What the MPI forms of measure and plan share (mpi_util.h). */
#include "mpi_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int cli_launched_by_mpi(void)
{
    /* mpirun/mpiexec of OpenMPI; PMIx launchers (srun --mpi=pmix, prterun); PMI-1/2
     * launchers (Hydra, srun --mpi=pmi2). srun sets SLURM_STEP_NUM_TASKS for the
     * tasks of a step, not in the batch script, where SLURM_NTASKS and
     * SLURM_PROCID=0 are set too: a plain command there stays one process. */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                                       "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    const char *tasks = getenv("SLURM_STEP_NUM_TASKS");
    return tasks && atoi(tasks) > 1 && getenv("SLURM_PROCID");
}

int cli_mpi_init(cli_mpi *m)
{
    int provided;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return -1;
    *m = (cli_mpi){.status = ES_OK, .ctx = cli_context_new()};
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    return 0;
}

void cli_mpi_finish(cli_mpi *m)
{
    es_context_free(m->ctx);
    m->ctx = NULL;
    MPI_Finalize();
}

void cli_mpi_idle(MPI_Request *req)
{
    const struct timespec nap = {0, 500000};
    int done = 0;
    while (MPI_Test(req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        nanosleep(&nap, NULL);
}

int cli_mpi_agree(cli_mpi *m, int status)
{
    if (m->status != ES_OK)
        return 1;
    int mine = status != ES_OK ? m->rank : m->size, first;
    MPI_Request req;
    MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    cli_mpi_idle(&req);
    if (first == m->size)
        return 0;
    struct {
        int status;
        char msg[CLI_MPI_MSG_MAX];
    } out = {status, ""};
    if (m->rank == first) {
        const char *e = es_errmsg(m->ctx);
        snprintf(out.msg, sizeof out.msg, "%s", *e ? e : "out of memory");
    }
    MPI_Ibcast(&out, (int)sizeof out, MPI_BYTE, first, MPI_COMM_WORLD, &req);
    cli_mpi_idle(&req);
    m->status = out.status;
    snprintf(m->msg, sizeof m->msg, "%s", out.msg);
    return 1;
}

void cli_mpi_min_max(unsigned long long v, unsigned long long *lo, unsigned long long *hi)
{
    MPI_Request req[2];
    MPI_Iallreduce(&v, lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD, &req[0]);
    MPI_Iallreduce(&v, hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD, &req[1]);
    cli_mpi_idle(&req[0]);
    cli_mpi_idle(&req[1]);
}

int cli_mpi_share_exit(int exit_code)
{
    MPI_Request req;
    MPI_Ibcast(&exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    cli_mpi_idle(&req);
    return exit_code;
}
