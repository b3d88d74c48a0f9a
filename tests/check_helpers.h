/* Shared helpers for the Check suites: fixture paths and a per-test temp dir. */
#ifndef ES_CHECK_HELPERS_H
#define ES_CHECK_HELPERS_H

#include <check.h>
#include <stddef.h>

#include "equishard/equishard.h"

/* "$ES_FIXTURES/rel" (the shared read-only fixtures). Static buffer: copy if kept. */
const char *fixture_path(const char *rel);
/* "$ES_TESTDATA/rel" (tests/data, checked in). Static buffer. */
const char *testdata_path(const char *rel);
/* Creates a fresh temporary directory and returns its path (malloc'd). */
char *make_temp_dir(void);
/* The temp-folder fixture: tcase_add_temp_dir(tc) gives every test of tc a fresh
 * folder, made before the test and removed with its contents after it (a
 * checked fixture: it runs in the test's own process). test_dir() is the
 * current test's folder; test_path("a/b") is a path inside it (static buffer:
 * copy if kept across calls). */
void tcase_add_temp_dir(TCase *tc);
const char *test_dir(void);
const char *test_path(const char *rel);
/* Removes a folder and everything in it; returns 0 or -1. */
int remove_tree(const char *dir);
/* Reads a whole file; returns malloc'd bytes and sets *len, or NULL. */
unsigned char *read_whole_file(const char *path, size_t *len);
/* What a library progress callback (done, total) reported, for the tests of
 * the es_*_settings progress fields: pass progress_record as the callback and
 * a zeroed progress_seen as its user pointer. backwards counts calls whose done
 * fell, total_changed calls whose total differed from the call before,
 * before_end calls with done < total. */
typedef struct progress_seen {
    size_t calls, last_done, last_total, backwards, total_changed, before_end;
} progress_seen;
void progress_record(void *user, size_t done, size_t total);

/* Runs one suite; returns the process exit status (0 = all passed). */
int run_suite(Suite *s);

/* The table's skips: es_cost_table_skip's up to the first NULL. */
size_t skip_count(const es_cost_table *t);

#endif
