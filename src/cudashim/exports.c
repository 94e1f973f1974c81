/* exports.c: cuGetExportTable of gpuos's libcuda: the driver's private tables
 * the CUDA runtime asks for by 16-byte id. */
#include "cudashim/daemon_ext.h"
#include "cudashim/shim.h"

#include <stdio.h>

int shim_export_table(const void **table, const unsigned char id[16])
{
    char u[40];
    snprintf(u, sizeof u, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", id[0], id[1], id[2],
             id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12], id[13], id[14], id[15]);
    if (shim_trace())
        shim_log("cuGetExportTable %s -> not supported", u);
    *table = NULL;
    char name[80];
    snprintf(name, sizeof name, "cuGetExportTable {%s}", u);
    return shim_unsupported(name);
}
