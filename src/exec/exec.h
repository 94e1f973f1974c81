/* SPDX-License-Identifier: Apache-2.0 */
/* exec.h: the executor process (`gpuos executor --fd N`, src/exec/), as the
 * rest of gpuos sees it. The daemon (src/serve/) spawns one per client (or per
 * vGPU: executor = per-vgpu) with one end of a socketpair and speaks
 * proto/xproto.h on it; the executor owns that client's CUDA context (or
 * simulated device) and runs its device work there, from the daemon's RUN
 * batches and from the client's ring. It depends on proto/ and device/ (and
 * the libraries below them: common/, chip/, place/'s partition-local views),
 * never on serve/. */
#ifndef GOS_EXEC_H
#define GOS_EXEC_H

/* Serves the daemon's channel sock until it closes (cmd_executor): sim names
 * a simulated chip, or NULL for the GPU of this CUDA ordinal; prio puts every
 * queue of the process at the least (< 0) or greatest (> 0) stream priority
 * (latency_priority, issue 41), 0 at the default. */
int gos_executor_main(int sock, const char *sim, int ordinal, int prio);

#endif
