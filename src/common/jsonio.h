/* SPDX-License-Identifier: Apache-2.0 */
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

/* Reads the JSON document at path into *out; GOS_EINVAL ("path: why") when it
 * cannot be read or parsed. */
int gos_json_load(const char *path, json_t **out);

/* A new JSON array of the n reals in v (a NaN or infinity becomes null). */
json_t *gos_json_reals(const double *v, int n);

/* Objects from a list of typed members, in order:
 *   json_object_set_new(o, "time_s", GOS_JSON_OBJ(GOS_JR("hash", t_hash), GOS_JI("n", n)));
 * GOS_JI integer, GOS_JR real, GOS_JB boolean, GOS_JS string, GOS_JO a json_t
 * (reference stolen). A member whose value cannot be made (a NaN real, a NULL
 * string or object) is left out, as json_object_set_new would. */
typedef struct {
    const char *key;
    char type; /* 'i', 'r', 'b', 's', 'o' */
    json_int_t i;
    double r;
    const char *s;
    json_t *o;
} gos_json_field;
#define GOS_JI(k, v) {.key = (k), .type = 'i', .i = (json_int_t)(v)}
#define GOS_JR(k, v) {.key = (k), .type = 'r', .r = (v)}
#define GOS_JB(k, v) {.key = (k), .type = 'b', .i = !!(v)}
#define GOS_JS(k, v) {.key = (k), .type = 's', .s = (v)}
#define GOS_JO(k, v) {.key = (k), .type = 'o', .o = (v)}
/* Sets the n members f[] on o; returns o. */
json_t *gos_json_put(json_t *o, const gos_json_field *f, size_t n);
#define GOS_JSON_PUT(o, ...)                                                                           \
    gos_json_put((o), (const gos_json_field[]){__VA_ARGS__},                                          \
                 sizeof((const gos_json_field[]){__VA_ARGS__}) / sizeof(gos_json_field))
#define GOS_JSON_OBJ(...) GOS_JSON_PUT(json_object(), __VA_ARGS__)

/* parent[key] as an object, created (replacing a non-object) if needed;
 * a borrowed reference. */
json_t *gos_json_child(json_t *parent, const char *key);

/* Writes a whole buffer to path atomically (same rules). */
int gos_file_save_atomic(const char *path, const void *data, size_t len);

#endif
