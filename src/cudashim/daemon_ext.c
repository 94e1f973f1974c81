/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_ext.c: the daemon requests of gpuos's libcuda beyond the core client API
 * (daemon_ext.h); GPUOS_EUNSUPPORTED where there is none, so the callers fall back. */
#include "cudashim/daemon_ext.h"
#include "cudashim/shim.h"

#include <pthread.h>

/* The device's attributes, asked once (DEVICE_ATTRS); GPUOS_EUNSUPPORTED when the
 * daemon's device has none (simulated) or does not answer this one. */
#define N_ATTRS 256
int shim_ext_attribute(gpuos_vgpu *g, int attribute, int *value)
{
    static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
    static int state; /* 0 not asked, 1 have them, -1 none */
    static int32_t v[N_ATTRS];
    static unsigned char ok[N_ATTRS];
    pthread_mutex_lock(&l);
    if (!state) {
        state = gpuos_device_attributes(g, v, ok, N_ATTRS) ? -1 : 1;
        if (shim_trace()) {
            int k = 0;
            for (int a = 0; a < N_ATTRS; a++)
                k += ok[a];
            shim_log("device attributes: %d from the daemon's device%s", state > 0 ? k : 0,
                     state > 0 ? "" : " (none: the compute capability 9.x table answers)");
        }
    }
    int have = state > 0 && attribute > 0 && attribute < N_ATTRS && ok[attribute];
    if (have)
        *value = v[attribute];
    pthread_mutex_unlock(&l);
    return have ? GPUOS_OK : GPUOS_EUNSUPPORTED;
}

int shim_ext_memset(gpuos_vgpu *g, uint64_t dptr, unsigned value, int elem_bytes, size_t count, int async)
{
    return GPUOS_EUNSUPPORTED;
}

int shim_ext_global(gpuos_vgpu *g, gpuos_module m, const char *name, uint64_t *dptr)
{
    return gpuos_module_global(g, m, name, dptr, NULL);
}
