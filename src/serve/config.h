/* config.h: the configuration file of `gpuos serve`.
 *
 *   # comments and blank lines are ignored
 *   socket = /tmp/gpuos.sock     # may be overridden by --socket
 *   socket_mode = 0660           # who may connect: the socket file's permissions
 *   chunk = 4M                   # copy chunk size advertised to clients
 *   depth = 3                    # copy pipeline depth advertised to clients
 *   spin_us = 50                 # a connection's reader polls this long for the next
 *                                # request before sleeping (0: never; default 50 on
 *                                # hosts of 8 CPUs or more, else 0)
 *
 *   [device 0]                   # CUDA ordinal, or any label with `sim = CHIP`
 *   sim = default                # optional: a simulated chip ("default" or a file)
 *   policy = band                # fifo | credit | band
 *   queue = mrq                  # mrq | sdq
 *   period_ms = 30
 *   band_wait_us = 500
 *   band_charge_hold = 1         # 1: shares of engine time (GPU + BAND's holds),
 *                                # 0: shares of GPU time alone (Gdev's utilisation)
 *
 *   [vgpu alice]
 *   device = 0                   # the [device] section's label
 *   compute = 50                 # compute bandwidth share, percent
 *   copy = 50                    # copy bandwidth share, percent
 *   memory = 25%                 # memory share: percent of the device, or bytes (4G)
 *
 * Errors name the file, the line and the problem. */
#ifndef GOS_SERVE_CONFIG_H
#define GOS_SERVE_CONFIG_H

#include "proto/proto.h"

#include <stdint.h>

#define GOS_SERVE_MAX_DEVICES 8

struct gos_serve_devcfg {
    char label[32];
    char sim[256]; /* "" real GPU */
    int ordinal;
    char policy[16];
    char queue[8];
    uint64_t period_ns;
    uint64_t band_wait_ns;
    int band_charge_hold; /* 1: BAND charges held engine time to the vGPU it waits for */
};

struct gos_serve_vgpucfg {
    char name[GOS_NAME_MAX];
    int device; /* index into devs */
    int compute, copy;
    double mem_pct;     /* > 0: percent of device memory */
    uint64_t mem_bytes; /* else bytes */
};

struct gos_serve_config {
    char socket[108];
    unsigned socket_mode;
    uint64_t chunk;
    int depth;
    int spin_us; /* -1: by the number of CPUs */
    int n_devs;
    struct gos_serve_devcfg devs[GOS_SERVE_MAX_DEVICES];
    int n_vgpus;
    struct gos_serve_vgpucfg vgpus[GOS_MAX_VGPUS];
};

/* Parses a configuration text (`what` names it in messages). */
int gos_serve_config_parse(const char *text, const char *what, struct gos_serve_config *out);
int gos_serve_config_load(const char *path, struct gos_serve_config *out);

/* Parses a memory share value ("25%", "512M", "1073741824"). */
int gos_serve_parse_mem(const char *v, double *pct, uint64_t *bytes);

#endif
