/* What the tar format's table (tar_format.c) points at, from the folder's
 * other files: measure's reader (reader_tar.c), rows by position
 * (rows_tar.c), the reshard copier (reshard_copy.c), its check of adjacent
 * keys (reshard_keys.c) and the plain copies of compressed sources
 * (reshard_expand.c). */
#ifndef ES_TAR_H
#define ES_TAR_H

#include "formats/format.h"
#include "formats/reshard_job.h"

int bid_tar(const uint8_t *h, size_t n);
int tar_open(es_context *ctx, const char *path, const char *shard, const es_reader_opts *opts,
             es_shard_reader **out);
int tar_next(es_context *ctx, es_shard_reader *r, es_cost_row *row);
void tar_close(es_shard_reader *r);

typedef struct rows_tar rows_tar;
int rows_tar_open(es_context *ctx, const char *path, rows_tar **out);
void rows_tar_free(rows_tar *t);
int rows_tar_count(es_context *ctx, rows_tar *t, uint64_t *n);
int rows_tar_read(es_context *ctx, rows_tar *t, const rows_request *req);
/* Tar headers read over the reader's life: for tests that prove a fetch began
 * at its utterance rather than at the first member. */
uint64_t rows_tar_headers_read(const rows_tar *t);

int reshard_copy_tar(es_context *ctx, reshard_job *job, uint32_t t0, uint32_t t1);

/* WeNet's tar_file_and_group merges adjacent members that share a key: a
 * plan that would put two utterances of one key one after the other into a
 * new shard is refused before anything is written. */
int reshard_tar_check_keys(es_context *ctx, const reshard_job *job);

/* Compressed sources decompressed once for all the processes that write a
 * plan's shards (es_plan_write_expand_sources): the sources dealt to `part`
 * of `parts` copied as plain tar into the temporary folder; then every
 * process reads the copies that exist; the owner removes them before the
 * commit. */
int reshard_tar_expand(es_context *ctx, reshard_job *job, uint32_t part, uint32_t parts);
int reshard_tar_use_copies(es_context *ctx, reshard_job *job);
void reshard_tar_remove_copies(reshard_job *job);

#endif
