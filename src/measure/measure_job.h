/* A measure job (es_measure_job, equishard.h): the inputs' work units and, per
 * unit, its result. es_measure runs every unit of one job; `mpirun equishard
 * measure` runs a share of the units in each process, ships the results of the
 * others to one process as parts (measure_part.c) and merges them there.
 *
 * Invariants: results[u] belongs to work.units[u]; a unit is measured when its
 * `rows` is non-NULL or its status is a failure; rows/skips of a unit are in
 * shard order. */
#ifndef ES_MEASURE_JOB_H
#define ES_MEASURE_JOB_H

#include <stdatomic.h>

#include "costs/cost_table.h"
#include "measure/work_units.h"
#include "readers/reader.h"

typedef struct es_unit_result {
    es_cost_table *rows; /* rows and skips; NULL until measured */
    int status;          /* ES_OK or the unit's failure */
    char *error;         /* message when status != ES_OK */
} es_unit_result;

struct es_measure_job {
    es_measure_settings s;
    es_reader_opts opts;
    int huge_pages;              /* the creating context's setting, for the units' tables */
    es_work work;
    es_unit_result *results;     /* work.n of them */
    _Atomic size_t first_failed; /* FAIL mode: lowest failed unit index */
    _Atomic size_t done;         /* units finished in the current run */
    char *part;                  /* the last es_measure_job_part */
    size_t part_len;
};

/* Measures unit u into results[u] (measure.c), with this thread's tokenizer
 * state; does nothing when an earlier unit failed (ES_ON_ERROR_FAIL). */
void es_measure_unit(es_measure_job *j, size_t u, struct tok_state *st);

/* Counts one finished unit of `total` and calls s.progress from thread 0. */
void es_measure_progress(es_measure_job *j, size_t total);

/* Sets a unit's failure (message copied). Returns status. */
int es_unit_fail(es_unit_result *res, int status, const char *msg);

/* ES_OK when unit u was measured and has rows to take; else its failure (or
 * "not measured") reported in ctx. The whole-table merge and the streaming
 * writer take units through this one check. */
int es_unit_check(es_context *ctx, const es_unit_result *res, size_t u);

#endif
