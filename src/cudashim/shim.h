/* SPDX-License-Identifier: Apache-2.0 */
/* shim.h: internals of gpuos's libcuda.so.1 (src/cudashim/, docs/readme-cudashim.md).
 *
 * The library is loaded by unmodified CUDA programs instead of NVIDIA's libcuda
 * and carries every Driver API call out through libgpuos (include/gpuos/gpuos.h)
 * on a virtual GPU of a running `gpuos serve`. It never loads NVIDIA's driver
 * (tensor maps are the daemon's, tmap.c), unless the operator opts in with
 * GPUOS_CUDASHIM_LT=real for cuBLASLt's private table (real.c, exports.c).
 * This header has no CUDA types: image.c and procaddr.c are compiled without
 * cuda.h (the generated stubs have no prototypes). */
#ifndef GOS_CUDASHIM_H
#define GOS_CUDASHIM_H

#include <stddef.h>
#include <stdint.h>

#define SHIM_EXPORT __attribute__((visibility("default")))

/* CUresult values used by the files without cuda.h (same numbers as cuda.h). */
enum {
    SHIM_SUCCESS = 0,
    SHIM_ERROR_INVALID_VALUE = 1,
    SHIM_ERROR_NOT_FOUND = 500,
    SHIM_ERROR_NOT_SUPPORTED = 801,
};

/* Names an entry point that is not implemented, once per process, on stderr
 * ("gpuos libcuda: cuXxx is not supported"), and returns
 * CUDA_ERROR_NOT_SUPPORTED. */
int shim_unsupported(const char *name);

/* The CUresult a daemon's device error message names (errors.c), 0 if none. */
int shim_error_from_text(const char *msg);

/* $GPUOS_CUDASHIM_TRACE set: every cuGetProcAddress / cuGetExportTable request
 * and every failing call is logged on stderr. */
int shim_trace(void);
void shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- images (image.c): fatbin containers, cubins (ELF), PTX ---- */
#define SHIM_MAX_PARAMS 256
struct shim_kinfo {
    int found;                 /* the cubin describes this kernel */
    int nparams;
    uint16_t off[SHIM_MAX_PARAMS], size[SHIM_MAX_PARAMS];
    int param_bytes;           /* total, from the parameter bank size */
    int regs, shared_bytes, local_bytes, const_bytes, max_threads;
    int reserved_smem; /* its .nv.shared section starts with the 1 KiB the system reserves (sm_90) */
};

/* Size of an image given by pointer only (cuModuleLoadData; behind the
 * runtime's wrapper: the container's): fatbin container (header + payload),
 * ELF (end of the header tables or of the last section), or PTX text
 * (NUL-terminated). What the headers claim is bounded (GOS_IMG_MAX), must hold
 * together, and its end must be readable: 0 when not (a malformed image). */
size_t shim_image_size(const void *image);

/* Whether an image of known length holds together where the reader will walk
 * it (a fatbin's header, an ELF's header, section table and names inside its
 * bytes): 0, or -1 with a reason in why (CUDA_ERROR_INVALID_IMAGE). */
int shim_image_check(const void *image, size_t bytes, char *why, size_t why_len);

/* 0 when the image (bytes long) is a fatbin container with neither a cubin
 * this GPU runs (compute capability cc: same major, no higher minor) nor PTX
 * it can compile (libraries ship containers for other GPUs only: sm_100,
 * sm_120). */
int shim_image_runs(const void *image, size_t bytes, int cc);

/* 1 when [p, p + n) lies in a read-only segment of a loaded object (a
 * library's or the program's fatbin section): it lives as long as the object. */
int shim_image_mapped(const void *p, size_t n);

/* One line for the trace: the container's entries (sm_90, ptx90, z = compressed). */
void shim_image_describe(const void *image, size_t bytes, char *buf, size_t len);

/* The image itself: a fatbin container behind the runtime's wrapper
 * (__fatBinC_Wrapper_t, magic 0x466243b1) is where the wrapper points. Only
 * for an image given by pointer alone: a file's bytes are never followed. */
const void *shim_image_unwrap(const void *image);

/* The kernel `name` in the image (bytes long, not behind a wrapper) for
 * compute capability major*10+minor: the
 * cubin of that architecture (or the nearest lower one of the same major) in a
 * fatbin, or the image itself when it is a cubin. info->found = 0 when the
 * image holds no such cubin (PTX only, compressed entries, unknown kernel).
 * `why` (may be NULL) receives a short reason when not found. */
void shim_image_kernel(const void *image, size_t bytes, int cc, const char *name, struct shim_kinfo *info,
                       char *why, size_t why_len);

/* Size and offset of global `name` in the cubin's data, for cuModuleGetGlobal
 * (the device address itself needs the daemon: see daemon_ext.c). */
int shim_image_global(const void *image, size_t bytes, int cc, const char *name, uint64_t *size);

/* ---- cuGetProcAddress (procaddr.c) ---- */
/* The entry point for `symbol` (a base name such as "cuMemAlloc") as a caller
 * built for CUDA `version` knows it: the newest signature of the name no newer
 * than `version` (per-thread-default-stream variant when `ptds`), an
 * implementation or a stub naming itself. NULL when the name is unknown, or,
 * with *too_old set, when it is newer than `version`. */
void *shim_proc_lookup(const char *symbol, int version, int ptds, int *too_old);

/* Issue 23.5: the bytes of count elements of elem bytes at p, into *bytes, when
 * neither the product nor p + bytes wraps (else 0: CUDA_ERROR_INVALID_VALUE,
 * before anything is touched). Self-contained: every file of the shim may use it. */
static inline int shim_span(uint64_t p, uint64_t count, uint64_t elem, uint64_t *bytes)
{
    uint64_t b;
    if (__builtin_mul_overflow(count, elem, &b) || b > UINT64_MAX - p)
        return 0;
    *bytes = b;
    return 1;
}

#endif
