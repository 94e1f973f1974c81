/* SPDX-License-Identifier: Apache-2.0 */
/* executor.c: spawning and talking to executor processes (executor.h).
 * Process: the daemon (gpuos serve). */
#include "serve/executor.h"

#include "common/status.h"

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int dead_rc(struct srv_exec *x)
{
    return gos_fail(GOS_EDEVICE, "%s", x->why);
}

/* Did executor pid exit after a device fault (X_EXIT_FAULTED)? Its status is
 * read without reaping it (WNOWAIT): the reaper still collects it. */
static int exited_faulted(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return pid > 0 && !waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == pid &&
           si.si_code == CLD_EXITED && si.si_status == X_EXIT_FAULTED;
}

/* A shared executor (x->share): a fault on one channel is the reason for all;
 * a channel that merely broke waits up to 500 ms for a sibling's fault to be
 * read (x->lock held: only this channel waits) and then gives that reason.
 * A channel whose exchange runs with the daemon's lock held (MEM_ALLOC's, for
 * one) would wait in vain, since the sibling's fault is recorded under that
 * lock (srv_client_exec_probe): it reads the executor's exit status instead,
 * X_EXIT_FAULTED after a fault (t_xshare on a loaded host heard "executor
 * channel closed" before). The faulting channel's own reason, with the CUDA
 * error's name, replaces that one for the channels that ask later. */
static const char *share_reason(struct srv_exec *x, int faulted, const char *why, char *buf, size_t n)
{
    struct srv_exec_share *sh = x->share;
    for (int i = 0; i < 50; i++) {
        int by_exit = !faulted && exited_faulted(x->pid);
        pthread_mutex_lock(&sh->lock);
        if ((faulted && (!sh->lost || sh->by_exit)) || (by_exit && !sh->lost)) {
            static const char own[] = "device fault in this client's context: ";
            if (faulted && !strncmp(why, own, sizeof own - 1)) /* the error itself: whose it was is not known */
                why += sizeof own - 1;
            sh->lost = 1;
            sh->by_exit = !faulted;
            snprintf(sh->why, sizeof sh->why, "vGPU %s: the executor its clients share (executor = per-vgpu) was lost "
                     "to a device fault in its context%s%.200s", sh->vgpu,
                     faulted ? ": " : " (another client's work; that client has the error)", faulted ? why : "");
        }
        int lost = sh->lost;
        if (lost)
            snprintf(buf, n, "%s", sh->why);
        pthread_mutex_unlock(&sh->lock);
        /* One context: the sticky error meets whichever client syncs first, so
         * no channel can tell whose launch faulted; every client (the first to
         * see it too) gets the one reason, which names the CUDA error. */
        if (lost) {
            if (!faulted) { /* it saw no fault itself: not counted as this one's */
                snprintf(x->fate, sizeof x->fate, "%s", buf);
                __atomic_store_n(&x->fated, 1, __ATOMIC_RELEASE);
            }
            return buf;
        }
        usleep(10000);
    }
    return why;
}

static void mark_dead(struct srv_exec *x, int faulted, const char *why)
{
    if (x->dead)
        return;
    char shared_why[400];
    if (x->share && !__atomic_load_n(&x->fated, __ATOMIC_ACQUIRE))
        why = share_reason(x, faulted, why, shared_why, sizeof shared_why);
    if (__atomic_load_n(&x->fated, __ATOMIC_ACQUIRE)) { /* killed by the daemon: the reason is the daemon's */
        why = x->fate;
        faulted = 0;
    }
    snprintf(x->why, sizeof x->why, "%s", why);
    x->faulted = faulted;
    __atomic_store_n(&x->dead, 1, __ATOMIC_RELEASE);
}

/* Sends and receives one exchange (x->lock held). */
static int exchange_fd(struct srv_exec *x, uint32_t type, const void *req, uint32_t n, int fd, struct x_hdr *h,
                       int *rfd);
static int exchange(struct srv_exec *x, uint32_t type, const void *req, uint32_t n, int fd, struct x_hdr *h)
{
    return exchange_fd(x, type, req, n, fd, h, NULL);
}

static int exchange_fd(struct srv_exec *x, uint32_t type, const void *req, uint32_t n, int fd, struct x_hdr *h,
                       int *rfd)
{
    if (x->dead)
        return dead_rc(x);
    struct x_hdr q = {type, n, 0, 0};
    int rc = x_send(x->sock, &q, req, fd);
    if (!rc)
        rc = x_recv(x->sock, h, &x->buf, &x->cap, rfd);
    if (rc) {
        char why[200];
        snprintf(why, sizeof why, "executor (pid %d) died: %s", (int)x->pid, gos_last_error());
        mark_dead(x, 0, why);
        return dead_rc(x);
    }
    if (h->type != type) {
        mark_dead(x, 0, "executor answered out of order");
        return dead_rc(x);
    }
    return GOS_OK;
}

/* One request and its answer; rfd (or NULL) receives a descriptor the answer
 * carries, closed again when the call fails. */
int srv_exec_call_fd(struct srv_exec *x, uint32_t type, const void *req, uint32_t n, int fd, void *rep, size_t repn,
                     int *rfd)
{
    struct x_hdr h;
    if (rfd)
        *rfd = -1;
    pthread_mutex_lock(&x->lock);
    int rc = exchange_fd(x, type, req, n, fd, &h, rfd);
    if (!rc) {
        if (h.rc)
            rc = gos_fail(h.rc, "%s", (char *)x->buf);
        else if (rep)
            memcpy(rep, x->buf, h.len < repn ? h.len : repn);
    }
    pthread_mutex_unlock(&x->lock);
    if (rc && rfd && *rfd >= 0) {
        close(*rfd);
        *rfd = -1;
    }
    return rc;
}

int srv_exec_call(struct srv_exec *x, uint32_t type, const void *req, uint32_t n, int fd, void *rep, size_t repn)
{
    return srv_exec_call_fd(x, type, req, n, fd, rep, repn, NULL);
}

int srv_exec_run(struct srv_exec *x, int engine, const void *ops, uint32_t bytes, uint32_t n, int32_t *rcs,
                 char *msg, size_t msgcap, uint64_t *gpu_ns)
{
    struct x_hdr h;
    *gpu_ns = 0;
    msg[0] = 0;
    size_t len = 8 + (size_t)bytes;
    if (len > X_MAX_PAYLOAD)
        return gos_fail(GOS_EINVAL, "a batch of %u bytes", (unsigned)bytes);
    unsigned char *req = malloc(len);
    if (!req)
        return gos_fail(GOS_ENOMEM, "daemon out of host memory");
    uint32_t e = (uint32_t)engine;
    memcpy(req, &e, 4);
    memcpy(req + 4, &n, 4);
    memcpy(req + 8, ops, bytes);
    pthread_mutex_lock(&x->lock);
    int rc = exchange(x, X_RUN, req, (uint32_t)len, -1, &h);
    free(req);
    if (!rc && h.rc)
        rc = gos_fail(h.rc, "%s", (char *)x->buf);
    if (!rc) {
        struct x_run_rep r;
        if (h.len < sizeof r) {
            mark_dead(x, 0, "executor sent a short answer");
            rc = dead_rc(x);
        } else {
            memcpy(&r, x->buf, sizeof r);
            if (r.n != n || h.len < sizeof r + 4 * (size_t)n) {
                mark_dead(x, 0, "executor sent a short answer");
                rc = dead_rc(x);
            } else {
                memcpy(rcs, (char *)x->buf + sizeof r, 4 * (size_t)n);
                snprintf(msg, msgcap, "%s", (char *)x->buf + sizeof r + 4 * (size_t)n);
                *gpu_ns = r.gpu_ns;
                if (h.flags & X_FAULTED) {
                    char why[200];
                    snprintf(why, sizeof why, "device fault in this client's context: %s", msg);
                    mark_dead(x, 1, why);
                }
            }
        }
    }
    pthread_mutex_unlock(&x->lock);
    return rc;
}

/* The daemon's own binary, opened once: executors run the very version of the
 * daemon (same executor protocol) even after the file was replaced on disk. */
static int exe_fd = -1;
static pthread_once_t exe_once = PTHREAD_ONCE_INIT;
static void exe_open(void)
{
    exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
}

int srv_exec_prepare(void)
{
    pthread_once(&exe_once, exe_open);
    return exe_fd >= 0 ? GOS_OK : gos_fail(GOS_EIO, "executor: cannot open the gpuos binary: %s", strerror(errno));
}

void srv_exec_fail(struct srv_exec *x, const char *why)
{
    if (!x || x->dead || __atomic_load_n(&x->fated, __ATOMIC_ACQUIRE))
        return;
    snprintf(x->fate, sizeof x->fate, "%s", why);
    __atomic_store_n(&x->fated, 1, __ATOMIC_RELEASE);
    srv_exec_kill(x);
    /* dead now, not at its client's next exchange with it: a request that needs
     * no exchange (a synchronise with nothing queued, as after the ring) gets
     * the fate too */
    mark_dead(x, 0, why);
}

void srv_exec_refate(struct srv_exec *x, const char *why)
{
    pthread_mutex_lock(&x->lock);
    if (x->dead && !x->faulted) {
        snprintf(x->fate, sizeof x->fate, "%s", why);
        __atomic_store_n(&x->fated, 1, __ATOMIC_RELEASE);
        snprintf(x->why, sizeof x->why, "%s", why);
    }
    pthread_mutex_unlock(&x->lock);
}

static int hello(struct srv_exec *x, struct srv_exec **out);

int srv_exec_spawn(const char *sim, int ordinal, const char *mps_dir, const struct srv_exec_class *cls,
                   struct srv_exec **out)
{
    int rc0 = srv_exec_prepare();
    if (rc0)
        return rc0;
    char exe[] = "gpuos";
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return gos_fail(GOS_EIO, "executor: socketpair: %s", strerror(errno));
    char ord[16];
    snprintf(ord, sizeof ord, "%d", ordinal);
    static const struct srv_exec_class as_any;
    if (!cls)
        cls = &as_any;
    char *argv[11] = {exe, "executor", "--fd", "3", "--ordinal", ord}, **a = argv + 6; /* (NULL-ended: 10 at most) */
    if (cls->prio) {
        *a++ = "--priority";
        *a++ = cls->prio > 0 ? "high" : "low";
    }
    if (sim) {
        *a++ = "--sim";
        *a++ = (char *)sim;
    }
    /* The environment, built before fork (only async-signal-safe calls after). */
    extern char **environ;
    size_t ne = 0;
    while (environ[ne])
        ne++;
    char **envp = calloc(ne + 5, sizeof *envp), pipe_env[128] = "", log_env[128] = "", pct_env[64] = "";
    char prio_env[] = "CUDA_MPS_CLIENT_PRIORITY=1";
    if (!envp) {
        close(sv[0]);
        close(sv[1]);
        return gos_fail(GOS_ENOMEM, "daemon out of host memory");
    }
    size_t k0 = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "CUDA_MPS_", 9))
            envp[k0++] = environ[i];
    if (mps_dir) {
        snprintf(pipe_env, sizeof pipe_env, "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", mps_dir);
        snprintf(log_env, sizeof log_env, "CUDA_MPS_LOG_DIRECTORY=%s/log", mps_dir);
        envp[k0++] = pipe_env;
        envp[k0++] = log_env;
    }
    /* (read by the MPS client library; a simulated device ignores them) */
    if (cls->sm_pct > 0 && cls->sm_pct < 100) {
        snprintf(pct_env, sizeof pct_env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", cls->sm_pct);
        envp[k0++] = pct_env;
    }
    if (cls->mps_low)
        envp[k0++] = prio_env;
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        free(envp);
        return gos_fail(GOS_EIO, "executor: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* async-signal-safe calls only until exec */
        /* channel to 3, binary to 4, without one clobbering the other */
        int k = sv[1], e = exe_fd;
        if (k <= 4)
            k = fcntl(k, F_DUPFD, 5);
        if (e <= 4)
            e = fcntl(e, F_DUPFD, 5);
        if (k < 0 || e < 0 || dup2(k, 3) < 0 || dup2(e, 4) < 0 || fcntl(4, F_SETFD, FD_CLOEXEC) < 0)
            _exit(127);
        close_range(5, ~0u, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* one tenant's context before everyone's daemon (hostmem.c) */
        int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (oom >= 0) {
            if (write(oom, SRV_OOM_EXECUTOR_STR, sizeof SRV_OOM_EXECUTOR_STR - 1) < 0) {
                /* an executor keeps the daemon's score: nothing else to do */
            }
            close(oom);
        }
        fexecve(4, argv, envp);
        _exit(127);
    }
    close(sv[1]);
    free(envp);
    struct srv_exec *x = calloc(1, sizeof *x);
    if (!x) {
        close(sv[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return gos_fail(GOS_ENOMEM, "daemon out of host memory");
    }
    x->pid = pid;
    x->sock = sv[0];
    pthread_mutex_init(&x->lock, NULL);
    return hello(x, out);
}

/* The executor's first message on a new channel: the device it opened. */
static int hello(struct srv_exec *x, struct srv_exec **out)
{
    struct x_hdr h;
    int rc = x_recv(x->sock, &h, &x->buf, &x->cap, NULL);
    if (!rc && (h.type != X_HELLO || (!h.rc && h.len < sizeof(struct x_hello_rep))))
        rc = gos_fail(GOS_EIO, "executor: bad first message");
    if (!rc && h.rc)
        rc = gos_fail(h.rc, "executor: %s", (char *)x->buf);
    if (rc) {
        char why[300];
        snprintf(why, sizeof why, "%s", gos_last_error());
        srv_exec_close(x);
        return gos_fail(rc, "%s", why);
    }
    struct x_hello_rep r;
    memcpy(&r, x->buf, sizeof r);
    x->mem_total = r.mem_total;
    x->info = r.info;
    x->attrs.rc = r.attr_rc;
    memcpy(x->attrs.value, r.attr_value, sizeof x->attrs.value);
    memcpy(x->attrs.valid, r.attr_valid, sizeof x->attrs.valid);
    *out = x;
    return GOS_OK;
}

int srv_exec_adopt(struct srv_exec *ctl, struct srv_exec **out)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return gos_fail(GOS_EIO, "executor: socketpair: %s", strerror(errno));
    int rc = srv_exec_call(ctl, X_ADOPT, NULL, 0, sv[1], NULL, 0);
    close(sv[1]);
    struct srv_exec *x = rc ? NULL : calloc(1, sizeof *x);
    if (!x) {
        close(sv[0]);
        return rc ? rc : gos_fail(GOS_ENOMEM, "daemon out of host memory");
    }
    x->pid = ctl->pid;
    x->sock = sv[0];
    x->shared = 1;
    pthread_mutex_init(&x->lock, NULL);
    return hello(x, out);
}

void srv_exec_kill(struct srv_exec *x)
{
    if (x && x->pid > 0)
        kill(x->pid, SIGKILL);
}

static void *reaper(void *arg)
{
    pid_t pid = (pid_t)(intptr_t)arg;
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return NULL;
}

int srv_exec_hungup(struct srv_exec *x)
{
    if (!x || x->dead)
        return 1;
    struct pollfd p = {.fd = x->sock, .events = POLLRDHUP};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

void srv_exec_lost(struct srv_exec *x, int faulted, const char *why)
{
    pthread_mutex_lock(&x->lock);
    if (!x->dead)
        mark_dead(x, faulted, why);
    pthread_mutex_unlock(&x->lock);
}

void srv_exec_close(struct srv_exec *x)
{
    if (!x)
        return;
    if (x->shared) { /* its channel alone: the executor serves its other clients on */
        if (pthread_mutex_trylock(&x->lock) == 0) {
            /* No call in flight: EOF to the executor, which releases what this
             * client held and then closes its end; waiting for that (2 s at most)
             * makes the release happen before the client counts as gone (the
             * next client of the vGPU finds its memory free). */
            shutdown(x->sock, SHUT_WR);
            struct pollfd pf = {.fd = x->sock, .events = POLLIN};
            char junk[512];
            for (int waited = 0; waited < 2000 && poll(&pf, 1, 100) >= 0; waited += 100)
                if ((pf.revents & (POLLIN | POLLHUP | POLLERR)) && read(x->sock, junk, sizeof junk) <= 0)
                    break;
        } else { /* a call in flight: end its exchange now */
            shutdown(x->sock, SHUT_RDWR);
            pthread_mutex_lock(&x->lock);
        }
        close(x->sock);
        pthread_mutex_unlock(&x->lock);
        pthread_mutex_destroy(&x->lock);
        free(x->buf);
        free(x);
        return;
    }
    /* A thread may still be in a call: the kill ends its exchange (EOF). */
    if (x->pid > 0) {
        kill(x->pid, SIGKILL);
        shutdown(x->sock, SHUT_RDWR);
    }
    pthread_mutex_lock(&x->lock);
    /* Reaped off the caller's path (it may hold the daemon's lock): a GPU
     * process's exit tears its context down, which takes a while. */
    if (x->pid > 0 && waitpid(x->pid, NULL, WNOHANG) == 0) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, reaper, (void *)(intptr_t)x->pid))
            while (waitpid(x->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        pthread_attr_destroy(&a);
    }
    close(x->sock);
    pthread_mutex_unlock(&x->lock);
    pthread_mutex_destroy(&x->lock);
    free(x->buf);
    free(x);
}
