/* SPDX-License-Identifier: Apache-2.0 */
/* server.c: the life of `gpuos serve`: opens the devices, builds a scheduler per
 * device and the vGPU table from the configuration, listens on a Unix socket
 * (its file permissions decide who may use the GPU), starts one thread per
 * connection and one per engine, and on SIGTERM/SIGINT drains and exits cleanly:
 * no new work is accepted, queued work is dropped, running work completes,
 * every client's memory is released, the socket file is removed.
 *
 * As a systemd service (Type=notify): READY=1 once the socket listens,
 * RELOADING=1 / READY=1 around a SIGHUP reload (reload.c), STOPPING=1 at
 * shutdown; sd_notify does nothing when $NOTIFY_SOCKET is unset.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/dispatch.h"
#include "serve/ring.h"
#include "serve/hostmem.h"
#include "serve/shm.h"
#include "serve/swap.h"
#include "serve/vgpu.h"
#include "serve/mps.h"
#include "serve/metrics.h"
#include "serve/state.h"
#include "serve/server.h"
#include "common/log.h"
#include "device/exec_ops.h"
#include "serve/executor.h"
#include "serve/syslibs.h"

#include "chip/chip.h"
#include "common/clock.h"
#include "common/status.h"

#include "proto/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A device's scheduling and isolation settings from its [device] section c
 * (grant length, executors, overlap, the latency class's hand-over, SM limit
 * and priorities), each checked against its isolation. */
static int dev_settings(struct srv_dev *d, const struct gos_serve_devcfg *c)
{
    d->isolation = c->isolation;
    /* Spatial vGPUs (sms, serve/spatial.c) live on green contexts of the
     * daemon's own context, so their device must say isolation = none:
     * srv_spatial_open refuses any other mode rather than weaken it. */
    d->grant_ns = c->grant_us ? c->grant_us * 1000ull
                              : d->isolation != GOS_ISOLATION_NONE ? SRV_GRANT_PROCESS_NS : SRV_BATCH_MAX_NS;
    d->grant_auto = !c->grant_us && d->isolation != GOS_ISOLATION_NONE;
    d->grant_min_ns = c->grant_min_us * 1000ull; /* 0: auto, by share (grant.c) */
    d->executor_per_vgpu = c->executor_per_vgpu;
    if (d->executor_per_vgpu && d->isolation == GOS_ISOLATION_NONE)
        return gos_fail(GOS_EINVAL, "device %d: executor = per-vgpu needs isolation = process or mps (under none "
                        "there are no executors)", d->index);
    /* pairs by default under mps (stop 36: BAND within 0.1-0.7 points of
     * the shares with 2-8 vGPUs and the 0.2/1/5/20 ms mix, and 0.2-1.3 by
     * the tenants' own work, on an H100; results/GPU-5e4e181c-...) */
    d->overlap = c->overlap < 0 ? d->isolation == GOS_ISOLATION_MPS : c->overlap;
    if (c->overlap > 0 && d->isolation != GOS_ISOLATION_MPS)
        return gos_fail(GOS_EINVAL, "device %d: overlap = pairs needs isolation = mps (only an MPS server runs "
                        "two executors' kernels at once)", d->index);
    /* unset: beside under mps with overlap = pairs, preempt otherwise
     * (issue 41: beside under process was measured once, on H100
     * GPU-dec7bfb3, in runs where it rarely met a running batch grant;
     * not evidence enough for a default; results/.../run1-308fad8) */
    d->handover = c->handover >= 0 ? c->handover : d->overlap;
    d->latency_sms = c->latency_sms;
    if (d->latency_sms && d->isolation != GOS_ISOLATION_MPS)
        return gos_fail(GOS_EINVAL, "device %d: latency_sms needs isolation = mps (the SM limit is the MPS "
                        "server's active-thread percentage)", d->index);
    d->latency_priority = c->latency_priority >= 0 ? c->latency_priority
                          : d->isolation == GOS_ISOLATION_MPS ? GOS_LATPRIO_STREAM | GOS_LATPRIO_CLIENT
                                                              : 0;
    if (d->latency_priority && d->isolation != GOS_ISOLATION_MPS)
        return gos_fail(GOS_EINVAL, "device %d: latency_priority needs isolation = mps (priorities order the "
                        "blocks of one MPS server's clients; separate contexts are time-sliced)", d->index);
    if (d->handover && d->isolation == GOS_ISOLATION_NONE)
        return gos_fail(GOS_EINVAL, "device %d: handover = beside needs isolation = process or mps (under none "
                        "there are no executors to run beside each other)", d->index);
    return GOS_OK;
}

static int open_devices(struct srv *s, const char *force_sim)
{
    for (int i = 0; i < s->cfg.n_devs; i++) {
        struct gos_serve_devcfg *c = &s->cfg.devs[i];
        struct srv_dev *d = &s->devs[i];
        d->srv = s;
        d->index = i;
        gos_device_spec spec = {.sim = force_sim ? force_sim : (c->sim[0] ? c->sim : NULL),
                                .ordinal = c->ordinal < 0 ? 0 : c->ordinal};
        int rc;
        if ((rc = dev_settings(d, c)))
            return rc;
        d->ordinal = spec.ordinal;
        snprintf(d->sim, sizeof d->sim, "%s", spec.sim ? spec.sim : "");
        if (d->isolation == GOS_ISOLATION_MPS && !d->sim[0] &&
            (rc = srv_mps_start(d->mps_dir, sizeof d->mps_dir))) /* a GPU: the daemon's own MPS server */
            return rc;
        if (d->isolation != GOS_ISOLATION_NONE) {
            /* process / mps: the daemon never opens a GPU (nothing a tenant does
             * can fault it, and an MPS server never waits for the daemon); the
             * device's facts come from a probe executor. */
            struct srv_exec *x = NULL;
            rc = srv_dev_exec_spawn(d, NULL, &x);
            if (rc) {
                char why[256];
                snprintf(why, sizeof why, "%s", gos_last_error());
                srv_mps_stop(d->mps_dir);
                if (rc == GOS_ENODEV && !spec.sim)
                    return gos_fail(rc, "device %s: %s (to serve the simulated chip instead, pass --sim default "
                                        "or write sim = default in its [device] section)", c->label, why);
                return gos_fail(rc, "device %s: %s", c->label, why);
            }
            d->info = x->info;
            d->attrs = x->attrs;
            d->mem_total = x->mem_total;
            srv_exec_close(x);
        }
        /* A simulated device is opened by the daemon in every mode: no context to
         * fault, and its chip's truth is what the metrics report. */
        if (d->isolation == GOS_ISOLATION_NONE || spec.sim) {
            rc = gos_device_open(&spec, &d->dev);
            if (rc) {
                srv_mps_stop(d->mps_dir);
                char why[256];
                snprintf(why, sizeof why, "%s", gos_last_error());
                if (rc == GOS_ENODEV && !spec.sim)
                    return gos_fail(rc, "device %s: %s (to serve the simulated chip instead, pass --sim default "
                                        "or write sim = default in its [device] section)", c->label, why);
                return gos_fail(rc, "device %s: %s", c->label, why);
            }
        }
        if (c->chip[0] && (rc = gos_chip_load(c->chip, &s->chips[i]))) {
            char why[256];
            snprintf(why, sizeof why, "%s", gos_last_error());
            return gos_fail(rc, "device %s: chip = %s", c->label, why);
        }
        s->n_devs = i + 1;
        if (d->dev && d->isolation == GOS_ISOLATION_NONE) {
            d->info = d->dev->info;
            if ((rc = gos_exec_init(d->dev)))
                return rc;
            uint64_t fr;
            if ((rc = gos_exec_mem_info(d->dev, &fr, &d->mem_total)))
                return rc;
            d->attrs.rc = gos_exec_device_attributes(d->dev, d->attrs.value, d->attrs.valid,
                                                     GOS_DEVICE_ATTRS_MAX);
        }
        if ((rc = srv_swap_init(s, d, c)))
            return rc;
        int mode;
        if ((rc = gos_sched_parse_mode(c->queue, &mode)) ||
            (rc = gos_sched_new(c->policy, mode, c->period_ns, &d->sched)))
            return rc;
        if (!strcmp(c->policy, "band")) {
            if ((rc = gos_sched_set_band_wait(d->sched, c->band_wait_ns)))
                return rc;
            gos_sched_set_band_charge_hold(d->sched, c->band_charge_hold != 0);
        }
        d->n_engines = gos_sched_engine_count(d->sched);
        for (int e = 0; d->isolation == GOS_ISOLATION_NONE && e < d->n_engines; e++)
            if ((rc = gos_exec_engine_new(d->dev, 0, &d->streams[e], d->ev[e])))
                return rc;
        srv_dev_init_conds(d);
    }
    /* Memory shares against the devices' real sizes (issue 15.6). */
    uint64_t totals[GOS_SERVE_MAX_DEVICES];
    for (int i = 0; i < s->n_devs; i++)
        totals[i] = s->devs[i].mem_total;
    char warn[256];
    int rc0 = gos_serve_config_check_memory(&s->cfg, totals, warn, sizeof warn);
    if (rc0)
        return rc0;
    if (warn[0])
        gos_log(LOG_WARNING, "%s", warn);
    if ((rc0 = srv_spatial_open(s)))
        return rc0;
    for (int v = 0; v < s->cfg.n_vgpus; v++) {
        struct srv_vgpu *g = &s->vgpus[v];
        g->cfg = s->cfg.vgpus[v];
        g->file = g->cfg;
        g->id = (uint32_t)v;
        struct srv_dev *d = &s->devs[g->cfg.device];
        g->mem_quota = gos_serve_mem_quota(g->cfg.mem_pct, g->cfg.mem_bytes, d->mem_total);
        int rc = srv_sched_vgpu_add(d, g->id, &g->cfg);
        if (rc)
            {
            char why[256];
            snprintf(why, sizeof why, "%s", gos_last_error());
            return gos_fail(rc, "vGPU %s: %s", g->cfg.name, why);
        }
        s->n_vgpus = v + 1;
    }
    return GOS_OK;
}

static void close_devices(struct srv *s)
{
    for (int i = s->n_devs - 1; i >= 0; i--) { /* SM sets (spatial.c) before their device */
        struct srv_dev *d = &s->devs[i];
        for (int e = 0; e < d->n_engines; e++) { /* what was created is non-NULL */
            if (!d->dev)
                break;
            gos_exec_engine_free(d->dev, d->streams[e], d->ev[e]);
        }
        gos_sched_free(d->sched);
        srv_swap_fini(d);
        if (d->shared_dev)
            srv_spatial_close(d);
        else
            gos_device_close(d->dev);
        gos_chip_free(s->chips[i]);
        s->chips[i] = NULL;
    }
}

/* The socket's directory: created (mode 0755: clients must reach the socket,
 * whose own mode decides who may connect) when absent, refused when others may
 * write to it without the sticky bit (anyone could replace the socket). */
static int socket_dir(const char *path)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    const char *slash = strrchr(path, '/');
    if (!slash)
        return GOS_OK; /* the working directory */
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
        return gos_fail(GOS_EINVAL, "socket path %s is too long", path);
    memcpy(dir, path, n);
    dir[n] = 0;
    struct stat st;
    if (stat(dir, &st) && errno == ENOENT) {
        if (mkdir(dir, 0755) && errno != EEXIST) {
            int e = errno;
            return gos_fail(e == EACCES || e == EROFS ? GOS_EPERM : GOS_EIO,
                            "cannot create the socket's directory %s: %s (run as root, under the systemd unit "
                            "(RuntimeDirectory=gpuos), or choose another socket with --socket or socket =)",
                            dir, strerror(e));
        }
        chmod(dir, 0755); /* whatever the umask */
        gos_log(LOG_INFO, "created %s (mode 0755)", dir);
        if (stat(dir, &st))
            return gos_fail(GOS_EIO, "%s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return gos_fail(GOS_EINVAL, "the socket's directory %s is not a directory", dir);
    if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
        return gos_fail(GOS_EPERM, "the socket's directory %s is writable by anyone without the sticky bit: "
                                   "anyone could replace the socket; choose another directory", dir);
    if (access(dir, W_OK | X_OK))
        return gos_fail(GOS_EPERM, "cannot create the socket in %s: %s (run as root, under the systemd unit "
                                   "(RuntimeDirectory=gpuos), or choose another socket with --socket or socket =)",
                        dir, strerror(errno));
    return GOS_OK;
}

/* Binds under a temporary name and renames into place once listening, so that
 * the socket file appears only when it accepts connections. */
static int listen_on(struct srv *s, const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char tmp[sizeof a.sun_path];
    if (strlen(path) + 8 >= sizeof a.sun_path)
        return gos_fail(GOS_EINVAL, "socket path %s is too long", path);
    int rc = socket_dir(path);
    if (rc)
        return rc;
    /* Only a socket is ever replaced (issue 23.6): a regular file, a link or a
     * directory at the path is refused, never renamed over or unlinked. */
    struct stat st;
    if (!lstat(path, &st) && !S_ISSOCK(st.st_mode))
        return gos_fail(GOS_EBUSY, "%s exists and is not a socket (%s): refusing to replace it; remove it or "
                                    "choose another socket with --socket or socket =",
                        path, S_ISREG(st.st_mode) ? "a regular file" : S_ISLNK(st.st_mode) ? "a symbolic link"
                                                  : S_ISDIR(st.st_mode) ? "a directory" : "not a socket");
    /* A live daemon on the path wins; a stale socket is replaced. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    if (probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) == 0) {
        close(probe);
        return gos_fail(GOS_EBUSY, "another daemon already serves %s", path);
    }
    if (probe >= 0)
        close(probe);
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid() % 100000);
    if (!lstat(tmp, &st) && S_ISSOCK(st.st_mode))
        unlink(tmp); /* a stale one of ours; anything else makes bind fail */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return gos_fail(GOS_EIO, "socket: %s", strerror(errno));
    snprintf(a.sun_path, sizeof a.sun_path, "%s", tmp);
    int bound = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (bound && s->cfg.socket_gid >= 0 &&
        chown(tmp, (uid_t)-1, (gid_t)s->cfg.socket_gid)) { /* before it is listening: no one in between */
        int e = errno;
        close(fd);
        unlink(tmp);
        return gos_fail(GOS_EPERM, "socket_group %ld: cannot give the socket to that group: %s (the daemon's user "
                                   "must be a member of it: SupplementaryGroups= in the unit)",
                        s->cfg.socket_gid, strerror(e));
    }
    if (!bound || chmod(tmp, s->cfg.socket_mode) || listen(fd, 256) || rename(tmp, path)) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return gos_fail(e == EACCES ? GOS_EPERM : GOS_EIO, "listening on %s: %s", path, strerror(e));
    }
    s->listen_fd = fd;
    if (!stat(path, &st)) {
        s->sock_dev = st.st_dev;
        s->sock_ino = st.st_ino;
    }
    return GOS_OK;
}

/* Unlinks the socket at exit only while the path is still this daemon's own
 * (not a file someone put there since). */
static void unlink_socket(const struct srv *s)
{
    struct stat st;
    if (!lstat(s->cfg.socket, &st) && S_ISSOCK(st.st_mode) && st.st_dev == s->sock_dev && st.st_ino == s->sock_ino)
        unlink(s->cfg.socket);
}

/* Refuses a connection at once with a connection-level error (a REPLY of
 * sequence 0, which the client library reports as the failure of gpuos_open) and
 * closes it. Never blocks: the reply fits an empty socket buffer. */
static void refuse(int fd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse(int fd, int code, const char *fmt, ...)
{
    char why[GOS_MSG_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    gos_wire_reply(fd, 1, 0, GOS_MSG_HELLO, code, why, NULL, 0);
    close(fd);
}

/* Accepts one connection. Returns 0, or -1 when the daemon is out of descriptors
 * or memory (the caller backs off instead of polling a listener it cannot
 * serve: accept would fail at once, forever). At the descriptor limit the
 * reserve descriptor is given up for a moment so that the connection waiting is
 * told why instead of hanging in the backlog. */
static int accept_one(struct srv *s)
{
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
            return 0; /* EAGAIN, ECONNABORTED, EINTR...: nothing to back off from */
        if ((e == EMFILE || e == ENFILE) && s->reserve_fd >= 0) {
            close(s->reserve_fd);
            s->reserve_fd = -1;
            int x = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (x >= 0)
                refuse(x, GOS_ELIMIT, "gpuos serve is out of file descriptors (%d clients connected); try again later",
                       s->n_clients);
            s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        }
        s->n_refused++;
        return -1;
    }
    pthread_mutex_lock(&s->lock);
    int over = s->n_clients >= s->cfg.max_clients;
    int n = s->n_clients;
    pthread_mutex_unlock(&s->lock);
    if (over) {
        s->n_refused++;
        refuse(fd, GOS_ELIMIT, "gpuos serve has its maximum of %d clients connected (max_clients); try again later", n);
        return 0;
    }
    struct ucred cr;
    socklen_t cl = sizeof cr;
    struct srv_client *c = calloc(1, sizeof *c);
    if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl)) {
        free(c);
        close(fd);
        return c ? 0 : -1;
    }
    int sz = 1 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    c->srv = s;
    c->fd = fd;
    c->pid = cr.pid;
    c->uid = cr.uid;
    c->gid = cr.gid;
    c->vgpu = -1;
    c->refs = 1;
    c->born_ns = gos_now_ns();
    pthread_mutex_init(&c->wlock, NULL);
    pthread_mutex_lock(&s->lock);
    c->id = ++s->next_client_id;
    c->next = s->clients;
    s->clients = c;
    s->n_clients++;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 << 10);
    int bad = pthread_create(&c->thread, &at, srv_client_main, c);
    if (bad) {
        s->clients = c->next;
        s->n_clients--;
    }
    pthread_attr_destroy(&at);
    pthread_mutex_unlock(&s->lock);
    if (bad) {
        pthread_mutex_destroy(&c->wlock);
        free(c);
        refuse(fd, GOS_ELIMIT, "gpuos serve cannot start a thread for this connection: %s", strerror(bad));
        return -1;
    }
    return 0;
}

/* Fits max_clients to the descriptor limit: raises the soft limit to the hard
 * one, and lowers max_clients (with a warning) when even that cannot hold one
 * descriptor per client plus the daemon's own. */
#define SRV_FD_RESERVE 64
static void fit_fd_limit(struct srv *s)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    /* A client holds its socket, and under process / mps its executor's channel. */
    rlim_t per = 1;
    for (int i = 0; i < s->cfg.n_devs; i++)
        if (s->cfg.devs[i].isolation != GOS_ISOLATION_NONE)
            per = 2;
    if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)s->cfg.max_clients * per + SRV_FD_RESERVE > rl.rlim_cur) {
        int fit = rl.rlim_cur > 2 * SRV_FD_RESERVE ? (int)((rl.rlim_cur - SRV_FD_RESERVE) / per)
                                                   : (int)(rl.rlim_cur / (2 * per));
        if (fit < 1)
            fit = 1;
        gos_log(LOG_WARNING, "max_clients %d does not fit the descriptor limit %llu: %d", s->cfg.max_clients,
                (unsigned long long)rl.rlim_cur, fit);
        s->cfg.max_clients = fit;
    }
}

/* Waits (lock held) up to ms for every client to be released; the number left. */
static int srv_wait_clients(struct srv *s, int ms)
{
    struct timespec until = gos_deadline_ns((uint64_t)ms * 1000000ull);
    while (s->n_clients > 0)
        if (pthread_cond_timedwait(&s->idle, &s->lock, &until) == ETIMEDOUT)
            break;
    return s->n_clients;
}

/* Drops connections that sent no HELLO within hello_timeout_ms (a connection
 * flood must not hold client slots forever). Called from the accept loop. One
 * whose HELLO is being answered is not idle: its executor may take seconds to
 * start on a loaded host. */
void srv_reap_idle(struct srv *s)
{
    uint64_t now = gos_now_ns(), limit = (uint64_t)s->cfg.hello_timeout_ms * 1000000ull;
    pthread_mutex_lock(&s->lock);
    for (struct srv_client *c = s->clients; c; c = c->next)
        if (c->vgpu < 0 && !c->hello && !c->dead && !c->reaped && now - c->born_ns > limit) {
            c->reaped = 1;
            shutdown(c->fd, SHUT_RDWR);
        }
    pthread_mutex_unlock(&s->lock);
}

/* srv_run's first step: locks, limits, the start-up warnings, how readers poll. */
static void run_prepare(struct srv *s)
{
    gos_cond_init(&s->idle);
    pthread_mutex_init(&s->lock, NULL);
    s->uid = getuid();
    srv_oom_policy();
    srv_shm_init(s);
    srv_exec_prepare(); /* failing here is reported by the first spawn */
    s->listen_fd = -1;
    s->reserve_fd = -1;
    fit_fd_limit(s);
    for (int i = 0; i < s->cfg.n_warn; i++)
        gos_log(LOG_WARNING, "%s", s->cfg.warn[i]);
    /* Readers poll for the next request only where CPUs are plentiful: a poller
     * takes a CPU for up to spin_us after each request. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    s->spin_us = s->cfg.spin_us >= 0 ? (unsigned)s->cfg.spin_us : ncpu >= 8 ? 50u : 0u;
    s->max_spinners = ncpu >= 8 ? (int)(ncpu / 4) : 1;
}

/* The signals the daemon handles, blocked in every thread and read from a
 * signalfd (*sfd). */
static int run_signals(int *sfd)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGPIPE);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits the mask */
    *sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (*sfd < 0)
        return gos_fail(GOS_EIO, "signalfd: %s", strerror(errno));
    return GOS_OK;
}

/* One dispatcher thread per device engine; *started counts them. */
static int run_dispatchers(struct srv *s, pthread_t disp[GOS_SERVE_MAX_DEVICES][GOS_SCHED_MAX_ENGINES],
                           int *started)
{
    for (int i = 0; i < s->n_devs; i++)
        for (int e = 0; e < s->devs[i].n_engines; e++) {
            struct srv_engine_arg *a = malloc(sizeof *a);
            if (!a)
                return gos_fail(GOS_ENOMEM, "out of memory");
            a->d = &s->devs[i];
            a->engine = e;
            pthread_create(&disp[i][e], NULL, srv_dispatch_main, a);
            (*started)++;
        }
    return GOS_OK;
}

/* The start-up notices and systemd's READY. */
static void run_announce(struct srv *s)
{
    gos_log(LOG_NOTICE, "listening on %s (%d device%s, %d vGPU%s, protocol %d)", s->cfg.socket, s->n_devs,
            s->n_devs == 1 ? "" : "s", s->n_vgpus, s->n_vgpus == 1 ? "" : "s", GOS_PROTOCOL_VERSION);
    for (int i = 0; i < s->n_devs; i++)
        gos_log(LOG_INFO, "device %s: %s%s, policy %s, queue %s, isolation %s", s->cfg.devs[i].label,
                s->devs[i].info.simulated ? "simulated " : "", s->devs[i].info.name,
                gos_sched_policy_name(s->devs[i].sched), gos_sched_mode_name(s->devs[i].sched),
                s->devs[i].isolation == GOS_ISOLATION_NONE  ? "none"
                : s->devs[i].isolation == GOS_ISOLATION_MPS ? "mps"
                                                            : "process");
    srv_check_oversubscription(s, "at start");
    pthread_mutex_lock(&s->lock);
    srv_swap_quotas_known(s); /* (the configuration's vGPUs and the state file's) */
    pthread_mutex_unlock(&s->lock);
    srv_sd_notifyf("READY=1\nSTATUS=listening on %s, %d vGPU%s\nMAINPID=%lu", s->cfg.socket, s->n_vgpus,
               s->n_vgpus == 1 ? "" : "s", (unsigned long)getpid());
}

/* The accept loop: connections, SIGHUP reloads, until SIGTERM or SIGINT. */
static void run_loop(struct srv *s, int sfd)
{
    uint64_t backoff_until = 0;
    for (;;) {
        /* While out of descriptors, the listener is left alone for a while: it
         * stays readable and accept would fail at once, a loop at 100 % CPU. */
        uint64_t now = gos_now_ns();
        int listen = now >= backoff_until;
        struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN}, {.fd = s->listen_fd, .events = POLLIN}};
        int wait_ms = listen ? 1000 : (int)((backoff_until - now) / 1000000 + 1);
        int pr = poll(pf, listen ? 2 : 1, wait_ms);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[0].revents) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si || si.ssi_signo == SIGPIPE)
                continue;
            if (si.ssi_signo == SIGHUP) {
                srv_reload(s);
                continue;
            }
            gos_log(LOG_NOTICE, "%s: shutting down", strsignal((int)si.ssi_signo));
            break;
        }
        if (listen && pf[1].revents && accept_one(s) < 0)
            backoff_until = gos_now_ns() + 100000000ull;
        srv_reap_idle(s);
    }
}

/* Shutdown's drain: rings revoked, clients told, their work waited for within
 * the grace period, then abandoned (*abandoned). Returns the clients left busy. */
static int run_drain(struct srv *s, int *abandoned)
{
    pthread_mutex_lock(&s->lock);
    /* Work granted through rings (issue 9.4) is in the executors only: revoked
     * and waited for within the grace period like the rest. */
    uint64_t grace0 = gos_now_ns();
    int ring_busy = srv_ring_quiesce(s, s->cfg.shutdown_grace_ms);
    int grace_left = s->cfg.shutdown_grace_ms - (int)((gos_now_ns() - grace0) / 1000000ull);
    s->stop = 1;
    for (struct srv_client *c = s->clients; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    for (int i = 0; i < s->n_devs; i++)
        if (s->devs[i].sched)
            for (int e = 0; e < s->devs[i].n_engines; e++)
                pthread_cond_broadcast(&s->devs[i].cond[e]);
    /* Clients end once their in-flight work has completed, within the grace
     * period; then running work is abandoned (issue 15.5): every wait on the
     * device returns at once, and whatever still runs on a GPU ends with the
     * context when the process exits. */
    int leftover = srv_wait_clients(s, grace_left > 0 ? grace_left : 0);
    if (ring_busy > leftover)
        leftover = ring_busy;
    *abandoned = 0;
    if (leftover) {
        gos_log(LOG_WARNING, "%d client(s) still busy after the grace period of %d ms: abandoning their work",
                leftover, s->cfg.shutdown_grace_ms);
        for (int i = 0; i < s->n_devs; i++)
            if (s->devs[i].dev && s->devs[i].isolation == GOS_ISOLATION_NONE)
                gos_exec_abandon(s->devs[i].dev);
        /* Executors' work ends with their processes: each exchange in flight
         * fails at once and its client hears of it. */
        for (struct srv_client *c = s->clients; c; c = c->next)
            srv_exec_kill(c->x);
        *abandoned = 1;
        leftover = srv_wait_clients(s, 2000);
    }
    pthread_mutex_unlock(&s->lock);
    return leftover;
}

/* The dispatcher threads joined, 2 s each; 1 when one is stuck. */
static int run_join(struct srv *s, pthread_t disp[GOS_SERVE_MAX_DEVICES][GOS_SCHED_MAX_ENGINES])
{
    int stuck = 0;
    for (int i = 0; i < s->n_devs; i++)
        for (int e = 0; e < s->devs[i].n_engines; e++) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 2;
            if (pthread_timedjoin_np(disp[i][e], NULL, &until))
                stuck = 1; /* in a driver call that does not return: the exit ends it */
        }
    return stuck;
}

/* Shutdown's end: the socket, the devices unless work was left on them
 * (rc's message kept), the descriptors, the MPS servers. */
static void run_close(struct srv *s, int sfd, int leftover, int rc)
{
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
        unlink_socket(s);
    }
    if (!leftover) {
        char keep[512];
        snprintf(keep, sizeof keep, "%s", gos_last_error());
        srv_shm_fini(s); /* the segments' descriptors (their memory) before the devices */
        close_devices(s);
        gos_fail(rc, "%s", keep);
    }
    if (sfd >= 0)
        close(sfd);
    if (s->reserve_fd >= 0)
        close(s->reserve_fd);
    for (int i = 0; i < s->n_devs; i++) /* after the executors: the MPS server's own quit */
        srv_mps_stop(s->devs[i].mps_dir);
}

int srv_run(struct srv *s, const char *force_sim)
{
    int rc, sfd = -1, started = 0;
    pthread_t disp[GOS_SERVE_MAX_DEVICES][GOS_SCHED_MAX_ENGINES];
    run_prepare(s);
    if ((rc = run_signals(&sfd)))
        goto fail;
    if ((rc = open_devices(s, force_sim)) || (rc = srv_state_load(s)))
        goto fail;
    s->last_reload_ok = 1;
    s->last_reload_s = (double)time(NULL);
    if ((rc = listen_on(s, s->cfg.socket)))
        goto fail;
    s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if ((rc = run_dispatchers(s, disp, &started)) || (rc = srv_metrics_start(s)))
        goto fail;
    run_announce(s);
    run_loop(s, sfd);
    rc = GOS_OK;
fail:
    srv_sd_notifyf("STOPPING=1");
    srv_metrics_stop(s);
    int abandoned, leftover = run_drain(s, &abandoned);
    int stuck = started ? run_join(s, disp) : 0;
    srv_ring_bells_stop(s);
    if (stuck || abandoned)
        leftover = leftover ? leftover : 1; /* devices in an unknown state: left to the exit */
    s->leaked = leftover != 0;
    run_close(s, sfd, leftover, rc);
    return rc;
}
