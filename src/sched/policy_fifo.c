/* SPDX-License-Identifier: Apache-2.0 */
/* policy_fifo.c: first come, first served across vGPUs (paper 002, section 5.1,
 * the baseline). The engine serves the vGPU whose queue head was submitted first;
 * shares and credits are ignored, so a vGPU with long kernels gets GPU time in
 * proportion to its kernel length, not its share (what the tests show). Inside a
 * vGPU the core's priority order still holds (the head is the highest priority). */
#include "sched/policy.h"

static gos_vgpu *fifo_select_next(gos_sched *s, int res, uint64_t now, uint64_t *wake)
{
    gos_vgpu *best = NULL;
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++) {
        gos_vgpu *v = &s->vgpus[i];
        if (v->used && v->res[res].queued && (!best || v->res[res].head->seq <
                                                        best->res[res].head->seq))
            best = v;
    }
    return best;
}

const gos_sched_policy gos_sched_policy_fifo = {
    .name = "fifo",
    .select_next = fifo_select_next,
};
