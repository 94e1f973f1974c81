/* SPDX-License-Identifier: Apache-2.0 */
/* vmmtab.h: one client's virtual memory management objects as CUDA's VMM API
 * has them (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess), as
 * pure tables: reservations (addresses), physical handles, mappings. No device
 * calls: the daemon keeps one per client to check ownership and charge the
 * vGPU (serve/vmm_cl.c), and whoever drives the device (the client's executor,
 * or the daemon's own device under isolation = none) keeps another with the
 * device's handles (exec/exec_vmm.c).
 *
 * Rules (CUDA's): a mapping lies inside one reservation, overlaps no other
 * mapping and maps at most the handle's bytes; unmap and set access take whole
 * mappings, one or several adjacent ones; a reservation is freed only when
 * nothing is mapped in it; a released handle's memory lives on while it is
 * mapped and is freed with its last mapping. Every check fails with GOS_EINVAL
 * and a message naming what does not belong to the table.
 * Process: the daemon and the executor. */
#ifndef GOS_VMEM_VMMTAB_H
#define GOS_VMEM_VMMTAB_H

#include <stdint.h>

/* A mapping's access, as the VMM messages carry it (proto/proto.h). */
enum { GOS_VMM_ACCESS_NONE = 0, GOS_VMM_ACCESS_READ = 1, GOS_VMM_ACCESS_RW = 3 };

typedef struct {
    uint64_t id;    /* the name its client uses */
    uint64_t dev_h; /* the device layer's handle (the daemon's table: the executor's) */
    uint64_t bytes;
    int released;   /* memory lives on while mapped */
    int maps;
} gos_vmmt_handle;

typedef struct {
    uint64_t va, bytes;  /* what the client asked for */
    uint64_t base, full; /* what was reserved on the device (larger alignments) */
} gos_vmmt_resv;

typedef struct {
    uint64_t va, bytes, id;
    int access; /* GOS_VMM_ACCESS_* (proto.h) */
} gos_vmmt_map;

typedef struct {
    gos_vmmt_handle *h;
    int n_h, cap_h;
    gos_vmmt_resv *r;
    int n_r, cap_r;
    gos_vmmt_map *m;
    int n_m, cap_m;
} gos_vmm_tab;

/* Handles. live: the unreleased handle id, or NULL (error set). */
int gos_vmmtab_handle_add(gos_vmm_tab *t, uint64_t id, uint64_t dev_h, uint64_t bytes);
gos_vmmt_handle *gos_vmmtab_live(gos_vmm_tab *t, uint64_t id);
/* Marks id released; *freed: its bytes when nothing maps it (then it is gone
 * from the table), else 0. */
int gos_vmmtab_release(gos_vmm_tab *t, uint64_t id, uint64_t *freed);

/* Reservations. find: the index of exactly [va, va + bytes) with nothing mapped
 * in it, or -1 (error set). */
int gos_vmmtab_resv_add(gos_vmm_tab *t, uint64_t va, uint64_t bytes, uint64_t base, uint64_t full);
int gos_vmmtab_resv_find(const gos_vmm_tab *t, uint64_t va, uint64_t bytes);
void gos_vmmtab_resv_del(gos_vmm_tab *t, int i);

/* Mappings. check_map: GOS_OK when bytes of live handle id may be mapped at va.
 * cover: GOS_OK when [va, va + bytes) is exactly whole adjacent mappings.
 * map_at: the index of the mapping starting at va, or -1. map_del: drops
 * mapping i; *freed as gos_vmmtab_release (its handle's bytes when that was
 * released and this its last mapping). access: of every mapping in a cover. */
int gos_vmmtab_check_map(gos_vmm_tab *t, uint64_t va, uint64_t bytes, uint64_t id);
int gos_vmmtab_map_add(gos_vmm_tab *t, uint64_t va, uint64_t bytes, uint64_t id);
int gos_vmmtab_cover(const gos_vmm_tab *t, uint64_t va, uint64_t bytes);
int gos_vmmtab_map_at(const gos_vmm_tab *t, uint64_t va);
void gos_vmmtab_map_del(gos_vmm_tab *t, int i, uint64_t *freed);
void gos_vmmtab_access(gos_vmm_tab *t, uint64_t va, uint64_t bytes, int access);

/* The reachable memory: each maximal run of adjacent mappings of one access
 * (READ or READWRITE; NONE is not reachable), in address order, to fn (ro:
 * READ). Two handles mapped side by side are one range to copies and
 * kernels, as on a GPU. Stops at fn's first non-zero return, which it returns. */
int gos_vmmtab_runs(const gos_vmm_tab *t, int (*fn)(void *ctx, uint64_t va, uint64_t bytes, int ro), void *ctx);

/* Bytes of physical memory the table holds (live and released-but-mapped). */
uint64_t gos_vmmtab_bytes(const gos_vmm_tab *t);
/* Empties the table (no device calls). */
void gos_vmmtab_free(gos_vmm_tab *t);

#endif
