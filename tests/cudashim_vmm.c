/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_vmm.c: CUDA's virtual memory management through gpuos's libcuda on
 * a vGPU (tests/t_cudashim_vmm.sh runs it with `gpuos run`, on the simulated
 * device, under isolation = process and none). Modes:
 *   basic       the attribute says VMM; granularity; reserve (aligned), create,
 *               map two handles side by side, no access before cuMemSetAccess,
 *               bytes in and out equal (also across the two handles and through
 *               cuMemcpy / DtoD), address range and pointer attributes, a
 *               retained handle, release while mapped keeps the bytes and the
 *               charge, read-only access refuses writes, unmap then access
 *               fails, cuMemFree refuses VMM memory, charges back to the start,
 *               the driver's refusals (sizes, offsets, types, export);
 *   oom         2 MiB handles until CUDA_ERROR_OUT_OF_MEMORY; prints how many
 *               fitted; a release makes room again (cuMemGetInfo agrees);
 *   hold DIR    maps 4 MiB of a pattern, writes "VA HANDLE" to DIR/held, waits
 *               for DIR/go, checks the pattern is intact, writes DIR/intact,
 *               then sleeps (the script kills it with -9);
 *   foreign VA H  another tenant: the holder's handle and range are refused
 *               (CUDA_ERROR_INVALID_VALUE), its own reservation cannot map them.
 * Prints "ok" (or "oom N") when every check passed. */
#include "cudashim_check.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define MB (1ull << 20)

static CUmemAllocationProp prop(void)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
}

static CUresult access_set(CUdeviceptr va, size_t n, CUmemAccess_flags f)
{
    CUmemAccessDesc d = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}, .flags = f};
    return cuMemSetAccess(va, n, &d, 1);
}

static size_t used(void)
{
    size_t fr, tot;
    CHECK(cuMemGetInfo(&fr, &tot));
    return tot - fr;
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 131 + seed + (i >> 13));
}

static void basic(void)
{
    int v = -1;
    CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    TRUE(v == 1);
    CUmemAllocationProp p = prop();
    size_t g = 0;
    CHECK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    TRUE(g == 2 * MB);
    size_t base = used();

    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, 6 * MB, 4 * MB, 0, 0));
    TRUE(va % (4 * MB) == 0);
    TRUE(used() == base); /* addresses are not charged */
    CUmemGenericAllocationHandle h1, h2;
    CHECK(cuMemCreate(&h1, 2 * MB, &p, 0));
    CHECK(cuMemCreate(&h2, 2 * MB, &p, 0));
    TRUE(h1 != h2);
    TRUE(used() == base + 4 * MB);
    CHECK(cuMemMap(va, 2 * MB, 0, h1, 0));
    CHECK(cuMemMap(va + 2 * MB, 2 * MB, 0, h2, 0));
    EXPECT(cuMemMap(va + 2 * MB, 2 * MB, 0, h1, 0), CUDA_ERROR_INVALID_VALUE); /* overlaps */
    EXPECT(cuMemMap(va + 4 * MB, 4 * MB, 0, h1, 0), CUDA_ERROR_INVALID_VALUE); /* past the reservation and h1 */

    static unsigned char in[4 * MB], out[4 * MB];
    fill(in, sizeof in, 7);
    /* mapped, no access yet: nothing reaches it (CUDA faults) */
    unsigned long long f = 99;
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CHECK(cuMemGetAccess(&f, &loc, va));
    TRUE(f == CU_MEM_ACCESS_FLAGS_PROT_NONE);
    EXPECT(cuMemcpyHtoD(va, in, 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK(access_set(va, 4 * MB, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)); /* both mappings in one call */
    CHECK(cuMemGetAccess(&f, &loc, va + 3 * MB));
    TRUE(f == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

    /* in and out, the two handles as one contiguous range */
    CHECK(cuMemcpyHtoD(va, in, sizeof in));
    memset(out, 0, sizeof out);
    CHECK(cuMemcpyDtoH(out, va, sizeof out));
    TRUE(!memcmp(in, out, sizeof in));
    memset(out, 0, sizeof out);
    CHECK(cuMemcpyDtoH(out, va + 2 * MB - 4096, 8192)); /* across the boundary */
    TRUE(!memcmp(in + 2 * MB - 4096, out, 8192));
    fill(in, 1 * MB, 99);
    CHECK(cuMemcpyHtoD(va + 3 * MB / 2, in, 1 * MB)); /* a write across it */
    CHECK(cuMemcpy((CUdeviceptr)(uintptr_t)out, va + 3 * MB / 2, 1 * MB)); /* unified: direction from the pointers */
    TRUE(!memcmp(in, out, 1 * MB));
    CUdeviceptr plain;
    CHECK(cuMemAlloc(&plain, 1 * MB));
    CHECK(cuMemcpyDtoD(plain, va + 3 * MB / 2, 1 * MB));
    memset(out, 0, 1 * MB);
    CHECK(cuMemcpyDtoH(out, plain, 1 * MB));
    TRUE(!memcmp(in, out, 1 * MB));
    CHECK(cuMemFree(plain));

    /* the pointer table knows the mappings */
    CUdeviceptr rb = 0;
    size_t rs = 0;
    CHECK(cuMemGetAddressRange(&rb, &rs, va + 2 * MB + 5));
    TRUE(rb == va + 2 * MB && rs == 2 * MB);
    unsigned mt = 0;
    CHECK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va + 100));
    TRUE(mt == CU_MEMORYTYPE_DEVICE);
    EXPECT(cuMemFree(va), CUDA_ERROR_INVALID_VALUE); /* VMM memory is not cuMemAlloc's */

    /* handles: properties, retain */
    CUmemAllocationProp q;
    memset(&q, 0, sizeof q);
    CHECK(cuMemGetAllocationPropertiesFromHandle(&q, h2));
    TRUE(q.type == CU_MEM_ALLOCATION_TYPE_PINNED && q.location.type == CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle r = 0;
    CHECK(cuMemRetainAllocationHandle(&r, (void *)(uintptr_t)(va + 3 * MB)));
    TRUE(r == h2);
    EXPECT(cuMemRetainAllocationHandle(&r, (void *)(uintptr_t)(va + 5 * MB)), CUDA_ERROR_INVALID_VALUE);

    /* release while mapped: the memory lives on, still charged */
    memset(out, 0, sizeof out);
    CHECK(cuMemcpyDtoH(out, va, 2 * MB));
    CHECK(cuMemRelease(h1));
    static unsigned char again[2 * MB];
    CHECK(cuMemcpyDtoH(again, va, 2 * MB));
    TRUE(!memcmp(out, again, 2 * MB));
    TRUE(used() == base + 4 * MB);
    EXPECT(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);

    /* read-only: reads pass, writes do not */
    CHECK(access_set(va + 2 * MB, 2 * MB, CU_MEM_ACCESS_FLAGS_PROT_READ));
    CHECK(cuMemcpyDtoH(out, va + 2 * MB, 4096));
    TRUE(cuMemcpyHtoD(va + 2 * MB, in, 4096) != CUDA_SUCCESS);
    CHECK(cuMemGetAccess(&f, &loc, va + 2 * MB));
    TRUE(f == CU_MEM_ACCESS_FLAGS_PROT_READ);

    /* unmap: access fails; h1 (released) is gone from the share */
    EXPECT(cuMemUnmap(va, 3 * MB), CUDA_ERROR_INVALID_VALUE); /* not whole mappings */
    EXPECT(cuMemAddressFree(va, 6 * MB), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    CHECK(cuMemUnmap(va, 2 * MB));
    EXPECT(cuMemcpyHtoD(va, in, 4096), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyDtoH(out, va, 4096), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemGetAddressRange(&rb, &rs, va), CUDA_ERROR_NOT_FOUND);
    TRUE(used() == base + 2 * MB);
    CHECK(cuMemUnmap(va + 2 * MB, 2 * MB));
    TRUE(used() == base + 2 * MB); /* h2 still has two references */
    CHECK(cuMemRelease(h2));
    TRUE(used() == base + 2 * MB);
    CHECK(cuMemRelease(h2));
    TRUE(used() == base);
    CHECK(cuMemAddressFree(va, 6 * MB));
    EXPECT(cuMemAddressFree(va, 6 * MB), CUDA_ERROR_INVALID_VALUE);

    /* the driver's refusals */
    CUmemGenericAllocationHandle h;
    EXPECT(cuMemCreate(&h, 1 * MB, &p, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemAddressReserve(&va, 3 * MB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemAddressReserve(&va, 4 * MB, 3 * MB, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp bad = p;
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST;
    EXPECT(cuMemCreate(&h, 2 * MB, &bad, 0), CUDA_ERROR_NOT_SUPPORTED);
    bad = p;
    bad.location.id = 1;
    EXPECT(cuMemCreate(&h, 2 * MB, &bad, 0), CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuMemAddressReserve(&va, 4 * MB, 0, 0, 0));
    CHECK(cuMemCreate(&h, 4 * MB, &p, 0));
    EXPECT(cuMemMap(va + 1 * MB, 2 * MB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* not aligned */
    EXPECT(cuMemMap(va, 2 * MB, 2 * MB, h, 0), CUDA_ERROR_NOT_SUPPORTED);    /* offset */
    EXPECT(cuMemMap(va, 2 * MB, 0, h + 1000, 0), CUDA_ERROR_INVALID_VALUE);   /* no such handle */
    int fd = -1;
    EXPECT(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_ERROR_NOT_SUPPORTED);
    CHECK(cuMemMap(va, 4 * MB, 0, h, 0)); /* not unmapped: the end of the process releases it */
    CHECK(access_set(va, 4 * MB, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    CHECK(cuMemcpyHtoD(va + 4 * MB - 4096, in, 4096));
}

/* 2 MiB handles until the share is full. */
static void oom(void)
{
    CUmemAllocationProp p = prop();
    CUmemGenericAllocationHandle h[256];
    int n = 0;
    CUresult r = CUDA_SUCCESS;
    while (n < 256 && (r = cuMemCreate(&h[n], 2 * MB, &p, 0)) == CUDA_SUCCESS)
        n++;
    TRUE(r == CUDA_ERROR_OUT_OF_MEMORY);
    size_t fr, tot;
    CHECK(cuMemGetInfo(&fr, &tot));
    TRUE(fr < 2 * MB);
    CHECK(cuMemRelease(h[--n]));
    CHECK(cuMemGetInfo(&fr, &tot));
    TRUE(fr >= 2 * MB);
    CHECK(cuMemCreate(&h[n++], 2 * MB, &p, 0)); /* room again */
    printf("oom %d\n", n);
}

static void hold(const char *dir)
{
    CUmemAllocationProp p = prop();
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CHECK(cuMemAddressReserve(&va, 4 * MB, 0, 0, 0));
    CHECK(cuMemCreate(&h, 4 * MB, &p, 0));
    CHECK(cuMemMap(va, 4 * MB, 0, h, 0));
    CHECK(access_set(va, 4 * MB, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    static unsigned char in[4 * MB], out[4 * MB];
    fill(in, sizeof in, 3);
    CHECK(cuMemcpyHtoD(va, in, sizeof in));
    char path[4096];
    snprintf(path, sizeof path, "%s/held.tmp", dir);
    FILE *fp = fopen(path, "w");
    if (!fp || fprintf(fp, "%llu %llu\n", (unsigned long long)va, (unsigned long long)h) < 0 || fclose(fp))
        exit(1);
    char fin[4096];
    snprintf(fin, sizeof fin, "%s/held", dir);
    rename(path, fin);
    snprintf(path, sizeof path, "%s/go", dir);
    while (access(path, F_OK))
        usleep(20000);
    CHECK(cuMemcpyDtoH(out, va, sizeof out));
    TRUE(!memcmp(in, out, sizeof in));
    snprintf(path, sizeof path, "%s/intact", dir);
    fp = fopen(path, "w");
    if (fp)
        fclose(fp);
    for (;;)
        pause();
}

static void foreign(CUdeviceptr va, CUmemGenericAllocationHandle h)
{
    static unsigned char b[4096];
    CUdeviceptr mine;
    CHECK(cuMemAddressReserve(&mine, 4 * MB, 0, 0, 0));
    EXPECT(cuMemMap(mine, 4 * MB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemUnmap(va, 4 * MB), CUDA_ERROR_INVALID_VALUE);
    EXPECT(access_set(va, 4 * MB, CU_MEM_ACCESS_FLAGS_PROT_READ), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemAddressFree(va, 4 * MB), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyHtoD(va, b, sizeof b), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyDtoH(b, va, sizeof b), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAddressFree(mine, 4 * MB));
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    check_primary_context();
    if (!strcmp(argv[1], "basic"))
        basic();
    else if (!strcmp(argv[1], "oom"))
        oom();
    else if (!strcmp(argv[1], "hold") && argc == 3)
        hold(argv[2]);
    else if (!strcmp(argv[1], "foreign") && argc == 4)
        foreign(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
    else
        return 2;
    if (fails)
        return 1;
    if (strcmp(argv[1], "oom"))
        printf("ok\n");
    return 0;
}
