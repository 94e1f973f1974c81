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
 * Keys of daemon operation (parsed in config_ext.c; docs/readme-vgpu.md,
 * "Configuration keys"): global state, metrics_listen; [device] chip; [vgpu]
 * users, groups.
 *
 * Errors name the file, the line and the problem. */
#ifndef GOS_SERVE_CONFIG_H
#define GOS_SERVE_CONFIG_H

#include "proto/proto.h"

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define GOS_SERVE_MAX_DEVICES 8
#define GOS_SERVE_MAX_IDS 32 /* users = / groups = entries per vGPU */

struct gos_serve_devcfg {
    char label[32];
    char sim[256]; /* "" real GPU */
    int ordinal;
    char policy[16];
    char queue[8];
    uint64_t period_ns;
    uint64_t band_wait_ns;
    int band_charge_hold; /* 1: BAND charges held engine time to the vGPU it waits for */
    char chip[256];       /* gpuos.chip/1 file describing the device ("" none) */
};

struct gos_serve_vgpucfg {
    char name[GOS_NAME_MAX];
    int device; /* index into devs */
    int compute, copy;
    double mem_pct;     /* > 0: percent of device memory */
    uint64_t mem_bytes; /* else bytes */
    /* Who may open it (users = / groups =): none of either listed: anyone who
     * can open the socket; else the peer's uid is listed or one of its groups. */
    int n_users, n_groups;
    uid_t users[GOS_SERVE_MAX_IDS];
    gid_t groups[GOS_SERVE_MAX_IDS];
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
    char state[256];          /* where `vgpu set` persists ("" default, "none": nowhere) */
    char metrics_listen[128]; /* Prometheus endpoint HOST:PORT ("" off) */
};

/* Parses a configuration text (`what` names it in messages). */
int gos_serve_config_parse(const char *text, const char *what, struct gos_serve_config *out);
int gos_serve_config_load(const char *path, struct gos_serve_config *out);

/* The keys of config_ext.c, called by the parser for every key of section kind
 * sect (0 global, 1 device, 2 vgpu; idx: the section's index). Returns 1 when
 * the key was one of them, 0 when not, -1 on a bad value (why filled). */
int gos_serve_config_ext_key(struct gos_serve_config *c, int sect, int idx, const char *k, const char *v,
                             char *why, size_t whylen);

/* Parses "HOST:PORT" (IPv4 address, [IPv6 address], "localhost" or "*"). */
int gos_serve_parse_listen(const char *v, struct sockaddr_storage *sa, socklen_t *len);

/* Parses a memory share value ("25%", "512M", "1073741824"). */
int gos_serve_parse_mem(const char *v, double *pct, uint64_t *bytes);

#endif
