/* One measure job's units shared out among MPI ranks: what `mpirun equishard
 * measure` does, and what `mpirun equishard plan` does with lists, so that a
 * corpus is measured once across the ranks rather than whole on every rank. */
#ifndef ES_CLI_MPI_MEASURE_JOB_H
#define ES_CLI_MPI_MEASURE_JOB_H

#include "mpi_util.h"

/* Collective; every rank passes the same inputs and settings. Makes this
 * rank's job (*job, for es_measure_job_finish and es_measure_job_free; NULL
 * when it could not be made), with rank 0 showing the progress of its own
 * units on its terminal unless `quiet` (`progress` holds that state: the
 * caller's, as the job borrows it). The units are checked to be the same on
 * every rank, dealt by size with the same LPT everywhere (es_measure_assign,
 * so no assignment travels) and each rank measures its share with OpenMP; then
 * the other ranks' results are added to the job on rank 0 (to_all = 0) or on
 * every rank (to_all = 1), where es_measure_job_finish gives the table
 * es_measure would. A unit that fails to measure is not a failure here: it
 * travels with the results, and finish reports it as the one-process run
 * does. Returns ES_OK, or the run's agreed failure (status and message in m,
 * on every rank). */
int cli_mpi_measure(cli_mpi *m, es_measure_settings *s, const char *const *inputs, size_t n,
                    int to_all, int quiet, cli_progress *progress, es_measure_job **job);

#endif
