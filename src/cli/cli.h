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

/* 1 when a is "--help" or "-h". */
int cli_is_help(const char *a);
/* Prints "gpuos CMD: <message>; see gpuos CMD --help" and returns 2. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a non-negative integer option value; 0 on success. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
/* Parses a size with optional K/M/G/T suffix (powers of 1024). */
int cli_parse_size(const char *s, unsigned long long *out);

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

#endif
