/* procaddr.c: the symbol table behind cuGetProcAddress (gpuos libcuda.so.1).
 *
 * The CUDA runtime linked statically into every nvcc-built program asks for the
 * driver's entry points by base name ("cuMemAlloc") and gets the versioned
 * symbol cuda.h maps that name to (cuMemAlloc_v2), or its per-thread default
 * stream variant (cuMemcpyHtoD_v2_ptds). The table is generated from the cuda.h
 * at hand (tools/gen_cudashim_names.sh); every symbol in it is implemented
 * in one of the files driver.h lists, an alias (aliases.txt) or a generated
 * stub that names itself and returns CUDA_ERROR_NOT_SUPPORTED
 * (tools/gen_cudashim_stubs.sh). No cuda.h here: the
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

void *shim_proc_lookup(const char *symbol, int ptds)
{
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
