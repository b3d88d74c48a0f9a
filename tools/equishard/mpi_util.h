/* What the MPI forms of the commands share (cmd_measure_mpi.c,
 * cmd_plan_mpi.c): whether a launcher started this process, and the two ways
 * ranks wait and agree.
 * Built only when meson finds MPI; libequishard never links it. */
#ifndef ES_CLI_MPI_UTIL_H
#define ES_CLI_MPI_UTIL_H

#include <mpi.h>

#include "cli.h"

enum { CLI_MPI_MSG_MAX = 1024 }; /* error messages exchanged between ranks */

/* One rank's view of a run: the agreed status so far and its message. */
typedef struct cli_mpi {
    int rank, size;
    es_context *ctx;           /* this rank's; its message is the one sent */
    int status;                /* agreed status of the run so far */
    char msg[CLI_MPI_MSG_MAX]; /* its message (on every rank) */
} cli_mpi;

/* MPI_Init (funneled threads: OpenMP inside a rank), this rank's number, the
 * world's size and a context: 0, or -1 when MPI cannot start. */
int cli_mpi_init(cli_mpi *m);
/* The context freed, MPI_Finalize. */
void cli_mpi_finish(cli_mpi *m);

/* Completes a request, sleeping 0.5 ms between tests instead of spinning:
 * OpenMPI's blocking calls busy-poll, so a rank that finished its share would
 * otherwise take a core from ranks still working on it (oversubscribed nodes). */
void cli_mpi_idle(MPI_Request *req);

/* Collective: every rank passes its own status for the step just done; all get
 * the status and message of the lowest failing rank, kept in m (the first
 * failure of the run). Returns nonzero when the run has failed. */
int cli_mpi_agree(cli_mpi *m, int status);

/* Collective: the least and the greatest of every rank's v, on every rank (so
 * that all ranks can refuse a mismatch the same way, with no exchange). */
void cli_mpi_min_max(unsigned long long v, unsigned long long *lo, unsigned long long *hi);

/* Rank 0's exit code to every rank, so that all exit alike. */
int cli_mpi_share_exit(int exit_code);

#endif
