/* SPDX-License-Identifier: Apache-2.0 */
/* exec_builtin.h: the signatures of the built-in module's kernels
 * (kernels/exec.cu), known in one place for every backend, so that the daemon
 * can check the device ranges a built-in launch will touch against the
 * launching client's own allocations (issue 15.1; exec_ops.h launch_ranges). */
#ifndef GOS_EXEC_BUILTIN_H
#define GOS_EXEC_BUILTIN_H

#include "device/exec_ops.h"

/* For built-in kernel `kernel`: checks the parameters (sizes, counts, alignment,
 * mmul's geometry; every size computed without overflow) and lists the device
 * ranges the launch will read or write in r[0..*n) (at most
 * GOS_LAUNCH_RANGES_MAX). *n = -1 when `kernel` is not a built-in kernel name.
 * GOS_EINVAL with a reason for parameters the kernel cannot run with.
 *   empty ()                                     no range
 *   sleep_ns (uint64 ns), loop (uint64 iters)    no range
 *   madd, mmul (uint64 a, b, c, uint32 n)        a, b, c: n x n floats each; mmul
 *                                                needs grid (n/16, n/16, 1) and
 *                                                block (16, 16, 1), n % 16 == 0
 *   fill (uint64 p, uint32 v, uint32 pad, uint64 count)  p: count words
 *   fault ()                                     no range (reads address 0x10)
 *   xcopy (uint64 dst, src, count)               no range checked: a raw kernel */
int gos_exec_builtin_ranges(const char *kernel, const struct gos_launch_cfg *c, struct gos_dev_range *r, int *n);

/* Whether a module name asks for the built-in module: GOS_EXEC_BUILTIN, or
 * the names the backends also accept for it ("sim:builtin", "exec"). */
int gos_exec_builtin_module(const char *name);

/* Whether `kernel` names a kernel of the built-in module. */
int gos_exec_builtin_known(const char *kernel);

#endif
