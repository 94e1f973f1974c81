/* SPDX-License-Identifier: Apache-2.0 */
/* exec_pmem.h: partition-local memory for vGPU clients (issue 12): what the
 * executor (isolation = process / mps) and the daemon itself (isolation = none)
 * both run on their device, with the code of src/place/pmem.c. A set holds one
 * client's allocations, found by base address. */
#ifndef GOS_EXEC_PMEM_H
#define GOS_EXEC_PMEM_H

#include "chip/chip.h"
#include "device/device.h"
#include "proto/proto.h"

struct gos_pmem;
struct srv_pmem_set {
    struct gos_pmem *pm[GOS_PMEM_MAX];
};

/* The device bytes a request of `bytes` per view may take at most: the
 * daemon reserves this much of the share before the allocation is made. */
uint64_t srv_pmem_charge_max(uint64_t bytes);

/* Allocates two views (the chart of this device) and measures the parities. */
int srv_pmem_alloc(gos_device *d, struct srv_pmem_set *s, const gos_chip *chart, uint64_t bytes,
                   struct gos_rep_pmem_alloc *r);
int srv_pmem_free(struct srv_pmem_set *s, uint64_t base);
/* Host memory `host` (already range-checked, m->bytes long) into / out of the view. */
int srv_pmem_copy(struct srv_pmem_set *s, const struct gos_msg_pmem_copy *m, void *host);
int srv_pmem_check(struct srv_pmem_set *s, const struct gos_msg_pmem_check *m, struct gos_rep_pmem_check *r);
void srv_pmem_release_all(struct srv_pmem_set *s);

#endif
