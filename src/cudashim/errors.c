/* SPDX-License-Identifier: Apache-2.0 */
/* errors.c: cuGetErrorName / cuGetErrorString of gpuos's libcuda. Names of
 * every CUresult of the cuda.h at hand (generated errors.inc); the usual
 * messages for the common ones, the name for the rest. */
#include <cuda.h>

#include "cudashim/shim.h"

#include <stddef.h>
#include <string.h>

static const struct {
    CUresult r;
    const char *name;
} names[] = {
#define E(x) {x, #x},
#include "errors.inc"
#undef E
};

static const struct {
    CUresult r;
    const char *text;
} texts[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "device not ready"},
    {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"},
    {CUDA_ERROR_NOT_PERMITTED, "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"},
    {CUDA_ERROR_UNKNOWN, "unknown error"},
};

SHIM_EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].r == r) {
            *s = names[i].name;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

SHIM_EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (texts[i].r == r) {
            *s = texts[i].text;
            return CUDA_SUCCESS;
        }
    return cuGetErrorName(r, s);
}

/* The CUresult a device error's message names ("... CUDA_ERROR_ILLEGAL_ADDRESS:
 * ..." from the daemon's driver), 0 when it names none. */
int shim_error_from_text(const char *msg)
{
    const char *p = msg ? strstr(msg, "CUDA_ERROR_") : NULL;
    if (!p)
        return 0;
    size_t n = 0;
    while ((p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9') || p[n] == '_')
        n++;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && !strncmp(names[i].name, p, n))
            return (int)names[i].r;
    return 0;
}
