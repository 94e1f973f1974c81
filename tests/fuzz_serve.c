/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_serve.c: mutation fuzzer of issue 15, run for a bounded time in CI on the
 * sanitizer build (tests/ci_hostile.sh).
 *
 *   fuzz_serve proto SECONDS [SEED]   against the live daemon at $GPUOS_SOCKET:
 *       sessions that say HELLO, allocate, share a region, load the built-in
 *       module, then send mutated requests (bit flips, random bytes, interesting
 *       64-bit values in every field: pointers just past, inside and far from their
 *       allocations, sizes around 2^40/2^50/2^64, broken lengths and truncations)
 *       built from valid ones and from what the daemon answered. A canary client of
 *       vGPU "b" checks its own bytes every second: the daemon must never crash,
 *       hang or corrupt another tenant (exit 1 when it does).
 *   fuzz_serve config SECONDS [SEED]  in process: mutated configurations (byte
 *       changes and tokens such as nan, inf, 1e300, -1, %, [vgpu, =) through
 *       gos_serve_config_parse; whatever is accepted must satisfy every invariant
 *       the daemon relies on, every refusal is one line naming the file.
 * Deterministic for a seed (the daemon's timing aside). Prints counts. */
#include "common/status.h"
#include "gpuos/gpuos.h"
#include "proto/proto.h"
#include "proto/wire.h"
#include "serve/config.h"
#include "fuzz_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>


#define DIE(...)                                                                                 \
    do {                                                                                         \
        fprintf(stderr, "fuzz_serve: " __VA_ARGS__);                                             \
        fprintf(stderr, " [%s]\n", gpuos_error());                                               \
        exit(1);                                                                                 \
    } while (0)

/* ---- the canary: another tenant whose bytes must never change ---- */
static gpuos_vgpu *canary;
static gpuos_dptr canary_d;
enum { CN = 1 << 16 };
static unsigned char canary_pat[CN];

static void canary_check(void)
{
    static unsigned char back[CN];
    memset(back, 0, sizeof back);
    if (gpuos_memcpy_dtoh(canary, back, canary_d, CN))
        DIE("canary copy failed: the daemon is gone or stuck");
    if (memcmp(back, canary_pat, CN))
        DIE("canary bytes changed: another tenant wrote into them");
    gpuos_vgpu *g = NULL;
    if (gpuos_open(NULL, "b", &g))
        DIE("canary cannot open a new session");
    gpuos_close(g);
}

/* ---- the protocol fuzzer ---- */
static int connect_sock(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", getenv("GPUOS_SOCKET"));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static unsigned char rx[GOS_PROTO_MAX_PAYLOAD];

/* A request with its reply (when it comes within 3 s); the body is left in rx. */
static int call(int fd, uint16_t type, uint32_t seq, const void *m, size_t n, int pass_fd, int *status)
{
    if (gos_wire_send(fd, type, seq, m, n, NULL, 0, pass_fd))
        return -1;
    for (;;) {
        struct gos_msg_hdr h;
        if (gos_wire_recv(fd, &h, rx, NULL, 3000))
            return -1;
        if (h.seq == seq) {
            struct gos_rep_hdr r;
            memcpy(&r, rx, sizeof r);
            *status = r.status;
            return 0;
        }
    }
}

static void drain(int fd)
{
    char buf[4096];
    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

struct sess {
    uint64_t dptr, bytes;
    uint32_t region;
    uint64_t fill, sleep;
};

static uint64_t interesting(const struct sess *s)
{
    const uint64_t v[] = {0, 1, 4, 4095, 4096, 1ull << 32, (1ull << 40), (1ull << 40) + 1, (1ull << 50),
                          (1ull << 50) + 1, 1ull << 62, (1ull << 62) + 1, 1ull << 63, UINT64_MAX, UINT64_MAX - 3,
                          s->dptr, s->dptr + s->bytes, s->dptr + s->bytes - 4, s->dptr - 4, s->dptr + (1ull << 30),
                          s->dptr + 8, s->bytes, s->bytes + 1};
    return v[rnd() % (sizeof v / sizeof v[0])];
}

/* Mutates a message body in place (len may change). */
static void mutate(unsigned char *p, uint32_t *len, const struct sess *s)
{
    int muts = 1 + (int)(rnd() % 3);
    for (int k = 0; k < muts; k++) {
        switch (rnd() % 5) {
        case 0:
            if (*len)
                p[rnd() % *len] ^= (unsigned char)(1u << (rnd() % 8));
            break;
        case 1:
            if (*len)
                p[rnd() % *len] = (unsigned char)rnd();
            break;
        case 2:
        case 3:
            if (*len >= 8) {
                uint64_t v = interesting(s);
                memcpy(p + (rnd() % (*len / 8)) * 8, &v, 8);
            }
            break;
        default:
            if (*len >= 4) {
                uint32_t v = (uint32_t)interesting(s);
                memcpy(p + (rnd() % (*len / 4)) * 4, &v, 4);
            }
            break;
        }
    }
}

/* A valid request of a random kind for session s into p; returns its type. */
static uint16_t valid(const struct sess *s, unsigned char *p, uint32_t *len)
{
    memset(p, 0, 512);
    switch (rnd() % 10) {
    case 7: /* partition-local memory (issue 12) */
        if (rnd() % 2) {
            struct gos_msg_pmem_alloc m = {.bytes = 1 + rnd() % (4u << 20)};
            memcpy(p, &m, sizeof m);
            *len = sizeof m;
            return GOS_MSG_PMEM_ALLOC;
        } else {
            struct gos_msg_pmem_check m = {.base = s->dptr, .samples = 1 + (uint32_t)(rnd() % 8)};
            memcpy(p, &m, sizeof m);
            *len = sizeof m;
            return GOS_MSG_PMEM_CHECK;
        }
    case 8:
        if (rnd() % 4) {
            struct gos_msg_pmem_copy m = {.base = s->dptr, .dir = (uint32_t)(rnd() % 2), .part = (uint32_t)(rnd() % 2),
                                          .offset = rnd() % 8192, .bytes = 1 + rnd() % 8192, .region = s->region,
                                          .region_off = rnd() % 4096};
            memcpy(p, &m, sizeof m);
            *len = sizeof m;
            return GOS_MSG_PMEM_COPY;
        } else {
            struct gos_msg_pmem_free m = {.base = s->dptr};
            memcpy(p, &m, sizeof m);
            *len = sizeof m;
            return GOS_MSG_PMEM_FREE;
        }
    case 0: {
        struct gos_msg_copy m = {.op = 1 + (uint32_t)(rnd() % 3), .region = s->region, .offset = rnd() % 4096,
                                 .dptr = s->dptr + rnd() % 4096, .dptr2 = s->dptr, .bytes = 1 + rnd() % 8192,
                                 .flags = (uint32_t)(rnd() % 4)};
        memcpy(p, &m, sizeof m);
        *len = sizeof m;
        return GOS_MSG_COPY;
    }
    case 1:
    case 2: {
        struct gos_msg_launch m = {.op = GOS_OP_LAUNCH, .flags = (uint32_t)(rnd() % 2),
                                   .func = rnd() % 2 ? s->fill : s->sleep, .grid = {2, 1, 1}, .block = {32, 1, 1},
                                   .param_bytes = 24};
        if (rnd() % 3 == 0)
            m.cluster[0] = m.cluster[1] = m.cluster[2] = 1 + (uint32_t)(rnd() % 3);
        struct {
            uint64_t p;
            uint32_t v, pad;
            uint64_t count;
        } prm = {s->dptr, 7, 0, 1 + rnd() % (s->bytes / 4)};
        if (m.func == s->sleep)
            prm.p = rnd() % 20000;
        memcpy(p, &m, sizeof m);
        memcpy(p + sizeof m, &prm, sizeof prm);
        *len = sizeof m + sizeof prm;
        return GOS_MSG_LAUNCH;
    }
    case 3: {
        struct gos_msg_mem_alloc m = {.bytes = 1 + rnd() % 65536};
        memcpy(p, &m, sizeof m);
        *len = sizeof m;
        return GOS_MSG_MEM_ALLOC;
    }
    case 4: {
        struct gos_msg_mem_free m = {.dptr = s->dptr};
        memcpy(p, &m, sizeof m);
        *len = sizeof m;
        return GOS_MSG_MEM_FREE;
    }
    case 5: {
        struct gos_msg_region_del m = {.region = s->region};
        memcpy(p, &m, sizeof m);
        *len = sizeof m;
        return GOS_MSG_REGION_DEL;
    }
    case 6: {
        struct gos_msg_module_load m = {.region = s->region, .offset = 0, .bytes = 64};
        if (rnd() % 2)
            strcpy(m.name, "builtin");
        memcpy(p, &m, sizeof m);
        *len = sizeof m;
        return GOS_MSG_MODULE_LOAD;
    }
    default:
        if (rnd() % 3 == 0) { /* a tensor map (issue 43): kind and rank sometimes out of range */
            gpuos_tmap_args m = {.kind = (uint32_t)(rnd() % 6), .dtype = (uint32_t)(rnd() % 17),
                                 .rank = (uint32_t)(rnd() % 8), .addr = s->dptr & ~15ull, .pixels = 8,
                                 .channels = 8};
            for (int i = 0; i < GPUOS_TMAP_RANK_MAX; i++) {
                m.dim[i] = 1 + rnd() % 64;
                m.box[i] = 1 + (uint32_t)(rnd() % 8);
                m.estride[i] = 1;
                if (i < GPUOS_TMAP_RANK_MAX - 1)
                    m.stride[i] = 16 * (1 + rnd() % 64);
            }
            memcpy(p, &m, sizeof m);
            *len = sizeof m;
            return GOS_MSG_TMAP_ENCODE;
        }
        *len = 0;
        return rnd() % 2 ? GOS_MSG_SYNC : GOS_MSG_VGPU_INFO;
    }
}

static int fuzz_proto(double secs)
{
    if (!getenv("GPUOS_SOCKET"))
        DIE("GPUOS_SOCKET is not set");
    if (gpuos_open(NULL, "b", &canary) || gpuos_mem_alloc(canary, CN, &canary_d))
        DIE("canary");
    for (int i = 0; i < CN; i++)
        canary_pat[i] = (unsigned char)(i * 29 + 5);
    if (gpuos_memcpy_htod(canary, canary_d, canary_pat, CN))
        DIE("canary htod");
    long sessions = 0, msgs = 0, setup_fail = 0;
    double end = now_s() + secs, next_check = now_s() + 1;
    unsigned char buf[GOS_PROTO_MAX_PAYLOAD];
    while (now_s() < end) {
        int fd = connect_sock();
        if (fd < 0)
            DIE("cannot connect: %s", strerror(errno));
        sessions++;
        uint32_t seq = 1;
        int st = 0;
        struct sess s = {0};
        struct gos_msg_hello he = {.version = GOS_PROTOCOL_VERSION, .pid = (uint32_t)getpid()};
        strcpy(he.vgpu, "a");
        struct gos_msg_mem_alloc ma = {.bytes = 4096 << (rnd() % 4)};
        s.bytes = ma.bytes;
        int mfd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        struct gos_msg_region_add ra = {.bytes = 65536};
        struct gos_msg_module_load ml = {0};
        strcpy(ml.name, "builtin");
        struct gos_msg_func_get fg = {.module = 1};
        int ok = mfd >= 0 && !ftruncate(mfd, 65536) && !fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK) &&
                 !call(fd, GOS_MSG_HELLO, seq++, &he, sizeof he, -1, &st) && !st &&
                 !call(fd, GOS_MSG_MEM_ALLOC, seq++, &ma, sizeof ma, -1, &st) && !st;
        if (ok) {
            struct gos_rep_mem_alloc r;
            memcpy(&r, rx + sizeof(struct gos_rep_hdr), sizeof r);
            s.dptr = r.dptr;
        }
        ok = ok && !call(fd, GOS_MSG_REGION_ADD, seq++, &ra, sizeof ra, mfd, &st) && !st;
        if (ok)
            memcpy(&s.region, rx + sizeof(struct gos_rep_hdr), 4);
        ok = ok && !call(fd, GOS_MSG_MODULE_LOAD, seq++, &ml, sizeof ml, -1, &st) && !st;
        if (ok) {
            memcpy(&fg.module, rx + sizeof(struct gos_rep_hdr), 8);
            strcpy(fg.name, "fill");
        }
        ok = ok && !call(fd, GOS_MSG_FUNC_GET, seq++, &fg, sizeof fg, -1, &st) && !st;
        if (ok) {
            memcpy(&s.fill, rx + sizeof(struct gos_rep_hdr), 8);
            strcpy(fg.name, "sleep_ns");
        }
        ok = ok && !call(fd, GOS_MSG_FUNC_GET, seq++, &fg, sizeof fg, -1, &st) && !st;
        if (ok)
            memcpy(&s.sleep, rx + sizeof(struct gos_rep_hdr), 8);
        if (mfd >= 0)
            close(mfd);
        if (!ok)
            setup_fail++;
        int n = 1 + (int)(rnd() % 30);
        for (int i = 0; ok && i < n; i++) {
            uint32_t len;
            uint16_t type = valid(&s, buf, &len);
            if (rnd() % 4)
                mutate(buf, &len, &s);
            if (type == GOS_MSG_LAUNCH && len >= sizeof(struct gos_msg_launch)) {
                /* keep kernels short: the fuzzer is about arguments, not durations */
                struct gos_msg_launch m;
                memcpy(&m, buf, sizeof m);
                if (m.func == s.sleep && len >= sizeof m + 8) {
                    uint64_t ns;
                    memcpy(&ns, buf + sizeof m, 8);
                    ns %= 100000;
                    memcpy(buf + sizeof m, &ns, 8);
                }
            }
            struct gos_msg_hdr h;
            gos_proto_hdr(&h, type, seq++, len);
            int hdr_mut = rnd() % 40 == 0;
            if (hdr_mut)
                ((unsigned char *)&h)[rnd() % sizeof h] ^= (unsigned char)(1u << (rnd() % 8));
            size_t total = len, cut = rnd() % 50 == 0 ? rnd() % (len + 1) : len;
            (void)total;
            if (send(fd, &h, sizeof h, MSG_NOSIGNAL) != (ssize_t)sizeof h ||
                (cut && send(fd, buf, cut, MSG_NOSIGNAL) != (ssize_t)cut))
                break;
            msgs++;
            if (cut < len || hdr_mut)
                break;
            drain(fd);
        }
        close(fd);
        if (now_s() >= next_check) {
            canary_check();
            next_check = now_s() + 1;
        }
    }
    canary_check();
    gpuos_close(canary);
    printf("fuzz_serve proto: %ld sessions, %ld mutated messages, %ld set-ups refused; canary intact\n", sessions,
           msgs, setup_fail);
    return 0;
}

/* ---- the configuration fuzzer ---- */
static const char *seeds[] = {
    "socket = /tmp/x.sock\nsocket_mode = 0660\nchunk = 4M\ndepth = 3\n[device 0]\nsim = default\npolicy = band\n"
    "queue = mrq\nperiod_ms = 30\n[vgpu alice]\ndevice = 0\ncompute = 50\ncopy = 50\nmemory = 25%\n"
    "[vgpu bob]\ncompute = 50\nmemory = 4G\n",
    "max_clients = 100\nmax_clients_per_vgpu = 10\nmax_queued_requests = 64\nmax_queued_bytes = 1M\n"
    "hello_timeout_ms = 100\nshutdown_grace_ms = 0\nmemory_oversubscribe = 1\n[device gpu]\nsim = default\n"
    "[vgpu a]\nmemory = 80%\n[vgpu b]\nmemory = 80%\n",
    "[device 0]\n[vgpu a]\n",
};
static const char *tokens[] = {"nan", "inf", "-inf", "1e300", "-1", "0", "%", "[vgpu ", "[device ", "]", "=",
                               "\n", "#", " ", "0x10", "99999999999999999999", "1.5", "T", "G", "K", "B", "\t",
                               "memory", "compute", "max_clients", "socket", "socket_mode", "chunk", "\r", ".",
                               "18446744073709551616", "100", "101", "1e-300", "0777", "08"};

static void config_invariants(const struct gos_serve_config *c)
{
#define INV(cond)                                                                                \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "fuzz_serve config: accepted a configuration breaking %s\n", #cond); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)
    INV(c->n_vgpus >= 0 && c->n_vgpus <= GOS_MAX_VGPUS);
    INV(c->n_devs >= 1 && c->n_devs <= GOS_SERVE_MAX_DEVICES);
    INV(c->socket_mode <= 0777);
    INV(c->chunk == 0 || (c->chunk >= 4096 && c->chunk <= (1ull << 30)));
    INV(c->max_clients >= 1 && c->max_clients_per_vgpu >= 1 && c->max_queued_requests >= 1);
    INV(c->max_queued_bytes >= 4096 && c->hello_timeout_ms >= 1 && c->shutdown_grace_ms >= 0);
    INV(memchr(c->socket, 0, sizeof c->socket) != NULL);
    for (int i = 0; i < c->n_vgpus; i++) {
        const struct gos_serve_vgpucfg *g = &c->vgpus[i];
        INV(g->device >= 0 && g->device < c->n_devs);
        INV(g->compute >= 1 && g->compute <= 100 && g->copy >= 1 && g->copy <= 100);
        INV((g->mem_pct > 0 && g->mem_pct <= 100 && isfinite(g->mem_pct)) || (g->mem_pct == 0 && g->mem_bytes > 0));
        INV(g->name[0] && memchr(g->name, 0, sizeof g->name) && !strchr(g->name, ' '));
    }
    for (int d = 0; d < c->n_devs; d++) {
        INV(c->devs[d].period_ns >= 1000000ull && c->devs[d].period_ns <= 10000000000ull);
        INV(!strcmp(c->devs[d].policy, "fifo") || !strcmp(c->devs[d].policy, "credit") ||
            !strcmp(c->devs[d].policy, "band"));
    }
}

static int fuzz_config(double secs)
{
    static char text[1 << 14];
    static struct gos_serve_config c;
    long accepted = 0, refused = 0, sizes = 0;
    double end = now_s() + secs;
    for (long it = 0; now_s() < end; it++) {
        const char *sd = seeds[rnd() % (sizeof seeds / sizeof seeds[0])];
        size_t n = strlen(sd);
        memcpy(text, sd, n + 1);
        int muts = 1 + (int)(rnd() % 6);
        for (int k = 0; k < muts; k++) {
            size_t at = n ? rnd() % n : 0;
            switch (rnd() % 4) {
            case 0:
                if (n)
                    text[at] = rnd() % 2 ? (char)(rnd() % 128) : " =%[]\n#0123456789"[rnd() % 17];
                break;
            case 1: { /* insert a token */
                const char *t = tokens[rnd() % (sizeof tokens / sizeof tokens[0])];
                size_t tl = strlen(t);
                if (n + tl + 1 < sizeof text) {
                    memmove(text + at + tl, text + at, n - at + 1);
                    memcpy(text + at, t, tl);
                    n += tl;
                }
                break;
            }
            case 2: /* delete a span */
                if (n) {
                    size_t l = 1 + rnd() % 8;
                    if (at + l > n)
                        l = n - at;
                    memmove(text + at, text + at + l, n - at - l + 1);
                    n -= l;
                }
                break;
            default: /* replace a value: after an '=' up to the line's end */ {
                char *eq = strchr(text + at, '=');
                if (eq) {
                    char *nl = strchr(eq, '\n');
                    const char *t = tokens[rnd() % (sizeof tokens / sizeof tokens[0])];
                    size_t tl = strlen(t), old = nl ? (size_t)(nl - eq - 1) : strlen(eq + 1);
                    if (n - old + tl + 1 < sizeof text) {
                        memmove(eq + 1 + tl, eq + 1 + old, strlen(eq + 1 + old) + 1);
                        memcpy(eq + 1, t, tl);
                        n = strlen(text);
                    }
                }
            }
            }
            text[n] = 0;
        }
        memset(&c, 0, sizeof c);
        int rc = gos_serve_config_parse(text, "fuzz.conf", &c);
        if (rc == GOS_OK) {
            accepted++;
            config_invariants(&c);
        } else {
            refused++;
            const char *e = gos_last_error();
            if (strchr(e, '\n') || strncmp(e, "fuzz.conf", 9))
                DIE("config refusal is not one line naming the file: \"%s\"", e);
        }
        /* sizes alone */
        char v[32];
        int vl = (int)(rnd() % 12);
        for (int i = 0; i < vl; i++)
            v[i] = "0123456789.eE+-KMGTBnaif%x "[rnd() % 27];
        v[vl] = 0;
        uint64_t u;
        if (gos_serve_parse_size(v, 1, UINT64_MAX, &u) == GOS_OK) {
            sizes++;
            char *endp;
            double x = strtod(v, &endp);
            if (!(x >= 0) || !isfinite(x) || u == 0)
                DIE("size \"%s\" accepted as %llu", v, (unsigned long long)u);
        }
    }
    printf("fuzz_serve config: %ld accepted, %ld refused, %ld sizes accepted; invariants held\n", accepted, refused,
           sizes);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fuzz_serve proto|config SECONDS [SEED]\n");
        return 2;
    }
    if (argc > 3)
        fuzz_seed(strtoull(argv[3], NULL, 0));
    double secs = atof(argv[2]);
    if (!strcmp(argv[1], "proto"))
        return fuzz_proto(secs);
    if (!strcmp(argv[1], "config"))
        return fuzz_config(secs);
    fprintf(stderr, "fuzz_serve: unknown mode %s\n", argv[1]);
    return 2;
}
