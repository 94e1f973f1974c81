/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_ext.h: what gpuos's libcuda asks the daemon for beyond the core client
 * API (include/gpuos/gpuos.h). Each returns GPUOS_EUNSUPPORTED where the daemon
 * cannot answer; the callers then fall back as described
 * (docs/readme-cudashim.md, "What the daemon now does for the library"):
 *   shim_ext_attribute  a device attribute of the real device (DEVICE_ATTRS;
 *                       fallback: the compute capability 9.x values)
 *   shim_ext_memset     memset on the device (no message yet: the fallback is
 *                       the built-in fill kernel and host copies)
 *   shim_ext_global     device address of a module global (MODULE_GLOBAL; an
 *                       older daemon: cuModuleGetGlobal is NOT_SUPPORTED)
 *   shim_ext_table      an export table the CUDA runtime asks for (exports.c) */
#ifndef GOS_CUDASHIM_DAEMON_EXT_H
#define GOS_CUDASHIM_DAEMON_EXT_H

#include "gpuos/gpuos.h"

#include <stddef.h>
#include <stdint.h>

int shim_ext_attribute(gpuos_vgpu *g, int attribute, int *value);
int shim_ext_memset(gpuos_vgpu *g, uint64_t dptr, unsigned value, int elem_bytes, size_t count, int async);
int shim_ext_global(gpuos_vgpu *g, gpuos_module m, const char *name, uint64_t *dptr);

/* cuGetExportTable (exports.c): the table for a 16-byte id, or an error
 * (CUresult numbers). */
int shim_export_table(const void **table, const unsigned char id[16]);

#endif
