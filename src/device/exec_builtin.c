/* SPDX-License-Identifier: Apache-2.0 */
/* exec_builtin.c: the built-in kernels' signatures (exec_builtin.h). */
#include "device/exec_builtin.h"

#include "common/range.h"
#include "common/status.h"

#include <string.h>

int gos_exec_builtin_module(const char *name)
{
    return name && (!strcmp(name, GOS_EXEC_BUILTIN) || !strcmp(name, "sim:builtin") || !strcmp(name, "exec"));
}

int gos_exec_builtin_known(const char *kernel)
{
    static const char *const names[] = {"empty", "sleep_ns", "loop", "madd", "mmul", "fill", "fault", "xcopy", "pattern", "stamp"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(kernel, names[i]))
            return 1;
    return 0;
}

int gos_exec_builtin_ranges(const char *kernel, const struct gos_launch_cfg *c, struct gos_dev_range *r, int *n)
{
    *n = 0;
    if (!strcmp(kernel, "empty") || !strcmp(kernel, "fault"))
        return GOS_OK; /* fault touches no argument: it reads address 0x10 */
    if (!strcmp(kernel, "xcopy")) {
        /* A raw kernel, as a tenant's own PTX: its addresses are not checked
         * here; only the device's MMU (an executor's own address space under
         * isolation = process) stands between it and other tenants. */
        if (c->param_bytes < 24)
            return gos_fail(GOS_EINVAL, "xcopy takes (uint64 dst, uint64 src, uint64 count)");
        return GOS_OK;
    }
    if (!strcmp(kernel, "sleep_ns") || !strcmp(kernel, "loop")) {
        if (c->param_bytes < 8)
            return gos_fail(GOS_EINVAL, "%s takes a uint64", kernel);
        return GOS_OK;
    }
    if (!strcmp(kernel, "madd") || !strcmp(kernel, "mmul")) {
        uint64_t p[3], bytes;
        uint32_t dim;
        if (c->param_bytes < 28)
            return gos_fail(GOS_EINVAL, "%s takes (uint64 a, uint64 b, uint64 c, uint32 n)", kernel);
        memcpy(p, c->params, 24);
        memcpy(&dim, (const char *)c->params + 24, 4);
        if (gos_mul_overflows((uint64_t)dim * dim, 4, &bytes))
            return gos_fail(GOS_EINVAL, "%s: a matrix of %u x %u floats is too large", kernel, (unsigned)dim,
                            (unsigned)dim);
        if (kernel[1] == 'm' && (dim % 16 || c->block[0] != 16 || c->block[1] != 16 || c->block[2] != 1 ||
                                 c->grid[0] != dim / 16 || c->grid[1] != dim / 16 || c->grid[2] != 1))
            return gos_fail(GOS_EINVAL, "mmul of n = %u needs n a multiple of 16, grid (n/16, n/16, 1) and block "
                                        "(16, 16, 1)", (unsigned)dim);
        for (int i = 0; i < 3; i++) {
            if (p[i] % 4)
                return gos_fail(GOS_EINVAL, "%s: matrix at 0x%llx is not aligned to its floats", kernel,
                                (unsigned long long)p[i]);
            r[i] = (struct gos_dev_range){p[i], bytes};
        }
        *n = 3;
        return GOS_OK;
    }
    if (!strcmp(kernel, "stamp")) {
        uint64_t p;
        if (c->param_bytes < 8)
            return gos_fail(GOS_EINVAL, "stamp takes (uint64 dptr)");
        memcpy(&p, c->params, 8);
        if (p % 8)
            return gos_fail(GOS_EINVAL, "stamp: unaligned address");
        r[0] = (struct gos_dev_range){p, 8};
        *n = 1;
        return GOS_OK;
    }
    if (!strcmp(kernel, "pattern")) {
        uint64_t p, count, out;
        uint32_t check;
        if (c->param_bytes < 32)
            return gos_fail(GOS_EINVAL, "pattern takes (uint64 dptr, uint32 seed, uint32 check, uint64 count, "
                                        "uint64 out)");
        memcpy(&p, c->params, 8);
        memcpy(&check, (const char *)c->params + 12, 4);
        memcpy(&count, (const char *)c->params + 16, 8);
        memcpy(&out, (const char *)c->params + 24, 8);
        if (count > UINT64_MAX / 4)
            return gos_fail(GOS_EINVAL, "pattern: %llu words overflow the address space", (unsigned long long)count);
        if (p % 4 || (check && out % 8))
            return gos_fail(GOS_EINVAL, "pattern: unaligned address");
        r[0] = (struct gos_dev_range){p, count * 4};
        *n = 1;
        if (check)
            r[(*n)++] = (struct gos_dev_range){out, 8};
        return GOS_OK;
    }
    if (!strcmp(kernel, "fill")) {
        uint64_t p, count;
        if (c->param_bytes < 24)
            return gos_fail(GOS_EINVAL, "fill takes (uint64 dptr, uint32 value, uint32 pad, uint64 count)");
        memcpy(&p, c->params, 8);
        memcpy(&count, (const char *)c->params + 16, 8);
        if (count > UINT64_MAX / 4)
            return gos_fail(GOS_EINVAL, "fill: %llu words overflow the address space", (unsigned long long)count);
        if (p % 4)
            return gos_fail(GOS_EINVAL, "fill: address 0x%llx is not aligned to its 4-byte words",
                            (unsigned long long)p);
        r[0] = (struct gos_dev_range){p, count * 4};
        *n = 1;
        return GOS_OK;
    }
    *n = -1;
    return GOS_OK;
}
