/* SPDX-License-Identifier: Apache-2.0 */
/* kernels.h: the table of fatbins embedded in the binary (generated at build time
 * from kernels/NAME.cu by tools/gen_kernel_table.sh). Empty when built without nvcc. */
#ifndef GOS_KERNELS_H
#define GOS_KERNELS_H

struct gos_kernel_image {
    const char *name; /* file name of kernels/NAME.cu */
    const unsigned char *begin, *end;
};

/* Terminated by an entry with name == NULL. */
extern const struct gos_kernel_image gos_kernel_images[];

#endif
