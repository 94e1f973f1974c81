/* daemon_ext.h: what gpuos's libcuda would ask the daemon for beyond today's
 * client API (include/gpuos/gpuos.h). Each returns GPUOS_EUNSUPPORTED until the
 * daemon has the message; the callers then fall back as described. The list
 * (docs/readme-cudashim.md, "Daemon messages still missing"):
 *   shim_ext_attribute  a device attribute of the real device (fallback: the
 *                       compute capability 9.x values, SMs and CC from the daemon)
 *   shim_ext_memset     memset on the device (fallback: pattern copied from host)
 *   shim_ext_global     device address of a module global (no fallback:
 *                       cuModuleGetGlobal is CUDA_ERROR_NOT_SUPPORTED)
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
