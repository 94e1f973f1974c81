/* SPDX-License-Identifier: Apache-2.0 */
/* jsonio.c: atomic writes of files and JSON documents (temporary file, fsync,
 * rename) and the GPUOS_JSON_TRACE copies (jsonio.h). */
#include "common/jsonio.h"
#include "common/env.h"

#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gos_file_save_atomic(const char *path, const void *data, size_t len)
{
    if (strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout))
            return gos_fail(GOS_EIO, "stdout: write failed");
        return GOS_OK;
    }
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return gos_fail(GOS_ENOMEM, "out of memory");
    snprintf(tmp, n, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return gos_fail(e == EACCES ? GOS_EPERM : GOS_EIO, "%s: cannot write: %s", path, strerror(e));
    }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            free(tmp);
            return gos_fail(GOS_EIO, "%s: write failed: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        free(tmp);
        return gos_fail(GOS_EIO, "%s: write failed: %s", path, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        return gos_fail(GOS_EIO, "%s: cannot replace: %s", path, strerror(e));
    }
    free(tmp);
    return GOS_OK;
}

void gos_json_trace(json_t *root)
{
    static int counter;
    const char *dir = gos_env(GOS_ENV_JSON_TRACE);
    if (!dir || !*dir || !root)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%d-%d.json", dir, (int)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    json_dump_file(root, path, JSON_PRESERVE_ORDER);
}

int gos_json_save_atomic(json_t *root, const char *path)
{
    gos_json_trace(root);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!s)
        return gos_fail(GOS_ENOMEM, "cannot serialise JSON");
    size_t len = strlen(s);
    char *t = realloc(s, len + 2);
    if (!t) {
        free(s);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    t[len] = '\n';
    int rc = gos_file_save_atomic(path, t, len + 1);
    free(t);
    return rc;
}

json_t *gos_json_ints(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

int gos_json_load(const char *path, json_t **out)
{
    json_error_t err;
    if (!(*out = json_load_file(path, 0, &err)))
        return gos_fail(GOS_EINVAL, "%s: %s", path, err.text);
    return GOS_OK;
}

json_t *gos_json_reals(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        json_t *x = json_real(v[i]);
        json_array_append_new(a, x ? x : json_null());
    }
    return a;
}

json_t *gos_json_put(json_t *o, const gos_json_field *f, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        json_t *v = NULL;
        switch (f[k].type) {
        case 'i': v = json_integer(f[k].i); break;
        case 'r': v = json_real(f[k].r); break;
        case 'b': v = json_boolean(f[k].i); break;
        case 's': v = f[k].s ? json_string(f[k].s) : NULL; break;
        case 'o': v = f[k].o; break;
        }
        json_object_set_new(o, f[k].key, v);
    }
    return o;
}

json_t *gos_json_child(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);
    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(parent, key, o);
    }
    return o;
}
