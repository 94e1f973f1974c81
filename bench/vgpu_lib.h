/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_lib.h: what the files of bench/vgpu_bench share: the run's settings,
 * the native device (this process's own context), the daemon it starts and
 * the helpers every section uses (vgpu_lib.c). vgpu_bench.c holds main and the
 * copy, launch, fairness, queue and switch sections; vgpu_share.c issue 22's
 * (busy tenants sharing the GPU, one tenant beside a busy one); vgpu_mixed.c
 * issue 41's (a latency tenant beside a batch one, small shares); vgpu_work.c
 * the workloads run natively and through gpuos alike. */
#ifndef GOS_BENCH_VGPU_LIB_H
#define GOS_BENCH_VGPU_LIB_H

#include "vgpu_work.h"

#include "device/device.h"
#include "gpuos/gpuos.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

extern const char *gpuos_bin, *sim_chip;
extern int quick;
extern const char *fair_policies, *fair_counts;
/* the isolation mode measured now; overlap: "pairs" for the mode "mps+pairs";
 * handover: the daemon's handover key (NULL: its default) */
extern const char *iso_modes, *iso_mode, *overlap, *handover;
extern int share_dense;
/* the next daemon's band_wait_us, band_charge_hold, grant_us (-1: its
 * default) and executor = per-vgpu */
extern long band_wait_us, grant_us;
extern int band_charge_hold, exec_per_vgpu;
/* the next daemon's vGPUs' compute and copy shares in percent (NULL: equal)
 * and latency classes (latency_ms; NULL or 0: a batch vGPU) */
extern const int *vgpu_pcts, *vgpu_latency_ms;
extern char tmpdir[256], sockpath[300];
extern gos_device *dev;
extern void *stream;
/* the workloads' native backend: dev and stream (vgpu_work.h) */
extern struct wl_backend nat_be;
extern pid_t main_pid;

void daemon_start(const char *policy, const char *queue, int n_vgpus, const char *mem);
void daemon_stop(void);
#define DIE(...)                                                                                 \
    do {                                                                                         \
        fprintf(stderr, "vgpu_bench: " __VA_ARGS__);                                             \
        fprintf(stderr, " [%s]\n", gos_last_error());                                            \
        if (getpid() == main_pid)                                                                \
            daemon_stop();                                                                       \
        exit(1);                                                                                 \
    } while (0)

double now(void);
double median(double *v, int n);
/* the q-quantile (0..1) of v's n values (sorts v) */
double pctl(double *v, int n, double q);
int want(const char *only, const char *s);
gpuos_vgpu *vopen(const char *name);
gpuos_function gfn(gpuos_vgpu *g, const char *name);
void *native_fn(const char *name);
/* children wait at the gate until every one is ready (gate_open) */
void gate_reset(void);
double gate_open(int n);
double gate_pass(void);
long read_counts(int fd, int n);
/* n child clients behind a fresh gate, child i on vGPU "v<i>" (all on "v0"
 * with one_vgpu), each run(vgpu, i, fd, arg) writing its count to fd and
 * exiting; their pids in kids; the read end of fd. clients_wait: until all
 * have ended. */
typedef void (*client_fn)(const char *vgpu, int i, int fd, const void *arg);
int clients_fork(int n, int one_vgpu, client_fn run, const void *arg, pid_t *kids);
void clients_wait(int n, const pid_t *kids);
/* n plain CUDA processes (at most 8), process i exec'd as av[i] (argv of
 * vgpu_bench --native-tenant ...: the parent's CUDA context does not survive
 * a fork); once each says "ready" on its stdout, all are told their start
 * instant (now(), 0.05 s later) on stdin; the start. out[i]: their stdout. */
double natives_go(int n, char **const *av, pid_t *kids, FILE **out);
/* "mps+pairs" or iso_mode */
const char *mode_label(void);
const char *overlap_label(void);

/* vgpu_lib.c: `loop`'s launch shape (share_dense: "dense" or "light"), and
 * the iterations that take ns alone in it (*got_ns: what they take) */
void shape(unsigned sms, unsigned *grid, unsigned *block);
uint64_t loop_iters(uint64_t ns, uint64_t *got_ns);

/* vgpu_share.c */
json_t *sharing(void);
json_t *neighbour(void);
int native_tenant_main(int argc, char **argv);

/* vgpu_mixed.c */
json_t *mixed(void);
int mixed_tenant_main(int argc, char **argv);
int swappath_locker_main(int argc, char **argv);
/* A native process started by natives_go: says ready, reads the start instant
 * from stdin and waits for it; the instant, or -1 when none came. */
double native_ready_wait(void);

/* vgpu_swappath.c: an eviction's paths into the host pool (issue 42) */
extern long swap_mb;
json_t *swappath(void);

#endif
