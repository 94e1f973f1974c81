# SPDX-License-Identifier: Apache-2.0
# bad_images.py DIR BASE.cubin: writes the malformed images of issue 44.6 into
# DIR, each NAME.img, and DIR/list with "NAME CLASS" lines: CLASS "refuse"
# (the shim must answer CUDA_ERROR_INVALID_IMAGE at the load) or "any" (any
# answer, but no crash or hang). Built from BASE (tests/elf_kernel.py's cubin of
# kernel "kern") and a fatbin container around it; also writes the valid
# good_cubin.img and good_fatbin.img (class "good": they must still load and
# give kern's layout). No nvcc needed (tests/t_cudashim_badimg.sh).
import os
import struct
import sys

out, base = sys.argv[1], open(sys.argv[2], "rb").read()
M64 = (1 << 64) - 1
SHDR = "<IIQQQQIIQQ"


def shdrs(b):
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", b, 0x3C)
    hs = [list(struct.unpack_from(SHDR, b, shoff + 64 * i)) for i in range(shnum)]
    strs = hs[shstrndx]
    names = [b[strs[4] + h[0]:b.index(b"\0", strs[4] + h[0])].decode() for h in hs]
    return shoff, hs, names


def set_shdr(b, name, field, value):
    b = bytearray(b)
    shoff, hs, names = shdrs(bytes(b))
    i = names.index(name)
    hs[i][field] = value & M64 if field in (2, 3, 4, 5, 8, 9) else value & 0xFFFFFFFF
    struct.pack_into(SHDR, b, shoff + 64 * i, *hs[i])
    return bytes(b)


def put(b, off, fmt, v):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, v)
    return bytes(b)


def fatbin(cubin, size=None, entry_hdr=0x40, payload=None, flags=0, unc=0):
    pad = cubin + bytes((-len(cubin)) % 8)
    e = struct.pack("<HHIQ", 2, 0x101, entry_hdr, len(pad) if payload is None else payload & M64)
    e += bytes(0x1C - len(e)) + struct.pack("<I", 90) + bytes(8) + struct.pack("<Q", flags)
    e += bytes(0x38 - len(e)) + struct.pack("<Q", unc)
    body = e + pad
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body) if size is None else size & M64) + body


shoff, hs, names = shdrs(base)
sym_off = hs[names.index(".symtab")][4]
info = hs[names.index(".nv.info.kern")][4]
shstr = hs[names.index(".shstrtab")]
cases = [
    ("good_cubin", "good", base),
    ("good_fatbin", "good", fatbin(base)),
    # ELF: offsets, sizes and indices outside the image
    ("elf_shname_oob", "any", set_shdr(base, ".nv.info.kern", 0, 0x7FFFFFF0)),
    ("elf_shoff_wrap", "refuse", put(base, 0x28, "<Q", M64 - 63)),
    ("elf_shoff_past_end", "refuse", put(base, 0x28, "<Q", len(base) + 4096)),
    # by pointer, a table 3.5 GiB on: past the program's memory (checked readable first)
    ("elf_shoff_far", "refuse", put(base, 0x28, "<Q", 0xE0000000)),
    ("elf_shnum_huge", "refuse", put(base, 0x3C, "<H", 0xFFFF)),
    ("elf_shstrndx_bad", "refuse", put(base, 0x3E, "<H", 0xFFF0)),
    ("elf_shentsize_small", "refuse", put(base, 0x3A, "<H", 8)),
    ("elf_shstrtab_wrap", "refuse", set_shdr(base, ".shstrtab", 5, M64 - shstr[4] + 8)),
    ("elf_sec_offset_wrap", "refuse", set_shdr(base, ".nv.info.kern", 4, M64 - 7)),
    ("elf_sec_size_huge", "refuse", set_shdr(base, ".nv.info.kern", 5, 1 << 62)),
    ("elf_symtab_offset_wrap", "refuse", set_shdr(base, ".symtab", 4, M64 - 23)),
    ("elf_symtab_link_bad", "any", set_shdr(base, ".symtab", 6, 0x7FFF)),
    ("elf_symname_oob", "any", put(base, sym_off + 24, "<I", 0xFFFFFF00)),
    ("elf_shstrtab_unterminated", "any", put(base, shstr[4] + shstr[5] - 1, "<B", 0x41)),
    ("elf_nvinfo_attr_past_end", "any", put(base, info + 2, "<H", 0xFFFF)),
    ("elf_truncated_header", "refuse", base[:40]),
    ("elf_truncated_section_table", "refuse", base[:shoff + 100]),
    # fatbin containers: sizes that wrap or run past the end, walks that cannot advance
    ("fatbin_total_wrap", "refuse", fatbin(base, size=M64 - 15)),
    ("fatbin_total_past_end", "refuse", fatbin(base, size=1 << 40)),
    ("fatbin_entry_size_wrap", "refuse", fatbin(base, payload=M64 - 0x3F)),
    ("fatbin_entry_size_wrap2", "refuse", fatbin(base, payload=M64 - 0x3F - 0x40)),
    ("fatbin_entry_zero_size", "refuse", fatbin(base, entry_hdr=0, payload=0)),
    ("fatbin_entry_hdr_huge", "refuse", fatbin(base, entry_hdr=0xFFFFFFFF)),
    ("fatbin_compressed_huge", "any", fatbin(base, flags=0x8000, unc=1 << 40)),
    ("fatbin_truncated_header", "refuse", fatbin(base)[:10]),
    ("fatbin_cubin_shname_oob", "any", fatbin(set_shdr(base, ".nv.info.kern", 0, 0x7FFFFFF0))),
    ("fatbin_cubin_shoff_wrap", "any", fatbin(put(base, 0x28, "<Q", M64 - 63))),
    ("fatbin_cubin_sec_wrap", "any", fatbin(set_shdr(base, ".nv.info.kern", 4, M64 - 7))),
    # the runtime's wrapper in a file: its pointer is never followed
    ("wrapper_in_file", "any", struct.pack("<IIQQ", 0x466243B1, 1, 0x10, 0)),
]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "list"), "w") as f:
    for name, cls, data in cases:
        open(os.path.join(out, name + ".img"), "wb").write(data)
        f.write("%s %s\n" % (name, cls))
