/* What follows a successful `equishard measure` (measure.h): the table's
 * marks, its file, the problems and the summary line. Apart from the
 * one-process command (cmd_measure.c), which hands over to the MPI form
 * (cmd_measure_mpi.c) under mpirun: both forms end here, so that the MPI form
 * does not call back into the command that called it. */
#include <string.h>

#include "measure.h"

int measure_output(es_context *ctx, const measure_args *a, es_cost_table *table,
                   const cli_progress *progress)
{
    cli_tally tally = {0};
    cli_tally_add(&tally, table);
    int rc = ES_OK;
    if (a->emb.utt_emb || a->emb.spk_emb)
        rc = es_cost_table_mark_embeddings(ctx, table, &a->emb);
    if (rc == ES_OK && a->list.speech_tokens)
        rc = cli_set_speech_tokens(ctx, table, a->list.speech_tokens);
    if (rc == ES_OK)
        rc = strcmp(a->output, "-") == 0 ? es_cost_table_write_fd(ctx, table, 1, 0)
                                         : es_cost_table_write(ctx, table, a->output);
    int exit_code = rc == ES_OK ? EXIT_OK : cli_fail(es_errmsg(ctx), rc);
    cli_report_table_problems(table);
    if (exit_code == EXIT_OK)
        cli_measure_summary(&tally, cli_progress_elapsed(progress), a->output, a->list.quiet);
    cli_tally_free(&tally);
    es_cost_table_free(table);
    return exit_code;
}
