/* equishard — the experimental tier of the API.
 *
 * Static linking only: everything declared here may change or go in any
 * release, minor and patch included, without a deprecation. It is what the
 * `equishard` command and the library's own tests use beyond the stable
 * header (equishard.h): the steps of measure and of the OUTDIR writer that
 * several processes share (the MPI commands), the streamed measure, the
 * writes to descriptors and standard output, the temporaries a signal handler
 * removes, and the calibration's numerical parts. A program that links the
 * shared library and wants to keep working across upgrades includes only
 * equishard.h; one that includes this header is built against the exact
 * library version it runs with (the CLI links it statically, or beside the
 * same build).
 *
 * The functions are exported from the shared library all the same (ES_API),
 * and follow the conventions of equishard.h (status codes, one-line errors in
 * the context, opaque objects whose `*_free` accepts NULL). No struct with a
 * body is declared here: es_abi_layout() and the ABI rule cover equishard.h.
 * Including this header includes equishard.h. */
#ifndef EQUISHARD_EXPERIMENTAL_H
#define EQUISHARD_EXPERIMENTAL_H

#include "equishard/equishard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- outputs ------------------------------------------------------------------ */

/* A test seam, not an interface: hook is called at named points of a run
 * ("file-made" after each output file is created, "before-commit" before
 * OUTDIR is renamed into place) so that tests can hold it there; NULL (the
 * default) costs nothing. The CLI installs a sleeping hook when
 * EQUISHARD_TEST_PAUSE_MS / EQUISHARD_TEST_COMMIT_PAUSE_MS are set. */
typedef void (*es_test_hook)(void *user, const char *point);
ES_API void es_context_set_test_hook(es_context *ctx, es_test_hook hook, void *user);

/* Writes len bytes of data to path the way every equishard output is written:
 * "-" is standard output; a device, FIFO or /dev/stdout is written through; a
 * regular file (or a symlink's target) is replaced atomically, with mode
 * 0666 & ~umask. ES_ERR_IO names path when it fails. */
ES_API int es_write_output(es_context *ctx, const char *path, const void *data, size_t len);

/* Writes the table to an open file descriptor (e.g. 1 for standard output), in
 * the same format, zstd-compressed when `zstd` is nonzero. Not atomic: the caller
 * owns the descriptor, which stays open. */
ES_API int es_cost_table_write_fd(es_context *ctx, const es_cost_table *t, int fd, int zstd);

/* es_simulate_write_json's JSON, to an open descriptor the caller keeps (not
 * atomic; the descriptor stays open). */
ES_API int es_simulate_write_json_fd(es_context *ctx, const es_simulate_result *r, int fd);

/* ---- measure streamed to a file, with rows marked as they come ----------------- */

/* Called by es_measure_to_file with each unit's rows (one shard, or up to 32
 * entries of a raw list or Kaldi directory), in input order, before they are
 * written; one call at a time, from one of es_measure_to_file's threads.
 * `rows` belongs to the library and lives until the call returns: read it
 * (es_cost_table_row) or change its rows' flags and counts in place
 * (es_row_marks_apply); do not keep it. Return ES_OK to go on; any other
 * status stops the measure, which then fails with that status and the
 * message left in ctx (a context of the call's own, valid during the call). */
typedef int (*es_rows_fn)(es_context *ctx, void *user, es_cost_table *rows);

/* es_measure, written to `path` as es_cost_table_write would write the table
 * es_measure returns: the same bytes for any thread count, but rows are written
 * as units finish, in input order, so memory does not grow with the number of
 * rows (a bounded window of units is in flight; see docs/PERFORMANCE.md). The
 * file appears at path only when everything succeeded (temporary file beside
 * it, renamed into place); on failure nothing is left and the previous file,
 * if any, is intact. `fn` (may be NULL) sees each unit's rows first.
 * `skips` (may be NULL) receives, on success, a table without rows holding
 * what ES_ON_ERROR_SKIP left out (es_cost_table_skip_*); the caller frees it.
 * On failure *skips is NULL. */
ES_API int es_measure_to_file(es_context *ctx, const es_measure_settings *s,
                              const char *const *inputs, size_t n_inputs, const char *path,
                              es_rows_fn fn, void *user, es_cost_table **skips);

/* es_cost_table_mark_embeddings and es_cost_table_set_speech_tokens with
 * their sources loaded once, for rows that come in pieces
 * (an es_rows_fn of es_measure_to_file): applying them to every piece of a
 * table gives what the whole-table calls give, as each row is set from its
 * own key and speaker only. `emb` (may be NULL: no embedding flags) is
 * borrowed and must outlive the marks; `speech_tokens` (may be NULL) is
 * read now. Load errors as the calls above report them; on failure *out is
 * NULL. */
typedef struct es_row_marks es_row_marks;
ES_API int es_row_marks_new(es_context *ctx, const es_emb_sources *emb, const char *speech_tokens,
                            es_row_marks **out);
/* Sets the flags and speech_tokens of t's rows (es_cost_table_mark_embeddings,
 * es_cost_table_set_speech_tokens) and counts them. */
ES_API int es_row_marks_apply(es_context *ctx, es_row_marks *m, es_cost_table *t);
/* The speech-token counts over every row applied so far; unknown_keys: keys
 * of the source that none of them had. All 0 without speech tokens. */
ES_API void es_row_marks_stats(const es_row_marks *m, es_speech_token_stats *st);
ES_API void es_row_marks_free(es_row_marks *m);

/* ---- measure in several processes (`mpirun equishard measure`) ---------------- */

/* es_measure in steps, so that several processes (MPI ranks, or any other
 * launcher) can share the work; the library itself never communicates:
 *
 *   every process:  es_measure_job_new(same settings, same inputs)
 *                   es_measure_job_sizes, es_measure_assign  → owner[] (the same
 *                   everywhere, given the same sizes)
 *                   es_measure_job_run(owner, my_rank)
 *   the others:     es_measure_job_part → bytes, sent to the merging process
 *   the merger:     es_measure_job_add_part for each received part, then
 *                   es_measure_job_finish → the table
 *
 * (Several processes can each be a merger: `mpirun equishard plan` sends every
 * part to every process, and each finishes the same table.)
 *
 * The table equals what es_measure returns for the same inputs and settings: the
 * same rows in the same order, the same skips, and with ES_ON_ERROR_FAIL the same
 * error (that of the first failed unit in input order). es_measure itself is
 * new + run(NULL) + finish. A job is used by one thread at a time. */
typedef struct es_measure_job es_measure_job;

/* Reads the inputs' lists (see es_measure) and splits them into units of work in
 * input order: one unit per shard, or up to 32 entries of a raw list or Kaldi
 * directory. Shards are not opened yet (a shard list's first entry must exist,
 * as es_measure says). `s` is copied; s->root and
 * s->progress_user are borrowed and must outlive the job. On failure (an input
 * that cannot be read or recognised, as es_measure reports it) *out is NULL. */
ES_API int es_measure_job_new(es_context *ctx, const es_measure_settings *s,
                              const char *const *inputs, size_t n_inputs, es_measure_job **out);
ES_API void es_measure_job_free(es_measure_job *j);

/* Number of units (0 for NULL). */
ES_API size_t es_measure_job_units(const es_measure_job *j);

/* Byte sizes of units [first, first + count), by stat(): a shard's file size; for
 * list entries the sizes of their audio files (a recording cut into consecutive
 * segments counted once). A file that cannot be stat()ed counts 0 (measuring
 * reports it). bytes has `count` elements. ES_ERR_USAGE when out of range. */
ES_API int es_measure_job_sizes(es_context *ctx, const es_measure_job *j, size_t first,
                                size_t count, uint64_t *bytes);

/* Deals n units to `parts` processes by size: largest first, each to the least
 * loaded process (LPT), ties by unit index, so that the big, slow shards spread
 * out and the same sizes give the same owner[] (n elements, each < parts) in
 * every process. */
ES_API int es_measure_assign(es_context *ctx, const uint64_t *bytes, size_t n, uint32_t parts,
                             uint32_t *owner);

/* Measures the units u with owner[u] == part (every unit when owner is NULL), in
 * parallel with s->threads OpenMP threads; the progress callback counts these
 * units. A unit's problems are kept with its result (see es_measure_job_finish),
 * not returned: the call fails only for bad arguments or lack of memory. Run each
 * unit at most once per job. */
ES_API int es_measure_job_run(es_context *ctx, es_measure_job *j, const uint32_t *owner,
                              uint32_t part);

/* The results of the units this job has measured, as bytes to send to the
 * merging process (format: src/measure/measure_part.c; rows as cost-table TSV).
 * *data is owned by j and valid until the next es_measure_job_part on j or
 * es_measure_job_free (es_measure_job_add_part leaves it alone, so a process can
 * send its own part while it adds the others'). */
ES_API int es_measure_job_part(es_context *ctx, es_measure_job *j, const void **data,
                               size_t *len);

/* Adds a part made by es_measure_job_part in another process from the same
 * inputs and settings. ES_ERR_USAGE when it comes from a job with a different
 * number of units, ES_ERR_FORMAT when it is corrupt or repeats a unit already
 * measured here, ES_ERR_UNSUPPORTED when its rows are in a cost-table version
 * this build does not read (a process running another equishard); after a
 * failure the job can only be freed. */
ES_API int es_measure_job_add_part(es_context *ctx, es_measure_job *j, const void *data,
                                   size_t len);

/* Joins every unit's rows and skips in unit order into *out (moved out of the
 * job). Fails with the first failed unit's status and message in input order
 * (ES_ON_ERROR_FAIL), or ES_ERR_INTERNAL when a unit before it was measured
 * nowhere. On failure *out is NULL. */
ES_API int es_measure_job_finish(es_context *ctx, es_measure_job *j, es_cost_table **out);

/* ---- the cost of a batch, and the fit's solver (docs/COST_MODEL.md) ------------ */

/* The terms of the batch of table rows rows[0..n) under m's frame_rate, in x
 * (ES_TERM_COUNT values). ES_ERR_USAGE when a row is out of range. */
ES_API int es_cost_batch_terms(const es_cost_model *m, const es_cost_table *t,
                               const size_t *rows, size_t n, double *x);
/* Σ w_term × x[term] (>= 0). */
ES_API double es_cost_batch(const es_cost_model *m, const double *x);

/* Non-negative least squares: x >= 0 minimising |A x - b| for the dense
 * rows × cols matrix A (row-major), b (rows values) and x (cols values), by
 * Lawson and Hanson's active-set method (columns scaled to unit norm first).
 * For the small systems calibration makes (a few columns). ES_ERR_USAGE when
 * cols is 0 or rows < 1; ES_ERR_INTERNAL when it does not converge within
 * 3 × cols outer iterations. */
ES_API int es_nnls(es_context *ctx, const double *a, size_t rows, size_t cols, const double *b,
                   double *x);

/* ---- OUTDIR written by several processes, and temporaries ---------------------- */

/* es_plan_write in stages, so that several processes write one OUTDIR
 * (`mpirun equishard plan --mode reshard`): each process builds the same plan;
 * one begins OUTDIR's temporary folder (join = NULL: the owner), the others
 * join it by the path es_plan_writer_folder gives the owner; each writes whole
 * new shards of its own (es_plan_write_shards, ranges that together cover
 * [0, N) once); when every process has succeeded, the owner finishes: the
 * files beside the shards, plan.json, and the folder put in place. The result
 * is byte for byte es_plan_write's, which is begin(NULL), shards [0, N) in
 * reshard mode, finish. The processes' communication is the caller's (the
 * library links no MPI); OUTDIR must be on a file system they all see.
 *
 * begin checks, before anything is written, what es_plan_write checks (OUTDIR
 * replaceable; reshard: every source there, unchanged since measured, all tar
 * or all parquet of one schema; no two utterances of one key adjacent in a new
 * tar shard), on every process. A joiner never removes or commits the folder;
 * es_plan_writer_free of an owner that has not finished removes it, leaving
 * the previous OUTDIR intact. */
typedef struct es_plan_writer es_plan_writer;

ES_API int es_plan_write_begin(es_context *ctx, const es_plan *p, const char *outdir,
                               const char *join, es_plan_writer **out);
/* The temporary folder being written (for the owner to hand to the others);
 * NULL once finished. Valid until the next call on w. */
ES_API const char *es_plan_writer_folder(const es_plan_writer *w);
/* Reshard plans only: writes new shards [first, end) (es_plan_reshard_info's
 * `shards` is N), each read back and checked, and on disk (fsync) when it
 * returns ES_OK. */
ES_API int es_plan_write_shards(es_context *ctx, es_plan_writer *w, uint32_t first, uint32_t end);
/* Reshard of compressed tar sources (.tar.gz, .tar.zst, …) by several
 * processes, optional, before es_plan_write_shards: each process reads every
 * source that feeds one of its shards, nearly every source, so each would
 * decompress the whole corpus. expand_sources decompresses the compressed
 * sources dealt to `part` of `parts` (by size, largest first to the least
 * loaded part: the same deal in every process) into plain tar copies in the
 * temporary folder; when every part has returned ES_OK, use_copies makes this
 * writer read the copies it finds there (a source whose copy is not visible
 * is read compressed: the same bytes). The copies take the sources'
 * uncompressed size on OUTDIR's file system until es_plan_write_finish removes
 * them (an abandoned folder goes with them). Plain tar and parquet sources are
 * read in place. The files written are the same either way. */
ES_API int es_plan_write_expand_sources(es_context *ctx, es_plan_writer *w, uint32_t part,
                                        uint32_t parts);
ES_API int es_plan_write_use_copies(es_context *ctx, es_plan_writer *w);
/* The owner only, after every process's shards were written: the rest of
 * OUTDIR (reshard: ES_ERR_USAGE if a new shard is missing), then the commit.
 * On failure the temporary folder is removed. */
ES_API int es_plan_write_finish(es_context *ctx, es_plan_writer *w, const char *const *inputs,
                                size_t n_inputs);
ES_API void es_plan_writer_free(es_plan_writer *w);
/* What w will write, as a 64-bit digest: the plan's mode, ranks, workers and
 * rows and, in reshard mode, the sources and every kept utterance's source,
 * position and new shard. Processes that built the same plan from the same
 * inputs get the same digest (the MPI command compares them before writing). */
ES_API uint64_t es_plan_writer_digest(const es_plan_writer *w);

/* Temporary folders that interrupted runs left beside OUTDIR: "OUTDIR.tmp.XXXXXX"
 * (beside the folder a symlinked OUTDIR points to) holding equishard's marker
 * file, made on this host by a process that is no longer running, are removed;
 * report (may be NULL) is called with each one's path and the pid that made
 * it. Returns how many were removed. Folders without the marker, and those of
 * a running process or of another host, are left alone. es_plan_write does the
 * same, silently, before it writes. */
ES_API size_t es_outdir_remove_stale(const char *outdir,
                                     void (*report)(void *user, const char *path, long pid),
                                     void *user);

/* Removes the temporary files and folders of every output this process is
 * writing (OUTDIR's temporary folder, an output file's FILE.tmp.XXXXXX) and
 * returns how many there were. Async-signal-safe: for the application's
 * SIGINT/SIGTERM handler, which must then end the process (the interrupted
 * call would fail on its missing files). The equishard command does this; the
 * library installs no handler. */
ES_API size_t es_remove_temporaries(void);

#ifdef __cplusplus
}
#endif
#endif
