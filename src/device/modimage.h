/* SPDX-License-Identifier: Apache-2.0 */
/* modimage.h: the one reader of module images: fatbin containers, cubins
 * (ELF64) and PTX text, bounds-checked (issue 44.6: malformed images crashed or
 * hung the shim). Every offset and size is checked against the image's length
 * without wrapping; a walk over a container's entries always advances; a string
 * is read only when its NUL lies inside its section. Pure (no device): the shim
 * reads kernel layouts with it (src/cudashim/image.c), the executors the device
 * memory a module's globals take (device/exec.c, issue 44.2).
 * Process: the shim, the executor, the daemon (isolation = none).
 *
 * Layouts (checked against nvcc 13.0's output):
 *   fatbin container  u32 magic 0xBA55ED50, u16 version, u16 header size,
 *                     u64 payload size; then entries of u16 kind (1 PTX,
 *                     2 cubin), u16 version, u32 header size, u64 payload size,
 *                     u32 compressed size at 0x10, u32 arch at 0x1c, u64 flags
 *                     at 0x28 (0x2000 LZ4, 0x8000 zstd), u64 uncompressed size
 *                     at 0x38
 *   wrapper           the runtime's __fatBinC_Wrapper_t: u32 magic 0x466243b1,
 *                     u32 version, the container's address */
#ifndef GOS_DEVICE_MODIMAGE_H
#define GOS_DEVICE_MODIMAGE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GOS_FATBIN_MAGIC 0xBA55ED50u
#define GOS_FATBIN_WRAPPER_MAGIC 0x466243b1u
/* The largest image read when its length is not given (cuModuleLoadData): what
 * its headers claim past this is malformed. */
#define GOS_IMG_MAX ((size_t)1 << 32)
/* The largest compressed entry inflated. */
#define GOS_IMG_INFLATE_MAX ((uint64_t)1 << 30)

/* Little-endian fields at any alignment (the bytes must be known to exist). */
static inline uint16_t gos_rd16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t gos_rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t gos_rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- fatbin containers ---- */
struct gos_fatbin_entry {
    const unsigned char *hdr;     /* the entry's header */
    const unsigned char *payload; /* hdr + hdr_bytes */
    uint32_t hdr_bytes;
    uint64_t size;                /* payload bytes (padded) */
    int kind, arch;               /* 1 PTX, 2 cubin; sm_XY as XY */
    uint64_t flags, unc;          /* unc: uncompressed size (0: not compressed) */
};
#define GOS_FATBIN_COMPRESSED(e) (((e)->flags & 0xa000) != 0)

/* The container's length (header + payload) from its 16-byte header, when it
 * fits avail bytes (the known length, or GOS_IMG_MAX): else 0. */
size_t gos_fatbin_total(const unsigned char *p, size_t avail);

/* The entry at *off of a container of total bytes: 1 with *e filled and *off
 * moved past it (by 64 bytes at least), 0 at the end or at an entry that does
 * not fit (the walk ends there). */
int gos_fatbin_next(const unsigned char *p, size_t total, size_t *off, struct gos_fatbin_entry *e);

/* 1 when a walk over the entries of a container of total bytes passes them all
 * (what is left after the last is shorter than an entry header), else 0: an
 * entry that does not fit (what would a driver load?). */
int gos_fatbin_walks(const unsigned char *p, size_t total);

/* The entry of a container the driver takes for compute capability cc
 * (major*10+minor): a cubin of the same major and no higher minor (the highest),
 * else, when `ptx` is 1, PTX of no higher architecture, else the highest lower
 * cubin of any architecture (layouts are alike on every one; a GPU of another
 * major cannot run it). Returns its payload (inflated into *owned when
 * compressed: the caller frees it) of *n bytes; *kind: 1 PTX, 2 cubin. NULL
 * with a reason in why when there is none (*kind 0) or it cannot be read. */
const unsigned char *gos_fatbin_pick(const unsigned char *p, size_t total, int cc, int ptx, size_t *n, int *kind,
                                     unsigned char **owned, char *why, size_t why_len);

/* ---- cubins (ELF64) ---- */
struct gos_elf {
    const unsigned char *p;
    size_t n;
    Elf64_Ehdr e;     /* a copy: the image need not be aligned */
    Elf64_Shdr shstr; /* the section names */
};
/* 0 when p[0..n) is an ELF64 whose header, section header table and section
 * name table lie inside it; else -1. */
int gos_elf_open(struct gos_elf *f, const void *p, size_t n);
/* Section i: 0 when it exists and its bytes lie inside the image (NOBITS
 * sections have none), else -1. */
int gos_elf_sec(const struct gos_elf *f, unsigned i, Elf64_Shdr *s);
/* The NUL-terminated string at off of string section str, or NULL when it does
 * not end inside the section. */
const char *gos_elf_str(const struct gos_elf *f, const Elf64_Shdr *str, uint64_t off);
/* The first section named name: 0 with *out, else -1. */
int gos_elf_find(const struct gos_elf *f, const char *name, Elf64_Shdr *out);
/* The symbol named name: its index, size and type (ELF64_ST_TYPE), or -1. */
int gos_elf_sym(const struct gos_elf *f, const char *name, uint64_t *size, int *type);
/* The ELF's length from its headers (end of the header tables or of the last
 * section with bytes), when every part fits avail bytes: else 0. */
size_t gos_elf_extent(const unsigned char *p, size_t avail);

/* ---- what a module takes on the device ---- */
/* The device memory a module image (a fatbin container, a cubin, PTX text or
 * anything else, as bytes of known length) takes once loaded for compute
 * capability cc: the sizes of its cubin's global data (.nv.global,
 * .nv.global.init) and constant banks (.nv.constant*), or of PTX's .global and
 * .const declarations (the fatbin's entry as gos_fatbin_pick chooses it). Text
 * that is not PTX takes nothing. GOS_EINVAL with one line when the image is
 * malformed. */
int gos_img_device_bytes(const void *image, size_t bytes, int cc, uint64_t *need);

/* The same for PTX text of n bytes (a NUL may end it earlier). */
uint64_t gos_ptx_device_bytes(const char *p, size_t n);

/* The bytes of PTX text's .global or .const variable `name` (not an .extern
 * one) in *size: 0, or -1 when the text declares none of that name (the shim's
 * cuModuleGetGlobal of a PTX module: on an H100 it answered NOT_FOUND). */
int gos_ptx_global(const char *p, size_t n, const char *name, uint64_t *size);

#endif
