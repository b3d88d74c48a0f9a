/* One measure job's units shared out among MPI ranks (mpi_measure_job.h).
 *
 * Every rank stat()s a block of units and all ranks get all sizes; every rank
 * deals the units with the same LPT, so no assignment is sent; each measures
 * its units with OpenMP; the results travel as parts (es_measure_job_part) to
 * rank 0, or to every rank, which add them to their own job.
 *
 * Failures: after each step every rank takes part in the same collective status
 * exchange (cli_mpi_agree), so a failed rank never leaves the others waiting in
 * a collective. Waiting: every wait is a non-blocking call finished by
 * cli_mpi_idle, which sleeps between tests (OpenMPI's blocking calls
 * busy-poll, and a rank that finished its share would take a core from ranks
 * still measuring on it). */
#include "mpi_measure_job.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    CHUNK = 1 << 30, /* bytes per message: MPI counts are int */
    TAG_PART = 1,
};

/* Every rank must have read the same lists into the same number of units. */
static int same_units(cli_mpi *m, const es_measure_job *job)
{
    unsigned long long lo, hi;
    cli_mpi_min_max(es_measure_job_units(job), &lo, &hi);
    if (lo == hi && hi <= INT32_MAX)
        return ES_OK;
    /* the same values on every rank: every rank fails the same way, no exchange */
    if (lo != hi)
        snprintf(m->msg, sizeof m->msg, "MPI ranks read the inputs into different numbers of "
                 "units (%llu to %llu): are the lists the same on every node?", lo, hi);
    else
        snprintf(m->msg, sizeof m->msg, "%llu units: too many for one MPI job", hi);
    return m->status = ES_ERR_USAGE;
}

/* Each rank stat()s a block of units; all ranks get all sizes and deal the
 * units the same way into owner[] (n elements). */
static int deal(cli_mpi *m, const es_measure_job *job, uint32_t *owner)
{
    size_t n = es_measure_job_units(job);
    int *counts = malloc(sizeof(int) * (size_t)m->size);
    int *displs = malloc(sizeof(int) * (size_t)m->size);
    uint64_t *bytes = malloc((n + 1) * sizeof *bytes);
    int rc = ES_ERR_NOMEM;
    if (counts && displs && bytes) {
        for (int i = 0; i < m->size; i++) {
            displs[i] = (int)(n * (size_t)i / (size_t)m->size);
            counts[i] = (int)(n * (size_t)(i + 1) / (size_t)m->size) - displs[i];
        }
        rc = es_measure_job_sizes(m->ctx, job, (size_t)displs[m->rank], (size_t)counts[m->rank],
                                  bytes + displs[m->rank]);
    }
    if (!cli_mpi_agree(m, rc)) {
        MPI_Request req;
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, bytes, counts, displs,
                        MPI_UINT64_T, MPI_COMM_WORLD, &req);
        cli_mpi_idle(&req);
        cli_mpi_agree(m, es_measure_assign(m->ctx, bytes, n, (uint32_t)m->size, owner));
    }
    free(counts);
    free(displs);
    free(bytes);
    return m->status;
}

/* A part travels in messages of at most CHUNK bytes: point to point to peer,
 * or (peer < 0) broadcast from `root` to every rank. */
static void transfer(char *buf, uint64_t len, int peer, int sending, int root)
{
    for (uint64_t off = 0; off < len; off += CHUNK) {
        int n = (int)(len - off < CHUNK ? len - off : CHUNK);
        MPI_Request req;
        if (peer < 0)
            MPI_Ibcast(buf + off, n, MPI_BYTE, root, MPI_COMM_WORLD, &req);
        else if (sending)
            MPI_Isend(buf + off, n, MPI_BYTE, peer, TAG_PART, MPI_COMM_WORLD, &req);
        else
            MPI_Irecv(buf + off, n, MPI_BYTE, peer, TAG_PART, MPI_COMM_WORLD, &req);
        cli_mpi_idle(&req);
    }
}

/* Every rank's part (its length in lens[rank]) reaches rank 0, or every rank
 * (to_all), which adds the others' parts to its job in rank order. The buffer
 * is agreed on before anyone sends; then every sent byte is received, even
 * after a part failed to add. Returns this rank's status of the adds. */
static int exchange_parts(cli_mpi *m, es_measure_job *job, const void *part,
                          const uint64_t *lens, int to_all)
{
    int receives = to_all || m->rank == 0;
    uint64_t most = 0;
    for (int i = 0; receives && i < m->size; i++)
        most = i != m->rank && lens[i] > most ? lens[i] : most;
    char *buf = receives ? malloc(most + 1) : NULL;
    if (cli_mpi_agree(m, receives && !buf ? ES_ERR_NOMEM : ES_OK))
        return m->status;
    int rc = ES_OK;
    for (int src = 0; src < m->size; src++) {
        if (src == m->rank) { /* es_measure_job_add_part leaves our own part alone */
            if (to_all)
                transfer((char *)part, lens[src], -1, 1, src);
            else if (src != 0)
                transfer((char *)part, lens[src], 0, 1, src);
        } else if (to_all || (m->rank == 0 && src != 0)) {
            transfer(buf, lens[src], to_all ? -1 : src, 0, src);
            if (rc == ES_OK)
                rc = es_measure_job_add_part(m->ctx, job, buf, lens[src]);
        }
    }
    free(buf);
    return rc;
}

/* This rank's part and every rank's length of it, on every rank. */
static int make_part(cli_mpi *m, es_measure_job *job, int to_all, const void **part,
                     uint64_t *lens)
{
    size_t len = 0;
    int rc = to_all || m->rank != 0 ? es_measure_job_part(m->ctx, job, part, &len) : ES_OK;
    if (cli_mpi_agree(m, rc))
        return m->status;
    uint64_t mine = len;
    MPI_Request req;
    MPI_Iallgather(&mine, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, MPI_COMM_WORLD, &req);
    cli_mpi_idle(&req);
    return ES_OK;
}

/* The job's units measured across the ranks (cli_mpi_measure, after the job). */
static int measure_job(cli_mpi *m, es_measure_job *job, int to_all)
{
    size_t n = es_measure_job_units(job);
    uint32_t *owner = malloc((n + 1) * sizeof *owner);
    uint64_t *lens = calloc((size_t)m->size, sizeof *lens);
    if (cli_mpi_agree(m, owner && lens ? ES_OK : ES_ERR_NOMEM) || same_units(m, job) != ES_OK ||
        deal(m, job, owner) != ES_OK)
        goto done;
    const void *part = NULL;
    if (cli_mpi_agree(m, es_measure_job_run(m->ctx, job, owner, (uint32_t)m->rank)) ||
        make_part(m, job, to_all, &part, lens) != ES_OK)
        goto done;
    cli_mpi_agree(m, exchange_parts(m, job, part, lens, to_all));
done:
    free(owner);
    free(lens);
    return m->status;
}

int cli_mpi_measure(cli_mpi *m, es_measure_settings *s, const char *const *inputs, size_t n,
                    int to_all, int quiet, cli_progress *progress, es_measure_job **job)
{
    cli_progress_init(progress, "measure (rank 0)", "shards", quiet || m->rank != 0);
    s->progress = m->rank == 0 ? cli_progress_update : NULL;
    s->progress_user = progress;
    *job = NULL;
    int rc = m->ctx ? es_measure_job_new(m->ctx, s, inputs, n, job) : ES_ERR_NOMEM;
    if (!cli_mpi_agree(m, rc))
        measure_job(m, *job, to_all);
    cli_progress_end(progress);
    s->progress = NULL;
    return m->status;
}
