/* SPDX-License-Identifier: Apache-2.0 */
/* sim_tmap.c: tensor maps (TMA descriptors) of the simulated device (issue 43),
 * the simulated half of exec_ops.h's tmap_encode. A simulated chip has no
 * tensor memory accelerator, so its map is not NVIDIA's format but a
 * deterministic packing of the arguments that a test can recompute, 16 words:
 *   [0]  GOS_SIM_TMAP_MAGIC ("SIMTMAP")
 *   [1]  the global address
 *   [2]  kind | dtype << 8 | rank << 16 | interleave << 24 | swizzle << 32 |
 *        L2 promotion << 40 | OOB fill << 48 | wide mode << 56
 *   [3..7]   the dimensions (0 past the rank)
 *   [8..11]  the strides (0 past rank - 1)
 *   [12] boxes 0..3, 16 bits each; [13] box 4 | element strides << 16 (4 bits each)
 *   [14] channels | pixels << 9 | the im2col corners from bit 20: lower[0..n),
 *        upper[0..n), n = rank - 2 (wide: 1), each 32 / (2n) bits (two's complement)
 *   [15] FNV-1a (64-bit) of words 0..14: the map's seal.
 * REPLACE takes a map of this packing whose seal holds (GOS_EINVAL for any
 * other), writes the new address into word 1 and seals it again. The
 * arguments were checked (proto.c, exec_ops.c's wrapper). */
#include "device/exec_ops.h"
#include "device/sim/sim_internal.h"

#include "common/status.h"

#include <string.h>

#define GOS_SIM_TMAP_MAGIC 0x0050414d544d4953ull /* "SIMTMAP\0" little-endian */

static uint64_t seal(const uint64_t m[16])
{
    const unsigned char *b = (const unsigned char *)m;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < 15 * sizeof m[0]; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t corners(const gpuos_tmap_args *a)
{
    if (a->kind == GPUOS_TMAP_TILED)
        return 0;
    uint32_t n = a->kind == GPUOS_TMAP_IM2COL_WIDE ? 1 : a->rank - 2, w = 32 / (2 * n);
    uint64_t v = 0, mask = (1ull << w) - 1;
    for (uint32_t i = 0; i < n; i++)
        v |= ((uint64_t)(uint32_t)a->lower[i] & mask) << (i * w) | ((uint64_t)(uint32_t)a->upper[i] & mask)
                                                                       << ((n + i) * w);
    return v;
}

int gos_sim_tmap_encode(gos_device *d, const gpuos_tmap_args *a, void *map)
{
    uint64_t m[16] = {0};
    if (a->kind == GPUOS_TMAP_REPLACE) {
        memcpy(m, a->map, sizeof m);
        if (m[0] != GOS_SIM_TMAP_MAGIC || m[15] != seal(m))
            return gos_fail(GOS_EINVAL, "tensor map address replaced in a map the simulated device did not encode");
        m[1] = a->addr;
        m[15] = seal(m);
        memcpy(map, m, sizeof m);
        return GOS_OK;
    }
    m[0] = GOS_SIM_TMAP_MAGIC;
    m[1] = a->addr;
    m[2] = a->kind | (uint64_t)a->dtype << 8 | (uint64_t)a->rank << 16 | (uint64_t)a->interleave << 24 |
           (uint64_t)a->swizzle << 32 | (uint64_t)a->l2promotion << 40 | (uint64_t)a->oobfill << 48 |
           (uint64_t)a->wide_mode << 56;
    for (uint32_t i = 0; i < a->rank; i++) {
        m[3 + i] = a->dim[i];
        if (i + 1 < a->rank)
            m[8 + i] = a->stride[i];
        if (i < 4)
            m[12] |= (uint64_t)(a->box[i] & 0xffff) << (16 * i);
        else
            m[13] |= a->box[i] & 0xffff;
        m[13] |= (uint64_t)(a->estride[i] & 0xf) << (16 + 4 * i);
    }
    m[14] = (a->channels & 0x1ff) | (uint64_t)(a->pixels & 0x7ff) << 9 | corners(a) << 20;
    m[15] = seal(m);
    memcpy(map, m, sizeof m);
    return GOS_OK;
}
