/* Relative paths in lists and cost tables, and what a message says when one is
 * not there. */
#ifndef ES_PATH_H
#define ES_PATH_H

#include <stddef.h>

/* Joins root and a relative path into buf; absolute paths and root == NULL pass
 * through. Returns buf or path. */
const char *es_resolve_path(const char *root, const char *path, char *buf, size_t len);

/* The hint a "not found" for a listed path carries: where relative paths are
 * looked for, and the option that moves them. */
#define ES_ROOT_HINT                                                                           \
    "relative paths resolve against the current directory; give --root DIR when they are "     \
    "relative to another folder"

/* ES_ROOT_HINT, or with a root given (not NULL or empty) where they were
 * looked for instead, in buf[len]; returns the hint. */
const char *es_root_hint(const char *root, char *buf, size_t len);

/* What equishard reads, for a message refusing an input none of it is. */
#define ES_INPUT_FORMATS                                                                       \
    "equishard reads cost tables (equishard measure), tar and parquet shards, shard lists "   \
    "(one path a line), WeNet raw lists (JSON lines with \"key\" and \"wav\") and Kaldi data " \
    "directories"

#endif
