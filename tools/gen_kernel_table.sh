#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# gen_kernel_table.sh DIR NAME...: writes DIR/images.S (the fatbins, embedded with
# .incbin) and DIR/table.c (their names and sizes) for src/device/kernels.h.
set -e
dir=$1; shift
{
  echo '    .section .rodata'
  for n in "$@"; do
    echo "    .balign 64"
    echo "    .global gos_kimg_$n"
    echo "gos_kimg_$n:"
    echo "    .incbin \"$dir/$n.fatbin\""
    echo "    .global gos_kimg_${n}_end"
    echo "gos_kimg_${n}_end:"
  done
  echo '    .section .note.GNU-stack,"",@progbits'
} > "$dir/images.S"
{
  echo '#include "device/kernels.h"'
  for n in "$@"; do
    echo "extern const unsigned char gos_kimg_$n[], gos_kimg_${n}_end[];"
  done
  echo 'const struct gos_kernel_image gos_kernel_images[] = {'
  for n in "$@"; do
    echo "    {\"$n\", gos_kimg_$n, gos_kimg_${n}_end},"
  done
  echo '    {0, 0, 0},'
  echo '};'
} > "$dir/table.c"
