/* exec_ring.h: the executor's side of the client's ring (issue 9.4; proto/ring.h).
 * exec_ring.c runs the consumer thread; exec_main.c checks and runs each entry. */
#ifndef GOS_SERVE_EXEC_RING_H
#define GOS_SERVE_EXEC_RING_H

#include "device/device.h"
#include "proto/ring.h"

#include <stdint.h>

struct xe;
struct xr;

/* Maps the ring (fd: its memfd of bytes, checked) and starts its consumer. */
int xe_ring_start(struct xe *x, int fd, uint64_t bytes, gos_device *dev, struct xr **out);
/* Stops the consumer (its entry in progress ends first) and unmaps the ring
 * (a shared executor's client leaving: executor = per-vgpu). */
void xe_ring_stop(struct xr *r);
/* exec_main.c: one entry (a private copy) on the device, under xe_ring_lock. */
int xe_ring_run(struct xe *x, const struct gos_ring_ent *e, unsigned char *data, uint32_t backlog, int *fault);
void xe_ring_lock(struct xe *x, int on);

#endif
