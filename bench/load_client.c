/* SPDX-License-Identifier: Apache-2.0 */
/* load_client.c: the clients of bench/load.sh (issue 15). The socket comes from
 * $GPUOS_SOCKET.
 *
 *   load_client workers N VGPU SECONDS   N legitimate clients (one thread and one
 *       handle each) doing verified work for SECONDS: copy a pattern up, fill part
 *       of it with a built-in kernel, copy it back and check every byte (the copy
 *       and the fill), in sizes from 4 KiB to 256 KiB. Prints one JSON object:
 *       operations, bytes verified, corrupted bytes, errors, latency percentiles of
 *       one cycle (p50, p99, max) and the longest time any client went without a
 *       completed cycle (served throughout or not).
 *   load_client connflood SECONDS         connections that never say HELLO, as many
 *       as the daemon takes, re-opened as it drops them; prints counts.
 *   load_client queueflood VGPU SECONDS   queues asynchronous launches without end,
 *       synchronising only when the daemon refuses (max_queued_requests); counts. */
#include "gpuos/gpuos.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct worker {
    int id;
    const char *vgpu;
    double secs;
    double *lat;
    long n_lat, cap_lat;
    long ops, errors, corrupted;
    uint64_t bytes;
    double max_gap;
    char err[200];
};

static void record(struct worker *w, double dt)
{
    if (w->n_lat == w->cap_lat) {
        w->cap_lat = w->cap_lat ? 2 * w->cap_lat : 4096;
        w->lat = realloc(w->lat, sizeof(double) * (size_t)w->cap_lat);
    }
    w->lat[w->n_lat++] = dt;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    gpuos_vgpu *g = NULL;
    double t_open = now_s();
    int rc;
    while ((rc = gpuos_open(NULL, w->vgpu, &g)) != 0 && now_s() - t_open < 30)
        usleep(100000); /* the daemon may be busy refusing the flood */
    if (rc) {
        snprintf(w->err, sizeof w->err, "open: %s", gpuos_error());
        w->errors++;
        return NULL;
    }
    enum { MAXB = 256 << 10 };
    unsigned char *a = malloc(MAXB), *b = malloc(MAXB);
    gpuos_dptr d;
    gpuos_module m;
    gpuos_function f;
    if (gpuos_mem_alloc(g, MAXB, &d) || gpuos_module_load_builtin(g, "builtin", &m) ||
        gpuos_module_function(g, m, "fill", &f)) {
        snprintf(w->err, sizeof w->err, "setup: %s", gpuos_error());
        w->errors++;
        gpuos_close(g);
        return NULL;
    }
    unsigned seed = 0x1234567u * (unsigned)(w->id + 1);
    double end = now_s() + w->secs, last_ok = now_s();
    for (long it = 0; now_s() < end; it++) {
        size_t n = (size_t)4096 << (it % 7); /* 4 KiB .. 256 KiB */
        for (size_t i = 0; i < n; i += 4) {
            seed = seed * 1664525u + 1013904223u;
            memcpy(a + i, &seed, 4);
        }
        size_t words = (n / 4) / 2; /* the fill covers the first half */
        uint32_t val = seed ^ 0xA5A5A5A5u;
        struct {
            uint64_t p;
            uint32_t v, pad;
            uint64_t count;
        } prm = {d, val, 0, words};
        gpuos_launch_config c = {{1, 1, 1}, {128, 1, 1}, {0, 0, 0}, 0, 0};
        double t0 = now_s();
        rc = gpuos_memcpy_htod(g, d, a, n);
        if (!rc)
            rc = gpuos_launch(g, f, &c, &prm, sizeof prm);
        if (!rc)
            rc = gpuos_memcpy_dtoh(g, b, d, n);
        double t1 = now_s();
        if (rc) {
            w->errors++;
            snprintf(w->err, sizeof w->err, "%s", gpuos_error());
            if (rc == GPUOS_EIO)
                break;
            continue;
        }
        for (size_t i = 0; i < words; i++)
            memcpy(a + 4 * i, &val, 4);
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i])
                w->corrupted++;
        w->bytes += n;
        w->ops++;
        record(w, t1 - t0);
        if (t1 - last_ok > w->max_gap)
            w->max_gap = t1 - last_ok;
        last_ok = t1;
    }
    gpuos_close(g);
    free(a);
    free(b);
    return NULL;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int workers(int n, const char *vgpu, double secs)
{
    struct worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 << 10);
    for (int i = 0; i < n; i++) {
        w[i].id = i;
        w[i].vgpu = vgpu;
        w[i].secs = secs;
        pthread_create(&t[i], &at, work, &w[i]);
    }
    long ops = 0, errors = 0, corrupted = 0, nl = 0, served = 0;
    uint64_t bytes = 0;
    double max_gap = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        ops += w[i].ops;
        errors += w[i].errors;
        corrupted += w[i].corrupted;
        bytes += w[i].bytes;
        nl += w[i].n_lat;
        served += w[i].ops > 0;
        if (w[i].max_gap > max_gap)
            max_gap = w[i].max_gap;
    }
    double *all = malloc(sizeof(double) * (size_t)(nl ? nl : 1));
    long k = 0;
    for (int i = 0; i < n; i++) {
        memcpy(all + k, w[i].lat, sizeof(double) * (size_t)w[i].n_lat);
        k += w[i].n_lat;
    }
    qsort(all, (size_t)nl, sizeof *all, cmp);
    const char *first_err = "";
    for (int i = 0; i < n; i++)
        if (w[i].err[0]) {
            first_err = w[i].err;
            break;
        }
    printf("{\"clients\": %d, \"clients_served\": %ld, \"seconds\": %.1f, \"cycles\": %ld, \"bytes_verified\": %llu, "
           "\"corrupted_bytes\": %ld, \"errors\": %ld, \"first_error\": \"%s\", \"latency_ms\": {\"p50\": %.3f, "
           "\"p99\": %.3f, \"max\": %.3f}, \"longest_wait_between_cycles_s\": %.3f}\n",
           n, served, secs, ops, (unsigned long long)bytes, corrupted, errors, first_err,
           nl ? 1e3 * all[nl / 2] : 0.0, nl ? 1e3 * all[(long)(0.99 * (double)(nl - 1))] : 0.0,
           nl ? 1e3 * all[nl - 1] : 0.0, max_gap);
    return corrupted || errors ? 1 : 0;
}

static int raw_connect(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", getenv("GPUOS_SOCKET"));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int connflood(double secs)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    enum { MAXC = 20000 };
    static int fds[MAXC];
    int n = 0;
    long opened = 0, dropped = 0;
    double end = now_s() + secs;
    while (now_s() < end) {
        /* top up to as many as the daemon keeps */
        for (int k = 0; k < 200 && n < MAXC; k++) {
            int fd = raw_connect();
            if (fd < 0)
                break;
            fds[n++] = fd;
            opened++;
        }
        /* forget those the daemon closed (refused or dropped) */
        for (int i = 0; i < n;) {
            char c;
            ssize_t r = recv(fds[i], &c, 1, MSG_DONTWAIT | MSG_PEEK);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || r > 0) {
                close(fds[i]);
                fds[i] = fds[--n];
                dropped++;
            } else {
                i++;
            }
        }
        usleep(50000);
    }
    printf("{\"connflood_opened\": %ld, \"connflood_dropped_or_refused\": %ld, \"connflood_held_at_end\": %d}\n",
           opened, dropped, n);
    return 0;
}

static int queueflood(const char *vgpu, double secs)
{
    gpuos_vgpu *g = NULL;
    if (gpuos_open(NULL, vgpu, &g)) {
        fprintf(stderr, "queueflood: %s\n", gpuos_error());
        return 1;
    }
    gpuos_module m;
    gpuos_function f;
    if (gpuos_module_load_builtin(g, "builtin", &m) || gpuos_module_function(g, m, "sleep_ns", &f))
        return 1;
    long sent = 0, refusals = 0;
    uint64_t ns = 200000;
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    double end = now_s() + secs;
    while (now_s() < end) {
        for (int i = 0; i < 5000; i++) {
            if (gpuos_launch(g, f, &c, &ns, sizeof ns))
                break;
            sent++;
        }
        int rc = gpuos_synchronize(g);
        if (rc == GPUOS_ELIMIT)
            refusals++;
        else if (rc) {
            fprintf(stderr, "queueflood: %s\n", gpuos_error());
            break;
        }
    }
    gpuos_close(g);
    printf("{\"queueflood_launches_sent\": %ld, \"queueflood_limit_refusals\": %ld}\n", sent, refusals);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "workers"))
        return workers(atoi(argv[2]), argv[3], atof(argv[4]));
    if (argc == 3 && !strcmp(argv[1], "connflood"))
        return connflood(atof(argv[2]));
    if (argc == 4 && !strcmp(argv[1], "queueflood"))
        return queueflood(argv[2], atof(argv[3]));
    fprintf(stderr, "usage: load_client workers N VGPU SECONDS | connflood SECONDS | queueflood VGPU SECONDS\n");
    return 2;
}
