/* SPDX-License-Identifier: Apache-2.0 */
/* tmap_cl.c: tensor maps (TMA descriptors) for clients (issue 43: TMAP_ENCODE).
 * cuBLASLt's, Triton's and XLA's Hopper kernels take 128-byte maps that only the
 * driver's encoders make; gpuos's libcuda asks for them here, so that no
 * tenant's process loads NVIDIA's libcuda or opens /dev/nvidia*. The daemon
 * has checked the arguments (proto.c: kind, rank, every enum, the driver's
 * documented ranges and alignment) before any driver sees them; the encoder is
 * the device layer's (device/exec_ops.h tmap_encode): on the client's executor,
 * whose context holds the client's memory (isolation = process / mps: the
 * daemon then holds no context), or on the daemon's own device (isolation =
 * none, and every simulated device). A map gives no access: it describes
 * memory to the client's own kernels, which reach only the client's context.
 * Process: the daemon (gpuos serve). */
#include "serve/tmap_cl.h"

#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/executor.h"
#include "serve/reply.h"
#include "serve/session.h"

#include "common/status.h"
#include "device/exec_ops.h"

int srv_tmap_encode(struct srv_client *c, const gpuos_tmap_args *a, struct gos_rep_tmap *r)
{
    struct srv *s = c->srv;
    struct srv_exec *x = c->x;
    gos_device *dev = s->devs[s->vgpus[c->vgpu].cfg.device].dev;
    if (!x && !dev)
        return gos_fail(GOS_EUNSUPPORTED, "tensor maps: this client has no executor and the daemon no device");
    pthread_mutex_unlock(&s->lock);
    int rc = x ? srv_exec_call(x, X_TMAP_ENCODE, a, sizeof *a, -1, r, sizeof *r) : gos_exec_tmap_encode(dev, a, r->map);
    pthread_mutex_lock(&s->lock);
    return rc;
}

int srv_msg_tmap_encode(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    (void)fd;
    struct gos_rep_tmap r;
    int rc = srv_tmap_encode(c, p, &r);
    return srv_answer(c, h, rc, &r, sizeof r);
}
