/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu.h: the vGPU table: shares, rooms, access (vgpu.c, peercg.c) and vGPUs
 * made and removed at run time (vgpu_life.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_VGPU_H
#define GOS_SERVE_VGPU_H

#include "serve/config.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct srv_exec_class; /* executor.h */

struct srv;
struct srv_client;
struct srv_dev;
struct json_t;

/* vgpu.c: room for one more entry in c's allocation table (GOS_ENOMEM
 * otherwise); whether bytes more fit the memory share of c's vGPU (GOS_EBUSY
 * naming the share otherwise; what: "allocating 4096 bytes"). */
int srv_alloc_room(struct srv_client *c);
int srv_share_room(struct srv_client *c, uint64_t bytes, const char *what);

/* vgpu.c */
int srv_vgpu_set(struct srv *s, const char *name, const char *key, const char *value);

/* Index of the vGPU named name (removed ones included), or -1. */
int srv_vgpu_find(struct srv *s, const char *name);
/* How an executor of vGPU v starts (issue 41, mps; lock held): on a device
 * that has a latency vGPU, a batch vGPU's leaves latency_sms % of the SMs and
 * runs at low priority, a latency vGPU's at high (latency_priority); else as
 * any. The class is fixed at the executor's start. */
void srv_vgpu_exec_class(struct srv *s, int v, struct srv_exec_class *cls);
/* The file's value of key SRV_OV_* in canonical form. */
void srv_vgpu_file_value(const struct gos_serve_vgpucfg *f, int key, char *out, size_t n);
/* Logs a warning per device whose active vGPUs' shares add up past 100 %
 * (`when`: "at start", "after reload", ...). Returns how many warnings. */
int srv_check_oversubscription(struct srv *s, const char *when);
/* Whether the peer on fd (uid) may open vGPU g: GOS_OK or GOS_EPERM naming why. */
int srv_vgpu_access(struct srv *s, int v, int fd, pid_t pid, uid_t uid, gid_t gid);
/* The supplementary groups of the peer of socket fd (at most cap; SO_PEERGROUPS,
 * else /proc of pid, the kernel-reported peer pid): how many were written. */
int srv_peer_groups(int fd, pid_t pid, gid_t *out, int cap);
/* cgroup = (peercg.c): whether the peer of socket fd (the kernel-reported
 * pid) is in cgroup cg or below it (GOS_OK; else GOS_EPERM and one line). */
int srv_peer_cgroup_access(const char *vgpu, const char *cg, int fd, pid_t pid);
/* Whether the memory shares of the vGPUs in force still fit their devices with
 * vGPU v's configuration replaced by *g (v < 0: *g added): GOS_OK, or the
 * error of gos_serve_config_check_memory without the file's line. */
int srv_vgpu_fits(struct srv *s, int v, const struct gos_serve_vgpucfg *g);
/* Adds vGPU id with g's shares and latency class to d's scheduler. */
int srv_sched_vgpu_add(struct srv_dev *d, uint32_t id, const struct gos_serve_vgpucfg *g);
/* A compute or copy share "1".."100" (optionally "%"): GOS_EINVAL otherwise. */
int srv_vgpu_share(const char *v, int *out);

/* vgpu_life.c (lock held): vGPUs made and removed at run time (issue 25).
 * parse: the keys of a [vgpu NAME] section, "key=value" lines (device, compute,
 * copy, memory, users, groups); create: checked, added, kept in the state file
 * when persist; delete: only created ones, refused while clients are attached
 * unless force (their executors killed with the reason); created_json: the
 * state file's entry of a created vGPU {"vgpu", "keys": {...}}. */
int srv_vgpu_parse(struct srv *s, const char *name, const char *keys, struct gos_serve_vgpucfg *g);
int srv_vgpu_create(struct srv *s, const char *name, const char *keys, int persist);
int srv_vgpu_delete(struct srv *s, const char *name, int force);
struct json_t *srv_vgpu_created_json(struct srv *s, int v);

/* vgpu_life.c: ADMIN_CREATE and ADMIN_DELETE (client.c's msg_table; reply.h
 * says what a handler does). */
int srv_msg_admin_create(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_admin_delete(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

#endif
