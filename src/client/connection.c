/* SPDX-License-Identifier: Apache-2.0 */
/* connection.c: libgpuos's connection to the daemon: socket, requests and
 * replies with timeouts, gpuos_open / gpuos_close, the administration calls.
 * Process: a client program (libgpuos; the shim too). */
#include "client/client_internal.h"
#include "common/env.h"
#include "common/clock.h"

#include <sys/stat.h>

const char *gpuos_error(void) { return gos_last_error(); }

int gcl_timeout_ms(void)
{
    const char *t = gos_env(GOS_ENV_TIMEOUT_MS);
    long v = t ? strtol(t, NULL, 10) : 0;
    return v > 0 ? (int)(v < 86400000 ? v : 86400000) : 120000;
}

/* EACCES on the socket: who may use the daemon (the socket's group, e.g. the
 * unit's gpuos), in one line. */
static int denied(const char *path)
{
    struct stat st;
    char name[64] = "", line[1024];
    if (stat(path, &st))
        return gos_fail(GOS_EPERM, "cannot reach gpuos serve at %s: permission denied", path);
    /* the group's name from /etc/group itself: no NSS in a static libgpuos */
    FILE *f = fopen("/etc/group", "re");
    while (f && !name[0] && fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 && strtoul(c2 + 1, NULL, 10) == st.st_gid && c2[1] != ':')
            snprintf(name, sizeof name, "%.*s", (int)(c1 - line), line);
    }
    if (f)
        fclose(f);
    if (!name[0])
        snprintf(name, sizeof name, "%u", (unsigned)st.st_gid);
    return gos_fail(GOS_EPERM,
                    "cannot reach gpuos serve at %s: permission denied: only root and members of group %s may "
                    "use it (mode %04o; an administrator adds you: usermod -aG %s USER, then log in again)",
                    path, name, (unsigned)(st.st_mode & 07777), name);
}

/* Connects within timeout_ms (issue 15.3): a daemon that does not accept (its
 * backlog full: a flood, or a daemon stuck) makes a blocking connect() wait
 * forever, so the socket is non-blocking while connecting; a Unix socket
 * answers EAGAIN when the backlog is full, tried again until the deadline.
 * Sends then block at most timeout_ms (SO_SNDTIMEO) like the replies. */
int gcl_connect_to(const char *path, int tmo_ms, int *out)
{
    if (!path)
        path = gos_env(GOS_ENV_SOCKET);
    if (!path || !*path)
        path = GOS_DEFAULT_SOCKET;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return gos_fail(GOS_EINVAL, "socket path %s is too long", path);
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return gos_fail(GOS_EIO, "socket: %s", strerror(errno));
    uint64_t t0 = gos_now_ns();
    for (unsigned us = 1000;; us = us < 50000 ? 2 * us : 50000) {
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            break;
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EINPROGRESS) { /* not on Unix sockets today; handled anyway */
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            int err = 0;
            socklen_t el = sizeof err;
            if (poll(&pf, 1, tmo_ms) == 1 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) && !err)
                break;
            close(fd);
            return gos_fail(err ? GOS_EIO : GOS_ETIMEDOUT, "cannot reach gpuos serve at %s: %s", path,
                            err ? strerror(err) : "no connection within the timeout");
        }
        long ms = (long)((gos_now_ns() - t0) / 1000000ull);
        if (e != EAGAIN || ms >= tmo_ms) {
            close(fd);
            if (e == EAGAIN)
                return gos_fail(GOS_ETIMEDOUT, "gpuos serve at %s accepted no connection within %d ms "
                                "($GPUOS_TIMEOUT_MS): it is overloaded or stuck", path, tmo_ms);
            if (e == EACCES)
                return denied(path);
            return gos_fail(GOS_EIO, "cannot reach gpuos serve at %s: %s", path, strerror(e));
        }
        usleep(us);
    }
    int fl = fcntl(fd, F_GETFL);
    struct timeval tv = {.tv_sec = tmo_ms / 1000, .tv_usec = (tmo_ms % 1000) * 1000};
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv)) {
        int e = errno;
        close(fd);
        return gos_fail(GOS_EIO, "socket setup: %s", strerror(e));
    }
    *out = fd;
    return GOS_OK;
}

/* How long a caller waiting for a reply polls its socket before sleeping
 * ($GPUOS_SPIN_US). A synchronous request through the daemon takes a few tens of
 * microseconds; sleeping adds the wake-up of this thread to each of them (as a
 * blocking cuStreamSynchronize would; the CUDA driver itself spins by default).
 * Off on machines of fewer than 4 CPUs, where the poller would take the CPU the
 * daemon needs to answer. */
#define DEFAULT_SPIN_US 100
unsigned gcl_spin_us(void)
{
    const char *t = gos_env(GOS_ENV_SPIN_US);
    if (t && *t) {
        long v = strtol(t, NULL, 10);
        return v > 0 ? (unsigned)(v < 1000000 ? v : 1000000) : 0;
    }
    return sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? DEFAULT_SPIN_US : 0;
}

/* Turns a received REPLY into (rc, message, body). */
int gcl_parse_reply(const struct gos_msg_hdr *h, const void *p, const void **body, size_t *blen)
{
    struct gos_rep_hdr r;
    memcpy(&r, p, sizeof r);
    if (r.status) {
        gos_fail(r.status, "%s", (const char *)p + sizeof r);
        return r.status;
    }
    if (body)
        *body = (const char *)p + sizeof r;
    if (blen)
        *blen = h->len - sizeof r;
    return GOS_OK;
}

int gcl_broken(gpuos_vgpu *g, int rc)
{
    g->broken = 1;
    return rc;
}

/* Waits for the reply to `seq` (other replies are kept in g->done). The body,
 * if any, is left in g->rx after the reply header. */
int gcl_wait_reply(gpuos_vgpu *g, uint32_t seq, uint16_t type, const void **body, size_t *blen)
{
    for (int i = 0; i < g->n_done; i++)
        if (g->done[i].seq == seq) {
            int rc = g->done[i].rc;
            if (rc)
                gos_fail(rc, "%s", g->done[i].msg);
            g->done[i] = g->done[--g->n_done];
            return rc;
        }
    if (g->broken)
        return gos_fail(GOS_EIO, "the connection to gpuos serve is broken");
    for (;;) {
        struct gos_msg_hdr h;
        int rc = gos_wire_recv_spin(g->fd, &h, g->rx, NULL, g->timeout_ms, g->spin_us);
        if (rc) {
            if (rc == GOS_EPROTO && strstr(gos_last_error(), "protocol version")) {
                char why[256];
                snprintf(why, sizeof why, "%s", gos_last_error());
                gos_fail(rc, "gpuos serve speaks another protocol: %s", why);
            }
            return gcl_broken(g, rc);
        }
        if (h.type != GOS_MSG_REPLY)
            return gcl_broken(g, gos_fail(GOS_EPROTO, "daemon sent %s, expected a reply", gos_proto_name(h.type)));
        struct gos_rep_hdr r;
        memcpy(&r, g->rx, sizeof r);
        if (h.seq == 0 && r.status != GOS_OK) {
            /* A connection-level error (the daemon refused the connection: a
             * limit): the connection is over. */
            gos_fail(r.status, "%s", (const char *)g->rx + sizeof r);
            return gcl_broken(g, r.status);
        }
        if (h.seq == seq) {
            if (r.req_type != type)
                return gcl_broken(g, gos_fail(GOS_EPROTO, "reply to %s for a %s request",
                                          gos_proto_name(r.req_type), gos_proto_name(type)));
            return gcl_parse_reply(&h, g->rx, body, blen);
        }
        if (g->n_done == 64)
            return gcl_broken(g, gos_fail(GOS_EPROTO, "too many unclaimed replies"));
        struct done_rec *d = &g->done[g->n_done++];
        d->seq = h.seq;
        d->rc = r.status;
        snprintf(d->msg, sizeof d->msg, "%s", r.status ? (const char *)g->rx + sizeof r : "");
    }
}

int gcl_send_req(gpuos_vgpu *g, uint16_t type, const void *a, size_t alen, const void *b, size_t blen,
                    int fd, uint32_t *seq)
{
    *seq = ++g->seq;
    if (!*seq) /* sequence 0 is the daemon's connection-level errors */
        *seq = ++g->seq;
    if (g->broken)
        return gos_fail(GOS_EIO, "the connection to gpuos serve is broken");
    switch (type) { /* requests that touch the device: after everything in the ring (fastpath.c) */
    case GOS_MSG_COPY:
    case GOS_MSG_LAUNCH:
    case GOS_MSG_SYNC:
    case GOS_MSG_MEM_FREE:
    case GOS_MSG_MODULE_UNLOAD:
    case GOS_MSG_SHM_DT:
    case GOS_MSG_PMEM_FREE:
    case GOS_MSG_PMEM_COPY:
    case GOS_MSG_PMEM_CHECK:
    case GOS_MSG_REGION_DEL: {
        uint32_t s0 = g->seq;
        int drc = gcl_ring_drain(g);
        if (drc)
            return drc;
        if (g->seq != s0) { /* the drain sent replays: this request's number comes after theirs */
            *seq = ++g->seq;
            if (!*seq)
                *seq = ++g->seq;
        }
        g->sock_async = type == GOS_MSG_SYNC ? 0
                        : type == GOS_MSG_LAUNCH ? 1
                        : type == GOS_MSG_COPY && (((const struct gos_msg_copy *)a)->flags & GOS_F_ASYNC) ? 1
                                                                                                     : g->sock_async;
        break;
    }
    default: break;
    }
    int rc = gos_wire_send(g->fd, type, *seq, a, alen, b, blen, fd);
    if (rc == GOS_EIO) {
        /* The daemon may have refused the connection (a limit) and closed it
         * before this request went out: its reason is waiting to be read. */
        struct gos_msg_hdr h;
        struct gos_rep_hdr r;
        char why[GOS_MSG_TEXT_MAX];
        snprintf(why, sizeof why, "%s", gos_last_error());
        if (!gos_wire_recv(g->fd, &h, g->rx, NULL, 100) && h.type == GOS_MSG_REPLY && h.seq == 0) {
            memcpy(&r, g->rx, sizeof r);
            if (r.status != GOS_OK)
                return gcl_broken(g, gos_fail(r.status, "%s", (const char *)g->rx + sizeof r));
        }
        gos_fail(rc, "%s", why);
    }
    return rc ? gcl_broken(g, rc) : GOS_OK;
}

/* One request, one reply; the reply body is copied to out (exactly outlen). */
int gcl_call(gpuos_vgpu *g, uint16_t type, const void *req, size_t reqlen, int fd, void *out, size_t outlen)
{
    uint32_t seq = 0;
    const void *body = NULL;
    size_t blen = 0;
    int rc = gcl_send_req(g, type, req, reqlen, NULL, 0, fd, &seq);
    if (!rc)
        rc = gcl_wait_reply(g, seq, type, &body, &blen);
    if (!rc && out) {
        if (blen != outlen)
            return gcl_broken(g, gos_fail(GOS_EPROTO, "reply body of %zu bytes, expected %zu", blen, outlen));
        memcpy(out, body, outlen);
    }
    return rc;
}

int gpuos_open(const char *socket_path, const char *vgpu, gpuos_vgpu **out)
{
    if (!vgpu || !*vgpu || strlen(vgpu) >= GOS_NAME_MAX || !out)
        return gos_fail(GOS_EINVAL, "gpuos_open needs a vGPU name of 1..%d characters", GOS_NAME_MAX - 1);
    gpuos_vgpu *g = calloc(1, sizeof *g);
    if (!g || !(g->rx = malloc(GOS_PROTO_MAX_PAYLOAD))) {
        free(g);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_mutex_init(&g->pool.m, NULL);
    pthread_cond_init(&g->pool.go, NULL);
    pthread_cond_init(&g->pool.done, NULL);
    g->copy_threads = (int)gos_env_size(GOS_ENV_COPY_THREADS, 4);
    if (g->copy_threads > MAX_COPY_THREADS)
        g->copy_threads = MAX_COPY_THREADS;
    g->timeout_ms = gcl_timeout_ms();
    g->spin_us = gcl_spin_us();
    g->par_min = gos_env_size(GOS_ENV_PAR_MIN, 1u << 20);
    g->hcache_off = gos_env_off(GOS_ENV_HOST_CACHE);
    int rc = gcl_connect_to(socket_path, g->timeout_ms, &g->fd);
    if (rc) {
        gcl_pool_stop(g);
        free(g->rx);
        free(g);
        return rc;
    }
    /* The kernel gives the daemon's pid as this process's pid namespace sees it:
     * 0 when it is outside (a container), and so are its executors (issue 43.5). */
    struct ucred cr;
    socklen_t crl = sizeof cr;
    g->exec_hidden = !getsockopt(g->fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) && cr.pid == 0;
    struct gos_msg_hello m = {.version = GOS_PROTOCOL_VERSION, .pid = (uint32_t)getpid()};
    strcpy(m.vgpu, vgpu);
    struct gos_rep_hello r;
    rc = gcl_call(g, GOS_MSG_HELLO, &m, sizeof m, -1, &r, sizeof r);
    if (!rc) {
        g->vgpu_id = r.vgpu_id;
        g->client_id = r.client_id;
        size_t chunk = gos_env_size(GOS_ENV_CHUNK, DEFAULT_CHUNK);
        int depth = (int)gos_env_size(GOS_ENV_DEPTH, DEFAULT_DEPTH);
        if (chunk < 4096 || chunk > (1u << 30))
            chunk = DEFAULT_CHUNK;
        if (depth < 1 || depth > MAX_DEPTH)
            depth = DEFAULT_DEPTH;
        g->small = gos_env_size(GOS_ENV_SMALL, DEFAULT_SMALL);
        rc = gcl_stage_setup(g, chunk, depth);
        if (!rc)
            gcl_ring_open(g);
    }
    if (rc) {
        close(g->fd);
        gcl_pool_stop(g);
        free(g->rx);
        free(g);
        return rc;
    }
    *out = g;
    return GOS_OK;
}

void gpuos_close(gpuos_vgpu *g)
{
    if (!g)
        return;
    if (!g->broken) {
        gpuos_synchronize(g);
        uint32_t seq = 0;
        gcl_send_req(g, GOS_MSG_BYE, NULL, 0, NULL, 0, -1, &seq);
    }
    close(g->fd);
    gcl_ring_close(g);
    if (g->stage)
        munmap(g->stage, g->stage_bytes);
    for (int i = 0; i < MAX_HOSTBUFS; i++)
        if (g->hb[i].ptr)
            munmap(g->hb[i].ptr, g->hb[i].bytes);
    for (int i = 0; i < HOST_CACHE_N; i++)
        if (g->hcache[i].ptr)
            munmap(g->hcache[i].ptr, g->hcache[i].bytes);
    pthread_mutex_destroy(&g->lock);
    gcl_pool_stop(g);
    free(g->known);
    free(g->rx);
    free(g);
}

/* Administration: a bare connection without HELLO. */
static int admin_open(const char *path, gpuos_vgpu *g)
{
    memset(g, 0, sizeof *g);
    g->timeout_ms = gcl_timeout_ms();
    if (!(g->rx = malloc(GOS_PROTO_MAX_PAYLOAD)))
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = gcl_connect_to(path, g->timeout_ms, &g->fd);
    if (rc)
        free(g->rx);
    return rc;
}

/* One admin request whose answer is a count followed by fixed-size records:
 * each record (at most max) goes through conv into out[k] (elem bytes apart). */
static int admin_records(const char *path, uint16_t type, size_t head, size_t rec_size, void *out, size_t elem,
                         int max, int *n, void (*conv)(void *dst, const void *rec))
{
    gpuos_vgpu g;
    int rc = admin_open(path, &g);
    if (rc)
        return rc;
    uint32_t seq = 0;
    const void *body;
    size_t blen;
    rc = gcl_send_req(&g, type, NULL, 0, NULL, 0, -1, &seq);
    if (!rc)
        rc = gcl_wait_reply(&g, seq, type, &body, &blen);
    if (!rc) {
        uint32_t count; /* the first member (n) of every list reply */
        memcpy(&count, body, sizeof count);
        int k = 0;
        for (uint32_t i = 0; i < count && k < max; i++, k++)
            conv((char *)out + (size_t)k * elem, (const char *)body + head + i * rec_size);
        *n = k;
    }
    close(g.fd);
    free(g.rx);
    return rc;
}

static void facts_conv(void *dst, const void *rec)
{
    struct gos_vgpu_rec r;
    memcpy(&r, rec, sizeof r);
    gcl_facts_from(dst, &r);
}

static void shm_conv(void *dst, const void *rec)
{
    struct gos_shm_rec r;
    memcpy(&r, rec, sizeof r);
    gcl_shm_ds_from(dst, &r);
}

int gpuos_admin_list(const char *socket_path, gpuos_vgpu_facts *out, int max, int *n)
{
    if (!n || max < 0 || (max > 0 && !out))
        return gos_fail(GOS_EINVAL, "gpuos_admin_list needs an output array of max entries and a count");
    return admin_records(socket_path, GOS_MSG_ADMIN_LIST, sizeof(struct gos_rep_admin_list), sizeof(struct gos_vgpu_rec), out, sizeof *out, max, n,
                         facts_conv);
}

/* One administrative request with no reply body. */
static int admin_call(const char *socket_path, uint16_t type, const void *m, size_t n)
{
    gpuos_vgpu g;
    int rc = admin_open(socket_path, &g);
    if (rc)
        return rc;
    rc = gcl_call(&g, type, m, n, -1, NULL, 0);
    close(g.fd);
    free(g.rx);
    return rc;
}

int gpuos_admin_set(const char *socket_path, const char *vgpu, const char *key, const char *value)
{
    struct gos_msg_admin_set m = {0};
    if (!vgpu || !key || !value || !*vgpu || !*key || !*value || strlen(vgpu) >= sizeof m.vgpu ||
        strlen(key) >= sizeof m.key || strlen(value) >= sizeof m.value)
        return gos_fail(GOS_EINVAL, "vgpu set needs NAME key=value (short strings)");
    strcpy(m.vgpu, vgpu);
    strcpy(m.key, key);
    strcpy(m.value, value);
    return admin_call(socket_path, GOS_MSG_ADMIN_SET, &m, sizeof m);
}

int gpuos_admin_create(const char *socket_path, const char *vgpu, const char *keys)
{
    struct gos_msg_admin_create m = {0};
    if (!vgpu || !*vgpu || strlen(vgpu) >= sizeof m.vgpu || !keys || strlen(keys) >= sizeof m.keys)
        return gos_fail(GOS_EINVAL, "vgpu create needs NAME (under %zu characters) and keys (under %zu)",
                        sizeof m.vgpu, sizeof m.keys);
    strcpy(m.vgpu, vgpu);
    strcpy(m.keys, keys);
    return admin_call(socket_path, GOS_MSG_ADMIN_CREATE, &m, sizeof m);
}

int gpuos_admin_delete(const char *socket_path, const char *vgpu, int force)
{
    struct gos_msg_admin_delete m = {0};
    if (!vgpu || !*vgpu || strlen(vgpu) >= sizeof m.vgpu)
        return gos_fail(GOS_EINVAL, "vgpu delete needs NAME (under %zu characters)", sizeof m.vgpu);
    strcpy(m.vgpu, vgpu);
    m.flags = force ? GOS_DELETE_FORCE : 0;
    return admin_call(socket_path, GOS_MSG_ADMIN_DELETE, &m, sizeof m);
}

int gpuos_admin_shm_rm(const char *socket_path, int by, int value, const char *vgpu, int *removed)
{
    struct gos_msg_admin_shm_rm m = {.by = (uint32_t)by, .value = value};
    if (by < GPUOS_SHM_RM_ID || by > GPUOS_SHM_RM_VGPU ||
        (by == GPUOS_SHM_RM_VGPU && (!vgpu || !*vgpu || strlen(vgpu) >= sizeof m.vgpu)))
        return gos_fail(GOS_EINVAL, "gpuos_admin_shm_rm needs an id, a key or a vGPU name");
    if (by == GPUOS_SHM_RM_VGPU)
        strcpy(m.vgpu, vgpu);
    struct gos_rep_admin_shm_rm r = {0};
    gpuos_vgpu g;
    int rc = admin_open(socket_path, &g);
    if (rc)
        return rc;
    rc = gcl_call(&g, GOS_MSG_ADMIN_SHM_RM, &m, sizeof m, -1, &r, sizeof r);
    close(g.fd);
    free(g.rx);
    if (removed)
        *removed = rc ? 0 : (int)r.removed;
    return rc;
}

int gpuos_admin_shm_list(const char *socket_path, gpuos_shm_ds *out, int max, int *n)
{
    if (!n || max < 0 || (max > 0 && !out))
        return gos_fail(GOS_EINVAL, "gpuos_admin_shm_list needs an output array of max entries and a count");
    return admin_records(socket_path, GOS_MSG_ADMIN_SHM_LIST, sizeof(struct gos_rep_shm_list), sizeof(struct gos_shm_rec), out, sizeof *out, max, n,
                         shm_conv);
}
