/* SPDX-License-Identifier: Apache-2.0 */
/* modimage.c: the bounds-checked reader of module images (modimage.h): fatbin
 * containers, cubins (ELF64), PTX declarations. Every read is of bytes known to
 * lie inside the image; sums are checked before they are made (a + b > n is
 * written b > n - a once a <= n is known).
 * Process: the shim, the executor, the daemon (isolation = none). */
#include "device/modimage.h"

#include "common/status.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* [off, off + len) inside n bytes, without wrapping. */
static int within(uint64_t off, uint64_t len, uint64_t n) { return off <= n && len <= n - off; }

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ------------------------------------------------------------------ */
/* fatbin containers */

size_t gos_fatbin_total(const unsigned char *p, size_t avail)
{
    if (!p || avail < 16 || gos_rd32(p) != GOS_FATBIN_MAGIC)
        return 0;
    uint64_t hdr = gos_rd16(p + 6), size = gos_rd64(p + 8);
    if (hdr < 16 || !within(hdr, size, avail))
        return 0;
    return (size_t)(hdr + size);
}

int gos_fatbin_next(const unsigned char *p, size_t total, size_t *off, struct gos_fatbin_entry *e)
{
    if (*off > total || total - *off < 0x40)
        return 0;
    const unsigned char *h = p + *off;
    uint64_t left = total - *off, hb = gos_rd32(h + 4), size = gos_rd64(h + 8);
    if (hb < 0x40 || !within(hb, size, left))
        return 0;
    *e = (struct gos_fatbin_entry){.hdr = h, .payload = h + hb, .hdr_bytes = (uint32_t)hb, .size = size,
                                   .kind = gos_rd16(h), .arch = (int)gos_rd32(h + 0x1c), .flags = gos_rd64(h + 0x28),
                                   .unc = gos_rd64(h + 0x38)};
    *off += (size_t)(hb + size); /* hb >= 0x40: always forward */
    return 1;
}

int gos_fatbin_walks(const unsigned char *p, size_t total)
{
    struct gos_fatbin_entry e;
    size_t off = gos_rd16(p + 6);
    while (gos_fatbin_next(p, total, &off, &e))
        ;
    return total - off < 0x40;
}

/* A compressed entry's payload (nvcc --compress-mode: flag 0x2000 LZ4, 0x8000
 * zstd; the compressed size is the u32 at 0x10 of the entry header, the payload
 * padded to 8 bytes, the uncompressed size the u64 at 0x38), inflated with the
 * system's liblz4 / libzstd, loaded when first needed (dlopen: the process loads
 * without them, and then says a compressed entry is unreadable). Returns a
 * malloc'd buffer of exactly e->unc bytes, or NULL with a reason. */
static unsigned char *inflate_entry(const struct gos_fatbin_entry *e, char *why, size_t why_len)
{
    uint64_t unc = e->unc, csize = gos_rd32(e->hdr + 0x10);
    const char *what = e->kind == 1 ? "PTX" : "cubin";
    if (!csize || csize > e->size)
        csize = e->size;
    if (!unc || unc > GOS_IMG_INFLATE_MAX || csize > GOS_IMG_INFLATE_MAX) {
        snprintf(why, why_len, "a compressed %s of %llu bytes (unreadable size)", what, (unsigned long long)unc);
        return NULL;
    }
    int zstd = (e->flags & 0x8000) != 0;
    const char *libname = zstd ? "libzstd.so.1" : "liblz4.so.1";
    void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    void *fn = lib ? dlsym(lib, zstd ? "ZSTD_decompress" : "LZ4_decompress_safe") : NULL;
    if (!fn) {
        snprintf(why, why_len, "the fatbin's %s for this GPU is %s-compressed and %s is not loadable", what,
                 zstd ? "zstd" : "LZ4", libname);
        return NULL;
    }
    unsigned char *out = malloc(unc);
    if (!out) {
        snprintf(why, why_len, "out of memory inflating an entry of %llu bytes", (unsigned long long)unc);
        return NULL;
    }
    int ok;
    if (zstd) {
        size_t (*dec)(void *, size_t, const void *, size_t) = (size_t (*)(void *, size_t, const void *, size_t))fn;
        ok = dec(out, unc, e->payload, csize) == unc;
    } else {
        int (*dec)(const char *, char *, int, int) = (int (*)(const char *, char *, int, int))fn;
        ok = dec((const char *)e->payload, (char *)out, (int)csize, (int)unc) == (int)unc;
    }
    if (!ok) {
        free(out);
        snprintf(why, why_len, "the fatbin's %s-compressed %s does not inflate to its %llu bytes",
                 zstd ? "zstd" : "LZ4", what, (unsigned long long)unc);
        return NULL;
    }
    return out;
}

const unsigned char *gos_fatbin_pick(const unsigned char *p, size_t total, int cc, int ptx, size_t *n, int *kind,
                                     unsigned char **owned, char *why, size_t why_len)
{
    struct gos_fatbin_entry e, best = {0}, any = {0}, text = {0};
    size_t off = gos_rd16(p + 6);
    int has_ptx = 0;
    *owned = NULL;
    *kind = 0;
    while (gos_fatbin_next(p, total, &off, &e)) {
        has_ptx |= e.kind == 1;
        if (e.kind == 2 && e.arch <= cc && e.arch / 10 == cc / 10 && (!best.hdr || e.arch > best.arch))
            best = e;
        if (e.kind == 2 && e.arch <= cc && (!any.hdr || e.arch > any.arch))
            any = e;
        if (e.kind == 1 && e.arch <= cc && (!text.hdr || e.arch > text.arch))
            text = e;
    }
    const struct gos_fatbin_entry *c = best.hdr ? &best : ptx && text.hdr ? &text : any.hdr ? &any : NULL;
    if (!c) {
        snprintf(why, why_len, "%s",
                 has_ptx && !ptx ? "the fatbin has PTX only for this GPU (parameter layouts are read from cubins)"
                                 : "the fatbin has no code for this GPU");
        return NULL;
    }
    *kind = c->kind;
    if (!GOS_FATBIN_COMPRESSED(c) && !c->unc) {
        *n = (size_t)c->size;
        return c->payload;
    }
    if (!(*owned = inflate_entry(c, why, why_len)))
        return NULL;
    *n = (size_t)c->unc;
    return *owned;
}

/* ------------------------------------------------------------------ */
/* cubins */

int gos_elf_open(struct gos_elf *f, const void *image, size_t n)
{
    const unsigned char *p = image;
    if (!p || n < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) || p[EI_CLASS] != ELFCLASS64)
        return -1;
    f->p = p;
    f->n = n;
    memcpy(&f->e, p, sizeof f->e);
    if (!f->e.e_shnum || f->e.e_shentsize != sizeof(Elf64_Shdr) ||
        !within(f->e.e_shoff, (uint64_t)f->e.e_shnum * sizeof(Elf64_Shdr), n) || f->e.e_shstrndx >= f->e.e_shnum)
        return -1;
    if (gos_elf_sec(f, f->e.e_shstrndx, &f->shstr) || f->shstr.sh_type == SHT_NOBITS)
        return -1;
    return 0;
}

int gos_elf_sec(const struct gos_elf *f, unsigned i, Elf64_Shdr *s)
{
    if (i >= f->e.e_shnum)
        return -1;
    memcpy(s, f->p + f->e.e_shoff + (size_t)i * sizeof *s, sizeof *s);
    return s->sh_type == SHT_NOBITS || within(s->sh_offset, s->sh_size, f->n) ? 0 : -1;
}

const char *gos_elf_str(const struct gos_elf *f, const Elf64_Shdr *str, uint64_t off)
{
    if (str->sh_type == SHT_NOBITS || !within(str->sh_offset, str->sh_size, f->n) || off >= str->sh_size)
        return NULL;
    const char *s = (const char *)f->p + str->sh_offset + off;
    return memchr(s, 0, (size_t)(str->sh_size - off)) ? s : NULL;
}

int gos_elf_find(const struct gos_elf *f, const char *name, Elf64_Shdr *out)
{
    for (unsigned i = 0; i < f->e.e_shnum; i++) {
        if (gos_elf_sec(f, i, out))
            continue;
        const char *s = gos_elf_str(f, &f->shstr, out->sh_name);
        if (s && !strcmp(s, name))
            return 0;
    }
    return -1;
}

int gos_elf_sym(const struct gos_elf *f, const char *name, uint64_t *size, int *type)
{
    Elf64_Shdr st, str;
    if (gos_elf_find(f, ".symtab", &st) || st.sh_type == SHT_NOBITS || gos_elf_sec(f, st.sh_link, &str))
        return -1;
    uint64_t n = st.sh_size / sizeof(Elf64_Sym);
    for (uint64_t i = 0; i < n && i < INT32_MAX; i++) {
        Elf64_Sym y;
        memcpy(&y, f->p + st.sh_offset + i * sizeof y, sizeof y);
        const char *s = gos_elf_str(f, &str, y.st_name);
        if (s && !strcmp(s, name)) {
            if (size)
                *size = y.st_size;
            if (type)
                *type = ELF64_ST_TYPE(y.st_info);
            return (int)i;
        }
    }
    return -1;
}

size_t gos_elf_extent(const unsigned char *p, size_t avail)
{
    Elf64_Ehdr e;
    if (!p || avail < sizeof e || memcmp(p, ELFMAG, SELFMAG) || p[EI_CLASS] != ELFCLASS64)
        return 0;
    memcpy(&e, p, sizeof e);
    uint64_t sh = (uint64_t)e.e_shnum * sizeof(Elf64_Shdr), ph = (uint64_t)e.e_phnum * sizeof(Elf64_Phdr);
    if ((e.e_shnum && e.e_shentsize != sizeof(Elf64_Shdr)) || (e.e_phnum && e.e_phentsize != sizeof(Elf64_Phdr)) ||
        !within(e.e_shoff, sh, avail) || !within(e.e_phoff, ph, avail))
        return 0;
    uint64_t end = sizeof e;
    if (e.e_shnum && e.e_shoff + sh > end)
        end = e.e_shoff + sh;
    if (e.e_phnum && e.e_phoff + ph > end)
        end = e.e_phoff + ph;
    for (unsigned i = 0; i < e.e_shnum; i++) {
        Elf64_Shdr s;
        memcpy(&s, p + e.e_shoff + (size_t)i * sizeof s, sizeof s);
        if (s.sh_type == SHT_NOBITS)
            continue;
        if (!within(s.sh_offset, s.sh_size, avail))
            return 0;
        if (s.sh_offset + s.sh_size > end)
            end = s.sh_offset + s.sh_size;
    }
    return (size_t)end;
}

/* ------------------------------------------------------------------ */
/* device memory of a module */

/* A cubin's global data and constant banks (bank 0 holds a launch's
 * parameters, written at each launch: not the module's). */
static int cubin_device_bytes(const unsigned char *p, size_t n, uint64_t *need)
{
    struct gos_elf f;
    if (gos_elf_open(&f, p, n))
        return gos_fail(GOS_EINVAL, "malformed cubin: its ELF header or section table lies outside its %zu bytes", n);
    uint64_t sum = 0;
    for (unsigned i = 0; i < f.e.e_shnum; i++) {
        Elf64_Shdr s;
        if (gos_elf_sec(&f, i, &s))
            return gos_fail(GOS_EINVAL, "malformed cubin: section %u lies outside its %zu bytes", i, n);
        const char *name = gos_elf_str(&f, &f.shstr, s.sh_name);
        if (name && (!strncmp(name, ".nv.global", 10) ||
                     (!strncmp(name, ".nv.constant", 12) && strncmp(name, ".nv.constant0", 13))))
            sum = sat_add(sum, s.sh_size);
    }
    *need = sum;
    return GOS_OK;
}

/* PTX: ".global" / ".const" declarations (not .extern), e.g.
 *   .visible .global .align 8 .b8 table[1048576];   .const .v4 .f32 c[2][8], d;
 * Each declared name's bytes: element type x vector width x its dimensions. */
static int ptx_elem(const char *t, size_t l)
{
    static const struct {
        const char *name;
        int bytes;
    } types[] = {{"b8", 1}, {"u8", 1}, {"s8", 1}, {"b16", 2}, {"u16", 2}, {"s16", 2}, {"f16", 2}, {"bf16", 2},
                 {"b32", 4}, {"u32", 4}, {"s32", 4}, {"f32", 4}, {"f16x2", 4}, {"bf16x2", 4}, {"b64", 8},
                 {"u64", 8}, {"s64", 8}, {"f64", 8}, {"b128", 16}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (l == strlen(types[i].name) && !memcmp(t, types[i].name, l))
            return types[i].bytes;
    return 0;
}

/* The declaration starting at s (after its state space), up to its ';'. */
/* The bytes a PTX declaration (from after its .global / .const to its end)
 * reserves; with want, only the declarator named want's, and *found says
 * whether it was there. */
static uint64_t ptx_decl(const char *s, const char *end, const char *want, int *found)
{
    uint64_t elem = 0, vec = 1, sum = 0;
    while (s < end) {
        while (s < end && (isspace((unsigned char)*s) || *s == ','))
            s++;
        if (s >= end || *s == '=' || *s == ';')
            break;
        const char *t = s;
        while (s < end && !isspace((unsigned char)*s) && !strchr(",;=[", *s))
            s++;
        size_t l = (size_t)(s - t);
        if (*t == '.') {
            if (l == 6 && !memcmp(t, ".align", 6)) {
                while (s < end && isspace((unsigned char)*s))
                    s++;
                while (s < end && isdigit((unsigned char)*s))
                    s++;
            } else if (l == 3 && t[1] == 'v' && isdigit((unsigned char)t[2])) {
                vec = (uint64_t)(t[2] - '0');
            } else if (ptx_elem(t + 1, l - 1)) {
                elem = (uint64_t)ptx_elem(t + 1, l - 1);
            }
            continue;
        }
        uint64_t count = 1; /* a name, then its dimensions ([] sized by its initializer: one) */
        int named = want && strlen(want) == l && !memcmp(t, want, l);
        while (s < end && *s == '[') {
            char *q;
            unsigned long long d = strtoull(s + 1, &q, 0);
            if (q > s + 1)
                count = sat_mul(count, d);
            s = memchr(s, ']', (size_t)(end - s));
            if (!s)
                break; /* (an unclosed dimension: the declaration ends here) */
            s++;
        }
        if (want && named) {
            *found = 1;
            return sat_mul(sat_mul(elem, vec), count);
        }
        if (!want)
            sum = sat_add(sum, sat_mul(sat_mul(elem, vec), count));
        if (!s)
            break;
    }
    return sum;
}

/* gos_ptx_device_bytes and gos_ptx_global: the sum of the declarations, or
 * (want) the size of one (*found). */
static uint64_t ptx_scan(const char *p, size_t n, const char *want, int *found)
{
    n = strnlen(p, n);
    char *t = malloc(n + 1);
    if (!t)
        return UINT64_MAX; /* unknowable: refused as too large */
    /* comments become blanks */
    for (size_t i = 0; i < n;) {
        if (p[i] == '/' && i + 1 < n && p[i + 1] == '/') {
            for (; i < n && p[i] != '\n'; i++)
                t[i] = ' ';
        } else if (p[i] == '/' && i + 1 < n && p[i + 1] == '*') {
            for (; i < n && !(p[i] == '*' && i + 1 < n && p[i + 1] == '/'); i++)
                t[i] = p[i] == '\n' ? '\n' : ' ';
            for (int k = 0; k < 2 && i < n; k++)
                t[i++] = ' ';
        } else {
            t[i] = p[i];
            i++;
        }
    }
    t[n] = 0;
    const char *end = t + n;
    uint64_t sum = 0;
    int ext = 0, ptr = 0;
    for (const char *s = t; s < end;) {
        if (*s == ';' || *s == '{' || *s == '}' || *s == '\n')
            ext = ptr = 0; /* a new statement or line */
        if (isspace((unsigned char)*s) || strchr(";{}(),", *s)) {
            s++;
            continue;
        }
        const char *tok = s;
        while (s < end && !isspace((unsigned char)*s) && !strchr(";{}(),", *s))
            s++;
        size_t l = (size_t)(s - tok);
        if ((l == 7 && !memcmp(tok, ".global", 7)) || (l == 6 && !memcmp(tok, ".const", 6))) {
            if (!ext && !ptr) {
                const char *semi = memchr(s, ';', (size_t)(end - s));
                int hit = 0;
                uint64_t b = ptx_decl(s, semi ? semi : end, want, &hit);
                if (want && hit) {
                    *found = 1;
                    free(t);
                    return b;
                }
                sum = sat_add(sum, b);
            }
        }
        ext |= l == 7 && !memcmp(tok, ".extern", 7);
        ptr = l == 4 && !memcmp(tok, ".ptr", 4); /* a parameter's .ptr .global: no memory */
    }
    free(t);
    return sum;
}

uint64_t gos_ptx_device_bytes(const char *p, size_t n) { return ptx_scan(p, n, NULL, NULL); }

int gos_ptx_global(const char *p, size_t n, const char *name, uint64_t *size)
{
    int found = 0;
    *size = ptx_scan(p, n, name, &found);
    return found ? 0 : -1;
}

int gos_img_device_bytes(const void *image, size_t bytes, int cc, uint64_t *need)
{
    const unsigned char *p = image;
    *need = 0;
    if (!p || !bytes)
        return GOS_OK;
    if (bytes >= 4 && gos_rd32(p) == GOS_FATBIN_MAGIC) {
        size_t total = gos_fatbin_total(p, bytes), n = 0;
        if (!total)
            return gos_fail(GOS_EINVAL, "malformed fatbin: its header claims more than its %zu bytes", bytes);
        if (!gos_fatbin_walks(p, total))
            return gos_fail(GOS_EINVAL, "malformed fatbin: an entry does not fit its %zu bytes", total);
        unsigned char *owned = NULL;
        int kind;
        char why[160];
        const unsigned char *c = gos_fatbin_pick(p, total, cc, 1, &n, &kind, &owned, why, sizeof why);
        if (!c) /* nothing for this GPU: the driver says so; unreadable: so do we */
            return kind ? gos_fail(GOS_EINVAL, "%s", why) : GOS_OK;
        int rc = GOS_OK;
        if (kind == 1)
            *need = gos_ptx_device_bytes((const char *)c, n);
        else
            rc = cubin_device_bytes(c, n, need);
        free(owned);
        return rc;
    }
    if (bytes >= SELFMAG && !memcmp(p, ELFMAG, SELFMAG))
        return cubin_device_bytes(p, bytes, need);
    *need = gos_ptx_device_bytes((const char *)p, bytes);
    return GOS_OK;
}
