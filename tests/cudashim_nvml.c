/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_nvml.c: what an NVML monitoring tool asks, through whatever
 * libnvidia-ml.so.1 the loader finds (gpuos's under `gpuos run`): device count,
 * name, UUID, memory, utilisation and the driver's version; one line each, for tests/t_cudashim.sh and
 * tests/gpu/cudashim.sh. The types are NVML's documented ABI. */
#include <dlfcn.h>
#include <stdio.h>

typedef struct {
    unsigned long long total, free, used;
} mem_t;
typedef struct {
    unsigned gpu, memory;
} util_t;

int main(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "cudashim_nvml: %s\n", dlerror());
        return 1;
    }
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*count)(unsigned *) = (int (*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
    int (*handle)(unsigned, void **) = (int (*)(unsigned, void **))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    int (*name)(void *, char *, unsigned) = (int (*)(void *, char *, unsigned))dlsym(h, "nvmlDeviceGetName");
    int (*uuid)(void *, char *, unsigned) = (int (*)(void *, char *, unsigned))dlsym(h, "nvmlDeviceGetUUID");
    int (*meminfo)(void *, mem_t *) = (int (*)(void *, mem_t *))dlsym(h, "nvmlDeviceGetMemoryInfo");
    int (*util)(void *, util_t *) = (int (*)(void *, util_t *))dlsym(h, "nvmlDeviceGetUtilizationRates");
    int (*temp)(void *, int, unsigned *) = (int (*)(void *, int, unsigned *))dlsym(h, "nvmlDeviceGetTemperature");
    if (!init || !count || !handle || !name || !uuid || !meminfo || !util || !temp) {
        fprintf(stderr, "cudashim_nvml: an NVML entry point is missing\n");
        return 1;
    }
    unsigned n = 0;
    void *d;
    char nm[96], id[96];
    mem_t m;
    util_t u;
    unsigned t;
    int r;
    if ((r = init()) || (r = count(&n)) || (r = handle(0, &d)) || (r = name(d, nm, sizeof nm)) ||
        (r = uuid(d, id, sizeof id)) || (r = meminfo(d, &m)) || (r = util(d, &u))) {
        fprintf(stderr, "cudashim_nvml: NVML error %d\n", r);
        return 1;
    }
    printf("count %u\nname %s\nuuid %s\nmem_total %llu\nmem_used %llu\nmem_free %llu\nutil_gpu %u\nutil_mem %u\n", n,
           nm, id, m.total, m.used, m.free, u.gpu, u.memory);
    printf("temperature_rc %d\n", temp(d, 0, &t));
    int (*drv)(char *, unsigned) = (int (*)(char *, unsigned))dlsym(h, "nvmlSystemGetDriverVersion");
    char dv[96] = "";
    r = drv ? drv(dv, sizeof dv) : -1;
    printf("driver_version %s\ndriver_version_rc %d\n", r ? "-" : dv, r);
    int (*mig)(void *, unsigned *, unsigned *) = (int (*)(void *, unsigned *, unsigned *))dlsym(h, "nvmlDeviceGetMigMode");
    unsigned mc = 9, mp = 9;
    r = mig ? mig(d, &mc, &mp) : -1;
    printf("mig_mode_rc %d\nmig_mode %u %u\n", r, mc, mp);
    return 0;
}
