/* SPDX-License-Identifier: Apache-2.0 */
/* gpuos.h: the client library of gpuos virtual GPUs (libgpuos; pillar 3).
 *
 * Paper 002: Kato et al., "Gdev: First-Class GPU Resource Management in the
 * Operating System", USENIX ATC 2012 (https://www.usenix.org/conference/atc12/
 * technical-sessions/presentation/kato).
 *
 * Gdev's API (paper 002, section 3) in today's terms: a program opens a virtual
 * GPU by name on a running `gpuos serve`, allocates device memory within the
 * vGPU's memory share, copies data, loads modules, launches kernels and
 * synchronises. Everything goes through the daemon, which schedules every copy
 * and launch against the vGPU's compute and copy shares; nothing reaches the GPU
 * directly. Bulk data travels through shared memory, never through the socket.
 *
 * Copies (paper 002, section 4.1): from ordinary (pageable) memory data is split
 * into chunks that go through shared bounce buffers, pinned by the daemon, in a
 * pipeline: while the daemon's DMA moves chunk i, this library fills chunk i+1.
 * Memory from gpuos_host_alloc() *is* shared with the daemon and pinned: copies
 * from it need no bounce (zero-copy path) and may be asynchronous.
 *
 * Errors: every function returns GPUOS_OK (0) or a negative GPUOS_E* code and
 * leaves a one-line message for gpuos_error() (per thread). Nothing aborts.
 * A handle may be used by one thread at a time (the library locks it).
 * No CUDA types here: handles are integers, streams do not exist (one ordered
 * queue per handle: work runs in the order it was issued). */
#ifndef GPUOS_H
#define GPUOS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GPUOS_OK = 0,
    GPUOS_EINVAL = -1,
    GPUOS_ENODEV = -2,
    GPUOS_EUNSUPPORTED = -3,
    GPUOS_ENOMEM = -4,
    GPUOS_EIO = -5,      /* daemon unreachable or gone */
    GPUOS_EPERM = -6,
    GPUOS_EDEVICE = -7,  /* the GPU reported an error */
    GPUOS_EPROTO = -9,   /* protocol violation or version mismatch */
    GPUOS_EBUSY = -10,   /* over the vGPU's memory share, or limits */
    GPUOS_ETIMEDOUT = -11,
    GPUOS_ELIMIT = -12,  /* a limit of the daemon was reached: clients, queued work
                            (docs/readme-vgpu.md, "Limits"); the daemon is fine */
};

typedef struct gpuos_vgpu gpuos_vgpu;
typedef uint64_t gpuos_dptr;     /* device address */
typedef uint64_t gpuos_module;   /* module handle */
typedef uint64_t gpuos_function; /* kernel handle */

/* The one-line message of the last failure in this thread. */
const char *gpuos_error(void);

/* Connects to the daemon at `socket_path` (NULL: $GPUOS_SOCKET, else
 * /run/gpuos/gpuos.sock) and opens virtual GPU `vgpu`. Every phase (connect,
 * handshake, replies) gives up after $GPUOS_TIMEOUT_MS (default 120 s) with
 * GPUOS_ETIMEDOUT; a daemon at its client limits refuses with GPUOS_ELIMIT. */
int gpuos_open(const char *socket_path, const char *vgpu, gpuos_vgpu **out);
/* Waits for outstanding work, then releases everything this handle holds. */
void gpuos_close(gpuos_vgpu *g);

/* Device memory, charged to the vGPU's memory share: an allocation past the
 * share fails with GPUOS_EBUSY and a message naming the share. Argument errors
 * (0 bytes or more than 2^50, a copy of more than 2^40, a range outside this
 * handle's allocations) are GPUOS_EINVAL of that call; the handle goes on. */
int gpuos_mem_alloc(gpuos_vgpu *g, size_t bytes, gpuos_dptr *out);
int gpuos_mem_free(gpuos_vgpu *g, gpuos_dptr p);

/* Host memory shared with the daemon and pinned by it (zero-copy path). Its
 * contents start unspecified: a few freed buffers of up to 8 MB are kept,
 * still shared, and handed out again to an allocation of about their size
 * (GPUOS_HOST_CACHE=0 keeps none); freed memory is no longer this client's
 * host memory either way. */
int gpuos_host_alloc(gpuos_vgpu *g, size_t bytes, void **out);
int gpuos_host_free(gpuos_vgpu *g, void *p);
/* The address at which this client's kernels reach memory of gpuos_host_alloc()
 * (mapped host memory, CUDA's cuMemHostGetDevicePointer): p itself when its
 * executor could map it there (unified addressing), else GPUOS_EUNSUPPORTED
 * (and always under isolation = none: the daemon's context). */
int gpuos_host_device_pointer(gpuos_vgpu *g, const void *p, gpuos_dptr *out);

/* Synchronous copies: return when the data has arrived. `src`/`dst` may be any
 * host memory; memory from gpuos_host_alloc() takes the zero-copy path. One
 * exception, CUDA's for pageable memory: a small host-to-device copy (one that
 * travels inside a fast-path ring slot, under 8 KB) returns once the bytes are
 * staged on the daemon's side, before the DMA ends: `src` may be reused at once
 * and every later request of this handle sees the data; an error of the copy
 * itself is reported by a later call, as for asynchronous work. */
int gpuos_memcpy_htod(gpuos_vgpu *g, gpuos_dptr dst, const void *src, size_t n);
int gpuos_memcpy_dtoh(gpuos_vgpu *g, void *dst, gpuos_dptr src, size_t n);
int gpuos_memcpy_dtod(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n);
/* Asynchronous copies: queued behind earlier work; complete by
 * gpuos_synchronize(). Truly asynchronous for memory from gpuos_host_alloc()
 * (which must then stay untouched until the synchronise) and device-to-device;
 * from pageable memory they return once the host buffer may be reused (htod)
 * or holds the data (dtoh), as CUDA does for pageable memory. Errors of queued
 * work are reported by the next gpuos_synchronize(). */
int gpuos_memcpy_htod_async(gpuos_vgpu *g, gpuos_dptr dst, const void *src, size_t n);
int gpuos_memcpy_dtoh_async(gpuos_vgpu *g, void *dst, gpuos_dptr src, size_t n);
int gpuos_memcpy_dtod_async(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n);
/* A gate in the queue: work queued after it waits until *word >= value, the
 * device going on with the work before it (CUDA's host functions: the program's
 * own thread runs the function once the work before it is done, then opens the
 * gate). word: 8-aligned memory of gpuos_host_alloc(), written by the program.
 * GPUOS_EUNSUPPORTED without the fast path (isolation = none, GPUOS_RING=0). */
int gpuos_gate(gpuos_vgpu *g, const uint64_t *word, uint64_t value);

/* Modules: image bytes (fatbin, cubin or PTX text), or the daemon's built-in
 * module by name: "builtin" (kernels loop, madd, mmul, fill, empty with the same
 * parameters on every device; the simulated device models their work as time and
 * adds sleep_ns). The older names "exec" (GPU) and "sim:builtin" still work. */
int gpuos_module_load(gpuos_vgpu *g, const void *image, size_t bytes, gpuos_module *out);
int gpuos_module_load_builtin(gpuos_vgpu *g, const char *name, gpuos_module *out);
int gpuos_module_unload(gpuos_vgpu *g, gpuos_module m);
int gpuos_module_function(gpuos_vgpu *g, gpuos_module m, const char *name, gpuos_function *out);
/* A module's __device__ variable: its device address and size in this client's
 * address space (cuModuleGetGlobal). Copies may reach it until the module is
 * unloaded; it is module memory, not charged to the vGPU's share. */
int gpuos_module_global(gpuos_vgpu *g, gpuos_module m, const char *name, uint64_t *dptr, size_t *bytes);

/* Kernel parameters packed as CUDA lays them out: each value aligned to its own
 * size (up to 8). gpuos_params_add() returns GPUOS_EINVAL once it overflows. */
typedef struct {
    unsigned char buf[4096];
    size_t len;
} gpuos_params;
void gpuos_params_init(gpuos_params *p);
int gpuos_params_add(gpuos_params *p, const void *value, size_t size);

typedef struct {
    unsigned grid[3];    /* zero entries count as 1 */
    unsigned block[3];
    unsigned cluster[3]; /* all 0: no thread-block clusters */
    unsigned shared_mem; /* dynamic shared memory, bytes */
    int priority;        /* inside the vGPU: higher runs first */
} gpuos_launch_config;

/* Queues a launch (asynchronous, like cuLaunchKernel); argument errors the
 * daemon finds later (a block of more than 1024 threads, a grid that is not a
 * multiple of the cluster, a built-in kernel's pointer outside this handle's
 * allocations, more queued work than the daemon's limits: GPUOS_ELIMIT) are
 * reported by gpuos_synchronize(); the handle goes on. */
int gpuos_launch(gpuos_vgpu *g, gpuos_function f, const gpuos_launch_config *cfg, const void *params,
                 size_t param_bytes);
/* Waits until all work issued on this handle has completed; returns the first
 * error of asynchronous work since the last synchronise. */
int gpuos_synchronize(gpuos_vgpu *g);

typedef struct {
    char name[128];
    char uuid[96];
    char backend[8]; /* "cuda" or "sim" */
    int cc_major, cc_minor, sm_count, simulated;
    uint64_t mem_bytes;
} gpuos_device_facts;

typedef struct {
    char name[64];
    int id, device;
    int compute_share, copy_share, mem_share; /* percent */
    int clients;
    uint64_t mem_quota, mem_used; /* bytes */
    double compute_util, copy_util; /* fraction of the last period */
    uint64_t compute_ns, copy_ns, tasks; /* cumulative */
    char policy[16], queue[8];
    double compute_held, copy_held;   /* BAND: engine held idle for it, fraction of the last period */
    uint64_t compute_held_ns, copy_held_ns; /* cumulative */
    uint64_t faults;      /* executors of its clients lost to a device fault or a kill */
    char isolation[16];   /* "process", "mps" or "none" */
    uint64_t mem_resident, mem_swapped; /* swapping (docs/readme-shm.md): its allocations on the
                                           device and in host swap space; 0 when swap is off */
    uint64_t evictions, restores;       /* cumulative */
    int latency_ms;       /* its latency class: work starts within this (0: a batch vGPU) */
    uint64_t swap_turns;  /* turns given to it over busy tenants whose memory did not fit (issue 42) */
    uint64_t swap_ns;     /* time its memory spent being evicted or restored */
} gpuos_vgpu_facts;

int gpuos_device_info(gpuos_vgpu *g, gpuos_device_facts *out);
int gpuos_vgpu_info(gpuos_vgpu *g, gpuos_vgpu_facts *out);
/* The real device's attributes by CUDA attribute number (value[a], valid[a] for
 * 0 <= a < n): what gpuos's libcuda answers cuDeviceGetAttribute with.
 * The simulated device answers those its chip knows (SMs, compute capability,
 * clocks, L2, ...). Above CUDA's numbers, value[GPUOS_ATTR_CLUSTERS + cs - 1]
 * (cs = 1..GPUOS_ATTR_CLUSTERS_MAX) is how many clusters of cs blocks the device
 * runs at once at one block per SM (what cuOccupancyMaxActiveClusters answers
 * for a kernel holding all of an SM's shared memory). */
#define GPUOS_ATTR_CLUSTERS 224
#define GPUOS_ATTR_CLUSTERS_MAX 32
int gpuos_device_attributes(gpuos_vgpu *g, int32_t *value, unsigned char *valid, int n);

/* Tensor maps (TMA descriptors: CUDA's cuTensorMapEncodeTiled, ...Im2col,
 * ...Im2colWide, cuTensorMapReplaceAddress), encoded by the daemon's device
 * (the daemon's or the client's executor's driver; issue 43), so that no
 * process of a tenant needs NVIDIA's libcuda or the device nodes. The numbers
 * are CUDA's (CUtensorMapDataType, CUtensorMapInterleave, ...); arrays past
 * rank are ignored. The map is GPUOS_TMAP_BYTES bytes in the driver's own
 * format (the simulated device: a deterministic packing, docs/readme-cudashim.md).
 * GPUOS_EINVAL for arguments the driver refuses (rank outside 1..5, im2col
 * outside 3..5, an unknown kind or enum, a misaligned address or stride). */
enum { GPUOS_TMAP_TILED = 1, GPUOS_TMAP_IM2COL, GPUOS_TMAP_IM2COL_WIDE, GPUOS_TMAP_REPLACE };
#define GPUOS_TMAP_RANK_MAX 5
#define GPUOS_TMAP_BYTES 128
typedef struct {
    uint32_t kind;     /* GPUOS_TMAP_* */
    uint32_t dtype;    /* CUtensorMapDataType */
    uint32_t rank;     /* 1..5 (im2col: 3..5) */
    uint32_t interleave, swizzle, l2promotion, oobfill; /* CUtensorMap* enums */
    uint32_t wide_mode; /* IM2COL_WIDE: CUtensorMapIm2ColWideMode */
    uint32_t channels, pixels; /* IM2COL(_WIDE): channels per pixel, pixels per column */
    uint64_t addr;     /* the tensor's device address (REPLACE: the new one) */
    uint64_t dim[GPUOS_TMAP_RANK_MAX];        /* globalDim */
    uint64_t stride[GPUOS_TMAP_RANK_MAX - 1]; /* globalStrides (bytes), rank - 1 of them */
    uint32_t box[GPUOS_TMAP_RANK_MAX];        /* TILED: boxDim */
    uint32_t estride[GPUOS_TMAP_RANK_MAX];    /* elementStrides */
    int32_t lower[GPUOS_TMAP_RANK_MAX - 2];   /* IM2COL: pixelBoxLowerCorner (rank - 2); WIDE: lower[0] */
    int32_t upper[GPUOS_TMAP_RANK_MAX - 2];   /* IM2COL: pixelBoxUpperCorner; WIDE: upper[0] */
    unsigned char map[GPUOS_TMAP_BYTES];      /* REPLACE: the map whose address changes */
} gpuos_tmap_args;
int gpuos_tmap_encode(gpuos_vgpu *g, const gpuos_tmap_args *a, void *map);

/* Memory of this vGPU: used and quota (its share), and the device total. */
int gpuos_mem_info(gpuos_vgpu *g, uint64_t *used, uint64_t *quota, uint64_t *total);

/* Copy tuning (paper 002, section 7.1): chunk size of the bounce pipeline and
 * its depth (chunks in flight). 0 keeps the current value. The defaults are the
 * values measured best on an H200 (bench/vgpu.sh), overridable with
 * $GPUOS_CHUNK and $GPUOS_DEPTH. */
int gpuos_set_copy_params(gpuos_vgpu *g, size_t chunk, int depth);
void gpuos_get_copy_params(gpuos_vgpu *g, size_t *chunk, int *depth);
/* Copies of at most `bytes` take the small-copy path (Gdev's direct I/O: one
 * synchronous driver copy, no pipeline, no events); 0 disables it. Default: the
 * crossover measured on an H200, overridable with $GPUOS_SMALL. Through the
 * shared-memory ring (issue 9.4) the small path is the data inline in a ring
 * slot, for copies of at most min(bytes, 7872) ($GPUOS_RING_INLINE). */
int gpuos_set_copy_small(gpuos_vgpu *g, size_t bytes);
size_t gpuos_get_copy_small(gpuos_vgpu *g);

/* Shared device memory between clients, System V semantics (Gdev's cuShmGet,
 * cuShmAt, cuShmDt, cuShmCtl; docs/readme-shm.md). A segment is one physical
 * device allocation mapped into each attaching client's address space, so
 * clients (each in its own executor) see each other's writes. Permissions are
 * checked with the caller's uid, gid and groups as shmget/shmat/shmctl do;
 * only the owner, the creator or root may set or remove. The segment is charged
 * to the creating vGPU's memory share until it is destroyed (removed and
 * detached everywhere). Attachments are read-write (device mappings have no
 * read-only mode here: attaching needs read and write permission). */
#define GPUOS_SHM_PRIVATE 0     /* key: always a new segment */
#define GPUOS_SHM_CREAT 01000   /* flags: create a missing key (| mode bits 0777) */
#define GPUOS_SHM_EXCL 02000    /* with CREAT: fail (GPUOS_EBUSY) if the key exists */
enum { GPUOS_SHM_STAT = 0, GPUOS_SHM_SET = 1, GPUOS_SHM_RMID = 2 };
typedef struct {
    int id, key;
    unsigned uid, gid, cuid, cgid, mode; /* owner, creator, 9 permission bits */
    int nattch;
    uint64_t bytes;
    int removed;   /* marked: destroyed at the last detach */
    int cpid, lpid;
    char vgpu[64]; /* charged */
} gpuos_shm_ds;
/* shmget: the id of key's segment (bytes <= its size; 0 for any), or a new one
 * with GPUOS_SHM_CREAT. Errors: GPUOS_EINVAL (no such key, size), GPUOS_EBUSY
 * (exclusive create of an existing key, or past the vGPU's memory share),
 * GPUOS_EPERM (the mode bits asked for are not granted), GPUOS_ELIMIT. */
int gpuos_shm_get(gpuos_vgpu *g, int key, size_t bytes, int flags, int *id);
/* shmat: a device address of the segment valid in this handle's address space
 * (copies and kernels may use it like an allocation). */
int gpuos_shm_attach(gpuos_vgpu *g, int id, gpuos_dptr *out);
/* shmat with flags: GPUOS_SHM_RDONLY (SHM_RDONLY) maps the segment read-only in
 * this handle's address space; read permission suffices. Copies into it fail
 * (GPUOS_EPERM); a kernel's write faults this handle's context only (on the
 * simulated device it is refused). */
#define GPUOS_SHM_RDONLY 010000
int gpuos_shm_attach_flags(gpuos_vgpu *g, int id, int flags, gpuos_dptr *out);
/* shmdt: waits for this handle's work, then unmaps. */
int gpuos_shm_detach(gpuos_vgpu *g, gpuos_dptr p);
/* shmctl: GPUOS_SHM_STAT fills *buf (read permission); GPUOS_SHM_SET takes
 * buf->uid, buf->gid and buf->mode (owner, creator or root); GPUOS_SHM_RMID
 * marks the segment (owner, creator or root), destroyed at its last detach. */
int gpuos_shm_ctl(gpuos_vgpu *g, int id, int cmd, gpuos_shm_ds *buf);
/* Every segment the caller may read (root: all), as `gpuos shm list` shows. */
int gpuos_admin_shm_list(const char *socket_path, gpuos_shm_ds *out, int max, int *n);
/* `gpuos shm rm` (ipcrm): marks removed the segment with id (GPUOS_SHM_RM_ID) or
 * key (GPUOS_SHM_RM_KEY) value, or every segment charged to vGPU vgpu
 * (GPUOS_SHM_RM_VGPU), whoever owns them; destroyed at their last detach. Only
 * root or the daemon's owner (GPUOS_EPERM otherwise); GPUOS_EINVAL when nothing
 * matched. *removed: how many (may be NULL). */
#define GPUOS_SHM_RM_ID 0
#define GPUOS_SHM_RM_KEY 1
#define GPUOS_SHM_RM_VGPU 2
int gpuos_admin_shm_rm(const char *socket_path, int by, int value, const char *vgpu, int *removed);

/* Partition-local memory (issue 12; docs/readme-placement.md, "vGPU clients").
 * gpuos_pmem_alloc asks the vGPU's device for bytes_per_view bytes in each of
 * the GPU's two memory partitions: the client's executor (or the daemon under
 * isolation = none) allocates 2 MB pages, measures each page's parity by
 * latency against the device's chart (`chip = FILE` in its [device] section;
 * without one: GPUOS_EUNSUPPORTED) and hands back two views, plain structs valid
 * in this handle's address space. Pass a view by value as a kernel parameter
 * (gpuos_params_add(&p, &view, sizeof view)); kernels map a logical offset to
 * its address with gos_pmem_addr() of gpuos/pmem_core.h (O(1)) and may run on
 * the partition-aware runtime of gpuos/pmem_dev.cuh. Both views always exist:
 * each aligned pair of 4 KB units gives one unit to each partition, so N bytes
 * per view take 2N of device memory (+ one 2 MB page for the parity table),
 * all charged to the vGPU's memory share (GPUOS_EBUSY past it); freed by
 * gpuos_pmem_free, at gpuos_close, or when the client dies. gpuos_mem_free
 * refuses it; plain copies (gpuos_memcpy_*) on [base, base + bytes) work but
 * ignore the views. Copies and checks run after the handle's queued work and
 * return when done. Free a pmem before closing its vGPU handle. */
#include "gpuos/pmem_core.h"
typedef struct gpuos_pmem gpuos_pmem;
typedef gos_pmem_view gpuos_pmem_view;
int gpuos_pmem_alloc(gpuos_vgpu *g, size_t bytes_per_view, gpuos_pmem **out);
int gpuos_pmem_free(gpuos_pmem *m);
/* The view of partition `part` (0 or 1; the chart's numbering). */
int gpuos_pmem_get_view(const gpuos_pmem *m, int part, gpuos_pmem_view *out);
/* The allocation as a whole: base address and device bytes (both views). */
int gpuos_pmem_extent(const gpuos_pmem *m, gpuos_dptr *base, size_t *bytes, size_t *charged);
/* Host memory into / out of logical bytes [off, off + n) of view `part`. */
int gpuos_pmem_write(gpuos_pmem *m, int part, uint64_t off, const void *src, size_t n);
int gpuos_pmem_read(gpuos_pmem *m, int part, uint64_t off, void *dst, size_t n);
/* The partition-aware runtime's table (gpuos/pmem_dev.cuh): every SM works for
 * its chart partition except idle[0..n_idle); n_tasks split over the two queues
 * by working SM count (split 0) or half and half (split 1). */
int gpuos_pmem_runtime(const gpuos_pmem *m, const int *idle, int n_idle, uint32_t n_tasks, int split,
                       gos_prt_table *out);
/* Where the views' units really are, measured by the device: every unit
 * classified by latency (src/place/check.c; `samples` probes each, 1..8), and
 * by the device's own truth where it has one (a simulated chip: truth = 1). */
typedef struct {
    uint64_t units[2];       /* logical units of each view */
    uint64_t local[2];       /* found in the view's partition by latency */
    int truth;               /* 1: truth_local is the device's truth */
    uint64_t truth_local[2];
    uint32_t unit_bytes;
    double check_s, parity_s; /* this check; measuring parities at allocation */
} gpuos_pmem_check_result;
int gpuos_pmem_check(gpuos_pmem *m, int samples, gpuos_pmem_check_result *r);

/* Virtual memory management, CUDA's (cuMemAddressReserve, cuMemCreate,
 * cuMemMap, cuMemSetAccess; what gpuos's libcuda answers them with). Addresses
 * and physical memory apart: a reservation is device addresses only (not
 * charged); physical memory of a handle is charged to the vGPU's memory share
 * (GPUOS_EBUSY past it) from gpuos_vmm_create until it is both released and
 * unmapped: a released handle's memory lives on while it is mapped. Every size
 * and address is a multiple of GPUOS_VMM_GRANULE (else GPUOS_EINVAL). A handle's
 * first `bytes` map at va inside a reservation of this handle; copies and
 * kernels reach the mapping once its access is GPUOS_VMM_READ or _READWRITE
 * (it starts with none, as in CUDA), and two mappings side by side as one range.
 * Unmap and set access take whole mappings, one or several adjacent ones;
 * unmap waits for this handle's work first. Handles and ranges are this
 * vGPU handle's own: any other (another tenant's) is GPUOS_EINVAL. Everything is
 * released when the handle closes or its process dies. align: 0 or a power of
 * two (the reservation's start is a multiple of it). */
#define GPUOS_VMM_GRANULE (2u << 20)
enum { GPUOS_VMM_NONE = 0, GPUOS_VMM_READ = 1, GPUOS_VMM_READWRITE = 3 };
int gpuos_vmm_reserve(gpuos_vgpu *g, size_t bytes, size_t align, gpuos_dptr *va);
int gpuos_vmm_unreserve(gpuos_vgpu *g, gpuos_dptr va, size_t bytes);
int gpuos_vmm_create(gpuos_vgpu *g, size_t bytes, uint64_t *handle);
int gpuos_vmm_release(gpuos_vgpu *g, uint64_t handle);
int gpuos_vmm_map(gpuos_vgpu *g, gpuos_dptr va, size_t bytes, uint64_t handle);
int gpuos_vmm_unmap(gpuos_vgpu *g, gpuos_dptr va, size_t bytes);
int gpuos_vmm_set_access(gpuos_vgpu *g, gpuos_dptr va, size_t bytes, int access);

/* Administration without opening a vGPU (what `gpuos vgpu` uses). */
int gpuos_admin_list(const char *socket_path, gpuos_vgpu_facts *out, int max, int *n);
int gpuos_admin_set(const char *socket_path, const char *vgpu, const char *key, const char *value);
/* A vGPU made at run time (kept in the daemon's state file): keys as in a
 * [vgpu NAME] section, "key=value" lines separated by newlines (device, compute,
 * copy, memory, users, groups). Deleting one the configuration file defines is
 * refused; one with clients attached is refused unless force, which ends them
 * (their requests then fail naming the deletion). */
int gpuos_admin_create(const char *socket_path, const char *vgpu, const char *keys);
int gpuos_admin_delete(const char *socket_path, const char *vgpu, int force);

#ifdef __cplusplus
}
#endif
#endif
