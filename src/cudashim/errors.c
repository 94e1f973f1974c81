/* errors.c: cuGetErrorName / cuGetErrorString of gpuos's libcuda. Names of
 * every CUresult of the cuda.h at hand (generated errors.inc); the usual
 * messages for the common ones, the name for the rest. */
#include <cuda.h>

#include "cudashim/shim.h"

#include <stddef.h>

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
