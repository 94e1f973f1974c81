/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h: what the command files of the CLI share. One file per command
 * (cmd_NAME.c) defining `int cmd_NAME(int argc, char **argv)`, where argv[0] is
 * the command's name; it returns the process exit status. main.c holds the table
 * of these externs: a command whose file is missing fails to link. */
#ifndef GOS_CLI_H
#define GOS_CLI_H

#include "device/device.h"

/* Prints "gpuos: <gos_last_error()>" on stderr and returns 1 (or 2 for usage
 * errors: rc == GOS_EINVAL from argument parsing should use cli_usage). */
int cli_fail(void);

/* Prints "gpuos CMD: <message>; see gpuos CMD --help" and returns 2. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One option grammar for every command: getopt_long over a table of struct
 * option (--opt value and --opt=value; an entry whose val is a character is also
 * the short option -val; long-only options use values from CLI_LONG up). GNU
 * permutation: options and positional arguments in any order, "--" ends the
 * options; a table whose first entry is CLI_IN_ORDER stops at the first
 * positional argument (gpuos run: the program's own arguments follow).
 *
 *   cli_args a = CLI_ARGS("info", argc, argv, opts);
 *   for (int o; (o = cli_next(&a)) != -1;)
 *       switch (o) {
 *       case 'h': help(); return 0;
 *       case CLI_JSON: json = optarg; break;
 *       case CLI_STOP: return a.rc;   // a usage error (said), or --options
 *       }
 *   positional arguments: argv[optind..argc)
 *
 * Unknown options and missing values end with one line and exit status 2.
 * `gpuos CMD --options` lists the table's long options, one per line (the tests
 * check the man pages and --help against it). */
#include <getopt.h>
enum {
    CLI_STOP = -2,
    CLI_LONG = 256,
    CLI_SOCKET,   /* --socket PATH      (cli_socket) */
    CLI_JSON,     /* --json FILE|-      ('-': standard output) */
    CLI_DEVICE,   /* --device SEL       (cli_select_devices / cli_open_one) */
    CLI_SIM,      /* --sim CHIP[,CHIP]  */
    CLI_IN_ORDER, /* first entry: stop at the first positional argument */
    CLI_FIRST_OWN /* a command's own long-only options start here */
};
#define CLI_OPT_HELP {"help", no_argument, NULL, 'h'}
#define CLI_OPT_SOCKET {"socket", required_argument, NULL, CLI_SOCKET}
#define CLI_OPT_JSON {"json", required_argument, NULL, CLI_JSON}
#define CLI_OPT_DEVICE {"device", required_argument, NULL, CLI_DEVICE}
#define CLI_OPT_SIM {"sim", required_argument, NULL, CLI_SIM}
#define CLI_OPT_END {NULL, 0, NULL, 0}
/* The help lines of the shared options, the same in every command. */
#define CLI_HELP_SOCKET "  --socket PATH    the daemon's socket (default $GPUOS_SOCKET, else " GOS_CLI_DEFAULT_SOCKET ")\n"
#define CLI_HELP_JSON(what) "  --json FILE|-    " what " as JSON into FILE ('-': standard output, no text)\n"
#define CLI_HELP_DEVICE                                                                                      \
    "  --device SEL     GPUs as nvidia-smi -i: an ordinal, 'all', a UUID (or a unique prefix),\n"                \
    "                   a PCI bus id, or a comma-separated list of them\n"
#define CLI_HELP_SIM "  --sim CHIP       the simulated chip of a gpuos.chip/1 file or 'default' (A,B,...: one GPU each)\n"
#define GOS_CLI_DEFAULT_SOCKET "/run/gpuos/gpuos.sock" /* = GOS_DEFAULT_SOCKET (proto.h), checked in cli.c */

typedef struct {
    const char *cmd;
    int argc;
    char **argv;
    const struct option *opts;
    char shorts[64];
    int started, rc;
} cli_args;
#define CLI_ARGS(cmd, argc, argv, opts) {(cmd), (argc), (argv), (opts), "", 0, 0}
int cli_next(cli_args *a);

/* The socket a command talks to: the option, else $GPUOS_SOCKET, else the default. */
const char *cli_socket(const char *opt);

/* The vGPUs of the gpuos daemon answering at $GPUOS_SOCKET (else the default
 * socket), for the labels that say the node shares its GPUs; -1 when none answers. */
int cli_served_vgpus(void);
/* The directory holding gpuos's libcuda.so.1 (absolute, into out): opt
 * (--libdir), else $GPUOS_LIBDIR, else shim/ beside the gpuos binary (the build
 * tree), else ../lib/gpuos beside it (make install); GOS_OK or one line. */
int cli_find_libdir(const char *opt, char *out, size_t len);

/* Parses an integer option value in lo..hi; 0 on success. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
/* Parses a duration: seconds, or digits with s, m, h or d; 0 on success. */
int cli_parse_duration(const char *s, long *out);
/* --nfd-expiry (labels, probe): a duration, else the usage line said and -1. */
int cli_parse_expiry(const char *cmd, const char *s, long *out);
/* Parses a size in lo..hi bytes with the configuration's parser (gpuos.conf(5):
 * "1.5G", "64M", "4096"; K/M/G/T are powers of 1024); 0 on success, else the
 * reason in gos_last_error(). */
int cli_parse_size(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out);

/* Opens the device a command asked for:
 *   sim != NULL          -> the simulated chip (file or "default");
 *   ordinal >= 0         -> that real GPU, failing clearly without one;
 *   neither              -> real GPU 0, or, when there is none, a one-line notice
 *                           on stderr and the built-in simulated H200.
 * Returns GOS_OK or an error code (message in gos_last_error()). */
int cli_open_device(const char *sim, int ordinal, gos_device **out);

/* Several devices (devsel.c): --device SEL takes an ordinal, "all", a UUID (or a
 * unique prefix), a PCI bus id, or a comma-separated list of them, as nvidia-smi
 * -i does; --sim A,B,... simulates one GPU per chip (the GPUs of a list of two or
 * more get UUIDs ending "-<index>"). Neither: GPU 0 or the simulated fallback. */
#define CLI_MAX_DEVICES 64
typedef struct {
    int n;
    const char *sim[CLI_MAX_DEVICES]; /* chip per entry, NULL: a real GPU */
    int ordinal[CLI_MAX_DEVICES];     /* CUDA ordinal or index in the --sim list; -1: the default */
    char buf[1024];
} cli_devices;
int cli_select_devices(const char *device, const char *sim, cli_devices *out);
int cli_open_selected(const cli_devices *s, int i, gos_device **out);
/* Commands of one GPU (place, dvfs): --device SEL must name exactly one; neither
 * --device nor --sim: GPU 0 or the simulated fallback (cli_open_device). */
int cli_open_one(const char *device, const char *sim, gos_device **out);

/* The default configuration, SYSCONFDIR/gpuos/gpuos.conf: SYSCONFDIR as make
 * install's (mk/install.mk: /etc for PREFIX=/usr, else PREFIX/etc), compiled
 * into main.c, the one file that knows it. */
extern const char cli_default_config[];

/* Command entry points, the table of main.c (plain externs). */
int cmd_info(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_dvfs(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_vgpu(int argc, char **argv);
int cmd_labels(int argc, char **argv);
int cmd_node(int argc, char **argv);
int cmd_place(int argc, char **argv);
int cmd_shm(int argc, char **argv);
int cmd_executor(int argc, char **argv); /* hidden: spawned by serve (issue 9) */
int cmd_run(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_cdi(int argc, char **argv);

#endif
