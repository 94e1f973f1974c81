/* SPDX-License-Identifier: Apache-2.0 */
/* module.c: modules, libraries and kernels of gpuos's libcuda.so.1 (in the
 * CUDA program's process). A module is loaded by the daemon's device from the
 * image's bytes; the library reads each kernel's parameter layout from the same
 * bytes (image.c). Libraries are modules and kernels functions: one handle
 * serves as both. */
#include "cudashim/driver.h"

#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a refused module load is for the program: the error the daemon's driver
 * named, INVALID_IMAGE for an image it refused, NO_BINARY_FOR_GPU for one the
 * device cannot run (a simulated device and a real image: said once). */
static CUresult load_error(int rc)
{
    int named = rc == GPUOS_EDEVICE ? shim_error_from_text(gpuos_error()) : 0;
    CUresult r = named                                     ? (CUresult)named
                 : rc == GPUOS_EINVAL || rc == GPUOS_EDEVICE ? CUDA_ERROR_INVALID_IMAGE
                 : rc == GPUOS_EUNSUPPORTED                ? CUDA_ERROR_NO_BINARY_FOR_GPU
                                                           : map_rc(rc, "cuModuleLoadData");
    if (shim_trace())
        shim_log("module load: %s", gpuos_error());
    else if (rc == GPUOS_EUNSUPPORTED) {
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            shim_log("module load: %s", gpuos_error());
    }
    return r;
}

/* A lazy library is carried to the daemon at its first kernel's use. */
static pthread_mutex_t lazy_lock = PTHREAD_MUTEX_INITIALIZER;
static CUresult mod_ensure(struct CUmod_st *m)
{
    if (m->nocode)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    pthread_mutex_lock(&lazy_lock);
    int rc = m->loaded ? GPUOS_OK : gpuos_module_load(shim_proc.g, m->image, m->bytes, &m->h);
    if (!rc)
        m->loaded = 1;
    pthread_mutex_unlock(&lazy_lock);
    return rc ? load_error(rc) : CUDA_SUCCESS;
}

/* No such kernel: the simulated device says EINVAL, the GPU's driver
 * CUDA_ERROR_NOT_FOUND (EDEVICE through the daemon). */
static CUresult lookup(struct CUmod_st *m, const char *name, gpuos_function *h)
{
    int rc = gpuos_module_function(shim_proc.g, m->h, name, h);
    if (rc && shim_trace())
        shim_log("%s: %s", name, gpuos_error());
    return !rc ? CUDA_SUCCESS
           : rc == GPUOS_EINVAL || rc == GPUOS_EDEVICE ? CUDA_ERROR_NOT_FOUND
                                                        : map_rc(rc, "cuModuleGetFunction");
}

CUresult shim_func_resolve(struct CUfunc_st *f)
{
    if (f->h || f->mod->builtin)
        return CUDA_SUCCESS;
    if (f->mod->nocode) {
        shim_log("%s: its library has no code for this GPU", f->name);
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    CUresult r = mod_ensure(f->mod);
    pthread_mutex_lock(&lazy_lock);
    if (!r && !f->h)
        r = lookup(f->mod, f->name, &f->h);
    pthread_mutex_unlock(&lazy_lock);
    return r;
}

/* Loads an image: `bytes` when the caller knows its size (a file, a link's
 * output), else 0 and its size is read from the image. `lazy` (libraries, and
 * the runtime's registrations of its fatbins): the image is kept here and
 * carried to the daemon at its first kernel's use, as the driver's lazy loading
 * (CUDA_MODULE_LOADING=LAZY, the default) does: PyTorch's libraries register
 * thousands of fatbins and use a few. A lazy image may hold no code for this
 * GPU at all, as cuBLAS and cuDNN ship containers for other GPUs only: it loads
 * (m->nocode), and only a kernel taken from it fails, at its launch. */
static CUresult mod_load_in(struct CUmod_st **out, const void *image, size_t bytes, int need_ctx, int lazy)
{
    if (!out || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if (need_ctx)
        NEED_CTX();
    else
        NEED_INIT();
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->magic = MAGIC_MOD;
    int rc = 0;
    if (!strncmp(image, BUILTIN_ESCAPE, strlen(BUILTIN_ESCAPE))) {
        m->builtin = 1;
        rc = gpuos_module_load_builtin(shim_proc.g, "builtin", &m->h);
        m->loaded = !rc;
    } else {
        /* the wrapper cudart hands over points at the container itself; a
         * container in a loaded object's fatbin section (the runtime's
         * registrations: PyTorch's come to gigabytes) is used where it lies */
        const void *from = bytes ? image : shim_image_unwrap(image);
        m->bytes = bytes ? bytes : shim_image_size(image);
        char why[160];
        if (!from || !m->bytes || shim_image_check(from, m->bytes, why, sizeof why)) {
            /* issue 44.6: refused before anything walks it */
            if (from && m->bytes)
                gos_log(LOG_NOTICE, "module load: a malformed image: %s", why);
            else
                gos_log(LOG_NOTICE, "module load: a malformed image (its headers claim an impossible size)");
            free(m);
            return CUDA_ERROR_INVALID_IMAGE;
        }
        m->nocode = lazy && !shim_image_runs(from, m->bytes, shim_proc.cc);
        m->borrowed = lazy && !bytes && shim_image_mapped(from, m->bytes);
        m->image = m->borrowed ? (void *)from : malloc(m->bytes);
        if (!m->image) {
            free(m);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (!m->borrowed)
            memcpy(m->image, from, m->bytes);
        if (shim_trace()) {
            char d[512];
            shim_image_describe(from, m->bytes, d, sizeof d);
            shim_log("module load: %s%s%s%s", d, from != image ? " (behind a wrapper)" : "",
                     m->nocode ? ": no code for this GPU, its kernels fail" : lazy ? ": lazily, at its first kernel's use" : "",
                     m->borrowed ? " (used in place)" : "");
        }
        if (!lazy) {
            rc = gpuos_module_load(shim_proc.g, m->image, m->bytes, &m->h);
            m->loaded = !rc;
        }
    }
    if (rc) {
        CUresult r = load_error(rc);
        if (!m->borrowed)
            free(m->image);
        free(m);
        return r;
    }
    *out = m;
    return CUDA_SUCCESS;
}

static CUresult mod_load(struct CUmod_st **out, const void *image) { return mod_load_in(out, image, 0, 1, 0); }

CUresult shim_module_load(CUmodule *m, const void *image, int lazy)
{
    return mod_load_in((struct CUmod_st **)m, image, 0, 1, lazy);
}

E CUresult cuModuleLoadData(CUmodule *m, const void *image) { return mod_load((struct CUmod_st **)m, image); }
E CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *o, void **v)
{
    return mod_load((struct CUmod_st **)m, image);
}
E CUresult cuModuleLoadFatBinary(CUmodule *m, const void *image) { return mod_load((struct CUmod_st **)m, image); }

/* A whole image file, NUL-terminated (text images need it); *bytes is what
 * to carry: the file, and its NUL when it is text (PTX). */
static CUresult read_image(const char *path, char **img, size_t *bytes)
{
    *img = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    CUresult r = CUDA_ERROR_INVALID_IMAGE;
    long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (n > 0 && !fseek(f, 0, SEEK_SET) && (*img = calloc(1, (size_t)n + 1)) &&
        fread(*img, 1, (size_t)n, f) == (size_t)n) {
        uint32_t magic;
        memcpy(&magic, *img, sizeof magic);
        int binary = magic == 0xBA55ED50u || !memcmp(*img, "\177ELF", 4);
        *bytes = (size_t)n + !binary;
        r = CUDA_SUCCESS;
    }
    fclose(f);
    if (r) {
        free(*img);
        *img = NULL;
    }
    return r;
}

E CUresult cuModuleLoad(CUmodule *m, const char *path)
{
    if (!m || !path)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    char *img;
    size_t n;
    CUresult r = read_image(path, &img, &n);
    if (!r)
        r = mod_load_in((struct CUmod_st **)m, img, n, 1, 0);
    free(img);
    return r;
}

int mod_ok(const struct CUmod_st *m) { return m && m->magic == MAGIC_MOD; }
int func_ok(const struct CUfunc_st *f) { return f && f->magic == MAGIC_FN; }

E CUresult cuModuleUnload(CUmodule m)
{
    NEED_INIT();
    if (!mod_ok(m))
        return CUDA_ERROR_INVALID_HANDLE;
    shim_sync();
    CUresult r = !m->loaded ? CUDA_SUCCESS : map_rc(gpuos_module_unload(shim_proc.g, m->h), "cuModuleUnload");
    m->magic = MAGIC_DEAD;
    if (!m->borrowed)
        free(m->image);
    return r;
}

/* The built-in kernels' parameter layouts (kernels/exec.cu). */
static void builtin_layout(const char *name, struct shim_kinfo *k)
{
    static const struct {
        const char *name;
        int n;
        uint16_t off[4], size[4];
    } t[] = {{"sleep_ns", 1, {0}, {8}},
             {"loop", 1, {0}, {8}},
             {"madd", 4, {0, 8, 16, 24}, {8, 8, 8, 4}},
             {"mmul", 4, {0, 8, 16, 24}, {8, 8, 8, 4}},
             {"fill", 4, {0, 8, 12, 16}, {8, 4, 4, 8}},
             {"stamp", 1, {0}, {8}},
             {"empty", 0, {0}, {0}}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].name, name)) {
            k->found = 1;
            k->nparams = t[i].n;
            for (int j = 0; j < t[i].n; j++) {
                k->off[j] = t[i].off[j];
                k->size[j] = t[i].size[j];
            }
            k->param_bytes = t[i].n ? t[i].off[t[i].n - 1] + t[i].size[t[i].n - 1] : 0;
            k->max_threads = 1024;
            k->regs = 32;
        }
}

static CUresult func_get(struct CUfunc_st **out, struct CUmod_st *m, const char *name)
{
    if (!out || !name)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!mod_ok(m))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUfunc_st *f = calloc(1, sizeof *f);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* a kernel of a library not loaded yet (lazily, or without code for this
     * GPU) is resolved at its first use (shim_func_resolve), as the driver's lazy
     * loading does; the others are looked up now */
    CUresult r = m->loaded ? lookup(m, name, &f->h) : CUDA_SUCCESS;
    if (r) {
        free(f);
        return r;
    }
    f->magic = MAGIC_FN;
    f->mod = m;
    snprintf(f->name, sizeof f->name, "%s", name);
    if (m->builtin)
        builtin_layout(name, &f->k);
    else
        shim_image_kernel(m->image, m->bytes, shim_proc.cc, name, &f->k, f->why, sizeof f->why);
    f->max_dyn_smem = 49152 - f->k.shared_bytes;
    *out = f;
    return CUDA_SUCCESS;
}

E CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    return func_get((struct CUfunc_st **)f, m, name);
}

E CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *bytes, CUmodule m, const char *name)
{
    NEED_INIT();
    if (!mod_ok(m))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t size = 0;
    if (m->builtin || m->nocode || shim_image_global(m->image, m->bytes, shim_proc.cc, name, &size))
        return CUDA_ERROR_NOT_FOUND;
    CUresult lr = m->builtin ? CUDA_SUCCESS : mod_ensure(m);
    if (lr)
        return lr;
    uint64_t addr = 0;
    int rc = shim_ext_global(shim_proc.g, m->h, name, &addr);
    if (rc == GPUOS_EUNSUPPORTED)
        return (CUresult)shim_unsupported("cuModuleGetGlobal (device address of a global)");
    if (rc)
        return map_rc(rc, "cuModuleGetGlobal");
    if (p)
        *p = addr;
    if (bytes)
        *bytes = size;
    return CUDA_SUCCESS;
}

E CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_LAZY_LOADING; /* libraries are carried to the daemon at their first kernel's use */
    return CUDA_SUCCESS;
}

/* Libraries are modules; kernels are functions (one handle serves as both). */
E CUresult cuLibraryLoadData(CUlibrary *l, const void *code, CUjit_option *jo, void **jv, unsigned int nj,
                             CUlibraryOption *lo, void **lv, unsigned int nl)
{
    /* libraries belong to no context (the runtime loads its own before any) */
    return mod_load_in((struct CUmod_st **)l, code, 0, 0, 1);
}
E CUresult cuLibraryLoadFromFile(CUlibrary *l, const char *path, CUjit_option *jo, void **jv, unsigned int nj,
                                 CUlibraryOption *lo, void **lv, unsigned int nl)
{
    if (!l || !path)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    char *img;
    size_t n;
    CUresult r = read_image(path, &img, &n);
    if (!r)
        r = mod_load_in((struct CUmod_st **)l, img, n, 0, 1);
    free(img);
    return r;
}
E CUresult cuLibraryUnload(CUlibrary l) { return cuModuleUnload((CUmodule)l); }
E CUresult cuLibraryGetModule(CUmodule *m, CUlibrary l)
{
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mod_ok((struct CUmod_st *)l))
        return CUDA_ERROR_INVALID_HANDLE;
    *m = (CUmodule)l;
    return CUDA_SUCCESS;
}
E CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name)
{
    return func_get((struct CUfunc_st **)k, (struct CUmod_st *)l, name);
}
E CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
    if (!f)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_ok((struct CUfunc_st *)k))
        return CUDA_ERROR_INVALID_HANDLE;
    *f = (CUfunction)k;
    return CUDA_SUCCESS;
}
E CUresult cuKernelGetLibrary(CUlibrary *l, CUkernel k)
{
    if (!l)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_ok((struct CUfunc_st *)k))
        return CUDA_ERROR_INVALID_HANDLE;
    *l = (CUlibrary)((struct CUfunc_st *)k)->mod;
    return CUDA_SUCCESS;
}
E CUresult cuLibraryGetGlobal(CUdeviceptr *p, size_t *bytes, CUlibrary l, const char *name)
{
    return cuModuleGetGlobal_v2(p, bytes, (CUmodule)l, name);
}
E CUresult cuFuncGetModule(CUmodule *m, CUfunction f)
{
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    *m = (CUmodule)f->mod;
    return CUDA_SUCCESS;
}
E CUresult cuFuncGetName(const char **name, CUfunction f)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}
E CUresult cuFuncIsLoaded(CUfunctionLoadingState *st, CUfunction f)
{
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    *st = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}
E CUresult cuFuncLoad(CUfunction f) { return CUDA_SUCCESS; }

E CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *off, size_t *size)
{
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!f->k.found)
        return shim_unsupported("cuFuncGetParamInfo (kernel without a cubin layout)");
    if (index >= (size_t)f->k.nparams)
        return CUDA_ERROR_INVALID_VALUE;
    if (off)
        *off = f->k.off[index];
    if (size)
        *size = f->k.size[index];
    return CUDA_SUCCESS;
}

E CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = f->k.max_threads ? f->k.max_threads : 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = f->k.shared_bytes; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = f->k.const_bytes; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = f->k.local_bytes; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = f->k.regs; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = shim_proc.cc; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = shim_proc.cc; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn_smem; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *v = -1; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *v = f->nonportable; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *v = 0; break;
    default:
        if (shim_trace() >= 2)
            shim_log("cuFuncGetAttribute %d of %.80s: not known", (int)a, f->name);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (shim_trace() >= 2)
        shim_log("cuFuncGetAttribute %d of %.80s = %d", (int)a, f->name, *v);
    return CUDA_SUCCESS;
}

E CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || v + f->k.shared_bytes > 232448)
            return CUDA_ERROR_INVALID_VALUE;
        f->max_dyn_smem = v;
        return CUDA_SUCCESS;
    }
    if (a == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
        f->nonportable = v != 0;
        return CUDA_SUCCESS;
    }
    if (a == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT || a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH ||
        a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT || a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH ||
        a == CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
        return CUDA_SUCCESS; /* hints, or what the launch itself carries (its cluster shape) */
    return shim_unsupported("cuFuncSetAttribute (this attribute)");
}
E CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache c)
{
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}
E CUresult cuKernelGetAttribute(int *v, CUfunction_attribute a, CUkernel k, CUdevice d)
{
    return cuFuncGetAttribute(v, a, (CUfunction)k);
}
E CUresult cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d)
{
    return cuFuncSetAttribute((CUfunction)k, a, v);
}
E CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache c, CUdevice d)
{
    return cuFuncSetCacheConfig((CUfunction)k, c);
}
E CUresult cuKernelGetName(const char **name, CUkernel k) { return cuFuncGetName(name, (CUfunction)k); }
E CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
    return cuFuncGetParamInfo((CUfunction)k, i, off, size);
}

/* ------------------------------------------------------------------ */
/* JIT linking. The linker is the driver's, in the daemon's process; what this
 * library can do alone is the common case of one input (a PTX, cubin or fatbin
 * image: numba's and CuPy's kernels), whose "linked" image is that input, which
 * the daemon's driver then loads (and compiles, when PTX). A second input, or a
 * library archive, needs the real linker and is refused, named. */
struct CUlinkState_st {
    uint32_t magic;
    char *image;
    size_t bytes;
};
#define MAGIC_LINK 0x6c6e6b31

E CUresult cuLinkCreate_v2(unsigned int n, CUjit_option *o, void **v, CUlinkState *out)
{
    if (!out || (n && (!o || !v)))
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    struct CUlinkState_st *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->magic = MAGIC_LINK;
    *out = l;
    return CUDA_SUCCESS;
}

static CUresult link_take(struct CUlinkState_st *l, CUjitInputType type, char *img, size_t bytes)
{
    if (!l || l->magic != MAGIC_LINK) {
        free(img);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (type == CU_JIT_INPUT_LIBRARY || type == CU_JIT_INPUT_OBJECT || type == CU_JIT_INPUT_NVVM) {
        free(img);
        return shim_unsupported("cuLinkAddData (objects, archives, NVVM: the driver's linker runs in the daemon)");
    }
    if (l->image) {
        free(img);
        return shim_unsupported("cuLinkAddData (a second input: the driver's linker runs in the daemon)");
    }
    l->image = img;
    l->bytes = bytes;
    return CUDA_SUCCESS;
}

E CUresult cuLinkAddData_v2(CUlinkState l, CUjitInputType type, void *data, size_t size, const char *name,
                            unsigned int n, CUjit_option *o, void **v)
{
    if (!data || !size)
        return CUDA_ERROR_INVALID_VALUE;
    char *img = malloc(size + 1);
    if (!img)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(img, data, size);
    img[size] = 0; /* PTX given without its NUL */
    size_t bytes = type == CU_JIT_INPUT_PTX && ((char *)data)[size - 1] ? size + 1 : size;
    return link_take(l, type, img, bytes);
}

E CUresult cuLinkAddFile_v2(CUlinkState l, CUjitInputType type, const char *path, unsigned int n, CUjit_option *o,
                            void **v)
{
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    char *img;
    size_t bytes;
    CUresult r = read_image(path, &img, &bytes);
    return r ? r : link_take(l, type, img, bytes);
}

E CUresult cuLinkComplete(CUlinkState l, void **out, size_t *size)
{
    if (!out || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if (!l || l->magic != MAGIC_LINK)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!l->image)
        return CUDA_ERROR_INVALID_VALUE; /* nothing added */
    *out = l->image; /* owned by the state until cuLinkDestroy */
    *size = l->bytes;
    return CUDA_SUCCESS;
}

E CUresult cuLinkDestroy(CUlinkState l)
{
    if (!l || l->magic != MAGIC_LINK)
        return CUDA_ERROR_INVALID_HANDLE;
    l->magic = MAGIC_DEAD;
    free(l->image);
    free(l);
    return CUDA_SUCCESS;
}
