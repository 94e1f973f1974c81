/* SPDX-License-Identifier: Apache-2.0 */
/* proto.h: the wire protocol between gpuos clients (libgpuos) and `gpuos serve`.
 *
 * One Unix stream socket per client. Every message is a fixed 16-byte header
 * followed by `len` payload bytes; payloads are fixed C structs (explicit widths,
 * no implicit padding, host byte order: both ends are on one host) optionally
 * followed by a variable tail whose length is carried in the struct and checked.
 * Bulk data never travels here: it lives in shared-memory regions (memfd, sealed
 * against shrinking) whose descriptors ride along with REGION_ADD as SCM_RIGHTS.
 *
 * Every request carries a sequence number; the daemon answers with GOS_MSG_REPLY
 * (same seq, the request's type, a status and an optional message) except for
 * asynchronous requests (flag GOS_F_ASYNC), whose errors are kept and reported
 * by the next SYNC, as CUDA reports sticky stream errors.
 *
 * gos_proto_check() validates a header and payload's structure (magic, version,
 * type, every length, every enum and flag, every string terminated): anything
 * else is a protocol violation that ends the connection. gos_proto_check_args()
 * then checks the arguments (sizes, geometry): a bad argument is an error of
 * that request only.
 * Process: every side of the wire (client, daemon, executor). */
#ifndef GOS_PROTO_H
#define GOS_PROTO_H

#include "gpuos/gpuos.h"
#include "proto/req.h"
#include "vmem/vmmtab.h"

#include <stddef.h>
#include <stdint.h>

/* Bump this if any of the messages, structs or constants below change. */
#define GOS_PROTOCOL_VERSION 9 /* 2: kernel names up to 4095 characters (C++ mangled names); 3: one gos_op_kind (a COPY's dir from 1); 4: VMM_*; 5: REGION_ADD's addr; 6: ring GATE entries; 7: the vgpu record's latency_ms; 8: its swap_turns, swap_ns; 9: COPY, LAUNCH and the ring entry's head are one struct gos_req (req.h), ring flags GOS_F_*; TMAP_ENCODE */
/* Where clients and `gpuos serve` meet when neither --socket, the configuration
 * file's socket = nor $GPUOS_SOCKET says otherwise (the systemd unit's
 * RuntimeDirectory=gpuos). */
#define GOS_DEFAULT_SOCKET "/run/gpuos/gpuos.sock"

#define GOS_PROTO_MAGIC 0x50534f47u /* "GOSP" little-endian */
#define GOS_PROTO_MAX_PAYLOAD 65536u
#define GOS_NAME_MAX 64        /* vGPU, module names incl. NUL */
#define GOS_FUNC_NAME_MAX 4096 /* kernel names incl. NUL (C++ template kernels: PyTorch) */
#define GOS_MSG_TEXT_MAX 256   /* error message in a reply incl. NUL */
#define GOS_MAX_VGPUS 64

/* Message types, grouped by hundreds. */
enum gos_msg_type {
    /* session */
    GOS_MSG_HELLO = 100,
    GOS_MSG_BYE = 101,
    /* memory */
    GOS_MSG_MEM_ALLOC = 200,
    GOS_MSG_MEM_FREE = 201,
    GOS_MSG_REGION_ADD = 210, /* + one fd (SCM_RIGHTS) */
    GOS_MSG_REGION_DEL = 211,
    /* shared device memory, System V semantics (issue 10) */
    GOS_MSG_SHM_GET = 220,
    GOS_MSG_SHM_AT = 221,
    GOS_MSG_SHM_DT = 222,
    GOS_MSG_SHM_CTL = 223,
    /* copies */
    GOS_MSG_COPY = 300,
    GOS_MSG_COPY_CHECK = 301, /* struct gos_msg_copy, flags 0: is the device range the client's? nothing moves */
    /* code */
    GOS_MSG_MODULE_LOAD = 400,
    GOS_MSG_MODULE_UNLOAD = 401,
    GOS_MSG_FUNC_GET = 402,
    GOS_MSG_MODULE_GLOBAL = 403, /* struct gos_msg_func_get -> struct gos_rep_global */
    /* execution */
    GOS_MSG_LAUNCH = 500,
    GOS_MSG_SYNC = 501,
    /* queries */
    GOS_MSG_DEVICE_INFO = 600,
    GOS_MSG_VGPU_INFO = 601,
    GOS_MSG_DEVICE_ATTRS = 602, /* every cuDeviceGetAttribute value (gpuos's libcuda) */
    GOS_MSG_TMAP_ENCODE = 610,  /* gpuos_tmap_args -> struct gos_rep_tmap (a tensor map; serve/tmap_cl.c) */
    /* administration (gpuos vgpu) */
    GOS_MSG_ADMIN_LIST = 700,
    GOS_MSG_ADMIN_SET = 701,
    GOS_MSG_ADMIN_SHM_LIST = 702, /* gpuos shm list */
    GOS_MSG_ADMIN_CREATE = 703,   /* gpuos vgpu create (issue 25) */
    GOS_MSG_ADMIN_DELETE = 704,   /* gpuos vgpu delete */
    GOS_MSG_ADMIN_SHM_RM = 705,   /* gpuos shm rm (root or the daemon's owner) */
    /* daemon -> client */
    GOS_MSG_REPLY = 900,
    /* partition-local memory (issue 12; docs/readme-placement.md) */
    GOS_MSG_PMEM_ALLOC = 240,
    GOS_MSG_PMEM_FREE = 241,
    GOS_MSG_PMEM_COPY = 242,  /* synchronous, behind the client's queued work */
    GOS_MSG_PMEM_CHECK = 243, /* where the views' units are: latency probes, and the device's truth */
    /* the shared-memory fast path (issue 9.4; proto/ring_shm.h): + one memfd */
    GOS_MSG_RING = 230,
    /* CUDA's virtual memory management for tenants (cuMemCreate, cuMemMap, ...;
     * serve/vmm_cl.c): addresses, physical memory and mappings apart */
    GOS_MSG_VMM_RESERVE = 250,   /* struct gos_msg_vmm_reserve -> struct gos_rep_vmm */
    GOS_MSG_VMM_UNRESERVE = 251, /* struct gos_msg_vmm_range */
    GOS_MSG_VMM_CREATE = 252,    /* struct gos_msg_vmm_create -> struct gos_rep_vmm (the handle) */
    GOS_MSG_VMM_RELEASE = 253,   /* struct gos_msg_vmm_release */
    GOS_MSG_VMM_MAP = 254,       /* struct gos_msg_vmm_map */
    GOS_MSG_VMM_UNMAP = 255,     /* struct gos_msg_vmm_range (after the client's queued work) */
    GOS_MSG_VMM_ACCESS = 256,    /* struct gos_msg_vmm_access */
};

/* Request flags (GOS_F_ASYNC, GOS_F_DIRECT) and the device operation's kind
 * (gos_op_kind) are req.h's. */

struct gos_msg_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t seq;
    uint32_t len; /* payload bytes that follow */
};

struct gos_msg_hello {
    uint32_t version; /* repeated in the payload: a future header layout still meets it */
    uint32_t pid;
    char vgpu[GOS_NAME_MAX];
};
struct gos_rep_hello {
    uint32_t vgpu_id;
    uint32_t device;
    uint32_t server_version;
    uint32_t client_id;
};

struct gos_msg_mem_alloc {
    uint64_t bytes;
};
struct gos_rep_mem_alloc {
    uint64_t dptr;
};
struct gos_msg_mem_free {
    uint64_t dptr;
};

struct gos_msg_region_add {
    uint64_t bytes; /* the fd's size must be at least this, and sealed against shrinking */
    /* where the client has it mapped (page-aligned), for kernels to reach it by
     * that address (mapped host memory: cuMemHostAlloc(DEVICEMAP)); 0: no need */
    uint64_t addr;
};
/* gos_rep_region_add.flags: kernels of this client reach the region at addr */
enum { GOS_REGION_F_SAME_VA = 1 };
struct gos_rep_region_add {
    uint32_t region;
    uint32_t flags; /* GOS_REGION_F_* */
};
struct gos_msg_region_del {
    uint32_t region;
    uint32_t pad;
};

/* Shared device memory (issue 10; docs/readme-shm.md). key 0: private; flags:
 * GOS_SHM_F_CREAT | GOS_SHM_F_EXCL | mode bits (0777), as shmget's. */
enum { GOS_SHM_F_CREAT = 01000, GOS_SHM_F_EXCL = 02000, GOS_SHM_F_RDONLY = 010000 };
enum { GOS_SHM_CMD_STAT = 0, GOS_SHM_CMD_SET = 1, GOS_SHM_CMD_RMID = 2 };
struct gos_msg_shm_get {
    int32_t key;
    uint32_t flags;
    uint64_t bytes;
};
struct gos_rep_shm_get {
    int32_t id;
    int32_t created;
};
struct gos_msg_shm_at {
    int32_t id;
    uint32_t flags; /* GOS_SHM_F_RDONLY */
};
struct gos_rep_shm_at {
    uint64_t dptr;
};
struct gos_msg_shm_dt {
    uint64_t dptr;
};
struct gos_msg_shm_ctl {
    int32_t id;
    uint32_t cmd; /* GOS_SHM_CMD_* */
    uint32_t uid, gid, mode; /* SET */
    uint32_t pad;
};
/* A segment as stat and list show it (STAT's reply; ADMIN_SHM_LIST's records). */
struct gos_shm_rec {
    int32_t id, key;
    uint32_t uid, gid, cuid, cgid, mode;
    int32_t nattch;
    uint64_t bytes;
    uint32_t removed;
    int32_t cpid, lpid;
    uint32_t pad;
    char vgpu[GOS_NAME_MAX]; /* charged */
};
#define GOS_SHM_LIST_MAX 256
struct gos_rep_shm_list {
    uint32_t n;
    uint32_t pad;
    /* n x struct gos_shm_rec follow */
};

/* COPY: a request (req.h) of op HTOD, DTOH or DTOD, flags GOS_F_ASYNC |
 * GOS_F_DIRECT; the launch members 0. */
struct gos_msg_copy {
    GOS_REQ_HEAD;
};

/* RING: a memfd of GOS_RING_BYTES (sealed against shrinking) becomes this
 * client's ring to its executor; answered GPUOS_EUNSUPPORTED without one
 * (isolation = none). */
struct gos_msg_ring {
    uint64_t bytes;
    uint32_t spin_us;
    uint32_t pad;
};

struct gos_msg_module_load {
    uint32_t region; /* image bytes in a region; ignored for built-in names */
    uint32_t pad;
    uint64_t offset;
    uint64_t bytes;
    char name[GOS_NAME_MAX]; /* "" or a built-in module name ("builtin") */
};
struct gos_rep_handle {
    uint64_t handle;
};
struct gos_msg_module_unload {
    uint64_t module;
};
struct gos_msg_func_get {
    uint64_t module;
    char name[GOS_FUNC_NAME_MAX];
};

/* MODULE_GLOBAL's answer: a module's __device__ variable in this client's
 * address space; copies may then reach [dptr, dptr + bytes) until the module
 * is unloaded (cuModuleGetGlobal, cudaMemcpyToSymbol). */
struct gos_rep_global {
    uint64_t dptr, bytes;
};

/* LAUNCH: a request (req.h) of op LAUNCH, flags GOS_F_ASYNC; its param_bytes
 * of packed parameters follow. */
struct gos_msg_launch {
    GOS_REQ_HEAD;
};

struct gos_rep_device_info {
    char name[128];
    char uuid[96];
    char backend[8];
    uint32_t cc_major, cc_minor;
    uint32_t sm_count;
    uint32_t simulated;
    uint64_t mem_bytes;
};

/* DEVICE_ATTRS: value[a] for attribute number a (CUdevice_attribute), valid[a]
 * whether the device answered it (the simulated device: what its chip knows);
 * above CUDA's numbers, the clusters table of device/info.h (GOS_ATTR_CLUSTERS). */
#define GOS_DEVICE_ATTRS_MAX 256
struct gos_rep_device_attrs {
    int32_t value[GOS_DEVICE_ATTRS_MAX];
    uint8_t valid[GOS_DEVICE_ATTRS_MAX];
};

/* TMAP_ENCODE (issue 43): the request is gpuos_tmap_args (include/gpuos/gpuos.h,
 * one struct from the client to the driver call), checked by
 * gos_proto_check_args (kind, rank, every enum, alignment and range the driver
 * documents) before any driver sees it; the answer is the map's 128 bytes. */
struct gos_rep_tmap {
    uint8_t map[GPUOS_TMAP_BYTES];
};

/* One vGPU's runtime view (VGPU_INFO answers the caller's; ADMIN_LIST all). */
struct gos_vgpu_rec {
    char name[GOS_NAME_MAX];
    uint32_t id;
    uint32_t device;
    uint32_t compute_share; /* percent */
    uint32_t copy_share;    /* percent */
    uint32_t mem_share;     /* percent of the device's memory */
    uint32_t clients;
    uint64_t mem_quota;     /* bytes */
    uint64_t mem_used;      /* bytes */
    double compute_util;    /* fraction of the device's compute time, last period */
    double copy_util;       /* fraction of copy time, last period */
    uint64_t compute_ns;    /* cumulative GPU time */
    uint64_t copy_ns;
    uint64_t tasks;         /* cumulative completed requests */
    char policy[16];
    char queue[8];
    double compute_held;    /* BAND: engine held idle for this vGPU, fraction of the last period */
    double copy_held;
    uint64_t compute_held_ns, copy_held_ns; /* cumulative */
    uint64_t faults;        /* executors lost to a device fault or a kill (issue 9) */
    char isolation[12];     /* process | mps | none */
    uint32_t latency_ms;    /* the latency class's bound (0: a batch vGPU; issue 41) */
    uint64_t mem_resident, mem_swapped; /* swapping (issue 10.2): its allocations' bytes */
    uint64_t evictions, restores;       /* cumulative */
    uint64_t swap_turns, swap_ns;       /* turns over busy tenants, time its memory spent moving (issue 42) */
};
struct gos_rep_admin_list {
    uint32_t n;
    uint32_t pad;
    /* n x struct gos_vgpu_rec follow */
};

/* ADMIN_SHM_RM: marks removed (destroyed at the last detach) the segment of id
 * or key value, or every segment charged to vGPU vgpu; answers how many. */
enum { GOS_SHM_RM_ID = 0, GOS_SHM_RM_KEY = 1, GOS_SHM_RM_VGPU = 2 };
struct gos_msg_admin_shm_rm {
    uint32_t by; /* GOS_SHM_RM_* */
    int32_t value;
    char vgpu[GOS_NAME_MAX];
};
struct gos_rep_admin_shm_rm {
    uint32_t removed;
    uint32_t pad;
};

struct gos_msg_admin_set {
    char vgpu[GOS_NAME_MAX];
    char key[32];
    char value[64];
};

/* A vGPU made at run time (issue 25): keys as in a [vgpu NAME] section of the
 * configuration, "key=value" lines separated by newlines (device, compute,
 * copy, memory, users, groups). */
#define GOS_ADMIN_KEYS_MAX 1024
struct gos_msg_admin_create {
    char vgpu[GOS_NAME_MAX];
    char keys[GOS_ADMIN_KEYS_MAX];
};
enum { GOS_DELETE_FORCE = 1u }; /* end its clients (their executors, with the reason) */
struct gos_msg_admin_delete {
    char vgpu[GOS_NAME_MAX];
    uint32_t flags;
    uint32_t pad;
};

/* Partition-local memory (issue 12): two views of bytes_per_view logical bytes,
 * each in one memory partition of the GPU (include/gpuos/pmem_core.h). The
 * handle is the allocation's base address. */
#define GOS_PMEM_MAX 16 /* per client */
struct gos_msg_pmem_alloc {
    uint64_t bytes; /* per view */
};
struct gos_rep_pmem_alloc {
    uint64_t base;       /* the allocation (2 MB aligned): the handle */
    uint64_t bytes;      /* device bytes of the allocation (both views) */
    uint64_t parity;     /* device address of the parity table (one byte per 2 MB page) */
    uint64_t view_bytes; /* logical bytes of each view */
    uint64_t charged;    /* charged to the vGPU's memory share (allocation + table page) */
    uint32_t mask, shift; /* the chart's in-page hash bits, log2 granularity */
    double parity_s;     /* time to measure the page parities */
    uint32_t sm_count;
    uint32_t pad;
    int8_t part_of_sm[256]; /* the chart: each SM's partition (the runtime's table) */
};
struct gos_msg_pmem_free {
    uint64_t base;
};
struct gos_msg_pmem_copy {
    uint64_t base;
    uint32_t dir;    /* GOS_OP_HTOD / GOS_OP_DTOH */
    uint32_t part;   /* 0 / 1 */
    uint64_t offset; /* logical offset in the view */
    uint64_t bytes;
    uint32_t region; /* host side */
    uint32_t pad;
    uint64_t region_off;
};
struct gos_msg_pmem_check {
    uint64_t base;
    uint32_t samples; /* latency probes per unit, 1..8 */
    uint32_t pad;
};
struct gos_rep_pmem_check {
    uint64_t units[2];     /* logical units of each view */
    uint64_t in_target[2]; /* found in the view's partition by latency (after re-probing) */
    uint64_t truth_in[2];  /* in it by the device's own truth (a simulated chip) */
    int32_t truth_rc;      /* 0: truth_in is valid; GOS_EUNSUPPORTED: a GPU has no truth */
    uint32_t unit_bytes;
    double check_s;
};

/* Virtual memory management (CUDA's cuMemAddressReserve, cuMemCreate, cuMemMap,
 * cuMemSetAccess; serve/vmm_cl.c). Every size and address is a multiple of
 * GOS_VMM_GRANULE (what the driver reports for device memory on the H100 / H200).
 * A reservation is addresses only (not charged); physical memory is charged to
 * the vGPU's memory share from CREATE until it is both released and unmapped
 * (CUDA's semantics: a released handle's memory lives on while mapped). A
 * mapping of a handle's first `bytes` at va lies inside one of the client's
 * reservations and overlaps no other; it is reachable by copies and kernels
 * once its access is READ or READWRITE (mapped memory starts inaccessible, as
 * in CUDA). UNMAP and ACCESS take whole mappings (one or several adjacent
 * ones). Handles are the daemon's, unique across its clients; a client names
 * only its own. */
#define GOS_VMM_GRANULE (2ull << 20)
#define GOS_VMM_MAX_RESERVATIONS 1024 /* per client; handles and mappings: max_allocations */
/* GOS_VMM_ACCESS_NONE, _READ, _RW: vmem/vmmtab.h (the tables' own values) */
struct gos_msg_vmm_reserve {
    uint64_t bytes;
    uint64_t align; /* 0: the granule; else a power of two */
};
struct gos_msg_vmm_range {
    uint64_t va, bytes;
};
struct gos_msg_vmm_create {
    uint64_t bytes;
};
struct gos_msg_vmm_release {
    uint64_t handle;
};
struct gos_msg_vmm_map {
    uint64_t va, bytes, handle; /* the handle's first bytes at va */
};
struct gos_msg_vmm_access {
    uint64_t va, bytes;
    uint32_t access; /* GOS_VMM_ACCESS_* */
    uint32_t pad;
};
struct gos_rep_vmm {
    uint64_t value; /* RESERVE: the address; CREATE: the handle */
};

/* The reply: status (GOS_OK or GOS_E*), the request type, the length of the
 * error text (only when status != 0), then the text, then the type's body. */
struct gos_rep_hdr {
    int32_t status;
    uint16_t req_type;
    uint16_t text_len;
};

/* Checks a header alone: magic, version, known type, length within limits.
 * GOS_OK, or GOS_EPROTO with a one-line reason (a version mismatch names both
 * versions). */
int gos_proto_check_hdr(const struct gos_msg_hdr *h);

/* Checks a complete message (header already passed gos_proto_check_hdr):
 * payload size exactly right for the type, strings NUL-terminated within their
 * field, enums in range, variable tails consistent. For REPLY the request type
 * it answers and the body size are checked too. */
int gos_proto_check(const struct gos_msg_hdr *h, const void *payload);

/* Checks a request's arguments (after gos_proto_check): sizes (allocations
 * 1..2^50 bytes, copies and regions 1..2^40), region indices, ranges that would
 * wrap, launch geometry (no zero dimension, blocks of at most 1024 threads, a
 * grid that is a multiple of the cluster, clusters of at most 16). GOS_EINVAL
 * with a reason: an error of that request alone, never of the session (issue
 * 15.4); the daemon answers it (or keeps it for the next SYNC when the request
 * is asynchronous) and carries on. */
int gos_proto_check_args(const struct gos_msg_hdr *h, const void *payload);
/* The GOS_F_* flags of a request that has them (COPY, LAUNCH), else 0. */
uint32_t gos_proto_request_flags(const struct gos_msg_hdr *h, const void *payload);
#define GOS_ALLOC_MAX (1ull << 50) /* (GOS_COPY_MAX: req.h) */

/* Fills a header. */
void gos_proto_hdr(struct gos_msg_hdr *h, uint16_t type, uint32_t seq, uint32_t len);

/* Payload size the request type needs (fixed part); 0 for none, -1 unknown. */
long gos_proto_fixed_size(uint16_t type);

/* The name of a type ("COPY") for messages; "?" when unknown. */
const char *gos_proto_name(uint16_t type);

/* Reply body size expected for a request type (REPLY validation), -1 variable. */
long gos_proto_reply_body(uint16_t req_type);

/* Whether a string field is NUL-terminated within `cap` bytes and non-empty. */
int gos_proto_str_ok(const char *s, size_t cap, int allow_empty);

#endif
