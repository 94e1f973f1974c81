/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_stub.c: the cuda backend of a build without the CUDA toolkit headers
 * (iproute2-style stub): it exists, says why it cannot work, and leaves the
 * simulated device fully usable. */
#include "common/status.h"
#include "device/device.h"
#include "device/p2p_ops.h"
#include "device/place_ops.h"
#include "device/vmm_ops.h"

/* No GPU without the toolkit: the placement and GPU-to-GPU pillars have no operations. */
const struct gos_place_ops gos_cuda_place_ops = {0};
const struct gos_p2p_ops gos_cuda_p2p_ops = {0};
const struct gos_vmm_ops gos_cuda_vmm_ops = {0};

int gos_cuda_device_count(void)
{
    gos_fail(GOS_ENODEV, "this gpuos was built without the CUDA toolkit: only --sim works");
    return 0;
}

int gos_cuda_open(int ordinal, gos_device **out)
{
    return gos_fail(GOS_ENODEV, "this gpuos was built without the CUDA toolkit: only --sim works");
}
