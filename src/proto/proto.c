/* SPDX-License-Identifier: Apache-2.0 */
/* proto.c: validation of protocol messages (proto.h). Pure functions, no I/O, so
 * that the parser is unit-tested and fuzzed in process (tests/test_proto*.c).
 * Process: every side of the wire (client, daemon, executor). */
#include "proto/proto.h"

#include "common/status.h"

#include <string.h>

_Static_assert(sizeof(struct gos_msg_hdr) == 16, "header layout");
_Static_assert(sizeof(struct gos_msg_hello) == 72, "hello layout");
_Static_assert(sizeof(struct gos_msg_copy) == sizeof(struct gos_req), "COPY is a request (req.h)");
_Static_assert(sizeof(struct gos_msg_launch) == sizeof(struct gos_req), "LAUNCH is a request (req.h)");
_Static_assert(sizeof(struct gos_msg_module_load) == 88, "module layout");
_Static_assert(sizeof(struct gos_vgpu_rec) == 272, "vgpu record layout (issue 9: faults, isolation; issue 10: resident, swapped, evictions, restores; issue 42: swap_turns, swap_ns)");
_Static_assert(sizeof(struct gos_rep_device_info) == 256, "device info layout");
_Static_assert(sizeof(gpuos_tmap_args) == 312, "tensor map request layout");
_Static_assert(sizeof(struct gos_rep_hdr) == 8, "reply header layout");
_Static_assert(sizeof(struct gos_shm_rec) == 120, "shm record layout");
_Static_assert(sizeof(struct gos_msg_vmm_map) == 24 && sizeof(struct gos_msg_vmm_access) == 24, "vmm layouts");
_Static_assert(sizeof(struct gos_rep_shm_list) + GOS_SHM_LIST_MAX * sizeof(struct gos_shm_rec) +
                       sizeof(struct gos_rep_hdr) + GOS_MSG_TEXT_MAX <= GOS_PROTO_MAX_PAYLOAD,
               "shm list fits one message");
_Static_assert(sizeof(struct gos_rep_admin_list) + GOS_MAX_VGPUS * sizeof(struct gos_vgpu_rec) +
                       sizeof(struct gos_rep_hdr) + GOS_MSG_TEXT_MAX <= GOS_PROTO_MAX_PAYLOAD,
               "admin list fits one message");

static const struct {
    uint16_t type;
    const char *name;
    long fixed;      /* request payload (-1: not a request) */
    long reply_body; /* reply body on success (-1: variable) */
} table[] = {
    {GOS_MSG_HELLO, "HELLO", sizeof(struct gos_msg_hello), sizeof(struct gos_rep_hello)},
    {GOS_MSG_BYE, "BYE", 0, 0},
    {GOS_MSG_MEM_ALLOC, "MEM_ALLOC", sizeof(struct gos_msg_mem_alloc), sizeof(struct gos_rep_mem_alloc)},
    {GOS_MSG_MEM_FREE, "MEM_FREE", sizeof(struct gos_msg_mem_free), 0},
    {GOS_MSG_REGION_ADD, "REGION_ADD", sizeof(struct gos_msg_region_add), sizeof(struct gos_rep_region_add)},
    {GOS_MSG_REGION_DEL, "REGION_DEL", sizeof(struct gos_msg_region_del), 0},
    {GOS_MSG_SHM_GET, "SHM_GET", sizeof(struct gos_msg_shm_get), sizeof(struct gos_rep_shm_get)},
    {GOS_MSG_SHM_AT, "SHM_AT", sizeof(struct gos_msg_shm_at), sizeof(struct gos_rep_shm_at)},
    {GOS_MSG_SHM_DT, "SHM_DT", sizeof(struct gos_msg_shm_dt), 0},
    {GOS_MSG_SHM_CTL, "SHM_CTL", sizeof(struct gos_msg_shm_ctl), -1},
    {GOS_MSG_COPY, "COPY", sizeof(struct gos_msg_copy), 0},
    {GOS_MSG_COPY_CHECK, "COPY_CHECK", sizeof(struct gos_msg_copy), 0},
    {GOS_MSG_MODULE_LOAD, "MODULE_LOAD", sizeof(struct gos_msg_module_load), sizeof(struct gos_rep_handle)},
    {GOS_MSG_MODULE_UNLOAD, "MODULE_UNLOAD", sizeof(struct gos_msg_module_unload), 0},
    {GOS_MSG_FUNC_GET, "FUNC_GET", sizeof(struct gos_msg_func_get), sizeof(struct gos_rep_handle)},
    {GOS_MSG_MODULE_GLOBAL, "MODULE_GLOBAL", sizeof(struct gos_msg_func_get), sizeof(struct gos_rep_global)},
    {GOS_MSG_LAUNCH, "LAUNCH", sizeof(struct gos_msg_launch), 0},
    {GOS_MSG_SYNC, "SYNC", 0, 0},
    {GOS_MSG_DEVICE_INFO, "DEVICE_INFO", 0, sizeof(struct gos_rep_device_info)},
    {GOS_MSG_VGPU_INFO, "VGPU_INFO", 0, sizeof(struct gos_vgpu_rec)},
    {GOS_MSG_DEVICE_ATTRS, "DEVICE_ATTRS", 0, sizeof(struct gos_rep_device_attrs)},
    {GOS_MSG_TMAP_ENCODE, "TMAP_ENCODE", sizeof(gpuos_tmap_args), sizeof(struct gos_rep_tmap)},
    {GOS_MSG_ADMIN_LIST, "ADMIN_LIST", 0, -1},
    {GOS_MSG_ADMIN_SET, "ADMIN_SET", sizeof(struct gos_msg_admin_set), 0},
    {GOS_MSG_ADMIN_SHM_LIST, "ADMIN_SHM_LIST", 0, -1},
    {GOS_MSG_ADMIN_CREATE, "ADMIN_CREATE", sizeof(struct gos_msg_admin_create), 0},
    {GOS_MSG_ADMIN_DELETE, "ADMIN_DELETE", sizeof(struct gos_msg_admin_delete), 0},
    {GOS_MSG_ADMIN_SHM_RM, "ADMIN_SHM_RM", sizeof(struct gos_msg_admin_shm_rm), sizeof(struct gos_rep_admin_shm_rm)},
    {GOS_MSG_REPLY, "REPLY", -1, -1},
    {GOS_MSG_PMEM_ALLOC, "PMEM_ALLOC", sizeof(struct gos_msg_pmem_alloc), sizeof(struct gos_rep_pmem_alloc)},
    {GOS_MSG_PMEM_FREE, "PMEM_FREE", sizeof(struct gos_msg_pmem_free), 0},
    {GOS_MSG_PMEM_COPY, "PMEM_COPY", sizeof(struct gos_msg_pmem_copy), 0},
    {GOS_MSG_PMEM_CHECK, "PMEM_CHECK", sizeof(struct gos_msg_pmem_check), sizeof(struct gos_rep_pmem_check)},
    {GOS_MSG_RING, "RING", sizeof(struct gos_msg_ring), 0},
    {GOS_MSG_VMM_RESERVE, "VMM_RESERVE", sizeof(struct gos_msg_vmm_reserve), sizeof(struct gos_rep_vmm)},
    {GOS_MSG_VMM_UNRESERVE, "VMM_UNRESERVE", sizeof(struct gos_msg_vmm_range), 0},
    {GOS_MSG_VMM_CREATE, "VMM_CREATE", sizeof(struct gos_msg_vmm_create), sizeof(struct gos_rep_vmm)},
    {GOS_MSG_VMM_RELEASE, "VMM_RELEASE", sizeof(struct gos_msg_vmm_release), 0},
    {GOS_MSG_VMM_MAP, "VMM_MAP", sizeof(struct gos_msg_vmm_map), 0},
    {GOS_MSG_VMM_UNMAP, "VMM_UNMAP", sizeof(struct gos_msg_vmm_range), 0},
    {GOS_MSG_VMM_ACCESS, "VMM_ACCESS", sizeof(struct gos_msg_vmm_access), 0},
};
#define N_TYPES (int)(sizeof table / sizeof table[0])

static int find(uint16_t type)
{
    for (int i = 0; i < N_TYPES; i++)
        if (table[i].type == type)
            return i;
    return -1;
}

const char *gos_proto_name(uint16_t type)
{
    int i = find(type);
    return i < 0 ? "?" : table[i].name;
}

long gos_proto_fixed_size(uint16_t type)
{
    int i = find(type);
    return i < 0 ? -1 : table[i].fixed;
}

long gos_proto_reply_body(uint16_t req_type)
{
    int i = find(req_type);
    return i < 0 ? -1 : table[i].reply_body;
}

void gos_proto_hdr(struct gos_msg_hdr *h, uint16_t type, uint32_t seq, uint32_t len)
{
    h->magic = GOS_PROTO_MAGIC;
    h->version = GOS_PROTOCOL_VERSION;
    h->type = type;
    h->seq = seq;
    h->len = len;
}

int gos_proto_str_ok(const char *s, size_t cap, int allow_empty)
{
    const char *z = memchr(s, 0, cap);
    if (!z)
        return 0;
    return allow_empty || z != s;
}

/* Text that becomes configuration lines (vgpu create's keys, vgpu set's key and
 * value): terminated, and nothing but NULs after its end, so that an embedded
 * NUL hides nothing (issue 44.7). */
static int text_ok(const char *s, size_t cap, int allow_empty)
{
    if (!gos_proto_str_ok(s, cap, allow_empty))
        return 0;
    for (size_t i = strlen(s); i < cap; i++)
        if (s[i])
            return 0;
    return 1;
}

int gos_proto_check_hdr(const struct gos_msg_hdr *h)
{
    if (h->magic != GOS_PROTO_MAGIC)
        return gos_fail(GOS_EPROTO, "not a gpuos message (magic 0x%08x)", h->magic);
    if (h->version != GOS_PROTOCOL_VERSION)
        return gos_fail(GOS_EPROTO, "protocol version %u, this side speaks version %u",
                        (unsigned)h->version, GOS_PROTOCOL_VERSION);
    if (find(h->type) < 0)
        return gos_fail(GOS_EPROTO, "unknown message type %u", (unsigned)h->type);
    if (h->len > GOS_PROTO_MAX_PAYLOAD)
        return gos_fail(GOS_EPROTO, "%s payload of %u bytes exceeds %u", gos_proto_name(h->type),
                        (unsigned)h->len, GOS_PROTO_MAX_PAYLOAD);
    long fixed = gos_proto_fixed_size(h->type);
    if (h->type != GOS_MSG_REPLY && h->type != GOS_MSG_LAUNCH && (long)h->len != fixed)
        return gos_fail(GOS_EPROTO, "%s payload is %u bytes, expected %ld", gos_proto_name(h->type),
                        (unsigned)h->len, fixed);
    if (h->type == GOS_MSG_LAUNCH && (h->len < (uint32_t)fixed || h->len > fixed + GOS_PARAM_MAX))
        return gos_fail(GOS_EPROTO, "LAUNCH payload of %u bytes outside %ld..%ld", (unsigned)h->len,
                        fixed, fixed + GOS_PARAM_MAX);
    if (h->type == GOS_MSG_REPLY && h->len < sizeof(struct gos_rep_hdr))
        return gos_fail(GOS_EPROTO, "REPLY of %u bytes is shorter than its header", (unsigned)h->len);
    return GOS_OK;
}

static int check_reply(const struct gos_msg_hdr *h, const void *payload)
{
    struct gos_rep_hdr r;
    memcpy(&r, payload, sizeof r);
    size_t rest = h->len - sizeof r;
    if (find(r.req_type) < 0 || r.req_type == GOS_MSG_REPLY)
        return gos_fail(GOS_EPROTO, "REPLY to unknown request type %u", (unsigned)r.req_type);
    if (r.status > 0 || r.status < -64)
        return gos_fail(GOS_EPROTO, "REPLY status %d out of range", (int)r.status);
    if (r.status != GOS_OK) {
        if (r.text_len == 0 || r.text_len > GOS_MSG_TEXT_MAX || r.text_len != rest)
            return gos_fail(GOS_EPROTO, "error REPLY text of %u bytes in %zu", (unsigned)r.text_len, rest);
        const char *t = (const char *)payload + sizeof r;
        if (t[r.text_len - 1] != 0 || memchr(t, 0, r.text_len) != t + r.text_len - 1)
            return gos_fail(GOS_EPROTO, "error REPLY text not terminated");
        return GOS_OK;
    }
    if (r.text_len != 0)
        return gos_fail(GOS_EPROTO, "successful REPLY carries error text");
    long body = gos_proto_reply_body(r.req_type);
    if (body >= 0 && (long)rest != body)
        return gos_fail(GOS_EPROTO, "REPLY to %s has %zu body bytes, expected %ld",
                        gos_proto_name(r.req_type), rest, body);
    if (r.req_type == GOS_MSG_SHM_CTL && rest != 0 && rest != sizeof(struct gos_shm_rec))
        return gos_fail(GOS_EPROTO, "SHM_CTL reply of %zu bytes", rest);
    if (r.req_type == GOS_MSG_ADMIN_SHM_LIST) {
        struct gos_rep_shm_list l;
        if (rest < sizeof l)
            return gos_fail(GOS_EPROTO, "ADMIN_SHM_LIST reply too short");
        memcpy(&l, (const char *)payload + sizeof r, sizeof l);
        if (l.n > GOS_SHM_LIST_MAX || rest != sizeof l + l.n * sizeof(struct gos_shm_rec))
            return gos_fail(GOS_EPROTO, "ADMIN_SHM_LIST reply of %u records in %zu bytes", (unsigned)l.n, rest);
    }
    if (r.req_type == GOS_MSG_ADMIN_LIST) {
        struct gos_rep_admin_list l;
        if (rest < sizeof l)
            return gos_fail(GOS_EPROTO, "ADMIN_LIST reply too short");
        memcpy(&l, (const char *)payload + sizeof r, sizeof l);
        if (l.n > GOS_MAX_VGPUS || rest != sizeof l + l.n * sizeof(struct gos_vgpu_rec))
            return gos_fail(GOS_EPROTO, "ADMIN_LIST reply of %u records in %zu bytes", (unsigned)l.n, rest);
    }
    return GOS_OK;
}

/* The rules of a request message's carrier (req.h). */
static const struct gos_req_via *req_via(uint16_t type)
{
    return type == GOS_MSG_LAUNCH ? &gos_req_launch : type == GOS_MSG_COPY ? &gos_req_copy : &gos_req_copy_check;
}

int gos_proto_check(const struct gos_msg_hdr *h, const void *payload)
{
    int rc = gos_proto_check_hdr(h);
    if (rc)
        return rc;
    switch (h->type) {
    case GOS_MSG_HELLO: {
        const struct gos_msg_hello *m = payload;
        if (m->version != GOS_PROTOCOL_VERSION)
            return gos_fail(GOS_EPROTO, "client speaks protocol version %u, daemon version %u",
                            (unsigned)m->version, GOS_PROTOCOL_VERSION);
        if (!gos_proto_str_ok(m->vgpu, sizeof m->vgpu, 0))
            return gos_fail(GOS_EPROTO, "HELLO vGPU name empty or not terminated");
        return GOS_OK;
    }
    case GOS_MSG_COPY:
    case GOS_MSG_COPY_CHECK:
    case GOS_MSG_LAUNCH: {
        /* the request's form here; its arguments are gos_proto_check_args' */
        rc = gos_req_check(payload, req_via(h->type), h->len - sizeof(struct gos_req));
        return rc == GOS_EPROTO ? rc : GOS_OK;
    }
    case GOS_MSG_MODULE_LOAD: {
        const struct gos_msg_module_load *m = payload;
        if (!gos_proto_str_ok(m->name, sizeof m->name, 1))
            return gos_fail(GOS_EPROTO, "MODULE_LOAD name not terminated");
        return GOS_OK;
    }
    case GOS_MSG_FUNC_GET:
    case GOS_MSG_MODULE_GLOBAL: {
        const struct gos_msg_func_get *m = payload;
        if (!gos_proto_str_ok(m->name, sizeof m->name, 0))
            return gos_fail(GOS_EPROTO, "%s name empty or not terminated", gos_proto_name(h->type));
        return GOS_OK;
    }
    case GOS_MSG_ADMIN_SHM_RM: {
        const struct gos_msg_admin_shm_rm *m = payload;
        if (m->by > GOS_SHM_RM_VGPU)
            return gos_fail(GOS_EPROTO, "ADMIN_SHM_RM selector %u unknown", (unsigned)m->by);
        if (m->by == GOS_SHM_RM_VGPU && !gos_proto_str_ok(m->vgpu, sizeof m->vgpu, 0))
            return gos_fail(GOS_EPROTO, "ADMIN_SHM_RM vGPU name empty or not terminated");
        return GOS_OK;
    }
    case GOS_MSG_ADMIN_SET: {
        const struct gos_msg_admin_set *m = payload;
        if (!gos_proto_str_ok(m->vgpu, sizeof m->vgpu, 0) || !gos_proto_str_ok(m->key, sizeof m->key, 0) ||
            !gos_proto_str_ok(m->value, sizeof m->value, 0))
            return gos_fail(GOS_EPROTO, "ADMIN_SET field empty or not terminated");
        if (!text_ok(m->key, sizeof m->key, 0) || !text_ok(m->value, sizeof m->value, 0))
            return gos_fail(GOS_EPROTO, "ADMIN_SET key or value with bytes after a NUL (an embedded NUL)");
        return GOS_OK;
    }
    case GOS_MSG_ADMIN_CREATE: {
        const struct gos_msg_admin_create *m = payload;
        if (!gos_proto_str_ok(m->vgpu, sizeof m->vgpu, 0) || !gos_proto_str_ok(m->keys, sizeof m->keys, 1))
            return gos_fail(GOS_EPROTO, "ADMIN_CREATE name empty or a field not terminated");
        if (!text_ok(m->keys, sizeof m->keys, 1))
            return gos_fail(GOS_EPROTO, "ADMIN_CREATE keys with bytes after a NUL (an embedded NUL)");
        return GOS_OK;
    }
    case GOS_MSG_ADMIN_DELETE: {
        const struct gos_msg_admin_delete *m = payload;
        if (!gos_proto_str_ok(m->vgpu, sizeof m->vgpu, 0))
            return gos_fail(GOS_EPROTO, "ADMIN_DELETE name empty or not terminated");
        if (m->flags & ~(uint32_t)GOS_DELETE_FORCE)
            return gos_fail(GOS_EPROTO, "ADMIN_DELETE flags 0x%x unknown", (unsigned)m->flags);
        if (m->pad)
            return gos_fail(GOS_EPROTO, "ADMIN_DELETE padding not zero");
        return GOS_OK;
    }
    case GOS_MSG_VMM_ACCESS: {
        const struct gos_msg_vmm_access *m = payload;
        if (m->access != GOS_VMM_ACCESS_NONE && m->access != GOS_VMM_ACCESS_READ && m->access != GOS_VMM_ACCESS_RW)
            return gos_fail(GOS_EPROTO, "VMM_ACCESS access %u unknown (none 0, read 1, read-write 3)",
                            (unsigned)m->access);
        if (m->pad)
            return gos_fail(GOS_EPROTO, "VMM_ACCESS padding not zero");
        return GOS_OK;
    }
    case GOS_MSG_REPLY:
        return check_reply(h, payload);
    default:
        return GOS_OK;
    }
}

/* A VMM size (what) of 1..2^50 bytes in whole granules, and an address (when
 * va is not NULL) that is a non-zero multiple of the granule whose range does
 * not wrap: what the CUDA driver refuses with CUDA_ERROR_INVALID_VALUE. */
static int check_vmm_range(const char *what, const uint64_t *va, uint64_t bytes)
{
    if (!bytes || bytes > GOS_ALLOC_MAX || bytes % GOS_VMM_GRANULE)
        return gos_fail(GOS_EINVAL, "%s of %llu bytes: not a positive multiple of the 2 MiB granularity (at most "
                                    "2^50)", what, (unsigned long long)bytes);
    if (va && (!*va || *va % GOS_VMM_GRANULE || *va > UINT64_MAX - bytes))
        return gos_fail(GOS_EINVAL, "%s at 0x%llx: not a multiple of the 2 MiB granularity", what,
                        (unsigned long long)*va);
    return GOS_OK;
}

/* A tensor map's arguments, as the CUDA 13 driver documents them for
 * cuTensorMapEncode*: what no driver (nor the simulated encoder) may be
 * handed. Corner offsets are left to the driver: no array depends on them. */
static int check_tmap(const gpuos_tmap_args *a)
{
    if (a->kind < GPUOS_TMAP_TILED || a->kind > GPUOS_TMAP_REPLACE)
        return gos_fail(GOS_EINVAL, "tensor map kind %u (tiled 1, im2col 2, im2col wide 3, replace 4)",
                        (unsigned)a->kind);
    if (a->addr % (a->kind != GPUOS_TMAP_REPLACE && a->interleave == 2 ? 32 : 16))
        return gos_fail(GOS_EINVAL, "tensor map address 0x%llx is not 16-byte aligned (32 with 32-byte interleave)",
                        (unsigned long long)a->addr);
    if (a->kind == GPUOS_TMAP_REPLACE)
        return GOS_OK;
    uint32_t lo = a->kind == GPUOS_TMAP_TILED ? 1 : 3;
    if (a->rank < lo || a->rank > GPUOS_TMAP_RANK_MAX)
        return gos_fail(GOS_EINVAL, "tensor map of rank %u (%u..%d)", (unsigned)a->rank, (unsigned)lo,
                        GPUOS_TMAP_RANK_MAX);
    if (a->dtype > 15 || a->interleave > 2 || a->swizzle > 6 || a->l2promotion > 3 || a->oobfill > 1 ||
        a->wide_mode > 1)
        return gos_fail(GOS_EINVAL, "tensor map: data type %u, interleave %u, swizzle %u, L2 promotion %u, "
                                    "OOB fill %u or wide mode %u unknown", (unsigned)a->dtype,
                        (unsigned)a->interleave, (unsigned)a->swizzle, (unsigned)a->l2promotion,
                        (unsigned)a->oobfill, (unsigned)a->wide_mode);
    for (uint32_t i = 0; i < a->rank; i++) {
        if (!a->dim[i] || a->dim[i] > (1ull << 32))
            return gos_fail(GOS_EINVAL, "tensor map dimension %u of %llu (1..2^32)", (unsigned)i,
                            (unsigned long long)a->dim[i]);
        if (i + 1 < a->rank && (a->stride[i] % 16 || a->stride[i] >= (1ull << 40)))
            return gos_fail(GOS_EINVAL, "tensor map stride %u of %llu bytes (a multiple of 16 below 2^40)",
                            (unsigned)i, (unsigned long long)a->stride[i]);
        if ((a->kind == GPUOS_TMAP_TILED && (!a->box[i] || a->box[i] > 256)) || !a->estride[i] ||
            a->estride[i] > 8)
            return gos_fail(GOS_EINVAL, "tensor map box %u or element stride %u of dimension %u (1..256, 1..8)",
                            (unsigned)a->box[i], (unsigned)a->estride[i], (unsigned)i);
    }
    if (a->kind != GPUOS_TMAP_TILED && (!a->channels || a->channels > 256 || !a->pixels || a->pixels > 1024))
        return gos_fail(GOS_EINVAL, "im2col tensor map of %u channels per pixel, %u pixels per column (1..256, "
                                    "1..1024)", (unsigned)a->channels, (unsigned)a->pixels);
    return GOS_OK;
}

int gos_proto_check_args(const struct gos_msg_hdr *h, const void *payload)
{
    switch (h->type) {
    case GOS_MSG_MEM_ALLOC: {
        const struct gos_msg_mem_alloc *m = payload;
        if (m->bytes == 0 || m->bytes > GOS_ALLOC_MAX)
            return gos_fail(GOS_EINVAL, "allocation of %llu bytes (1..2^50)", (unsigned long long)m->bytes);
        return GOS_OK;
    }
    case GOS_MSG_REGION_ADD: {
        const struct gos_msg_region_add *m = payload;
        if (m->bytes == 0 || m->bytes > GOS_COPY_MAX)
            return gos_fail(GOS_EINVAL, "shared region of %llu bytes (1..2^40)", (unsigned long long)m->bytes);
        if ((m->addr & 4095) || m->addr > UINT64_MAX - m->bytes || (m->addr && m->addr + m->bytes > (1ull << 56)))
            return gos_fail(GOS_EINVAL, "shared region at 0x%llx+%llu: not a page-aligned user address",
                            (unsigned long long)m->addr, (unsigned long long)m->bytes);
        return GOS_OK;
    }
    case GOS_MSG_SHM_GET: {
        const struct gos_msg_shm_get *m = payload;
        if (m->flags & ~(uint32_t)(GOS_SHM_F_CREAT | GOS_SHM_F_EXCL | 0777))
            return gos_fail(GOS_EINVAL, "shm get flags 0%o unknown", (unsigned)m->flags);
        if (m->bytes > GOS_ALLOC_MAX)
            return gos_fail(GOS_EINVAL, "shared segment of %llu bytes (at most 2^50)", (unsigned long long)m->bytes);
        return GOS_OK;
    }
    case GOS_MSG_PMEM_ALLOC: {
        const struct gos_msg_pmem_alloc *m = payload;
        if (m->bytes == 0 || m->bytes > GOS_ALLOC_MAX / 4)
            return gos_fail(GOS_EINVAL, "partition-local allocation of %llu bytes per view (1..2^48)",
                            (unsigned long long)m->bytes);
        return GOS_OK;
    }
    case GOS_MSG_PMEM_COPY: {
        const struct gos_msg_pmem_copy *m = payload;
        if (m->dir != GOS_OP_HTOD && m->dir != GOS_OP_DTOH)
            return gos_fail(GOS_EINVAL, "partition-local copy direction %u (htod %d, dtoh %d)", (unsigned)m->dir,
                            GOS_OP_HTOD, GOS_OP_DTOH);
        if (m->part > 1)
            return gos_fail(GOS_EINVAL, "no view of partition %u (0 or 1)", (unsigned)m->part);
        if (m->bytes == 0 || m->bytes > GOS_COPY_MAX)
            return gos_fail(GOS_EINVAL, "partition-local copy of %llu bytes (1..2^40)", (unsigned long long)m->bytes);
        if (m->region >= GOS_MAX_REGIONS)
            return gos_fail(GOS_EINVAL, "region %u out of range", (unsigned)m->region);
        if (m->offset > GOS_ALLOC_MAX || m->region_off > GOS_COPY_MAX)
            return gos_fail(GOS_EINVAL, "partition-local copy: offset out of range");
        return GOS_OK;
    }
    case GOS_MSG_VMM_RESERVE: {
        const struct gos_msg_vmm_reserve *m = payload;
        if (m->align & (m->align - 1) || m->align > (1ull << 40))
            return gos_fail(GOS_EINVAL, "address reservation aligned to %llu bytes: not a power of two up to 2^40",
                            (unsigned long long)m->align);
        return check_vmm_range("address reservation", NULL, m->bytes);
    }
    case GOS_MSG_VMM_CREATE:
        return check_vmm_range("physical allocation", NULL, ((const struct gos_msg_vmm_create *)payload)->bytes);
    case GOS_MSG_VMM_RELEASE:
        return ((const struct gos_msg_vmm_release *)payload)->handle
                   ? GOS_OK
                   : gos_fail(GOS_EINVAL, "release of VMM handle 0");
    case GOS_MSG_VMM_UNRESERVE:
    case GOS_MSG_VMM_UNMAP: {
        const struct gos_msg_vmm_range *m = payload;
        return check_vmm_range(h->type == GOS_MSG_VMM_UNMAP ? "unmap" : "address free", &m->va, m->bytes);
    }
    case GOS_MSG_VMM_MAP: {
        const struct gos_msg_vmm_map *m = payload;
        if (!m->handle)
            return gos_fail(GOS_EINVAL, "map of VMM handle 0");
        return check_vmm_range("map", &m->va, m->bytes);
    }
    case GOS_MSG_VMM_ACCESS: {
        const struct gos_msg_vmm_access *m = payload;
        return check_vmm_range("set access", &m->va, m->bytes);
    }
    case GOS_MSG_TMAP_ENCODE:
        return check_tmap(payload);
    case GOS_MSG_PMEM_CHECK: {
        const struct gos_msg_pmem_check *m = payload;
        if (m->samples < 1 || m->samples > 8)
            return gos_fail(GOS_EINVAL, "placement check: %u samples per unit (1..8)", (unsigned)m->samples);
        return GOS_OK;
    }
    case GOS_MSG_SHM_AT: {
        const struct gos_msg_shm_at *m = payload;
        if (m->flags & ~(uint32_t)GOS_SHM_F_RDONLY)
            return gos_fail(GOS_EINVAL, "shm attach flags 0%o unknown", (unsigned)m->flags);
        return GOS_OK;
    }
    case GOS_MSG_SHM_CTL: {
        const struct gos_msg_shm_ctl *m = payload;
        if (m->cmd > GOS_SHM_CMD_RMID)
            return gos_fail(GOS_EINVAL, "shm ctl command %u unknown", (unsigned)m->cmd);
        if (m->cmd == GOS_SHM_CMD_SET && m->mode > 0777)
            return gos_fail(GOS_EINVAL, "shm ctl mode 0%o has bits beyond 0777", (unsigned)m->mode);
        return GOS_OK;
    }
    case GOS_MSG_REGION_DEL: {
        const struct gos_msg_region_del *m = payload;
        if (m->region >= GOS_MAX_REGIONS)
            return gos_fail(GOS_EINVAL, "region %u out of range", (unsigned)m->region);
        return GOS_OK;
    }
    case GOS_MSG_COPY_CHECK:
    case GOS_MSG_COPY:
    case GOS_MSG_LAUNCH: return gos_req_check(payload, req_via(h->type), h->len - sizeof(struct gos_req));
    case GOS_MSG_MODULE_LOAD: {
        const struct gos_msg_module_load *m = payload;
        if (!m->name[0] && (m->bytes == 0 || m->bytes > GOS_COPY_MAX || m->region >= GOS_MAX_REGIONS ||
                            m->offset + m->bytes < m->offset))
            return gos_fail(GOS_EINVAL, "module load without a name needs image bytes in a region");
        return GOS_OK;
    }
    default:
        return GOS_OK;
    }
}

uint32_t gos_proto_request_flags(const struct gos_msg_hdr *h, const void *payload)
{
    switch (h->type) {
    case GOS_MSG_COPY: return ((const struct gos_msg_copy *)payload)->flags;
    case GOS_MSG_LAUNCH: return ((const struct gos_msg_launch *)payload)->flags;
    default: return 0;
    }
}
