/* `equishard measure`, shared by the one-process command (cmd_measure.c) and its
 * MPI form (cmd_measure_mpi.c, built when meson finds MPI). */
#ifndef ES_CLI_MEASURE_H
#define ES_CLI_MEASURE_H

#include "cli_model.h"

typedef struct measure_args {
    es_measure_settings s;
    const char *output;
    es_emb_sources emb; /* --utt-emb/--spk-emb: embedding presence flags */
    cli_list_opts list; /* --quiet, --speech-tokens */
    const char *const *inputs;
    size_t n_inputs;
} measure_args;

/* What follows a successful measure (measure_output.c): the embedding flags
 * and speech tokens are set and the table written to a->output; an error, or
 * the table's skips and warnings, go to stderr, then (not --quiet) the
 * summary line, timed from progress's start. Frees table; returns the exit
 * code. */
int measure_output(es_context *ctx, const measure_args *a, es_cost_table *table,
                   const cli_progress *progress);

/* The MPI form: every rank measures its share of the units, rank 0 merges and
 * writes the table es_measure would give. Returns the same exit code on every
 * rank. */
int measure_mpi(measure_args *a);

#endif
