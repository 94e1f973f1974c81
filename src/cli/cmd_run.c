/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_run.c: `gpuos run [--vgpu NAME] [--socket PATH] -- PROGRAM ARGS`: runs an
 * unmodified CUDA program on a virtual GPU. The program finds gpuos's own
 * libcuda.so.1 and libnvidia-ml.so.1 (mk/cudashim.mk) first on its library path
 * and reaches the daemon through them ($GPUOS_SOCKET, $GPUOS_VGPU); nothing of the
 * program changes (docs/readme-cudashim.md). */
#include "cli/cli.h"
#include "common/env.h"
#include "common/status.h"
#include "gpuos/gpuos.h"
#include "proto/proto.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *f)
{
    fprintf(f, "usage: gpuos run [--vgpu NAME] [--socket PATH] [--libdir DIR] -- PROGRAM [ARGS...]\n"
               "\n"
               "Runs PROGRAM on virtual GPU NAME of a running `gpuos serve`, unmodified: gpuos's\n"
               "libcuda.so.1 and libnvidia-ml.so.1 come first on its LD_LIBRARY_PATH, so every\n"
               "CUDA Driver API call (and the CUDA runtime's, which goes through it) is carried\n"
               "out by the daemon within the vGPU's shares, and NVML reports the vGPU's share.\n"
               "  --vgpu NAME      default $GPUOS_VGPU, else the daemon's only vGPU\n" CLI_HELP_SOCKET
               "  --libdir DIR     where gpuos's libcuda.so.1 is (default $GPUOS_LIBDIR, else shim/\n"
               "                   beside the gpuos binary, else ../lib/gpuos beside it: make install's)\n"
               "Entry points gpuos does not implement return CUDA_ERROR_NOT_SUPPORTED and are\n"
               "named once on stderr; $GPUOS_CUDASHIM_TRACE=1 logs every entry point and export\n"
               "table the program asks for.\n");
}

int cmd_run(int argc, char **argv)
{
    const char *vgpu = NULL, *sock = NULL, *libdir = NULL;
    enum { O_VGPU = CLI_FIRST_OWN, O_LIBDIR };
    static const struct option opts[] = {{"", no_argument, NULL, CLI_IN_ORDER}, CLI_OPT_HELP,
                                         {"vgpu", required_argument, NULL, O_VGPU}, CLI_OPT_SOCKET,
                                         {"libdir", required_argument, NULL, O_LIBDIR}, CLI_OPT_END};
    cli_args a = CLI_ARGS("run", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': help(stdout); return 0;
        case O_VGPU: vgpu = optarg; break;
        case CLI_SOCKET: sock = optarg; break;
        case O_LIBDIR: libdir = optarg; break;
        case CLI_STOP: return a.rc;
        }
    int i = optind;
    if (i >= argc)
        return cli_usage("run", "no program to run");
    char dir[PATH_MAX];
    if (cli_find_libdir(libdir, dir, sizeof dir))
        return cli_fail();
    sock = cli_socket(sock);
    /* The daemon must be there and serve the vGPU. */
    static gpuos_vgpu_facts v[GOS_MAX_VGPUS];
    int n = 0;
    if (gpuos_admin_list(sock, v, GOS_MAX_VGPUS, &n))
        return cli_fail();
    if (!vgpu) {
        const char *e = gos_env(GOS_ENV_VGPU);
        if (e && *e)
            vgpu = e;
        else if (n == 1)
            vgpu = v[0].name;
        else
            return cli_usage("run", "the daemon at %s hosts %d vGPUs: name one with --vgpu", sock, n);
    }
    int found = 0;
    for (int k = 0; k < n; k++)
        found |= !strcmp(v[k].name, vgpu);
    if (!found) {
        gos_fail(GOS_EINVAL, "the daemon at %s has no vGPU \"%s\" (gpuos vgpu list)", sock, vgpu);
        return cli_fail();
    }
    char abs_sock[PATH_MAX];
    if (!realpath(sock, abs_sock))
        snprintf(abs_sock, sizeof abs_sock, "%s", sock);
    const char *old = gos_env(GOS_ENV_SYS_LD_LIBRARY_PATH);
    size_t need = strlen(dir) + (old ? strlen(old) + 1 : 0) + 1;
    char *ld = malloc(need);
    if (!ld) {
        gos_fail(GOS_ENOMEM, "out of memory");
        return cli_fail();
    }
    snprintf(ld, need, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    if (setenv("LD_LIBRARY_PATH", ld, 1) || setenv(GOS_ENV_SOCKET, abs_sock, 1) || setenv(GOS_ENV_VGPU, vgpu, 1)) {
        free(ld);
        gos_fail(GOS_EIO, "setenv: %s", strerror(errno));
        return cli_fail();
    }
    free(ld);
    execvp(argv[i], argv + i);
    gos_fail(GOS_EIO, "cannot run %s: %s", argv[i], strerror(errno));
    cli_fail();
    return 127;
}
