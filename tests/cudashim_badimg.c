/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_badimg.c: feeds module images to gpuos's libcuda through the Driver
 * API, each in its own child process (issue 44.6: malformed cubins and fatbins
 * crashed or hung the program). Usage: cudashim_badimg DIR NAME...; for each
 * DIR/NAME.img it prints one line
 *   NAME lib=ERR kernel=ERR mod=ERR data=ERR datakernel=ERR [layout=OFF:SIZE]
 * (ERR: the CUresult's name, "-" when not reached): cuLibraryLoadFromFile then
 * cuLibraryGetKernel of "kern" (and its parameter 1's layout), cuModuleLoad of
 * the file, cuModuleLoadData and cuLibraryLoadData of the bytes in a buffer of
 * 64 MiB (zeros past them: what the headers claim within it is readable) then
 * cuLibraryGetKernel; or "NAME died: signal N" / "NAME hung" (20 s). Exits 1
 * when any child died or hung. Run under `gpuos run` (tests/t_cudashim_badimg.sh). */
#include <cuda.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUF_BYTES (64u << 20)

static const char *name_of(CUresult r)
{
    const char *n = NULL;
    cuGetErrorName(r, &n);
    return n ? n : "?";
}

static void one(const char *path)
{
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
        printf("no context\n");
        exit(3);
    }
    CUlibrary lib;
    CUkernel k;
    char layout[64] = "";
    CUresult rl = cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0), rk = CUDA_ERROR_UNKNOWN;
    if (!rl) {
        rk = cuLibraryGetKernel(&k, lib, "kern");
        size_t off = 0, size = 0;
        if (!rk && !cuKernelGetParamInfo(k, 1, &off, &size))
            snprintf(layout, sizeof layout, " layout=%zu:%zu", off, size);
        CUdeviceptr p;
        size_t n;
        cuLibraryGetGlobal(&p, &n, lib, "kern");
        cuLibraryUnload(lib);
    }
    CUmodule m;
    CUresult rm = cuModuleLoad(&m, path);
    if (!rm)
        cuModuleUnload(m);
    unsigned char *buf = calloc(1, BUF_BYTES);
    FILE *f = fopen(path, "rb");
    size_t got = f && buf ? fread(buf, 1, BUF_BYTES, f) : 0;
    if (f)
        fclose(f);
    CUresult rd = CUDA_ERROR_UNKNOWN, rdl = CUDA_ERROR_UNKNOWN, rdk = CUDA_ERROR_UNKNOWN;
    if (got) {
        rd = cuModuleLoadData(&m, buf);
        if (!rd)
            cuModuleUnload(m);
        rdl = cuLibraryLoadData(&lib, buf, NULL, NULL, 0, NULL, NULL, 0);
        if (!rdl) {
            rdk = cuLibraryGetKernel(&k, lib, "kern");
            cuLibraryUnload(lib);
        }
    }
    printf("lib=%s kernel=%s mod=%s data=%s datakernel=%s%s\n", name_of(rl), rl ? "-" : name_of(rk), name_of(rm),
           name_of(rd), rdl ? name_of(rdl) : name_of(rdk), layout);
    fflush(stdout);
    free(buf);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cudashim_badimg DIR NAME...\n");
        return 2;
    }
    int bad = 0;
    for (int i = 2; i < argc; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.img", argv[1], argv[i]);
        printf("%s ", argv[i]);
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (!pid) {
            alarm(20);
            one(path);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
            printf("hung\n");
            bad = 1;
        } else if (WIFSIGNALED(st)) {
            printf("died: signal %d\n", WTERMSIG(st));
            bad = 1;
        } else if (WEXITSTATUS(st)) {
            printf("exit %d\n", WEXITSTATUS(st));
            bad = 1;
        }
        fflush(stdout);
    }
    return bad;
}
