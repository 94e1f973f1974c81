/* SPDX-License-Identifier: Apache-2.0 */
/* serve.h: every header of serve/ at once, for code written against the one
 * header serve/ had before issue 40.2 split it by concern; no file of src/
 * includes it. New code includes what it uses: daemon.h (struct srv, the
 * vGPU table), dev.h (a scheduler), session.h (a client), dispatch.h (tasks)
 * and one header per file of the rest.
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_H
#define GOS_SERVE_H

#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/dispatch.h"
#include "serve/executor.h"
#include "serve/hostmem.h"
#include "serve/metrics.h"
#include "serve/mps.h"
#include "serve/pmem_cl.h"
#include "serve/region.h"
#include "serve/ring.h"
#include "serve/server.h"
#include "serve/session.h"
#include "serve/shm.h"
#include "serve/state.h"
#include "serve/swap.h"
#include "serve/tmap_cl.h"
#include "serve/vgpu.h"
#include "serve/vmm_cl.h"
#include "serve/xshare.h"

#endif
