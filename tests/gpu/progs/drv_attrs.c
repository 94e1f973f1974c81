/* SPDX-License-Identifier: Apache-2.0 */
/* drv_attrs.c: every device attribute of this cuda.h, one line each
 * ("attr N value V" or "attr N error E"), then name, memory and compute
 * capability. */
#include "common.h"

int main(void)
{
    CUdevice d;
    CK(cuInit(0));
    CK(cuDeviceGet(&d, 0));
    char name[256];
    size_t mem = 0;
    CK(cuDeviceGetName(name, sizeof name, d));
    CK(cuDeviceTotalMem(&mem, d));
    printf("name %s\ntotal_mem %zu\n", name, mem);
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
        int v = 0;
        CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a, d);
        if (r == CUDA_SUCCESS)
            printf("attr %d value %d\n", a, v);
        else {
            const char *n = "?";
            cuGetErrorName(r, &n);
            printf("attr %d error %s\n", a, n);
        }
    }
    return 0;
}
