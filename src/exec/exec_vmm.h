/* SPDX-License-Identifier: Apache-2.0 */
/* exec_vmm.h: CUDA's virtual memory management for vGPU clients on a device:
 * what the executor (isolation = process / mps) and the daemon itself
 * (isolation = none) both run, with the device layer's VMM
 * (device/vmm_ops.h). One table per client (vmem/vmmtab.h) holds the
 * device's handles, reservations and mappings; every operation is checked
 * against it again (a shared executor's clients share one device: a handle or
 * range is used only by the client that made it), done on the device, then
 * recorded. */
#ifndef GOS_EXEC_VMM_H
#define GOS_EXEC_VMM_H

#include "device/device.h"
#include "proto/xproto.h"
#include "vmem/vmmtab.h"

/* One X_VMM_* operation (op) of m on d for the client of table t; *out:
 * RESERVE the address, CREATE the device's handle (also the table's id). A
 * reservation aligned beyond the granule reserves align - 2 MiB more and hands
 * out the aligned part; unmap and set access take whole adjacent mappings. */
int gos_vmmx_op(gos_device *d, gos_vmm_tab *t, uint32_t op, const struct x_vmm *m, uint64_t *out);
/* Everything t holds on d, undone (mappings, then handles, then reservations),
 * and t emptied: the client is gone. */
void gos_vmmx_release_all(gos_device *d, gos_vmm_tab *t);

#endif
