/* daemon_ext.c: the daemon requests gpuos's libcuda does not have yet
 * (daemon_ext.h). Stubs: GPUOS_EUNSUPPORTED, so the callers fall back. */
#include "cudashim/daemon_ext.h"

int shim_ext_attribute(gpuos_vgpu *g, int attribute, int *value) { return GPUOS_EUNSUPPORTED; }

int shim_ext_memset(gpuos_vgpu *g, uint64_t dptr, unsigned value, int elem_bytes, size_t count, int async)
{
    return GPUOS_EUNSUPPORTED;
}

int shim_ext_global(gpuos_vgpu *g, gpuos_module m, const char *name, uint64_t *dptr) { return GPUOS_EUNSUPPORTED; }
