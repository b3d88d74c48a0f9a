/* Shared helpers for the Check suites: fixture paths and a per-test temp dir. */
#ifndef ES_CHECK_HELPERS_H
#define ES_CHECK_HELPERS_H

#include <check.h>
#include <stddef.h>

/* "$ES_FIXTURES/rel" (the shared read-only fixtures). Static buffer: copy if kept. */
const char *fixture_path(const char *rel);
/* "$ES_TESTDATA/rel" (tests/data, checked in). Static buffer. */
const char *testdata_path(const char *rel);
/* Creates a fresh temporary directory and returns its path (malloc'd). */
char *make_temp_dir(void);
/* Reads a whole file; returns malloc'd bytes and sets *len, or NULL. */
unsigned char *read_whole_file(const char *path, size_t *len);
/* Runs one suite; returns the process exit status (0 = all passed). */
int run_suite(Suite *s);

#endif
