/* jsonio.h: writing JSON documents to files without ever leaving a half-written
 * file behind (temporary file in the same directory, fsync, rename). */
#ifndef GOS_JSONIO_H
#define GOS_JSONIO_H

#include <jansson.h>

/* Writes root, indented, to path atomically. "-" writes to stdout. */
int gos_json_save_atomic(json_t *root, const char *path);

/* When the environment names a directory in GPUOS_JSON_TRACE, writes a copy of
 * root there (one file per document: PID-N.json). tests/run.sh sets it so that
 * every JSON document the test suite makes gpuos write is checked against its
 * schema (schemas/). gos_json_save_atomic calls it; writers that print JSON by
 * other means call it themselves. Never fails. */
void gos_json_trace(json_t *root);

/* A new JSON array of the n integers in v. */
json_t *gos_json_ints(const int *v, int n);

/* parent[key] as an object, created (replacing a non-object) if needed;
 * a borrowed reference. */
json_t *gos_json_child(json_t *parent, const char *key);

/* Writes a whole buffer to path atomically (same rules). */
int gos_file_save_atomic(const char *path, const void *data, size_t len);

#endif
