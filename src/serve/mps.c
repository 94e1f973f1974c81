/* SPDX-License-Identifier: Apache-2.0 */
/* mps.c: the daemon's own MPS server for isolation = mps (issue 9). Started
 * with `nvidia-cuda-mps-control -d` and stopped with `echo quit |
 * nvidia-cuda-mps-control`, both with CUDA_MPS_PIPE_DIRECTORY and
 * CUDA_MPS_LOG_DIRECTORY in a private directory of the daemon (so it never
 * meets another MPS server of the machine). Starting MPS changes no GPU setting
 * (H200-NOTES). The environment is built before fork: the daemon has threads.
 * Stopping waits until the control daemon and server are gone (quit is
 * asynchronous).
 * Process: the daemon (gpuos serve). */
#include "serve/mps.h"
#include "common/log.h"

#include "common/status.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int control(const char *dir, const char *arg, const char *input)
{
    char pe[128], le[128];
    snprintf(pe, sizeof pe, "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", dir);
    snprintf(le, sizeof le, "CUDA_MPS_LOG_DIRECTORY=%s/log", dir);
    char *envp[] = {pe, le, "PATH=/usr/bin:/bin:/usr/local/bin:/usr/sbin:/sbin", NULL};
    char *argv[] = {"nvidia-cuda-mps-control", (char *)arg, NULL}; /* arg NULL: commands on stdin */
    int in[2] = {-1, -1};
    if (input && pipe(in))
        return gos_fail(GOS_EIO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        return gos_fail(GOS_EIO, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (input) {
            dup2(in[0], 0);
            close(in[0]);
            close(in[1]);
        }
        execve("/usr/bin/nvidia-cuda-mps-control", argv, envp);
        execvpe("nvidia-cuda-mps-control", argv, envp);
        _exit(127);
    }
    if (input) {
        close(in[0]);
        if (write(in[1], input, strlen(input)) < 0) {
            /* the control program reads nothing: its status says why */
        }
        close(in[1]);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        return gos_fail(GOS_EIO, "nvidia-cuda-mps-control %s: exit status %d%s", arg ? arg : "(quit)",
                        WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                        WIFEXITED(st) && WEXITSTATUS(st) == 127 ? " (not installed?)" : "");
    return GOS_OK;
}

int srv_mps_start(char *dir, size_t cap)
{
    if (!dir[0]) {
        char t[] = "/tmp/gpuos-mps.XXXXXX";
        if (!mkdtemp(t))
            return gos_fail(GOS_EIO, "MPS directory: %s", strerror(errno));
        snprintf(dir, cap, "%s", t);
        char sub[128];
        snprintf(sub, sizeof sub, "%s/pipe", dir);
        mkdir(sub, 0700);
        snprintf(sub, sizeof sub, "%s/log", dir);
        mkdir(sub, 0700);
    }
    int rc = control(dir, "-d", NULL);
    if (rc)
        return gos_fail(rc, "isolation = mps: starting the MPS server: %s", gos_last_error());
    return GOS_OK;
}

/* Whether process pid belongs to the MPS server of dir: its environment names
 * the pipe directory (the control daemon and the servers it starts inherit
 * CUDA_MPS_PIPE_DIRECTORY), or it holds a file under dir open (the control
 * daemon keeps its logs and lock there). Both, since a daemonised program may
 * rewrite its environment block. */
static int mps_member(long pid, const char *dir)
{
    char path[64], want[160], buf[16384];
    snprintf(want, sizeof want, "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", dir);
    size_t wl = strlen(want) + 1; /* with its NUL: the whole entry */
    snprintf(path, sizeof path, "/proc/%ld/environ", pid);
    FILE *f = fopen(path, "r");
    if (f) {
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = 0;
        for (size_t i = 0; i + wl <= k; i += strlen(buf + i) + 1)
            if (!memcmp(buf + i, want, wl))
                return 1;
    }
    size_t dl = strlen(dir);
    snprintf(path, sizeof path, "/proc/%ld/fd", pid);
    DIR *fd = opendir(path);
    struct dirent *e;
    int hit = 0;
    while (fd && !hit && (e = readdir(fd))) {
        char link[320];
        snprintf(link, sizeof link, "/proc/%ld/fd/%s", pid, e->d_name);
        ssize_t k = readlink(link, buf, sizeof buf - 1);
        hit = k > (ssize_t)dl && !memcmp(buf, dir, dl) && buf[dl] == '/';
    }
    if (fd)
        closedir(fd);
    return hit;
}

/* The live processes of the MPS server of dir; at most cap of them. */
static int mps_procs(const char *dir, pid_t *out, int cap)
{
    DIR *pd = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (pd && (e = readdir(pd)) && n < cap) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (!*end && pid > 0 && pid != getpid() && mps_member(pid, dir))
            out[n++] = (pid_t)pid;
    }
    if (pd)
        closedir(pd);
    return n;
}

/* Quits the server and waits (up to 10 s) until its control daemon and server
 * are gone: `quit` only asks, and a new server started on the same GPU right
 * after must not meet the old one. */
void srv_mps_stop(char *dir)
{
    if (!dir[0])
        return;
    control(dir, NULL, "quit\n");
    pid_t left[16];
    int n = 0, i = 0;
    for (; i < 1000 && (n = mps_procs(dir, left, 16)) > 0; i++)
        usleep(10000);
    if (i > 0 && n == 0)
        gos_log(LOG_INFO, "isolation = mps: the MPS server of %s gone %d ms after quit", dir, 10 * i);
    if (n > 0)
        gos_log(LOG_WARNING, "isolation = mps: the MPS server of %s (pid %d) still runs 10 s after quit", dir,
                (int)left[0]);
}
