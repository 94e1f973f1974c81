/* SPDX-License-Identifier: Apache-2.0 */
/* mps.h: the daemon's own MPS server (mps.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_MPS_H
#define GOS_SERVE_MPS_H

#include <stddef.h>

/* mps.c: an MPS server of the daemon's own (pipe and log directories under a
 * private temporary directory, written to dir); stopping it (echo quit). */
int srv_mps_start(char *dir, size_t cap);
void srv_mps_stop(char *dir);

#endif
