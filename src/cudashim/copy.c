/* SPDX-License-Identifier: Apache-2.0 */
/* copy.c: copies and memset of gpuos's libcuda.so.1 (in the CUDA program's
 * process). Every stream is the client's one queue: an asynchronous copy is
 * queued in order, a synchronous one waits for its own completion. Unified
 * pointers are classified by the library's allocation tables (memory.c). */
#include "cudashim/driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUresult htoh(void *dst, const void *src, size_t n)
{
    NEED_CTX();
    shim_sync(); /* stream order: earlier copies into src first */
    memmove(dst, src, n);
    return CUDA_SUCCESS;
}

/* The page-locked host memory (cuMemHostAlloc, cuMemHostRegister) that a
 * "device" address of n bytes names by its unified address, NULL when it is
 * not such (a device allocation of the same number stays device memory): XLA
 * clears and reads its host-mapped flags so. */
static void *pinned_at(CUdeviceptr d, size_t n)
{
    struct range h;
    if (ranges_find(d, NULL) || !host_find((void *)(uintptr_t)d, &h) || n > h.p + h.n - d)
        return NULL;
    return (void *)(uintptr_t)d;
}

CUresult shim_htod(CUdeviceptr dst, const void *src, size_t n, int async)
{
    NEED_CTX();
    shim_hf_before(async);
    if (!n)
        return CUDA_SUCCESS;
    if (!src || !dst)
        return CUDA_ERROR_INVALID_VALUE;
    void *hd = pinned_at(dst, n);
    if (hd)
        return htoh(hd, src, n);
    int rc = async ? queued_one(gpuos_memcpy_htod_async(shim_proc.g, dst, src, n))
                   : gpuos_memcpy_htod(shim_proc.g, dst, src, n);
    return map_rc(rc, "cuMemcpyHtoD");
}
CUresult shim_dtoh(void *dst, CUdeviceptr src, size_t n, int async)
{
    NEED_CTX();
    shim_hf_before(async);
    if (!n)
        return CUDA_SUCCESS;
    if (!src || !dst)
        return CUDA_ERROR_INVALID_VALUE;
    void *hs = pinned_at(src, n);
    if (hs)
        return htoh(dst, hs, n);
    int rc = async ? queued_one(gpuos_memcpy_dtoh_async(shim_proc.g, dst, src, n))
                   : gpuos_memcpy_dtoh(shim_proc.g, dst, src, n);
    return map_rc(rc, "cuMemcpyDtoH");
}
CUresult shim_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, int async)
{
    NEED_CTX();
    shim_hf_before(async);
    if (!n)
        return CUDA_SUCCESS;
    if (!src || !dst)
        return CUDA_ERROR_INVALID_VALUE;
    void *hd = pinned_at(dst, n), *hs = pinned_at(src, n);
    if (hd && hs)
        return htoh(hd, hs, n);
    if (hd || hs)
        return hd ? shim_dtoh(hd, src, n, async) : shim_htod(dst, hs, n, async);
    int rc = async ? queued_one(gpuos_memcpy_dtod_async(shim_proc.g, dst, src, n))
                   : gpuos_memcpy_dtod(shim_proc.g, dst, src, n);
    return map_rc(rc, "cuMemcpyDtoD");
}

/* Unified addressing: which side each pointer is on, from the allocations. */
static CUresult copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n, int async)
{
    int dd = ranges_find(dst, NULL), sd = ranges_find(src, NULL);
    if (dd && sd)
        return shim_dtod(dst, src, n, async);
    if (dd)
        return shim_htod(dst, (const void *)(uintptr_t)src, n, async);
    if (sd)
        return shim_dtoh((void *)(uintptr_t)dst, src, n, async);
    return htoh((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
}

E CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { return shim_htod(d, s, n, 0); }
E CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { return shim_dtoh(d, s, n, 0); }
E CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return shim_dtod(d, s, n, 0); }
E CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy_any(d, s, n, 0); }

E CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
    if (shim_capturing(st))
        return shim_capture_copy(0, d, (uint64_t)(uintptr_t)s, n);
    return stream_ok(st) ? shim_htod(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;
}
E CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st)
{
    if (shim_capturing(st))
        return shim_capture_copy(1, (uint64_t)(uintptr_t)d, s, n);
    return stream_ok(st) ? shim_dtoh(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;
}
E CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    if (shim_capturing(st))
        return shim_capture_copy(2, d, s, n);
    return stream_ok(st) ? shim_dtod(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;
}
E CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    if (shim_capturing(st)) {
        int dd = ranges_find(d, NULL), sd = ranges_find(s, NULL);
        if (!dd && !sd)
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* host to host */
        return shim_capture_copy(dd && sd ? 2 : dd ? 0 : 1, d, s, n);
    }
    return stream_ok(st) ? copy_any(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;
}

/* 2D copies: one copy when both sides are contiguous rows, else row by row (in
 * queue order; arrays are not supported). Unified pointers are classified by the
 * allocation table. */
static CUresult copy2d(const CUDA_MEMCPY2D *c, int async)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    CUmemorytype st = c->srcMemoryType, dt = c->dstMemoryType;
    if (st == CU_MEMORYTYPE_ARRAY || dt == CU_MEMORYTYPE_ARRAY)
        return shim_unsupported("cuMemcpy2D (CUDA arrays)");
    uint64_t sp = st == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)c->srcHost : c->srcDevice;
    uint64_t dp = dt == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)c->dstHost : c->dstDevice;
    if (st == CU_MEMORYTYPE_UNIFIED)
        st = ranges_find(sp, NULL) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    if (dt == CU_MEMORYTYPE_UNIFIED)
        dt = ranges_find(dp, NULL) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    size_t spitch = c->srcPitch ? c->srcPitch : c->WidthInBytes, dpitch = c->dstPitch ? c->dstPitch : c->WidthInBytes;
    if (spitch < c->WidthInBytes || dpitch < c->WidthInBytes || !sp || !dp)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c->Height || !c->WidthInBytes)
        return CUDA_SUCCESS;
    /* both sides' first byte and whole extent without wrapping (issue 23.5) */
    uint64_t so, dO, sx, dx;
    if (!shim_span(c->srcXInBytes, c->srcY, spitch, &so) || !shim_span(c->dstXInBytes, c->dstY, dpitch, &dO) ||
        so + c->srcXInBytes > UINT64_MAX - sp || dO + c->dstXInBytes > UINT64_MAX - dp)
        return CUDA_ERROR_INVALID_VALUE;
    sp += so + c->srcXInBytes;
    dp += dO + c->dstXInBytes;
    if (!shim_span(sp, c->Height - 1, spitch, &sx) || !shim_span(dp, c->Height - 1, dpitch, &dx) ||
        c->WidthInBytes > UINT64_MAX - sp - sx || c->WidthInBytes > UINT64_MAX - dp - dx)
        return CUDA_ERROR_INVALID_VALUE;
    size_t rows = c->Height, w = c->WidthInBytes;
    if (spitch == w && dpitch == w) {
        w *= rows;
        rows = 1;
    }
    CUresult r = CUDA_SUCCESS;
    for (size_t y = 0; y < rows && !r; y++) {
        uint64_t s1 = sp + y * spitch, d1 = dp + y * dpitch;
        if (st == CU_MEMORYTYPE_DEVICE && dt == CU_MEMORYTYPE_DEVICE)
            r = shim_dtod(d1, s1, w, async);
        else if (dt == CU_MEMORYTYPE_DEVICE)
            r = shim_htod(d1, (const void *)(uintptr_t)s1, w, async);
        else if (st == CU_MEMORYTYPE_DEVICE)
            r = shim_dtoh((void *)(uintptr_t)d1, s1, w, async);
        else
            r = htoh((void *)(uintptr_t)d1, (const void *)(uintptr_t)s1, w);
    }
    return r;
}
E CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c) { return copy2d(c, 0); }
E CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *c) { return copy2d(c, 0); }
E CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s)
{
    return stream_ok(s) ? copy2d(c, 1) : CUDA_ERROR_INVALID_HANDLE;
}

/* 3D copies without arrays: each slice is a 2D copy (a slice's rows follow the
 * previous slice's in the pitched layout: row y of slice z is row y + z * Height). */
static CUresult copy3d(const CUDA_MEMCPY3D *c, int async)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->srcLOD || c->dstLOD || c->reserved0 || c->reserved1)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    for (size_t z = 0; z < c->Depth && !r; z++) {
        CUDA_MEMCPY2D s = {
            .srcXInBytes = c->srcXInBytes, .srcY = c->srcY + (c->srcZ + z) * c->srcHeight,
            .srcMemoryType = c->srcMemoryType, .srcHost = c->srcHost, .srcDevice = c->srcDevice,
            .srcArray = c->srcArray, .srcPitch = c->srcPitch,
            .dstXInBytes = c->dstXInBytes, .dstY = c->dstY + (c->dstZ + z) * c->dstHeight,
            .dstMemoryType = c->dstMemoryType, .dstHost = c->dstHost, .dstDevice = c->dstDevice,
            .dstArray = c->dstArray, .dstPitch = c->dstPitch,
            .WidthInBytes = c->WidthInBytes, .Height = c->Height};
        if ((z || c->srcZ) && !c->srcHeight)
            return CUDA_ERROR_INVALID_VALUE;
        if ((z || c->dstZ) && !c->dstHeight)
            return CUDA_ERROR_INVALID_VALUE;
        r = copy2d(&s, async);
    }
    return r;
}
E CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *c) { return copy3d(c, 0); }
E CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *c, CUstream s)
{
    return stream_ok(s) ? copy3d(c, 1) : CUDA_ERROR_INVALID_HANDLE;
}

/* A 3D peer copy: the same copy (one device; both contexts are the client's). */
static CUresult copy3d_peer(const CUDA_MEMCPY3D_PEER *p, int async)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((p->srcContext && !ctx_ok(p->srcContext)) || (p->dstContext && !ctx_ok(p->dstContext)))
        return CUDA_ERROR_INVALID_CONTEXT;
    CUDA_MEMCPY3D c = {.srcXInBytes = p->srcXInBytes, .srcY = p->srcY, .srcZ = p->srcZ, .srcLOD = p->srcLOD,
                       .srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost, .srcDevice = p->srcDevice,
                       .srcArray = p->srcArray, .srcPitch = p->srcPitch, .srcHeight = p->srcHeight,
                       .dstXInBytes = p->dstXInBytes, .dstY = p->dstY, .dstZ = p->dstZ, .dstLOD = p->dstLOD,
                       .dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost, .dstDevice = p->dstDevice,
                       .dstArray = p->dstArray, .dstPitch = p->dstPitch, .dstHeight = p->dstHeight,
                       .WidthInBytes = p->WidthInBytes, .Height = p->Height, .Depth = p->Depth};
    return copy3d(&c, async);
}
E CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p) { return copy3d_peer(p, 0); }
E CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    return stream_ok(s) ? copy3d_peer(p, 1) : CUDA_ERROR_INVALID_HANDLE;
}

/* A batch of copies: each in queue order, directions by the allocation tables
 * (the attributes are hints: access order, locations, compression). */
E CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                 CUmemcpyAttributes *attrs, size_t *attr_idx, size_t n_attrs, CUstream s)
{
    if (count && (!dsts || !srcs || !sizes))
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (shim_capturing(s))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < count && !r; i++)
        r = copy_any(dsts[i], srcs[i], sizes[i], 1);
    return r;
}
/* The first form reports the failing copy's index. */
E CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                              CUmemcpyAttributes *attrs, size_t *attr_idx, size_t n_attrs, size_t *fail, CUstream s)
{
    if (count && (!dsts || !srcs || !sizes))
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = CUDA_SUCCESS;
    size_t i;
    for (i = 0; i < count && !r; i++)
        r = copy_any(dsts[i], srcs[i], sizes[i], 1);
    if (fail)
        *fail = r ? i - 1 : ~(size_t)0;
    return r;
}

/* One device: a peer copy is a device-to-device copy (both contexts are the
 * process's one client). */
E CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
{
    NEED_INIT();
    if (!ctx_ok(dc) || !ctx_ok(sc))
        return CUDA_ERROR_INVALID_CONTEXT;
    return shim_dtod(d, s, n, 0);
}
E CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st)
{
    NEED_INIT();
    if (!ctx_ok(dc) || !ctx_ok(sc))
        return CUDA_ERROR_INVALID_CONTEXT;
    return stream_ok(st) ? shim_dtod(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;
}


#define FILL_MIN (64u << 10) /* below this a host copy is as quick as a launch */

/* n bytes of elem-byte copies of v (little-endian: the low bytes of v). */
static void pattern(unsigned char *b, size_t n, unsigned v, size_t elem)
{
    for (size_t i = 0; i < n; i += elem)
        memcpy(b + i, &v, elem);
}

/* Memset: the 4-byte-aligned middle by the built-in fill kernel on the device
 * (asynchronous, in queue order), the rest (and everything when there is no
 * fill kernel) as a pattern written on the host and copied. */
static int host_pattern(CUdeviceptr d, unsigned v, size_t elem, size_t bytes, int async)
{
    size_t chunk = bytes < (8u << 20) ? bytes : (8u << 20);
    unsigned char *b = malloc(chunk);
    if (!b)
        return GPUOS_ENOMEM;
    pattern(b, chunk, v, elem);
    int rc = 0;
    for (size_t off = 0; off < bytes && !rc; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        rc = async ? queued_one(gpuos_memcpy_htod_async(shim_proc.g, d + off, b, n))
                   : gpuos_memcpy_htod(shim_proc.g, d + off, b, n);
    }
    free(b);
    return rc;
}

CUresult shim_memset(CUdeviceptr d, unsigned v, size_t elem, size_t count, int async)
{
    NEED_CTX();
    shim_hf_before(async);
    if (!count)
        return CUDA_SUCCESS;
    uint64_t span;
    if (!d || (d % elem) || !shim_span(d, count, elem, &span) || span > SIZE_MAX)
        return CUDA_ERROR_INVALID_VALUE; /* a count whose bytes wrap set nothing, never "success" */
    size_t bytes = (size_t)span;
    if (pinned_at(d, bytes)) {
        /* page-locked host memory by its unified address (XLA's autotuner
         * clears a host-mapped flag so): set on the host once the stream's
         * earlier work is done, as it would be in queue order */
        int src = shim_sync();
        if (src)
            return map_rc(src, "cuMemset");
        pattern((unsigned char *)(uintptr_t)d, bytes, v, elem);
        return CUDA_SUCCESS;
    }
    int rc = shim_ext_memset(shim_proc.g, d, v, (int)elem, count, async);
    if (rc != GPUOS_EUNSUPPORTED)
        return map_rc(rc, "cuMemset");
    uint64_t a = (d + 3) & ~(uint64_t)3, e = (d + bytes) & ~(uint64_t)3;
    gpuos_function f = a < e && e - a >= FILL_MIN ? builtin_fn(BI_FILL) : 0;
    if (!f)
        return map_rc(host_pattern(d, v, elem, bytes, async), "cuMemset");
    uint32_t word = elem == 1 ? (v & 0xffu) * 0x01010101u : elem == 2 ? (v & 0xffffu) * 0x00010001u : v;
    rc = a > d ? host_pattern(d, v, elem, (size_t)(a - d), 1) : 0;
    if (!rc) {
        struct {
            uint64_t p;
            uint32_t value, pad;
            uint64_t count;
        } prm = {a, word, 0, (e - a) / 4};
        uint64_t blocks = (prm.count + 255) / 256;
        gpuos_launch_config c = {.grid = {(unsigned)(blocks < 1056 ? blocks : 1056), 1, 1}, .block = {256, 1, 1}};
        rc = queued_one(gpuos_launch(shim_proc.g, f, &c, &prm, sizeof prm));
    }
    if (!rc && d + bytes > e)
        rc = host_pattern(e, v, elem, (size_t)(d + bytes - e), 1);
    if (!rc && !async)
        rc = shim_sync();
    return map_rc(rc, "cuMemset");
}

E CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return shim_memset(d, v, 1, n, 0); }
E CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { return shim_memset(d, v, 2, n, 0); }
E CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) { return shim_memset(d, v, 4, n, 0); }
E CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    if (shim_capturing(s))
        return shim_capture_memset(d, v, 1, n);
    return stream_ok(s) ? shim_memset(d, v, 1, n, 1) : CUDA_ERROR_INVALID_HANDLE;
}
E CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    if (shim_capturing(s))
        return shim_capture_memset(d, v, 2, n);
    return stream_ok(s) ? shim_memset(d, v, 2, n, 1) : CUDA_ERROR_INVALID_HANDLE;
}
E CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    if (shim_capturing(s))
        return shim_capture_memset(d, v, 4, n);
    return stream_ok(s) ? shim_memset(d, v, 4, n, 1) : CUDA_ERROR_INVALID_HANDLE;
}


/* 2D memset: one memset when the rows are contiguous, else one per row (queued
 * in order; the synchronous forms wait once at the end). */
static CUresult memset_2d(CUdeviceptr d, size_t pitch, unsigned v, size_t elem, size_t w, size_t h, int async)
{
    NEED_CTX();
    if (!w || !h)
        return CUDA_SUCCESS;
    uint64_t row, all;
    if (!shim_span(0, w, elem, &row) || pitch < row || !shim_span(d, h - 1, pitch, &all) || row > UINT64_MAX - d - all)
        return CUDA_ERROR_INVALID_VALUE; /* rows whose extent wraps (issue 23.5) */
    if (pitch == w * elem)
        return shim_memset(d, v, elem, w * h, async);
    CUresult r = CUDA_SUCCESS;
    for (size_t y = 0; y < h && !r; y++)
        r = shim_memset(d + y * pitch, v, elem, w, 1);
    if (!r && !async)
        r = map_rc(shim_sync(), "cuMemsetD2D");
    return r;
}
E CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h)
{
    return memset_2d(d, pitch, v, 1, w, h, 0);
}
E CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h)
{
    return memset_2d(d, pitch, v, 2, w, h, 0);
}
E CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h)
{
    return memset_2d(d, pitch, v, 4, w, h, 0);
}
E CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s)
{
    return stream_ok(s) ? memset_2d(d, pitch, v, 1, w, h, 1) : CUDA_ERROR_INVALID_HANDLE;
}
E CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s)
{
    return stream_ok(s) ? memset_2d(d, pitch, v, 2, w, h, 1) : CUDA_ERROR_INVALID_HANDLE;
}
E CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s)
{
    return stream_ok(s) ? memset_2d(d, pitch, v, 4, w, h, 1) : CUDA_ERROR_INVALID_HANDLE;
}
