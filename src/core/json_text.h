/* JSON text as every JSON output of the library writes it (plan.json,
 * rank-*.batches.jsonl, validate --json, simulate --json, calibrate's model.json,
 * reshard's utt2data files): one string writer, whatever the bytes.
 *
 * Keys, shard names and paths need not be UTF-8 (tar member names, latin-1 file
 * names). A byte that is not part of well-formed UTF-8 is written \udcXX (XX the
 * byte): the lone surrogate Python's json.loads reads and .encode("utf-8",
 * "surrogateescape") turns back into that byte, which is how Python's tarfile and
 * os already decode such names. jansson refuses such strings (json_string gives
 * NULL, its dumper fails), so documents are built with jansson, their byte
 * strings made with es_json_bytes, and written with es_json_dump. */
#ifndef ES_JSON_TEXT_H
#define ES_JSON_TEXT_H

#include <jansson.h>
#include <stddef.h>

#include "core/strbuf.h"

/* Writes s[0..n) at w as a JSON string literal (quotes included) and returns its
 * end; w has room for ES_JSON_ESCAPED_MAX(n) bytes (every byte escaped as
 * \uXXXX, and the quotes). '"' and '\\' are escaped with a backslash, other
 * bytes below 0x20 as \u00xx, bytes that are not UTF-8 as \udcXX. Runs of bytes
 * that need no escape are copied whole. */
#define ES_JSON_ESCAPED_MAX(n) (6 * (n) + 2)
char *es_json_escape(char *w, const char *s, size_t n);

/* Appends s (NUL-terminated) to sb as such a literal. */
void es_json_string(es_strbuf *sb, const char *s);

/* A jansson string holding s's bytes as they are, UTF-8 or not (NULL when out of
 * memory, or for s NULL): only es_json_dump writes it. */
json_t *es_json_bytes(const char *s);

/* Appends v as JSON text to sb, laid out as json_dumps(v, flags) lays it out
 * (JSON_INDENT(n), JSON_COMPACT and JSON_REAL_PRECISION(p) are honoured; objects
 * in insertion order), every string and key written by es_json_escape. The same
 * bytes as json_dumps for a document whose strings are UTF-8 without control
 * characters (which jansson writes \n, \t, \u001F where es_json_escape writes
 * \u000a, \u0009, \u001f: the same JSON). Returns 0, or -1 when out of memory
 * (sb->oom) or v is NULL somewhere. */
int es_json_dump(es_strbuf *sb, const json_t *v, size_t flags);

/* The reader of such text: text[0..n) loaded by json_loadb(flags) into a
 * document whose strings hold the bytes es_json_escape was given, \udcXX read
 * back as byte XX (0x80..0xff) and \u0000 as a NUL byte (json_string_length
 * counts it); write it with es_json_dump. Object keys are as jansson reads them
 * (UTF-8, no NUL, no \udcXX). NULL for text that is not such JSON, or when out
 * of memory (err, when given, says which, its positions those of a rewritten
 * copy). */
json_t *es_json_load_bytes(const char *text, size_t n, size_t flags, json_error_t *err);

#endif
