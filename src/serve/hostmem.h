/* SPDX-License-Identifier: Apache-2.0 */
/* hostmem.h: the host's memory as the daemon sees it (hostmem.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_HOSTMEM_H
#define GOS_SERVE_HOSTMEM_H

#include <stdint.h>

/* hostmem.c: host memory under pressure (issue 23.3). The bytes the daemon may
 * still take (MemAvailable and every memory cgroup above it); *limit (may be
 * NULL): the tightest cgroup limit, UINT64_MAX when none. */
uint64_t srv_host_room(uint64_t *limit);
/* What to leave free of the room for the daemon and its executors themselves. */
uint64_t srv_host_reserve(uint64_t limit);
/* OOM killer: the daemon at SRV_OOM_DAEMON (when it may lower its own score),
 * each executor at SRV_OOM_EXECUTOR (executor.h, set by srv_exec_spawn). */
void srv_oom_policy(void);

#endif
