/* SPDX-License-Identifier: Apache-2.0 */
/* trace.c: the per-kernel trace files of the frequency-switching directory
 * contract (docs/contracts.md, "Frequency-switching traces"): CSV "sm,iter,start_ns,end_ns",
 * one row per SM and iteration, timestamps in GPU-timebase ns. Writing is
 * atomic (temporary file + rename); reading is strict, because a trace from
 * another tool that is silently misread would give wrong latencies. */
#include "dvfs/dvfs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER "sm,iter,start_ns,end_ns"

int gos_dvfs_mkdirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return gos_fail(GOS_EINVAL, "path too long: %s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST)
                return gos_fail(GOS_EIO, "cannot create directory %s: %s", buf, strerror(errno));
            *p = '/';
        }
    if (mkdir(buf, 0777) && errno != EEXIST)
        return gos_fail(GOS_EIO, "cannot create directory %s: %s", buf, strerror(errno));
    return GOS_OK;
}

static char *put_i64(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    return p;
}

int gos_dvfs_trace_write_csv(const gos_dvfs_trace *tr, const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return gos_fail(GOS_EINVAL, "path too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return gos_fail(GOS_EIO, "cannot write %s: %s", path, strerror(errno));
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    fputs(HEADER "\n", f);
    char line[96];
    for (int k = 0; k < tr->n_sms; k++)
        for (size_t i = tr->off[k]; i < tr->off[k + 1]; i++) {
            char *p = put_i64(line, tr->sm[k]);
            *p++ = ',';
            p = put_i64(p, (int64_t)(i - tr->off[k]));
            *p++ = ',';
            p = put_i64(p, tr->start_ns[i]);
            *p++ = ',';
            p = put_i64(p, tr->end_ns[i]);
            *p++ = '\n';
            fwrite(line, 1, (size_t)(p - line), f);
        }
    if (fflush(f) || ferror(f)) {
        fclose(f);
        unlink(tmp);
        return gos_fail(GOS_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    fclose(f);
    if (rename(tmp, path)) {
        unlink(tmp);
        return gos_fail(GOS_EIO, "cannot rename into %s: %s", path, strerror(errno));
    }
    return GOS_OK;
}

/* One row as read; sorted by (sm, iter) afterwards. */
typedef struct {
    int64_t sm, iter, start, end;
} row;

static int cmp_row(const void *pa, const void *pb)
{
    const row *a = pa, *b = pb;
    if (a->sm != b->sm)
        return a->sm < b->sm ? -1 : 1;
    return (a->iter > b->iter) - (a->iter < b->iter);
}

/* Parses a decimal integer field ending at ',' / end of line; 0 on success. */
static int field(char **pp, int64_t *v, int last)
{
    char *p = *pp, *end;
    if (*p == ' ' || *p == '\t')
        return -1;
    errno = 0;
    long long x = strtoll(p, &end, 10);
    if (end == p || errno)
        return -1;
    if (last) {
        while (*end == '\r' || *end == ' ')
            end++;
        if (*end != '\n' && *end != 0)
            return -1;
    } else {
        if (*end != ',')
            return -1;
        end++;
    }
    *v = x;
    *pp = end;
    return 0;
}

int gos_dvfs_trace_read_csv(const char *path, gos_dvfs_trace *tr)
{
    memset(tr, 0, sizeof *tr);
    FILE *f = fopen(path, "r");
    if (!f)
        return gos_fail(GOS_EIO, "cannot read %s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0, n = 0, rcap = 0, lineno = 0;
    row *rows = NULL;
    int rc = GOS_OK;
    ssize_t len = getline(&line, &cap, f);
    lineno++;
    if (len < 0) {
        rc = gos_fail(GOS_EINVAL, "%s: empty file (expected header \"" HEADER "\")", path);
        goto done;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = 0;
    if (strcmp(line, HEADER)) {
        rc = gos_fail(GOS_EINVAL, "%s:1: header is \"%.40s\", expected \"" HEADER "\"", path, line);
        goto done;
    }
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (len == 0 || line[0] == '\n' || (line[0] == '\r' && line[1] == '\n'))
            continue; /* blank lines (a trailing one) are harmless */
        if (n == rcap) {
            rcap = rcap ? rcap * 2 : 4096;
            row *nr = realloc(rows, rcap * sizeof *rows);
            if (!nr) {
                rc = gos_fail(GOS_ENOMEM, "%s: out of memory", path);
                goto done;
            }
            rows = nr;
        }
        row *r = &rows[n];
        char *p = line;
        if (field(&p, &r->sm, 0) || field(&p, &r->iter, 0) || field(&p, &r->start, 0) ||
            field(&p, &r->end, 1)) {
            rc = gos_fail(GOS_EINVAL, "%s:%zu: expected four integers sm,iter,start_ns,end_ns", path, lineno);
            goto done;
        }
        if (r->sm < 0 || r->sm >= 1 << 20 || r->iter < 0 || r->start < 0) {
            rc = gos_fail(GOS_EINVAL, "%s:%zu: negative or out-of-range sm/iter/start_ns", path, lineno);
            goto done;
        }
        if (r->end < r->start) {
            rc = gos_fail(GOS_EINVAL, "%s:%zu: end_ns %" PRId64 " before start_ns %" PRId64, path,
                          lineno, r->end, r->start);
            goto done;
        }
        n++;
    }
    if (n == 0) {
        rc = gos_fail(GOS_EINVAL, "%s: no rows after the header", path);
        goto done;
    }
    qsort(rows, n, sizeof *rows, cmp_row);
    int n_sms = 1;
    for (size_t i = 1; i < n; i++) {
        if (rows[i].sm == rows[i - 1].sm && rows[i].iter == rows[i - 1].iter) {
            rc = gos_fail(GOS_EINVAL, "%s: SM %" PRId64 " iteration %" PRId64 " appears twice", path,
                          rows[i].sm, rows[i].iter);
            goto done;
        }
        n_sms += rows[i].sm != rows[i - 1].sm;
    }
    if ((rc = gos_dvfs_trace_alloc(tr, n_sms, 0)))
        goto done;
    free(tr->start_ns);
    free(tr->end_ns);
    tr->start_ns = malloc(n * sizeof *tr->start_ns);
    tr->end_ns = malloc(n * sizeof *tr->end_ns);
    if (!tr->start_ns || !tr->end_ns) {
        gos_dvfs_trace_free(tr);
        rc = gos_fail(GOS_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    int k = -1;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || rows[i].sm != rows[i - 1].sm) {
            k++;
            tr->sm[k] = (int)rows[i].sm;
            tr->off[k] = i;
        }
        tr->start_ns[i] = rows[i].start;
        tr->end_ns[i] = rows[i].end;
    }
    tr->off[n_sms] = n;
done:
    free(line);
    free(rows);
    fclose(f);
    return rc;
}
