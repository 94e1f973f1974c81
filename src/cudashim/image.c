/* image.c: what gpuos's libcuda needs to know from a module image itself.
 *
 * cuLaunchKernel gets its arguments as an array of pointers (kernelParams); the
 * real driver packs them from the kernel's parameter layout, which the cubin
 * carries in its .nv.info.<kernel> section (attribute EIATTR_KPARAM_INFO: per
 * parameter its ordinal, offset and size). The daemon loads the image with the
 * real driver; this library reads the layout from the same bytes:
 *   fatbin container  magic 0xBA55ED50, u16 version, u16 header size, u64 size;
 *                     entries of u16 kind (1 PTX, 2 cubin), u16 version,
 *                     u32 header size, u64 payload size, ..., u32 arch at 0x1c,
 *                     u64 flags at 0x28, u64 uncompressed size at 0x38
 *   cubin             ELF64; .nv.info.<kernel> is a list of attributes: u8 format
 *                     (4: u16 length + payload; else a u16 value), u8 attribute
 *   KPARAM_INFO 0x17  u32 index, u16 ordinal, u16 offset, u32 (size << 18 | ...)
 *   PARAM_CBANK 0x0a  u32 symbol, u16 offset, u16 size (all parameters)
 *   REGCOUNT 0x2f     (global .nv.info) u32 symbol, u32 registers
 *   FRAME_SIZE 0x11   (global .nv.info) u32 symbol, u32 bytes of local memory
 * The layout was checked against nvcc 13.0's cubins (tests/t_cudashim.sh builds
 * a kernel of mixed parameter types when nvcc is present, plain and compressed).
 * Compressed fatbin entries (LZ4 or zstd) are inflated with the system's
 * libraries (inflate_entry).
 * A PTX image's layout comes from its .entry declaration (ptx_kernel). */
#include "cudashim/shim.h"

#include <dlfcn.h>
#include <link.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243b1u
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

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint16_t rd16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* cudart's wrapper (__cudaRegisterFatBinary) points at the container. */
static const unsigned char *unwrap(const void *image)
{
    const unsigned char *p = image;
    if (rd32(p) == FATBIN_WRAPPER_MAGIC) {
        const void *d;
        memcpy(&d, p + 8, sizeof d);
        return d;
    }
    return p;
}

const void *shim_image_unwrap(const void *image) { return image ? unwrap(image) : NULL; }

static size_t elf_size(const unsigned char *p)
{
    const Elf64_Ehdr *e = (const void *)p;
    size_t end = (size_t)e->e_shoff + (size_t)e->e_shnum * e->e_shentsize;
    size_t ph = (size_t)e->e_phoff + (size_t)e->e_phnum * e->e_phentsize;
    if (ph > end)
        end = ph;
    for (int i = 0; i < e->e_shnum; i++) {
        Elf64_Shdr s;
        memcpy(&s, p + e->e_shoff + (size_t)i * e->e_shentsize, sizeof s);
        if (s.sh_type != SHT_NOBITS && s.sh_offset + s.sh_size > end)
            end = s.sh_offset + s.sh_size;
    }
    return end;
}

size_t shim_image_size(const void *image)
{
    if (!image)
        return 0;
    const unsigned char *p = unwrap(image);
    if (rd32(p) == FATBIN_MAGIC)
        return (size_t)rd16(p + 6) + (size_t)rd64(p + 8);
    if (!memcmp(p, ELFMAG, SELFMAG) && p[EI_CLASS] == ELFCLASS64)
        return elf_size(p);
    /* PTX or another text image (gpuos-builtin): NUL-terminated. */
    return strlen((const char *)p) + 1;
}

/* A fatbin container runs on compute capability cc when it holds a cubin of
 * the same major and no higher minor, or PTX of no higher architecture (the
 * driver compiles it). */
static int container_runs(const unsigned char *p, int cc)
{
    size_t hdr = rd16(p + 6), total = hdr + rd64(p + 8), off = hdr;
    while (off + 0x40 <= total) {
        const unsigned char *e = p + off;
        int kind = rd16(e), arch = (int)rd32(e + 0x1c);
        uint32_t ehdr = rd32(e + 4);
        uint64_t size = rd64(e + 8);
        if (ehdr < 0x40 || off + ehdr + size > total)
            break;
        if ((kind == 2 && arch <= cc && arch / 10 == cc / 10) || (kind == 1 && arch <= cc))
            return 1;
        off += ehdr + size;
    }
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

int shim_image_runs(const void *image, int cc)
{
    const unsigned char *p = unwrap(image);
    return !p || rd32(p) != FATBIN_MAGIC || container_runs(p, cc);
}

void shim_image_describe(const void *image, char *buf, size_t len)
{
    const unsigned char *p = unwrap(image);
    size_t used = 0;
    buf[0] = 0;
    if (!p || rd32(p) != FATBIN_MAGIC) {
        snprintf(buf, len, "%s image of %zu bytes", p && !memcmp(p, ELFMAG, SELFMAG) ? "ELF" : "text",
                 shim_image_size(image));
        return;
    }
    size_t hdr = rd16(p + 6), total = hdr + rd64(p + 8), off = hdr;
    used += (size_t)snprintf(buf + used, len - used, "fatbin of %zu bytes%s:", total,
                             (const void *)p != image ? " (behind a wrapper)" : "");
    for (int i = 0; off + 0x40 <= total && used < len; i++) {
        const unsigned char *e = p + off;
        uint32_t ehdr = rd32(e + 4);
        uint64_t size = rd64(e + 8), flags = rd64(e + 0x28);
        if (ehdr < 0x40 || off + ehdr + size > total)
            break;
        if (i < 24)
            used += (size_t)snprintf(buf + used, len - used, " %s%u%s", rd16(e) == 1 ? "ptx" : "sm_", rd32(e + 0x1c),
                                     flags & 0xa000 ? "z" : "");
        off += ehdr + size;
    }
}

struct elf {
    const unsigned char *p;
    size_t n;
    const Elf64_Ehdr *e;
    const char *shstr;
};

static int elf_open(struct elf *f, const unsigned char *p, size_t n)
{
    if (n < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) || p[EI_CLASS] != ELFCLASS64)
        return -1;
    f->p = p;
    f->n = n;
    f->e = (const void *)p;
    if (f->e->e_shoff + (uint64_t)f->e->e_shnum * sizeof(Elf64_Shdr) > n || f->e->e_shstrndx >= f->e->e_shnum)
        return -1;
    Elf64_Shdr s;
    memcpy(&s, p + f->e->e_shoff + (size_t)f->e->e_shstrndx * sizeof s, sizeof s);
    if (s.sh_offset + s.sh_size > n)
        return -1;
    f->shstr = (const char *)p + s.sh_offset;
    return 0;
}

static int elf_sec(const struct elf *f, int i, Elf64_Shdr *s)
{
    memcpy(s, f->p + f->e->e_shoff + (size_t)i * sizeof *s, sizeof *s);
    return s->sh_type == SHT_NOBITS || s->sh_offset + s->sh_size <= f->n ? 0 : -1;
}

static const Elf64_Shdr *elf_find(const struct elf *f, const char *name, Elf64_Shdr *out, int *idx)
{
    for (int i = 0; i < f->e->e_shnum; i++) {
        if (elf_sec(f, i, out))
            continue;
        if (!strcmp(f->shstr + out->sh_name, name)) {
            if (idx)
                *idx = i;
            return out;
        }
    }
    return NULL;
}

/* Symbol table lookups: index of `name` (or -1), its size and type. */
static int elf_sym(const struct elf *f, const char *name, uint64_t *size, int *type)
{
    Elf64_Shdr st, str;
    if (!elf_find(f, ".symtab", &st, NULL) || st.sh_link >= f->e->e_shnum || elf_sec(f, (int)st.sh_link, &str))
        return -1;
    size_t n = st.sh_size / sizeof(Elf64_Sym);
    for (size_t i = 0; i < n; i++) {
        Elf64_Sym y;
        memcpy(&y, f->p + st.sh_offset + i * sizeof y, sizeof y);
        if (y.st_name < str.sh_size && !strcmp((const char *)f->p + str.sh_offset + y.st_name, name)) {
            if (size)
                *size = y.st_size;
            if (type)
                *type = ELF64_ST_TYPE(y.st_info);
            return (int)i;
        }
    }
    return -1;
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
            int len = rd16(b + p + 2);
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
        int ord = rd16(pl + 4);
        if (ord >= 0 && ord < SHIM_MAX_PARAMS) {
            k->off[ord] = rd16(pl + 6);
            k->size[ord] = (uint16_t)((rd32(pl + 8) >> 18) & 0x3fff);
            if (ord + 1 > k->nparams)
                k->nparams = ord + 1;
        }
    } else if (attr == EIATTR_PARAM_CBANK && len >= 8) {
        k->param_bytes = rd16(pl + 6);
    } else if (attr == EIATTR_RESERVED_SMEM && len == 2) {
        k->reserved_smem = 1;
    }
}

static void global_attr(int attr, const unsigned char *pl, int len, void *arg)
{
    struct kctx *c = arg;
    if (len < 8 || (int)rd32(pl) != c->sym)
        return;
    if (attr == EIATTR_REGCOUNT)
        c->k->regs = (int)rd32(pl + 4);
    else if (attr == EIATTR_FRAME_SIZE)
        c->k->local_bytes = (int)rd32(pl + 4);
}

static void cubin_kernel(const unsigned char *p, size_t n, const char *name, struct shim_kinfo *k, char *why,
                         size_t why_len)
{
    struct elf f;
    if (elf_open(&f, p, n)) {
        snprintf(why, why_len, "malformed cubin");
        return;
    }
    int type = 0;
    int sym = elf_sym(&f, name, NULL, &type);
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
    if (!elf_find(&f, sec, &s, NULL)) {
        snprintf(why, why_len, "the cubin has no .nv.info section of kernel %.200s%s", name,
                 strlen(name) > 200 ? "..." : "");
        free(sec);
        return;
    }
    nv_attrs(p + s.sh_offset, s.sh_size, kernel_attr, &c);
    if (elf_find(&f, ".nv.info", &s, NULL))
        nv_attrs(p + s.sh_offset, s.sh_size, global_attr, &c);
    snprintf(sec, sec_len, ".nv.shared.%s", name);
    if (elf_find(&f, sec, &s, NULL))
        k->shared_bytes = (int)s.sh_size - (k->reserved_smem && s.sh_size >= 1024 ? 1024 : 0);
    snprintf(sec, sec_len, ".nv.constant0.%s", name);
    if (elf_find(&f, sec, &s, NULL))
        k->const_bytes = 0; /* the parameter bank: not user constant memory */
    free(sec);
    k->max_threads = 1024;
    if (!k->param_bytes && k->nparams)
        k->param_bytes = k->off[k->nparams - 1] + k->size[k->nparams - 1];
    k->found = 1;
}

/* A compressed fatbin entry's payload (nvcc --compress-mode: flag 0x2000 LZ4,
 * 0x8000 zstd; the compressed size is the u32 at 0x10 of the entry header, the
 * payload padded to 8 bytes, the uncompressed size the u64 at 0x38), inflated
 * with the system's liblz4 / libzstd, loaded when first needed (dlopen: the
 * library loads without them, and then says a compressed cubin is unreadable).
 * Returns a malloc'd buffer of exactly `unc` bytes, or NULL with a reason. */
static unsigned char *inflate_entry(const unsigned char *e, uint32_t ehdr, uint64_t padded, char *why, size_t why_len)
{
    uint64_t flags = rd64(e + 0x28), unc = rd64(e + 0x38), csize = rd32(e + 0x10);
    const unsigned char *src = e + ehdr;
    if (!csize || csize > padded)
        csize = padded;
    if (!unc || unc > (1ull << 30) || csize > (1ull << 30)) {
        snprintf(why, why_len, "a compressed cubin of %llu bytes (unreadable size)", (unsigned long long)unc);
        return NULL;
    }
    int zstd = (flags & 0x8000) != 0;
    const char *libname = zstd ? "libzstd.so.1" : "liblz4.so.1";
    void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    void *fn = lib ? dlsym(lib, zstd ? "ZSTD_decompress" : "LZ4_decompress_safe") : NULL;
    if (!fn) {
        snprintf(why, why_len, "the fatbin's cubin for this GPU is %s-compressed and %s is not loadable",
                 zstd ? "zstd" : "LZ4", libname);
        return NULL;
    }
    unsigned char *out = malloc(unc);
    if (!out) {
        snprintf(why, why_len, "out of memory inflating a cubin of %llu bytes", (unsigned long long)unc);
        return NULL;
    }
    int ok;
    if (zstd) {
        size_t (*dec)(void *, size_t, const void *, size_t) = (size_t (*)(void *, size_t, const void *, size_t))fn;
        ok = dec(out, unc, src, csize) == unc;
    } else {
        int (*dec)(const char *, char *, int, int) = (int (*)(const char *, char *, int, int))fn;
        ok = dec((const char *)src, (char *)out, (int)csize, (int)unc) == (int)unc;
    }
    if (!ok) {
        free(out);
        snprintf(why, why_len, "the fatbin's %s-compressed cubin does not inflate to its %llu bytes",
                 zstd ? "zstd" : "LZ4", (unsigned long long)unc);
        return NULL;
    }
    return out;
}

/* The cubin for `cc` in a fatbin container: exact architecture, else the
 * highest lower one of the same major, else (plain `nvcc` builds an sm_75
 * cubin and compute_75 PTX, which the driver compiles for the GPU) the highest
 * lower cubin of any architecture: parameter layouts are the same on every
 * architecture (registers and shared memory are then those of that cubin).
 * A compressed one is inflated into *owned (the caller frees it). */
static const unsigned char *fatbin_cubin(const unsigned char *p, int cc, size_t *n, unsigned char **owned, char *why,
                                         size_t why_len)
{
    size_t hdr = rd16(p + 6), total = hdr + rd64(p + 8), off = hdr;
    const unsigned char *best = NULL, *any = NULL;
    int best_arch = -1, any_arch = -1, ptx = 0;
    *owned = NULL;
    while (off + 0x40 <= total) {
        const unsigned char *e = p + off;
        int kind = rd16(e);
        uint32_t ehdr = rd32(e + 4);
        uint64_t size = rd64(e + 8);
        int arch = (int)rd32(e + 0x1c);
        if (ehdr < 0x40 || off + ehdr + size > total)
            break;
        if (kind == 1)
            ptx = 1;
        if (kind == 2 && arch <= cc && arch / 10 == cc / 10 && arch > best_arch) {
            best = e;
            best_arch = arch;
        }
        if (kind == 2 && arch <= cc && arch > any_arch) {
            any = e;
            any_arch = arch;
        }
        off += ehdr + size;
    }
    const unsigned char *e = best ? best : any;
    if (!e) {
        snprintf(why, why_len, "%s",
                 ptx ? "the fatbin has PTX only for this GPU (parameter layouts are read from cubins)"
                     : "the fatbin has no cubin for this GPU");
        return NULL;
    }
    uint32_t ehdr = rd32(e + 4);
    uint64_t size = rd64(e + 8), flags = rd64(e + 0x28), unc = rd64(e + 0x38);
    if (!(flags & 0xa000) && !unc) {
        *n = size;
        return e + ehdr;
    }
    if (!(*owned = inflate_entry(e, ehdr, size, why, why_len)))
        return NULL;
    *n = unc;
    return *owned;
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
    const unsigned char *p = unwrap(image);
    if (rd32(p) == FATBIN_MAGIC) {
        size_t n = 0;
        unsigned char *owned = NULL;
        const unsigned char *c = fatbin_cubin(p, cc, &n, &owned, why, why_len);
        if (c)
            cubin_kernel(c, n, name, info, why, why_len);
        free(owned);
    } else if (!memcmp(p, ELFMAG, SELFMAG)) {
        cubin_kernel(p, bytes, name, info, why, why_len);
    } else {
        ptx_kernel((const char *)p, bytes, name, info, why, why_len);
    }
}

int shim_image_global(const void *image, size_t bytes, int cc, const char *name, uint64_t *size)
{
    const unsigned char *p = unwrap(image);
    size_t n = bytes;
    char why[160];
    unsigned char *owned = NULL;
    if (rd32(p) == FATBIN_MAGIC && !(p = fatbin_cubin(p, cc, &n, &owned, why, sizeof why)))
        return -1;
    struct elf f;
    int type = 0, rc = elf_open(&f, p, n) || elf_sym(&f, name, size, &type) < 0 || type != STT_OBJECT ? -1 : 0;
    free(owned);
    return rc;
}
