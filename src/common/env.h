/* SPDX-License-Identifier: Apache-2.0 */
/* env.h: every environment variable gpuos reads, in one documented place
 * (issue 20). Code names them by these macros only (tests/t_env.sh checks that
 * no other file spells a "GPUOS_..." name); gpuos(1) ENVIRONMENT lists them.
 * Which process reads each: cli (the gpuos command), daemon (gpuos serve),
 * client (libgpuos in a program, and so the shim), shim (gpuos's
 * libcuda.so.1 / libnvidia-ml.so.1 in a program under gpuos run). */
#ifndef GOS_ENV_H
#define GOS_ENV_H

#include <stdlib.h>
#include <string.h>

/* cli, daemon, client: the daemon's socket (default /run/gpuos/gpuos.sock);
 * `serve` uses it when neither --socket nor the configuration names one. */
#define GOS_ENV_SOCKET "GPUOS_SOCKET"
/* client, shim: the vGPU a program opens (gpuos run sets it; default: the
 * first the daemon lets the user open). */
#define GOS_ENV_VGPU "GPUOS_VGPU"
/* client: how long a request waits for the daemon, in ms (default 120000). */
#define GOS_ENV_TIMEOUT_MS "GPUOS_TIMEOUT_MS"
/* client: how long a client spins for a reply before it sleeps, in us
 * (default 100; 0 off, and off on machines of fewer than 4 CPUs). */
#define GOS_ENV_SPIN_US "GPUOS_SPIN_US"
/* client: copy pipelining: the staging chunk (bytes), the chunks in flight,
 * the copy threads, the size from which a copy is split across threads, and
 * the size up to which a copy takes the direct small-copy path. */
#define GOS_ENV_CHUNK "GPUOS_CHUNK"
#define GOS_ENV_DEPTH "GPUOS_DEPTH"
#define GOS_ENV_COPY_THREADS "GPUOS_COPY_THREADS"
#define GOS_ENV_PAR_MIN "GPUOS_PAR_MIN"
#define GOS_ENV_SMALL "GPUOS_SMALL"
/* client: the fast path (proto/ring_shm.h): 0 turns the ring off; the executor's
 * spin for entries (us); the largest copy carried inline in a slot (bytes);
 * the piece a long copy is cut into on the ring (bytes, 0: none); the
 * client's spin for an answer before it sleeps (us). */
#define GOS_ENV_RING "GPUOS_RING"
#define GOS_ENV_RING_SPIN_US "GPUOS_RING_SPIN_US"
#define GOS_ENV_RING_INLINE "GPUOS_RING_INLINE"
#define GOS_ENV_RING_PIECE "GPUOS_RING_PIECE"
#define GOS_ENV_RING_WAIT_US "GPUOS_RING_WAIT_US"
/* serve: one log line per ring grant and per latency companion (its length
 * against its deadline, the vGPU's credit, and how long it was queued before
 * it began), any value (docs/readme-fastpath.md, "Known problems"). */
#define GOS_ENV_GRANT_LOG "GPUOS_GRANT_LOG"
/* libgpuos: 0 gives every freed gpuos_host_alloc buffer (cuMemFreeHost) back
 * to the daemon at once; by default a few of up to 8 MB are kept for the next
 * allocation of about their size (copies.c, the host buffer cache). */
#define GOS_ENV_HOST_CACHE "GPUOS_HOST_CACHE"
/* executor: 0 announces no early yield to the daemon (exec_ring.c,
 * announce_early_yield; for measuring what the announcement gains). */
#define GOS_ENV_RING_EARLY "GPUOS_RING_EARLY"
/* cli (gpuos run): the folder holding the shim's libcuda.so.1 (--libdir
 * wins; default: beside the binary). */
#define GOS_ENV_LIBDIR "GPUOS_LIBDIR"
/* shim: 1, the export tables, module loads, launches and refusals of a
 * program's Driver-API calls are logged on stderr, and a fatal signal prints a
 * backtrace; 2, also every attribute, occupancy and limit it asks, with the
 * value answered. */
#define GOS_ENV_CUDASHIM_TRACE "GPUOS_CUDASHIM_TRACE"
/* shim: the real driver's libcuda.so.1, opened by path only under
 * GPUOS_CUDASHIM_LT=real (src/cudashim/real.c: cuBLASLt's private table
 * {1734dc26-...}); default: the usual driver folders. A path set here that does
 * not open means no real library (the others are not tried). */
#define GOS_ENV_REAL_LIBCUDA "GPUOS_REAL_LIBCUDA"
/* shim: "real" answers cuBLASLt's private table {1734dc26-...} with NVIDIA's
 * slots, from NVIDIA's libcuda.so.1 opened and initialised in the program's
 * process (it needs the device nodes open to the tenant: not for a locked-down
 * node); anything else, the default, named stubs (CUDA_ERROR_NOT_SUPPORTED;
 * exports.c, issue 43). */
#define GOS_ENV_CUDASHIM_LT "GPUOS_CUDASHIM_LT"
/* shim: the kernel driver's version file that libnvidia-ml.so.1's
 * nvmlSystemGetDriverVersion reads (default: /proc/driver/nvidia/version). */
#define GOS_ENV_NVIDIA_VERSION_FILE "GPUOS_NVIDIA_VERSION_FILE"
/* client, programs of include/gpuos/pmem.h: the chart (gpuos.chip/1) to place
 * partition-local memory by, when the caller names none. */
#define GOS_ENV_CHIP "GPUOS_CHIP"
/* cli: the commit recorded in result files' provenance (default: git's). */
#define GOS_ENV_COMMIT "GPUOS_COMMIT"
/* cli, daemon: a folder every JSON document written is also copied to (the
 * tests validate them against schemas/). */
#define GOS_ENV_JSON_TRACE "GPUOS_JSON_TRACE"
/* cli (probe numa): how many SMs probe the partitions (default 16; all
 * when at least the chip's count). */
#define GOS_ENV_SWEEP_SMS "GPUOS_SWEEP_SMS"

/* Variables gpuos reads that others set (not listed in gpuos(1)): systemd's
 * state folder of the unit (daemon) and its journal stream (every process's
 * log), the temporary folder (cli: dvfs report), the library path `gpuos run`
 * extends (cli), and the provenance commit's older name (cli, daemon). */
#define GOS_ENV_SYS_STATE_DIRECTORY "STATE_DIRECTORY"
#define GOS_ENV_SYS_JOURNAL_STREAM "JOURNAL_STREAM"
#define GOS_ENV_SYS_TMPDIR "TMPDIR"
#define GOS_ENV_SYS_LD_LIBRARY_PATH "LD_LIBRARY_PATH"
#define GOS_ENV_OLD_COMMIT "GOS_COMMIT"

/* The one reading of the environment (tests/t_env.sh: no other getenv in
 * src/): the value of name (a GOS_ENV_* above), NULL when unset. */
static inline const char *gos_env(const char *name) { return getenv(name); }

/* Whether the variable name (one of the above) is set to "0": the off switch
 * of what is on by default (the ring, the host buffer cache, early yields). */
static inline int gos_env_off(const char *name)
{
    const char *v = gos_env(name);
    return v && !strcmp(v, "0");
}

/* A size or count from name: a number, K or M after it multiplying by 2^10 or
 * 2^20 (fractions allowed: "1.5M"); dflt when unset, empty or not above 0. */
static inline size_t gos_env_size(const char *name, size_t dflt)
{
    const char *v = gos_env(name);
    if (!v || !*v)
        return dflt;
    char *end;
    double x = strtod(v, &end);
    size_t m = *end == 'K' || *end == 'k' ? 1u << 10 : *end == 'M' || *end == 'm' ? 1u << 20 : 1;
    return x > 0 ? (size_t)(x * (double)m) : dflt;
}

#endif
