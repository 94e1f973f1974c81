/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_cdi.c: `gpuos cdi [--vgpu NAME]... [--socket PATH] [--libdir DIR] [--kind
 * VENDOR/CLASS] [--container-socket PATH] [--json FILE|-]`: a Container Device
 * Interface specification (CDI 0.5.0; schemas/cdi.schema.json) with one device
 * per vGPU (issue 43.5), the runtime half of a Kubernetes DRA driver
 * (docs/design-kubernetes.md). A container started with `--device
 * gpuos.io/vgpu=NAME` (podman; containerd and CRI-O the same) gets:
 *   - the daemon's socket at /run/gpuos/gpuos.sock and GPUOS_SOCKET naming it;
 *   - gpuos's libcuda.so.1 and libnvidia-ml.so.1, read-only, where the image's
 *     CUDA looks for the driver (/usr/lib/<multiarch>/, where NVIDIA's container
 *     toolkit would mount the real one): the program is not changed, nor its
 *     LD_LIBRARY_PATH;
 *   - GPUOS_VGPU=NAME; no /dev/nvidia* at all.
 * Who may open the vGPU is the daemon's business (users =, groups =, cgroup =):
 * the container can name another vGPU, and is refused unless admitted. */
#include "cli/cli.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "gpuos/gpuos.h"
#include "proto/proto.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#define CDI_LIBDIR "/usr/lib/x86_64-linux-gnu"
#elif defined(__aarch64__)
#define CDI_LIBDIR "/usr/lib/aarch64-linux-gnu"
#else
#define CDI_LIBDIR "/usr/lib"
#endif
#define CDI_SOCKET "/run/gpuos/gpuos.sock"

static void help(FILE *f)
{
    fprintf(f, "usage: gpuos cdi [--vgpu NAME]... [--kind VENDOR/CLASS] [--libdir DIR] [--socket PATH]\n"
               "                 [--container-socket PATH] [--json FILE|-]\n"
               "\n"
               "Writes a Container Device Interface (CDI 0.5.0) specification with one device per\n"
               "vGPU: a container run with --device KIND=NAME (podman, containerd, CRI-O) gets the\n"
               "daemon's socket, gpuos's libcuda.so.1 and libnvidia-ml.so.1 where the image's CUDA\n"
               "looks for the driver (" CDI_LIBDIR "), GPUOS_VGPU=NAME and GPUOS_SOCKET;\n"
               "no /dev/nvidia*. Put the file in /etc/cdi or /var/run/cdi.\n"
               "  --vgpu NAME      a device for this vGPU (again for more); default: every vGPU the\n"
               "                   daemon lists\n"
               "  --kind K         the devices' kind, VENDOR/CLASS (default gpuos.io/vgpu)\n"
               "  --libdir DIR     where gpuos's libcuda.so.1 is (as gpuos run)\n" CLI_HELP_SOCKET
               "  --container-socket PATH  where the container sees it (default " CDI_SOCKET ")\n"
               "  --json FILE|-    the specification into FILE (default '-': standard output)\n");
}

/* CDI's rules: kind VENDOR/CLASS, vendor a domain-like name, class and
 * device names of letters, digits and a few signs. */
static int name_ok(const char *s, const char *extra)
{
    if (!*s || !isalnum((unsigned char)*s))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
            return 0;
    return 1;
}

static int kind_ok(const char *k)
{
    const char *slash = strchr(k, '/');
    char vendor[128];
    if (!slash || (size_t)(slash - k) >= sizeof vendor)
        return 0;
    memcpy(vendor, k, (size_t)(slash - k));
    vendor[slash - k] = 0;
    return name_ok(vendor, "-_.") && name_ok(slash + 1, "-_.");
}

static json_t *mount(const char *host, const char *container, int ro)
{
    json_t *opts = ro ? json_pack("[s, s, s, s]", "ro", "nosuid", "nodev", "bind") : json_pack("[s]", "bind");
    return GOS_JSON_OBJ(GOS_JS("hostPath", host), GOS_JS("containerPath", container), GOS_JO("options", opts));
}

/* The specification: common edits (socket, libraries), a device per name. */
static json_t *spec(const char *kind, const char *libdir, const char *sock, const char *csock, char **names,
                    int n)
{
    char env[PATH_MAX + 32], lib[PATH_MAX + 32], nvml[PATH_MAX + 32];
    snprintf(env, sizeof env, "GPUOS_SOCKET=%s", csock);
    snprintf(lib, sizeof lib, "%s/libcuda.so.1", libdir);
    snprintf(nvml, sizeof nvml, "%s/libnvidia-ml.so.1", libdir);
    json_t *mounts = json_pack("[o, o, o]", mount(sock, csock, 0), mount(lib, CDI_LIBDIR "/libcuda.so.1", 1),
                               mount(nvml, CDI_LIBDIR "/libnvidia-ml.so.1", 1));
    json_t *devices = json_array();
    for (int i = 0; i < n && devices; i++) {
        char v[GOS_NAME_MAX + 16];
        snprintf(v, sizeof v, "GPUOS_VGPU=%s", names[i]);
        json_array_append_new(devices, GOS_JSON_OBJ(GOS_JS("name", names[i]),
                                                    GOS_JO("containerEdits", json_pack("{s:[s]}", "env", v))));
    }
    json_t *common = json_pack("{s:[s], s:o}", "env", env, "mounts", mounts);
    return GOS_JSON_OBJ(GOS_JS("cdiVersion", "0.5.0"), GOS_JS("kind", kind), GOS_JO("containerEdits", common),
                        GOS_JO("devices", devices));
}

int cmd_cdi(int argc, char **argv)
{
    const char *kind = "gpuos.io/vgpu", *libdir = NULL, *sock = NULL, *csock = CDI_SOCKET, *out = "-";
    char *names[GOS_MAX_VGPUS];
    int n = 0;
    enum { O_VGPU = CLI_FIRST_OWN, O_KIND, O_LIBDIR, O_CSOCK };
    static const struct option opts[] = {CLI_OPT_HELP,
                                         {"vgpu", required_argument, NULL, O_VGPU},
                                         {"kind", required_argument, NULL, O_KIND},
                                         {"libdir", required_argument, NULL, O_LIBDIR},
                                         {"container-socket", required_argument, NULL, O_CSOCK},
                                         CLI_OPT_SOCKET,
                                         CLI_OPT_JSON,
                                         CLI_OPT_END};
    cli_args a = CLI_ARGS("cdi", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': help(stdout); return 0;
        case O_VGPU:
            if (n == GOS_MAX_VGPUS)
                return cli_usage("cdi", "more than %d --vgpu", GOS_MAX_VGPUS);
            if (strlen(optarg) >= GOS_NAME_MAX || !name_ok(optarg, "-_.:"))
                return cli_usage("cdi", "--vgpu \"%s\": a vGPU name is letters, digits, '.', '_' or '-'", optarg);
            names[n++] = optarg;
            break;
        case O_KIND: kind = optarg; break;
        case O_LIBDIR: libdir = optarg; break;
        case O_CSOCK: csock = optarg; break;
        case CLI_SOCKET: sock = optarg; break;
        case CLI_JSON: out = optarg; break;
        case CLI_STOP: return a.rc;
        }
    if (optind < argc)
        return cli_usage("cdi", "unexpected argument \"%s\"", argv[optind]);
    if (!kind_ok(kind))
        return cli_usage("cdi", "--kind \"%s\" must be VENDOR/CLASS (gpuos.io/vgpu)", kind);
    if (csock[0] != '/')
        return cli_usage("cdi", "--container-socket \"%s\" must be an absolute path", csock);
    char dir[PATH_MAX], abs_sock[PATH_MAX];
    if (cli_find_libdir(libdir, dir, sizeof dir))
        return cli_fail();
    sock = cli_socket(sock);
    if (!realpath(sock, abs_sock))
        snprintf(abs_sock, sizeof abs_sock, "%s", sock);
    static gpuos_vgpu_facts v[GOS_MAX_VGPUS];
    if (!n) { /* every vGPU of the daemon */
        if (gpuos_admin_list(sock, v, GOS_MAX_VGPUS, &n))
            return cli_fail();
        for (int i = 0; i < n; i++)
            names[i] = v[i].name;
        if (!n) {
            gos_fail(GOS_EINVAL, "the daemon at %s has no vGPU: name them with --vgpu", sock);
            return cli_fail();
        }
    }
    json_t *root = spec(kind, dir, abs_sock, csock, names, n);
    int rc = root ? gos_json_save_atomic(root, out) : gos_fail(GOS_ENOMEM, "out of memory");
    json_decref(root);
    return rc ? cli_fail() : 0;
}
