/* SPDX-License-Identifier: Apache-2.0 */
/* procaddr.c: the symbol table behind cuGetProcAddress (gpuos libcuda.so.1).
 *
 * The CUDA runtime linked statically into every nvcc-built program asks for the
 * driver's entry points by base name and CUDA version ("cuStreamGetCtx" at
 * 12050) and must get the symbol of the signature it was built for
 * (cuStreamGetCtx_v2, which also answers the green context), or its per-thread
 * default stream variant (cuMemcpyHtoD_v2_ptds). Handing a caller a newer
 * signature than it asked for writes through registers it never set
 * (cuStreamGetCaptureInfo_v3 for a v1 caller) or leaves outputs unwritten
 * (cuStreamGetCtx for a v2 caller). Two generated tables
 * (tools/gen_cudashim_names.sh, from the cuda.h and cudaTypedefs.h at hand):
 *   versions.inc  every signature a base name has had, with the CUDA version
 *                 that introduced it and its symbol;
 *   names.inc     the symbol each base name maps to in cuda.h, for names
 *                 versions.inc lacks.
 * Every symbol in them is implemented in one of the files driver.h lists, an
 * alias (aliases.txt) or a generated stub that names itself and returns
 * CUDA_ERROR_NOT_SUPPORTED (tools/gen_cudashim_stubs.sh). No cuda.h here: the
 * entries are plain addresses. */
#include "cudashim/shim.h"

#include <string.h>

#define S(x) extern int x(void);
#include "symbols.inc"
#undef S

static const struct entry {
    const char *base;
    void *plain, *ptds;
} table[] = {
#define N(b, p, q) {#b, (void *)p, (void *)q},
#include "names.inc"
#undef N
};

/* Rows of one base name are adjacent, oldest version first. */
static const struct version {
    const char *base;
    int since;
    void *plain, *ptds;
} versions[] = {
#define V(b, v, p, q) {#b, v, (void *)p, (void *)q},
#include "versions.inc"
#undef V
    {NULL, 0, NULL, NULL},
};

void *shim_proc_lookup(const char *symbol, int version, int ptds, int *too_old)
{
    *too_old = 0;
    const struct version *hit = NULL;
    int known = 0;
    for (const struct version *v = versions; v->base; v++)
        if (!strcmp(v->base, symbol)) {
            known = 1;
            if (v->since <= version)
                hit = v;
        }
    if (hit)
        return ptds ? hit->ptds : hit->plain;
    if (known) {
        *too_old = 1; /* the name exists, but not yet at the version asked */
        return NULL;
    }
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].base, symbol))
            return ptds ? table[i].ptds : table[i].plain;
    /* Asked by the symbol a base name maps to (the runtime asks for
     * "cuGraphInstantiateWithFlags", which cuda.h declares as cuGraphInstantiate). */
    static const char *const sym_names[] = {
#define N(b, p, q) #p,
#include "names.inc"
#undef N
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(sym_names[i], symbol))
            return ptds ? table[i].ptds : table[i].plain;
    return NULL;
}
