/* SPDX-License-Identifier: Apache-2.0 */
/* test_modimage.c: what a module takes on the device, read from its image
 * (device/modimage.c, issue 44.2): a cubin's .nv.global (NOBITS),
 * .nv.global.init and constant banks count, its parameter bank
 * (.nv.constant0.*), shared memory and code do not; the same cubin inside a
 * fatbin container counts the same, the entry for the GPU chosen (an entry the
 * walk cannot pass is malformed); PTX's .global and .const declarations count
 * (comments, .extern and a parameter's .ptr .global do not; sizes that overflow
 * saturate); malformed cubins and containers are GOS_EINVAL. The sections are
 * those of nvcc 13.0's cubin of `__device__ char big[1 << 30]; __device__ int
 * init_arr[256] = {..}; __constant__ float coef[1024];` (1073746960 bytes with
 * its 16-byte .nv.constant4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/status.h"
#include "device/modimage.h"

#include <stdlib.h>
#include <string.h>

struct sec {
    const char *name;
    uint32_t type;
    uint64_t size;
};

/* A cubin-shaped ELF64 of the given sections (data zero; NOBITS have none),
 * its section name table last. Returns malloc'd bytes, *n their length. */
static unsigned char *cubin(const struct sec *s, int ns, size_t *n)
{
    char names[512] = "";
    size_t nl = 1, off = sizeof(Elf64_Ehdr), name_at[16];
    for (int i = 0; i < ns; i++) {
        name_at[i] = nl;
        strcpy(names + nl, s[i].name);
        nl += strlen(s[i].name) + 1;
    }
    name_at[ns] = nl;
    strcpy(names + nl, ".shstrtab");
    nl += sizeof ".shstrtab";
    size_t data = 0;
    for (int i = 0; i < ns; i++)
        data += s[i].type == SHT_NOBITS ? 0 : s[i].size;
    size_t shoff = off + data + nl, total = shoff + (size_t)(ns + 2) * sizeof(Elf64_Shdr);
    unsigned char *p = calloc(1, total);
    Elf64_Ehdr e = {.e_ident = {0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, 1},
                    .e_type = ET_EXEC, .e_machine = 190, .e_shoff = shoff, .e_ehsize = sizeof e,
                    .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = (uint16_t)(ns + 2), .e_shstrndx = (uint16_t)(ns + 1)};
    memcpy(p, &e, sizeof e);
    Elf64_Shdr *sh = (Elf64_Shdr *)(p + shoff);
    for (int i = 0; i < ns; i++) {
        sh[i + 1] = (Elf64_Shdr){.sh_name = (uint32_t)name_at[i], .sh_type = s[i].type, .sh_offset = off,
                                 .sh_size = s[i].size};
        off += s[i].type == SHT_NOBITS ? 0 : s[i].size;
    }
    memcpy(p + off, names, nl);
    sh[ns + 1] = (Elf64_Shdr){.sh_name = (uint32_t)name_at[ns], .sh_type = SHT_STRTAB, .sh_offset = off, .sh_size = nl};
    *n = total;
    return p;
}

/* A fatbin container of entries (kind, arch, payload). */
static unsigned char *fatbin(int ne, const int *kind, const int *arch, unsigned char **pl, const size_t *pn, size_t *n)
{
    size_t body = 0;
    for (int i = 0; i < ne; i++)
        body += 0x40 + (pn[i] + 7) / 8 * 8;
    unsigned char *p = calloc(1, 16 + body);
    uint32_t magic = GOS_FATBIN_MAGIC;
    uint16_t ver = 1, hdr = 16;
    uint64_t size = body;
    memcpy(p, &magic, 4);
    memcpy(p + 4, &ver, 2);
    memcpy(p + 6, &hdr, 2);
    memcpy(p + 8, &size, 8);
    size_t off = 16;
    for (int i = 0; i < ne; i++) {
        uint16_t k = (uint16_t)kind[i];
        uint32_t eh = 0x40, a = (uint32_t)arch[i];
        uint64_t ps = (pn[i] + 7) / 8 * 8;
        memcpy(p + off, &k, 2);
        memcpy(p + off + 4, &eh, 4);
        memcpy(p + off + 8, &ps, 8);
        memcpy(p + off + 0x1c, &a, 4);
        memcpy(p + off + 0x40, pl[i], pn[i]);
        off += 0x40 + ps;
    }
    *n = 16 + body;
    return p;
}

static const struct sec nvcc_like[] = {
    {".text._Z5touchi", SHT_PROGBITS, 384},   {".nv.constant4", SHT_PROGBITS, 16},
    {".nv.constant3", SHT_PROGBITS, 4096},    {".nv.global.init", SHT_PROGBITS, 1024},
    {".nv.shared.reserved.0", SHT_NOBITS, 0}, {".nv.global", SHT_NOBITS, 1u << 30},
    {".nv.constant0._Z5touchi", SHT_PROGBITS, 0x214}, {".nv.shared._Z5touchi", SHT_NOBITS, 49152},
};
#define NVCC_NEED ((1ull << 30) + 16 + 4096 + 1024)

static void test_cubin(void **state)
{
    (void)state;
    size_t n;
    uint64_t need = 7;
    unsigned char *c = cubin(nvcc_like, 8, &n);
    assert_int_equal(gos_img_device_bytes(c, n, 90, &need), GOS_OK);
    assert_int_equal(need, NVCC_NEED);
    /* a section past the end, a table past the end: malformed */
    Elf64_Shdr *sh = (Elf64_Shdr *)(c + ((Elf64_Ehdr *)c)->e_shoff);
    sh[4].sh_offset = UINT64_MAX - 8;
    assert_int_equal(gos_img_device_bytes(c, n, 90, &need), GOS_EINVAL);
    sh[4].sh_offset = 64;
    assert_int_equal(gos_img_device_bytes(c, n - 1, 90, &need), GOS_EINVAL);
    assert_int_equal(gos_img_device_bytes(c, 40, 90, &need), GOS_EINVAL);
    free(c);
}

static void test_fatbin(void **state)
{
    (void)state;
    size_t n, cn, small_n, fn;
    uint64_t need = 0;
    unsigned char *c = cubin(nvcc_like, 8, &cn);
    const struct sec small[] = {{".nv.global", SHT_NOBITS, 4096}};
    unsigned char *s = cubin(small, 1, &small_n);
    /* sm_80 (small globals) and sm_90 (large): the GPU's own is measured */
    int kind[] = {2, 2}, arch[] = {80, 90};
    unsigned char *pl[] = {s, c};
    size_t pn[] = {small_n, cn};
    unsigned char *f = fatbin(2, kind, arch, pl, pn, &fn);
    assert_int_equal(gos_img_device_bytes(f, fn, 90, &need), GOS_OK);
    assert_int_equal(need, NVCC_NEED);
    assert_int_equal(gos_img_device_bytes(f, fn, 86, &need), GOS_OK);
    assert_int_equal(need, 4096);
    /* a container claiming more than it has; an entry size that wraps ends the walk */
    uint64_t huge = 1ull << 40;
    memcpy(f + 8, &huge, 8);
    assert_int_equal(gos_img_device_bytes(f, fn, 90, &need), GOS_EINVAL);
    huge = fn - 16;
    memcpy(f + 8, &huge, 8);
    uint64_t wrap = UINT64_MAX - 0x3f;
    memcpy(f + 16 + 8, &wrap, 8);
    assert_int_equal(gos_img_device_bytes(f, fn, 90, &need), GOS_EINVAL);
    free(f);
    /* PTX only for this GPU: its declarations */
    const char ptx[] = ".version 8.0\n.target sm_90\n.global .align 1 .b8 big[1073741824];\n";
    int pk[] = {1};
    int pa[] = {90};
    unsigned char *ppl[] = {(unsigned char *)ptx};
    size_t ppn[] = {sizeof ptx};
    f = fatbin(1, pk, pa, ppl, ppn, &n);
    assert_int_equal(gos_img_device_bytes(f, n, 90, &need), GOS_OK);
    assert_int_equal(need, 1ull << 30);
    free(f);
    free(c);
    free(s);
}

static void test_ptx(void **state)
{
    (void)state;
    const char p[] = "//\n.version 8.0\n.target sm_90\n.address_size 64\n"
                     "// .global .b8 in_a_comment[99999];\n/* .const .b8 nor[9999]; */\n"
                     ".visible .global .align 1 .b8 big[1073741824];\n"
                     ".global .align 4 .b8 init_arr[1024] = {1, 0, 0, 0, 2};\n"
                     ".const .align 4 .v4 .f32 coef[8][2], one;\n"
                     ".extern .global .align 4 .b8 elsewhere[1048576];\n"
                     ".visible .entry k(\n\t.param .u64 .ptr .global .align 1 k_param_0\n)\n"
                     "{\n\tld.global.u32 %r1, [%rd1];\n\tret;\n}\n";
    uint64_t need;
    assert_int_equal(gos_img_device_bytes(p, sizeof p, 90, &need), GOS_OK);
    assert_int_equal(need, (1ull << 30) + 1024 + 16 * 16 + 16);
    assert_int_equal(gos_ptx_device_bytes(".global .b64 x[4294967296][4294967296];", 64), UINT64_MAX);
    assert_int_equal(gos_ptx_device_bytes("SIMMOD\nk=fill\n", 14), 0);
    /* one global's size by its name (the shim's cuModuleGetGlobal of a PTX
     * module answered NOT_FOUND for every name on an H100) */
    uint64_t sz = 0;
    assert_int_equal(gos_ptx_global(p, sizeof p, "big", &sz), 0);
    assert_int_equal(sz, 1ull << 30);
    assert_int_equal(gos_ptx_global(p, sizeof p, "init_arr", &sz), 0);
    assert_int_equal(sz, 1024);
    assert_int_equal(gos_ptx_global(p, sizeof p, "coef", &sz), 0);
    assert_int_equal(sz, 16 * 16);
    assert_int_equal(gos_ptx_global(p, sizeof p, "one", &sz), 0);
    assert_int_equal(sz, 16);
    assert_int_equal(gos_ptx_global(p, sizeof p, "elsewhere", &sz), -1); /* .extern */
    assert_int_equal(gos_ptx_global(p, sizeof p, "in_a_comment", &sz), -1);
    assert_int_equal(gos_ptx_global(p, sizeof p, "bi", &sz), -1);
    assert_int_equal(gos_ptx_global(p, sizeof p, "k", &sz), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubin),
        cmocka_unit_test(test_fatbin),
        cmocka_unit_test(test_ptx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
