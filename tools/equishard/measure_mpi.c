/* `mpirun -np N equishard measure …` / `srun equishard measure …` (DESIGN.md §10).
 *
 * Every rank reads the same lists into the same units (es_measure_job_new); the
 * ranks stat() a block of units each and share the sizes; every rank deals the
 * units with the same LPT (es_measure_assign), so no assignment is sent; each
 * measures its units with OpenMP; ranks 1..N-1 send their results as parts to
 * rank 0, which merges them in unit order into exactly the table es_measure
 * gives, writes it and reports as the one-process command does.
 *
 * Failures: after each step every rank takes part in the same collective status
 * exchange (cli_mpi_agree, mpi_util.c), so a failed rank never leaves the others waiting in a
 * collective; the lowest failing rank's message reaches rank 0, which prints it,
 * and every rank returns the same exit code. A shard that fails to measure is not
 * a step failure: it travels in the part, and rank 0's merge reports the first
 * failed unit in list order, as the one-process run does.
 *
 * Waiting: every wait is a non-blocking call finished by cli_mpi_idle, which
 * sleeps between tests. OpenMPI's blocking calls busy-poll, so a rank that finished its
 * share would otherwise take a core from ranks still measuring on it
 * (oversubscribed nodes; measured in docs/PERFORMANCE.md). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure.h"
#include "mpi_util.h"

enum {
    CHUNK = 1 << 30,      /* bytes per message: MPI counts are int */
    TAG_PART = 1,
};

typedef struct mpi_run {
    cli_mpi m;            /* rank, size, context, agreed status */
    es_measure_job *job;
    uint64_t *bytes;      /* unit sizes, all units */
    uint32_t *owner;      /* unit → rank */
} mpi_run;

/* Every rank must have read the same lists into the same number of units. */
static int same_units(mpi_run *r)
{
    unsigned long long lo, hi;
    cli_mpi_min_max(es_measure_job_units(r->job), &lo, &hi);
    if (lo == hi && hi <= INT32_MAX)
        return ES_OK;
    /* the same values on every rank: every rank fails the same way, no exchange */
    if (lo != hi)
        snprintf(r->m.msg, sizeof r->m.msg, "MPI ranks read the inputs into different numbers of "
                 "units (%llu to %llu): are the lists the same on every node?", lo, hi);
    else
        snprintf(r->m.msg, sizeof r->m.msg, "%llu units: too many for one MPI job", hi);
    return r->m.status = ES_ERR_USAGE;
}

/* Each rank stat()s a block of units; all ranks get all sizes and deal the units
 * the same way, so no assignment travels. */
static int deal(mpi_run *r)
{
    size_t n = es_measure_job_units(r->job);
    int *counts = malloc(sizeof(int) * (size_t)r->m.size);
    int *displs = malloc(sizeof(int) * (size_t)r->m.size);
    r->bytes = malloc((n + 1) * sizeof *r->bytes);
    r->owner = malloc((n + 1) * sizeof *r->owner);
    int rc = ES_ERR_NOMEM;
    if (counts && displs && r->bytes && r->owner) {
        for (int i = 0; i < r->m.size; i++) {
            displs[i] = (int)(n * (size_t)i / (size_t)r->m.size);
            counts[i] = (int)(n * (size_t)(i + 1) / (size_t)r->m.size) - displs[i];
        }
        rc = es_measure_job_sizes(r->m.ctx, r->job, (size_t)displs[r->m.rank],
                                  (size_t)counts[r->m.rank], r->bytes + displs[r->m.rank]);
    }
    if (!cli_mpi_agree(&r->m, rc)) {
        MPI_Request req;
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r->bytes, counts, displs,
                        MPI_UINT64_T, MPI_COMM_WORLD, &req);
        cli_mpi_idle(&req);
        cli_mpi_agree(&r->m, es_measure_assign(r->m.ctx, r->bytes, n, (uint32_t)r->m.size, r->owner));
    }
    free(counts);
    free(displs);
    return r->m.status;
}

/* A part travels in messages of at most CHUNK bytes. */
static void transfer(char *buf, uint64_t len, int peer, int sending)
{
    for (uint64_t off = 0; off < len; off += CHUNK) {
        int n = (int)(len - off < CHUNK ? len - off : CHUNK);
        MPI_Request req;
        if (sending)
            MPI_Isend(buf + off, n, MPI_BYTE, peer, TAG_PART, MPI_COMM_WORLD, &req);
        else
            MPI_Irecv(buf + off, n, MPI_BYTE, peer, TAG_PART, MPI_COMM_WORLD, &req);
        cli_mpi_idle(&req);
    }
}

/* Ranks 1..N-1 send their parts to rank 0, which adds them to its job. The
 * sizes go first, so rank 0 can agree on its buffer before anyone sends; then
 * every sent byte is received, even after a part failed to add. */
static int gather_parts(mpi_run *r, const void *part, uint64_t len)
{
    uint64_t *lens = r->m.rank == 0 ? calloc((size_t)r->m.size, sizeof *lens) : NULL;
    MPI_Request req;
    MPI_Igather(&len, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &req);
    cli_mpi_idle(&req);
    uint64_t most = 0;
    for (int i = 1; lens && i < r->m.size; i++)
        most = lens[i] > most ? lens[i] : most;
    char *buf = r->m.rank == 0 && lens ? malloc(most + 1) : NULL;
    if (cli_mpi_agree(&r->m, r->m.rank == 0 && !buf ? ES_ERR_NOMEM : ES_OK)) {
        free(lens);
        return r->m.status;
    }
    int rc = ES_OK;
    if (r->m.rank != 0)
        transfer((char *)part, len, 0, 1);
    for (int src = 1; r->m.rank == 0 && src < r->m.size; src++) {
        transfer(buf, lens[src], src, 0);
        if (rc == ES_OK)
            rc = es_measure_job_add_part(r->m.ctx, r->job, buf, lens[src]);
    }
    free(buf);
    free(lens);
    return rc;
}

/* Measures this rank's units; the others' results travel to rank 0. */
static int measure_share(mpi_run *r)
{
    int rc = es_measure_job_run(r->m.ctx, r->job, r->owner, (uint32_t)r->m.rank);
    const void *part = NULL;
    size_t len = 0;
    if (rc == ES_OK && r->m.rank != 0)
        rc = es_measure_job_part(r->m.ctx, r->job, &part, &len);
    return cli_mpi_agree(&r->m, rc) ? r->m.status : gather_parts(r, part, len);
}

static int run(mpi_run *r, measure_args *a)
{
    int rc = r->m.ctx ? es_measure_job_new(r->m.ctx, &a->s, a->inputs, a->n_inputs, &r->job)
                    : ES_ERR_NOMEM;
    if (cli_mpi_agree(&r->m, rc) || same_units(r) != ES_OK || deal(r) != ES_OK)
        return r->m.status;
    return measure_share(r);
}

int measure_mpi(measure_args *a)
{
    mpi_run r = {0};
    if (cli_mpi_init(&r.m) != 0)
        return cli_fail("MPI_Init failed", ES_ERR_INTERNAL);
    /* progress: rank 0's own units, on rank 0's terminal */
    cli_progress progress;
    cli_progress_init(&progress, "measure (rank 0)", a->list.quiet || r.m.rank != 0);
    a->s.progress = r.m.rank == 0 ? cli_progress_update : NULL;
    a->s.progress_user = &progress;
    int rc = run(&r, a);
    cli_progress_end(&progress);
    int exit_code = EXIT_OK;
    if (r.m.rank == 0) {
        es_cost_table *table = NULL;
        if (r.m.status != ES_OK)
            exit_code = cli_fail(r.m.msg, r.m.status);
        else if (rc == ES_OK && (rc = es_measure_job_finish(r.m.ctx, r.job, &table)) == ES_OK)
            exit_code = measure_output(r.m.ctx, a, table);
        else
            exit_code = cli_fail(es_errmsg(r.m.ctx), rc);
    }
    exit_code = cli_mpi_share_exit(exit_code);
    es_measure_job_free(r.job);
    free(r.bytes);
    free(r.owner);
    cli_mpi_finish(&r.m);
    return exit_code;
}
