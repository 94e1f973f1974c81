/* peercg.c: a vGPU bound to a cgroup (issue 43.2; the [vgpu] key `cgroup =`,
 * config_ext.c): at HELLO the daemon reads the cgroup of the process at the
 * other end of the socket and admits it only inside the vGPU's cgroup, so that
 * a vGPU made for a Slurm job serves the job's processes and not another
 * process of the same user.
 *
 *   - the process is the one the kernel recorded at connect(): a pidfd from
 *     SO_PEERPIDFD (Linux 6.5), else pidfd_open of the SO_PEERCRED pid; its
 *     /proc/PID/cgroup is read and then the pidfd is asked whether the process
 *     still lives: if it does, PID was not reused while we read, else the
 *     client is refused (never a cgroup read from another process);
 *   - `cgroup = /a/b` is matched against the unified (v2) line "0::PATH";
 *     `cgroup = freezer:/a/b` against the v1 hierarchy of that controller
 *     (or `name=systemd:/a/b`); PATH is inside when it is /a/b or below it
 *     (/a/b/step_0), never /a/bc;
 *   - the paths are those of the daemon's cgroup namespace (/proc as the
 *     daemon sees it).
 * Process: the daemon (gpuos serve). */
#include "serve/serve.h"

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

int gos_serve_cgroup_check(const char *v, char *why, size_t whylen)
{
    int cl = split(v);
    if (cl < 0 || strlen(v) >= GOS_SERVE_CGROUP_MAX) {
        snprintf(why, whylen, "cgroup \"%s\" must be a path from the root of the hierarchy, /... (cgroup v2), or "
                              "CONTROLLER:/... (v1), shorter than %d", v, GOS_SERVE_CGROUP_MAX);
        return -1;
    }
    for (int i = 0; i < cl; i++)
        if (!(v[i] >= 'a' && v[i] <= 'z') && !(v[i] >= '0' && v[i] <= '9') && !strchr("_=,.-", v[i])) {
            snprintf(why, whylen, "cgroup \"%s\": a controller is letters, digits and _=,.- (freezer:/PATH)", v);
            return -1;
        }
    const char *path = v + (cl ? cl + 1 : 0);
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f || (p[0] == '/' && p[1] == '.' && p[2] == '.' &&
                                                       (p[3] == '/' || !p[3]))) {
            snprintf(why, whylen, "cgroup \"%s\": no blanks, control characters or /../ in a cgroup path", v);
            return -1;
        }
    return 0;
}

/* The PATH of /proc/PID/cgroup's line for controller ctl ("" the unified
 * line "0::PATH"; else a v1 line "N:a,ctl,b:PATH"): 0, or -1 when none. */
static int cgroup_line(pid_t pid, const char *ctl, char *out, size_t n)
{
    char file[64], line[GOS_SERVE_CGROUP_MAX + 128];
    snprintf(file, sizeof file, "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(file, "re");
    int found = -1;
    size_t cl = strlen(ctl);
    while (f && found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = 0;
        int match = !cl && c1 == line + 1 && line[0] == '0' && c2 == c1 + 1;
        for (char *t = c1 + 1, *e; cl && !match && *t; t = *e ? e + 1 : e) {
            e = t + strcspn(t, ",");
            match = (size_t)(e - t) == cl && !strncmp(t, ctl, cl);
        }
        if (match && strlen(c2 + 1) < n) {
            strcpy(out, c2 + 1);
            found = 0;
        }
    }
    if (f)
        fclose(f);
    return found;
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

int srv_peer_cgroup_access(const char *vgpu, const char *cg, int fd, pid_t pid)
{
    int cl = split(cg);
    char ctl[64] = "";
    if (cl < 0 || cl >= (int)sizeof ctl)
        return gos_fail(GOS_EPERM, "vGPU \"%s\": cgroup %s is not a cgroup path", vgpu, cg);
    memcpy(ctl, cg, (size_t)cl);
    ctl[cl] = 0;
    const char *path = cg + (cl ? cl + 1 : 0);
    socklen_t len = sizeof(int);
    int pidfd = -1;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) || pidfd < 0)
        pidfd = pid > 0 ? pidfd_open(pid, 0) : -1;
    if (pidfd < 0)
        return gos_fail(GOS_EPERM, "vGPU \"%s\" is open only to the processes of cgroup %s: the connecting process "
                                   "(pid %d) is gone (%s)", vgpu, cg, (int)pid, strerror(errno));
    char mine[GOS_SERVE_CGROUP_MAX];
    int rc = cgroup_line(pid, ctl, mine, sizeof mine);
    int alive = !pidfd_send_signal(pidfd, 0, NULL, 0);
    close(pidfd);
    if (!alive)
        return gos_fail(GOS_EPERM, "vGPU \"%s\" is open only to the processes of cgroup %s: the connecting process "
                                   "(pid %d) ended while its cgroup was read", vgpu, cg, (int)pid);
    if (rc)
        return gos_fail(GOS_EPERM, "vGPU \"%s\" is open only to the processes of cgroup %s: pid %d has no %s%s line "
                                   "in /proc/%d/cgroup", vgpu, cg, (int)pid, ctl[0] ? ctl : "unified (0::)",
                        ctl[0] ? "" : " cgroup", (int)pid);
    if (!inside(mine, path))
        return gos_fail(GOS_EPERM, "vGPU \"%s\" is open only to the processes of cgroup %s; pid %d is in %s%s%s", vgpu,
                        cg, (int)pid, ctl, ctl[0] ? ":" : "", mine);
    return GOS_OK;
}
