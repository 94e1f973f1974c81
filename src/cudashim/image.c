/* SPDX-License-Identifier: Apache-2.0 */
/* image.c: what gpuos's libcuda needs to know from a module image itself.
 *
 * cuLaunchKernel gets its arguments as an array of pointers (kernelParams); the
 * real driver packs them from the kernel's parameter layout, which the cubin
 * carries in its .nv.info.<kernel> section (attribute EIATTR_KPARAM_INFO: per
 * parameter its ordinal, offset and size). The daemon loads the image with the
 * real driver; this library reads the layout from the same bytes, through the
 * one bounds-checked reader of containers and ELF (device/modimage.h, which
 * documents the fatbin layout): no offset or size of an image is trusted, and
 * an image whose headers do not fit its length is refused at the load
 * (shim_image_check; issue 44.6):
 *   cubin             ELF64; .nv.info.<kernel> is a list of attributes: u8 format
 *                     (4: u16 length + payload; else a u16 value), u8 attribute
 *   KPARAM_INFO 0x17  u32 index, u16 ordinal, u16 offset, u32 (size << 18 | ...)
 *   PARAM_CBANK 0x0a  u32 symbol, u16 offset, u16 size (all parameters)
 *   REGCOUNT 0x2f     (global .nv.info) u32 symbol, u32 registers
 *   FRAME_SIZE 0x11   (global .nv.info) u32 symbol, u32 bytes of local memory
 * The layout was checked against nvcc 13.0's cubins (tests/t_cudashim.sh builds
 * a kernel of mixed parameter types when nvcc is present, plain and compressed).
 * Compressed fatbin entries (LZ4 or zstd) are inflated with the system's
 * libraries (modimage.c).
 * A PTX image's layout comes from its .entry declaration (ptx_kernel). */
#include "cudashim/shim.h"

#include "device/modimage.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define EIATTR_PARAM_CBANK 0x0a
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_REGCOUNT 0x2f
/* Set (a 4-byte entry) in the kernels whose .nv.shared section holds the 1 KiB
 * of shared memory sm_90 reserves for the system, ahead of the kernel's own:
 * the driver's CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES leaves it out (driver 580 on
 * an H200: 4 for a kernel of one int whose section is 1028 bytes;
 * tests/gpu/progs/drv_answers.c). */
#define EIATTR_RESERVED_SMEM 0x4c

/* Whether n bytes at p can be read: a copy by the kernel, which answers EFAULT
 * where a read would fault (a system refusing the call itself: assumed). */
static int readable(const void *p, size_t n)
{
    unsigned char tmp[64];
    struct iovec local = {tmp, n < sizeof tmp ? n : sizeof tmp}, remote = {(void *)p, local.iov_len};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)local.iov_len || errno != EFAULT;
}

/* cudart's wrapper (__cudaRegisterFatBinary) points at the container: only an
 * image given by pointer alone can be one (a file's bytes are never followed),
 * and its pointer is followed only where a container's header can be read. */
const void *shim_image_unwrap(const void *image)
{
    const unsigned char *p = image;
    if (p && gos_rd32(p) == GOS_FATBIN_WRAPPER_MAGIC) {
        const void *d;
        memcpy(&d, p + 8, sizeof d);
        return d && readable(d, 16) ? d : NULL;
    }
    return p;
}

/* The length is not known: the headers say it, bounded by GOS_IMG_MAX, and
 * what they say must hold together (else 0: malformed). Before the headers
 * are walked, their end is checked readable, and so is the image's last byte
 * (a claim past the program's memory is refused, not followed; a hole inside
 * it would still fault, as it does in NVIDIA's driver). */
size_t shim_image_size(const void *image)
{
    const unsigned char *p = shim_image_unwrap(image);
    if (!p)
        return 0;
    size_t n = 0;
    if (gos_rd32(p) == GOS_FATBIN_MAGIC) {
        n = readable(p, 16) ? gos_fatbin_total(p, GOS_IMG_MAX) : 0;
    } else if (!memcmp(p, ELFMAG, SELFMAG)) {
        Elf64_Ehdr e;
        if (!readable(p, sizeof e))
            return 0;
        memcpy(&e, p, sizeof e);
        uint64_t table = (uint64_t)e.e_shnum * sizeof(Elf64_Shdr);
        if (e.e_shoff < GOS_IMG_MAX && table && !readable(p + e.e_shoff + table - 1, 1))
            return 0;
        n = gos_elf_extent(p, GOS_IMG_MAX);
    } else {
        /* PTX or another text image (gpuos-builtin): NUL-terminated. */
        return strlen((const char *)p) + 1;
    }
    return n && readable(p + n - 1, 1) ? n : 0;
}

int shim_image_check(const void *image, size_t bytes, char *why, size_t why_len)
{
    const unsigned char *p = image;
    struct gos_elf f;
    if (bytes >= 4 && gos_rd32(p) == GOS_FATBIN_MAGIC) {
        size_t total = gos_fatbin_total(p, bytes);
        if (total && gos_fatbin_walks(p, total))
            return 0;
        if (!total)
            snprintf(why, why_len, "a fatbin container whose header claims more than its %zu bytes", bytes);
        else
            snprintf(why, why_len, "a fatbin container with an entry that does not fit its %zu bytes", total);
        return -1;
    }
    if (bytes < SELFMAG || memcmp(p, ELFMAG, SELFMAG))
        return 0;
    if (gos_elf_open(&f, p, bytes)) {
        snprintf(why, why_len, "an ELF image whose header, section table or names lie outside its %zu bytes", bytes);
        return -1;
    }
    Elf64_Shdr s;
    for (unsigned i = 0; i < f.e.e_shnum; i++)
        if (gos_elf_sec(&f, i, &s)) {
            snprintf(why, why_len, "an ELF image whose section %u lies outside its %zu bytes", i, bytes);
            return -1;
        }
    return 0;
}

/* A fatbin container runs on compute capability cc when it holds a cubin of
 * the same major and no higher minor, or PTX of no higher architecture (the
 * driver compiles it). */
static int container_runs(const unsigned char *p, size_t total, int cc)
{
    struct gos_fatbin_entry e;
    size_t off = gos_rd16(p + 6);
    while (gos_fatbin_next(p, total, &off, &e))
        if ((e.kind == 2 && e.arch <= cc && e.arch / 10 == cc / 10) || (e.kind == 1 && e.arch <= cc))
            return 1;
    return 0;
}

struct seg_find {
    uintptr_t p, end;
    int found;
};
static int seg_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct seg_find *s = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && !(ph->p_flags & PF_W) && s->p >= a && s->end <= a + ph->p_memsz) {
            s->found = 1;
            return 1;
        }
    }
    return 0;
}

int shim_image_mapped(const void *p, size_t n)
{
    struct seg_find s = {(uintptr_t)p, (uintptr_t)p + n, 0};
    if (!p || !n || s.end < s.p)
        return 0;
    dl_iterate_phdr(seg_cb, &s);
    return s.found;
}

int shim_image_runs(const void *image, size_t bytes, int cc)
{
    const unsigned char *p = image;
    size_t total = p && bytes >= 4 && gos_rd32(p) == GOS_FATBIN_MAGIC ? gos_fatbin_total(p, bytes) : 0;
    return !total || container_runs(p, total, cc);
}

void shim_image_describe(const void *image, size_t bytes, char *buf, size_t len)
{
    const unsigned char *p = image;
    size_t used = 0, total = p && bytes >= 4 && gos_rd32(p) == GOS_FATBIN_MAGIC ? gos_fatbin_total(p, bytes) : 0;
    buf[0] = 0;
    if (!total) {
        int elf = p && bytes >= SELFMAG && !memcmp(p, ELFMAG, SELFMAG);
        snprintf(buf, len, "%s image of %zu bytes", elf ? "ELF" : "text", bytes);
        return;
    }
    struct gos_fatbin_entry e;
    size_t off = gos_rd16(p + 6);
    used += (size_t)snprintf(buf + used, len - used, "fatbin of %zu bytes:", total);
    for (int i = 0; used < len && gos_fatbin_next(p, total, &off, &e); i++)
        if (i < 24)
            used += (size_t)snprintf(buf + used, len - used, " %s%d%s", e.kind == 1 ? "ptx" : "sm_", e.arch,
                                     GOS_FATBIN_COMPRESSED(&e) ? "z" : "");
}
/* Walks the attributes of an .nv.info section; calls fn for every one: a
 * length-prefixed one with its payload, a 4-byte one with its 2-byte value. */
static void nv_attrs(const unsigned char *b, size_t n, void (*fn)(int attr, const unsigned char *pl, int len, void *arg),
                     void *arg)
{
    size_t p = 0;
    while (p + 4 <= n) {
        int fmt = b[p], attr = b[p + 1];
        if (fmt == 4) {
            int len = gos_rd16(b + p + 2);
            if (p + 4 + (size_t)len > n)
                return;
            fn(attr, b + p + 4, len, arg);
            p += 4 + (size_t)len;
        } else {
            fn(attr, b + p + 2, 2, arg);
            p += 4;
        }
    }
}

struct kctx {
    struct shim_kinfo *k;
    int sym;
};

static void kernel_attr(int attr, const unsigned char *pl, int len, void *arg)
{
    struct kctx *c = arg;
    struct shim_kinfo *k = c->k;
    if (attr == EIATTR_KPARAM_INFO && len >= 12) {
        int ord = gos_rd16(pl + 4);
        if (ord >= 0 && ord < SHIM_MAX_PARAMS) {
            k->off[ord] = gos_rd16(pl + 6);
            k->size[ord] = (uint16_t)((gos_rd32(pl + 8) >> 18) & 0x3fff);
            if (ord + 1 > k->nparams)
                k->nparams = ord + 1;
        }
    } else if (attr == EIATTR_PARAM_CBANK && len >= 8) {
        k->param_bytes = gos_rd16(pl + 6);
    } else if (attr == EIATTR_RESERVED_SMEM && len == 2) {
        k->reserved_smem = 1;
    }
}

static void global_attr(int attr, const unsigned char *pl, int len, void *arg)
{
    struct kctx *c = arg;
    if (len < 8 || (int)gos_rd32(pl) != c->sym)
        return;
    if (attr == EIATTR_REGCOUNT)
        c->k->regs = (int)gos_rd32(pl + 4);
    else if (attr == EIATTR_FRAME_SIZE)
        c->k->local_bytes = (int)gos_rd32(pl + 4);
}

static void cubin_kernel(const unsigned char *p, size_t n, const char *name, struct shim_kinfo *k, char *why,
                         size_t why_len)
{
    struct gos_elf f;
    if (gos_elf_open(&f, p, n)) {
        snprintf(why, why_len, "malformed cubin");
        return;
    }
    int type = 0;
    int sym = gos_elf_sym(&f, name, NULL, &type);
    if (sym < 0 || type != STT_FUNC) {
        snprintf(why, why_len, "no kernel %s in the cubin", name);
        return;
    }
    /* C++ kernel names run to thousands of characters (PyTorch's distribution
     * kernels: ~470): the section names are built at their full length */
    size_t sec_len = strlen(name) + sizeof ".nv.constant0.";
    char *sec = malloc(sec_len);
    if (!sec) {
        snprintf(why, why_len, "out of memory");
        return;
    }
    Elf64_Shdr s;
    struct kctx c = {k, sym};
    snprintf(sec, sec_len, ".nv.info.%s", name);
    if (gos_elf_find(&f, sec, &s) || s.sh_type == SHT_NOBITS) {
        snprintf(why, why_len, "the cubin has no .nv.info section of kernel %.200s%s", name,
                 strlen(name) > 200 ? "..." : "");
        free(sec);
        return;
    }
    nv_attrs(p + s.sh_offset, s.sh_size, kernel_attr, &c);
    if (!gos_elf_find(&f, ".nv.info", &s) && s.sh_type != SHT_NOBITS)
        nv_attrs(p + s.sh_offset, s.sh_size, global_attr, &c);
    snprintf(sec, sec_len, ".nv.shared.%s", name);
    if (!gos_elf_find(&f, sec, &s) && s.sh_size <= INT32_MAX)
        k->shared_bytes = (int)s.sh_size - (k->reserved_smem && s.sh_size >= 1024 ? 1024 : 0);
    snprintf(sec, sec_len, ".nv.constant0.%s", name);
    if (!gos_elf_find(&f, sec, &s))
        k->const_bytes = 0; /* the parameter bank: not user constant memory */
    free(sec);
    k->max_threads = 1024;
    if (!k->param_bytes && k->nparams)
        k->param_bytes = k->off[k->nparams - 1] + k->size[k->nparams - 1];
    k->found = 1;
}

/* The cubin for `cc` in a fatbin container of total bytes (gos_fatbin_pick:
 * exact architecture, else the highest lower one of the same major, else, as
 * plain `nvcc` builds an sm_75 cubin and compute_75 PTX that the driver
 * compiles, the highest lower cubin of any architecture: parameter layouts are
 * the same on every architecture). A compressed one is inflated into *owned
 * (the caller frees it). */
static const unsigned char *fatbin_cubin(const unsigned char *p, size_t total, int cc, size_t *n, unsigned char **owned,
                                         char *why, size_t why_len)
{
    int kind;
    return gos_fatbin_pick(p, total, cc, 0, n, &kind, owned, why, why_len);
}
/* PTX text: ".entry NAME(" then ".param [.ptr ...] [.align N] .TYPE name[[N]]"
 * separated by commas up to ")". Each parameter sits at the next multiple of
 * its alignment (the type's size, or .align N for byte arrays). */
static int ptx_type_size(const char *t)
{
    if (t[0] == 'b' || t[0] == 'u' || t[0] == 's' || t[0] == 'f') {
        int bits = atoi(t + 1);
        if (bits == 8 || bits == 16 || bits == 32 || bits == 64)
            return bits / 8;
    }
    return 0;
}

static void ptx_kernel(const char *p, size_t n, const char *name, struct shim_kinfo *k, char *why, size_t why_len)
{
    size_t nl = strlen(name);
    const char *end = p + strnlen(p, n), *q = p, *open = NULL;
    while ((q = strstr(q, ".entry")) && q < end) {
        q += 6;
        while (*q == ' ' || *q == '\t')
            q++;
        if (!strncmp(q, name, nl) && (q[nl] == '(' || q[nl] == ' ' || q[nl] == '\t' || q[nl] == '\n')) {
            open = strchr(q + nl, '(');
            break;
        }
    }
    if (!open) {
        snprintf(why, why_len, "no .entry %s in the PTX", name);
        return;
    }
    const char *close = strchr(open, ')');
    if (!close) {
        snprintf(why, why_len, "malformed .entry %s", name);
        return;
    }
    int off = 0;
    for (const char *c = open + 1; c < close && k->nparams < SHIM_MAX_PARAMS;) {
        const char *prm = strstr(c, ".param");
        if (!prm || prm >= close)
            break;
        const char *stop = memchr(prm, ',', (size_t)(close - prm));
        if (!stop)
            stop = close;
        int align = 0, size = 0, count = 1;
        char tok[64];
        for (const char *t = prm + 6; t < stop;) {
            while (t < stop && (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r'))
                t++;
            size_t l = 0;
            while (t + l < stop && !strchr(" \t\n\r", t[l]))
                l++;
            if (!l)
                break;
            snprintf(tok, sizeof tok, "%.*s", (int)(l < sizeof tok ? l : sizeof tok - 1), t);
            t += l;
            if (!strcmp(tok, ".align")) {
                while (t < stop && (*t == ' ' || *t == '\t'))
                    t++;
                align = atoi(t);
                while (t < stop && *t >= '0' && *t <= '9')
                    t++;
            } else if (tok[0] == '.' && ptx_type_size(tok + 1)) {
                size = ptx_type_size(tok + 1);
            } else if (tok[0] != '.') {
                const char *br = strchr(tok, '[');
                if (br)
                    count = atoi(br + 1);
            }
        }
        if (!size || count <= 0) {
            snprintf(why, why_len, "unreadable parameter %d of .entry %s", k->nparams, name);
            k->nparams = 0;
            return;
        }
        if (!align)
            align = size;
        off = (off + align - 1) / align * align;
        k->off[k->nparams] = (uint16_t)off;
        k->size[k->nparams] = (uint16_t)(size * count);
        off += size * count;
        k->nparams++;
        c = stop + 1;
    }
    k->param_bytes = off;
    k->max_threads = 1024;
    k->found = 1;
}

/* The cubin of an image of known length: the image itself, or the one of its
 * fatbin for cc (*owned: inflated, the caller frees it); NULL with why when
 * there is none. *text: the image is neither (PTX). */
static const unsigned char *image_cubin(const unsigned char *p, size_t bytes, int cc, size_t *n, unsigned char **owned,
                                        int *text, char *why, size_t why_len)
{
    *owned = NULL;
    *text = 0;
    *n = bytes;
    if (gos_rd32(p) == GOS_FATBIN_MAGIC) {
        size_t total = gos_fatbin_total(p, bytes);
        if (!total) {
            snprintf(why, why_len, "malformed fatbin (its header claims more than its %zu bytes)", bytes);
            return NULL;
        }
        return fatbin_cubin(p, total, cc, n, owned, why, why_len);
    }
    *text = memcmp(p, ELFMAG, SELFMAG) != 0;
    return *text ? NULL : p;
}

void shim_image_kernel(const void *image, size_t bytes, int cc, const char *name, struct shim_kinfo *info, char *why,
                       size_t why_len)
{
    char dummy[8];
    if (!why) {
        why = dummy;
        why_len = sizeof dummy;
    }
    memset(info, 0, sizeof *info);
    why[0] = 0;
    if (!image || bytes < 16) {
        snprintf(why, why_len, "no image");
        return;
    }
    size_t n;
    unsigned char *owned;
    int text;
    const unsigned char *c = image_cubin(image, bytes, cc, &n, &owned, &text, why, why_len);
    if (c) {
        cubin_kernel(c, n, name, info, why, why_len);
    } else if (text) {
        /* PTX is read as a C string: one that does not end inside its bytes is
         * read from a terminated copy */
        char *t = memchr(image, 0, bytes) ? NULL : malloc(bytes + 1);
        if (t) {
            memcpy(t, image, bytes);
            t[bytes] = 0;
        }
        if (t || memchr(image, 0, bytes))
            ptx_kernel(t ? t : image, bytes, name, info, why, why_len);
        else
            snprintf(why, why_len, "out of memory");
        free(t);
    }
    free(owned);
}

int shim_image_global(const void *image, size_t bytes, int cc, const char *name, uint64_t *size)
{
    size_t n;
    unsigned char *owned;
    int text, type = 0;
    char why[160];
    if (!image || bytes < 16)
        return -1;
    const unsigned char *c = image_cubin(image, bytes, cc, &n, &owned, &text, why, sizeof why);
    if (!c && text) /* PTX: its declarations */
        return gos_ptx_global(image, bytes, name, size);
    struct gos_elf f;
    int rc = !c || gos_elf_open(&f, c, n) || gos_elf_sym(&f, name, size, &type) < 0 || type != STT_OBJECT ? -1 : 0;
    free(owned);
    return rc;
}
