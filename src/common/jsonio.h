/* jsonio.h: writing JSON documents to files without ever leaving a half-written
 * file behind (temporary file in the same directory, fsync, rename). */
#ifndef GOS_JSONIO_H
#define GOS_JSONIO_H

#include <jansson.h>

/* Writes root, indented, to path atomically. "-" writes to stdout. */
int gos_json_save_atomic(json_t *root, const char *path);

/* A new JSON array of the n integers in v. */
json_t *gos_json_ints(const int *v, int n);

/* parent[key] as an object, created (replacing a non-object) if needed;
 * a borrowed reference. */
json_t *gos_json_child(json_t *parent, const char *key);

/* Writes a whole buffer to path atomically (same rules). */
int gos_file_save_atomic(const char *path, const void *data, size_t len);

#endif
