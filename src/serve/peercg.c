/* SPDX-License-Identifier: Apache-2.0 */
/* peercg.c: a vGPU bound to a cgroup (issue 43.2; the [vgpu] key `cgroup =`,
 * config_ext.c): at HELLO the daemon reads the cgroup of the process at the
 * other end of the socket and admits it only inside the vGPU's cgroup, so that
 * a vGPU made for a Slurm job serves the job's processes and not another
 * process of the same user.
 *
 *   - the process is the one the kernel recorded at connect(): a pidfd from
 *     SO_PEERPIDFD (Linux 6.5; older: pidfd_open of the SO_PEERCRED pid); its
 *     /proc/PID/cgroup is read and then the pidfd is asked whether the process
 *     still lives: if it does, PID was not reused while we read, else the
 *     client is refused (never a cgroup read from another process);
 *   - `cgroup = /a/b` is matched against the unified (v2) line "0::PATH";
 *     `cgroup = freezer:/a/b` against the v1 hierarchy of that controller
 *     (or `name=systemd:/a/b`); PATH is inside when it is /a/b or below it
 *     (/a/b/step_0), never /a/bc; a blank-separated list admits a process
 *     inside any of them (the Slurm Prolog names the layouts Slurm may use);
 *   - the paths are those of the daemon's cgroup namespace (/proc as the
 *     daemon sees it).
 * Process: the daemon (gpuos serve). */
#include "serve/vgpu.h"

#include "common/status.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; Debian 12's headers predate it */
#endif

/* CONTROLLER:/PATH -> the controller's length (0: /PATH alone); -1 neither. */
static int split(const char *v)
{
    if (v[0] == '/')
        return 0;
    const char *c = strchr(v, ':');
    return c && c > v && c[1] == '/' ? (int)(c - v) : -1;
}

/* One cgroup of a cgroup = list: 0 when good, else -1 with why filled. */
static int check_one(const char *v, const char *list, char *why, size_t whylen)
{
    int cl = split(v);
    if (cl < 0) {
        snprintf(why, whylen, "cgroup \"%s\" must be a path from the root of the hierarchy, /... (cgroup v2), or "
                              "CONTROLLER:/... (v1)", list);
        return -1;
    }
    for (int i = 0; i < cl; i++)
        if (!(v[i] >= 'a' && v[i] <= 'z') && !(v[i] >= '0' && v[i] <= '9') && !strchr("_=,.-", v[i])) {
            snprintf(why, whylen, "cgroup \"%s\": a controller is letters, digits and _=,.- (freezer:/PATH)", list);
            return -1;
        }
    for (const char *p = v + (cl ? cl + 1 : 0); *p; p++)
        if ((unsigned char)*p < ' ' || *p == 0x7f ||
            (p[0] == '/' && p[1] == '.' && p[2] == '.' && (p[3] == '/' || !p[3]))) {
            snprintf(why, whylen, "cgroup \"%s\": no control characters or /../ in a cgroup path", list);
            return -1;
        }
    return 0;
}

int gos_serve_cgroup_check(const char *v, char *why, size_t whylen)
{
    char buf[GOS_SERVE_CGROUP_MAX], *save = NULL;
    if (strlen(v) >= sizeof buf) {
        snprintf(why, whylen, "cgroup list longer than %d characters", GOS_SERVE_CGROUP_MAX - 1);
        return -1;
    }
    strcpy(buf, v);
    int n = 0;
    for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save), n++)
        if (check_one(t, v, why, whylen))
            return -1;
    if (!n) {
        snprintf(why, whylen, "cgroup = needs at least one /PATH or CONTROLLER:/PATH");
        return -1;
    }
    return 0;
}

/* The PATH of /proc/PID/cgroup's line (its text) for controller ctl (""
 * the unified line "0::PATH"; else a v1 line "N:a,ctl,b:PATH"): 0, or -1
 * when none. The first line that matches counts; a cgroup name cannot hold a
 * newline (the kernel refuses it), so no line is made by a tenant's name. */
static int cgroup_line(const char *text, const char *ctl, char *out, size_t n)
{
    size_t cl = strlen(ctl);
    for (const char *ln = text, *nx; *ln; ln = nx) {
        nx = ln + strcspn(ln, "\n");
        const char *c1 = memchr(ln, ':', (size_t)(nx - ln)), *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(nx - c1 - 1)) : 0;
        if (*nx)
            nx++;
        if (!c2)
            continue;
        int match = !cl && c1 == ln + 1 && ln[0] == '0' && c2 == c1 + 1;
        for (const char *t = c1 + 1, *e; cl && !match && t < c2; t = e + 1) {
            e = t + strcspn(t, ",:");
            match = (size_t)(e - t) == cl && !strncmp(t, ctl, cl);
        }
        size_t pl = strcspn(c2 + 1, "\n");
        if (match && pl < n) {
            memcpy(out, c2 + 1, pl);
            out[pl] = 0;
            return 0;
        }
    }
    return -1;
}

/* Is path inside cgroup cg (cg itself or below it)? */
static int inside(const char *path, const char *cg)
{
    size_t n = strlen(cg);
    while (n > 1 && cg[n - 1] == '/')
        n--;
    if (n == 1) /* "/" : every cgroup */
        return 1;
    return !strncmp(path, cg, n) && (path[n] == 0 || path[n] == '/');
}

/* Whether the process whose /proc/PID/cgroup reads text is inside cgroup
 * token t (CONTROLLER:/PATH or /PATH); its own cgroup of that hierarchy is
 * appended to where (", "-separated) the first time the hierarchy comes. */
static int admits(const char *text, const char *t, char *where, size_t wn)
{
    int cl = split(t);
    char ctl[64], path[GOS_SERVE_CGROUP_MAX], mine[GOS_SERVE_CGROUP_MAX + 80];
    if (cl < 0 || cl >= (int)sizeof ctl)
        return 0;
    memcpy(ctl, t, (size_t)cl);
    ctl[cl] = 0;
    if (cgroup_line(text, ctl, path, sizeof path))
        snprintf(mine, sizeof mine, "no %s line", cl ? ctl : "unified (0::)");
    else if (inside(path, t + (cl ? cl + 1 : 0)))
        return 1;
    else
        snprintf(mine, sizeof mine, "%s%s%s", ctl, cl ? ":" : "", path);
    size_t w = strlen(where);
    if (!strstr(where, mine) && w + strlen(mine) + 3 < wn)
        snprintf(where + w, wn - w, "%s%s", w ? ", " : "", mine);
    return 0;
}

int srv_peer_cgroup_access(const char *vgpu, const char *cg, int fd, pid_t pid)
{
    socklen_t len = sizeof(int);
    int pidfd = -1;
    /* Only a kernel without SO_PEERPIDFD falls back to the pid (a window for its
     * reuse between connect() and here); a peer gone (EINVAL, ESRCH) is refused. */
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len))
        pidfd = errno == ENOPROTOOPT && pid > 0 ? pidfd_open(pid, 0) : -1;
    if (pidfd < 0)
        return gos_fail(GOS_EPERM, "vGPU \"%s\" is open only to the processes of its cgroup: the connecting "
                                   "process (pid %d) is gone (%s)", vgpu, (int)pid, strerror(errno));
    char file[64], text[8192];
    snprintf(file, sizeof file, "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(file, "re");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f)
        fclose(f);
    int alive = !pidfd_send_signal(pidfd, 0, NULL, 0); /* alive now: pid was not reused while we read */
    close(pidfd);
    if (!alive)
        return gos_fail(GOS_EPERM, "vGPU \"%s\" is open only to the processes of its cgroup: the connecting "
                                   "process (pid %d) ended while its cgroup was read", vgpu, (int)pid);
    char buf[GOS_SERVE_CGROUP_MAX], where[512] = "", *save = NULL;
    snprintf(buf, sizeof buf, "%s", cg);
    for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
        if (admits(text, t, where, sizeof where))
            return GOS_OK;
    /* where first: a reply carries 255 characters, and a Prolog's list is long */
    return gos_fail(GOS_EPERM, "vGPU \"%s\" is open only to the processes of its cgroup: pid %d is in %s, outside %s",
                    vgpu, (int)pid, where, cg);
}
