# SPDX-License-Identifier: Apache-2.0
# elf_kernel.py OUT NAME REGS LAYOUT [--no-info]: writes a minimal cubin-shaped
# ELF64 (tests/t_cudashim.sh, no nvcc needed) holding one kernel NAME: a FUNC
# symbol, `.nv.info` with its register count (EIATTR_REGCOUNT) and
# `.nv.info.NAME` with one EIATTR_KPARAM_INFO per parameter of LAYOUT
# ("off:size,off:size,..."), listed last parameter first as nvcc lists them,
# and EIATTR_PARAM_CBANK with the bank's size. --no-info leaves
# `.nv.info.NAME` out (a kernel whose layout cannot be known).
# The attribute encoding is the one documented by the reader
# (src/cudashim/image.c): format 4 = a 16-bit length then the payload.
import struct
import sys

out, name, regs, layout = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
no_info = "--no-info" in sys.argv[5:]
params = [tuple(int(x) for x in p.split(":")) for p in layout.split(",") if p]

EIATTR_KPARAM_INFO, EIATTR_PARAM_CBANK, EIATTR_REGCOUNT = 0x17, 0x0A, 0x2F


def attr(a, payload):
    return struct.pack("<BBH", 4, a, len(payload)) + payload


sym_index = 1
glob = attr(EIATTR_REGCOUNT, struct.pack("<II", sym_index, regs))
kinfo = b""
for ordinal in reversed(range(len(params))):
    off, size = params[ordinal]
    kinfo += attr(EIATTR_KPARAM_INFO, struct.pack("<IHHI", 0, ordinal, off, (size << 18) | 0x1F000))
bank = max((o + s for o, s in params), default=0)
kinfo += attr(EIATTR_PARAM_CBANK, struct.pack("<IHH", 0, 0x210, bank))

names = [".shstrtab", ".strtab", ".symtab", ".nv.info", ".text." + name] + ([] if no_info else [".nv.info." + name])
shstr = b"\0"
name_off = {}
for n in names:
    name_off[n] = len(shstr)
    shstr += n.encode() + b"\0"
strtab = b"\0" + name.encode() + b"\0"
symtab = bytes(24) + struct.pack("<IBBHQQ", 1, (1 << 4) | 2, 0, 5, 0, 16)  # GLOBAL FUNC in .text
text = bytes(16)
bodies = [shstr, strtab, symtab, glob, text] + ([] if no_info else [kinfo])
types = [3, 3, 2, 0x70000000, 1, 0x70000000]

blob, offsets, off = b"", [], 64
for b in bodies:
    pad = (-off) % 8
    blob += bytes(pad)
    off += pad
    offsets.append(off)
    blob += b
    off += len(b)
pad = (-off) % 8
blob += bytes(pad)
shoff = off + pad
shnum = len(bodies) + 1
ehdr = b"\x7fELF" + bytes([2, 1, 1, 0x33, 7]) + bytes(7)
ehdr += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, 0x5A055A, 64, 56, 0, 64, shnum, 1)
shdrs = bytes(64)
for i, b in enumerate(bodies):
    link = 2 if i == 2 else 0
    info = 2 if i == 2 else 0
    entsize = 24 if i == 2 else 0
    shdrs += struct.pack("<IIQQQQIIQQ", name_off[names[i]], types[i], 0, 0, offsets[i], len(b), link, info, 8, entsize)
with open(out, "wb") as f:
    f.write(ehdr + blob + shdrs)
