/* SPDX-License-Identifier: Apache-2.0 */
/* config_ext.c: the configuration keys of daemon operation (config.h):
 *   global    state = PATH | none        where `vgpu set` persists (state.c)
 *             metrics_listen = HOST:PORT the Prometheus endpoint (metrics.c)
 *             socket_group = NAME|GID    the socket file's group: the tenants' (server.c)
 *   [device]  chip = FILE                gpuos.chip/1 file of the device (metrics)
 *   [vgpu]    users = NAME|UID, ...      who may open the vGPU
 *             groups = NAME|GID, ...
 *             latency_ms = N             its work starts within N ms: the latency
 *                                        class (issue 41; sched.h)
 *             cgroup = /PATH | CONTROLLER:/PATH   only processes of that cgroup
 *                                        (or below it) may open it (peercg.c)
 * User and group names are resolved when the file is read: an unknown name is
 * an error naming the line.
 * Process: the daemon (gpuos serve). */
#include "serve/config.h"

#include "common/status.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gos_serve_parse_listen(const char *v, struct sockaddr_storage *sa, socklen_t *len)
{
    char host[128];
    const char *colon = strrchr(v, ':');
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof host)
        return gos_fail(GOS_EINVAL, "metrics_listen \"%s\" must be HOST:PORT (e.g. 127.0.0.1:" GOS_METRICS_PORT_STR ")", v);
    memcpy(host, v, (size_t)(colon - v));
    host[colon - v] = 0;
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || port < 1 || port > 65535)
        return gos_fail(GOS_EINVAL, "metrics_listen \"%s\": port must be 1..65535", v);
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *a4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)sa;
    size_t hl = strlen(host);
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        host[hl - 1] = 0;
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
            return gos_fail(GOS_EINVAL, "metrics_listen \"%s\": bad IPv6 address", v);
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
        return GOS_OK;
    }
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    *len = sizeof *a4;
    if (!strcmp(host, "*"))
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (!strcmp(host, "localhost"))
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
        return gos_fail(GOS_EINVAL, "metrics_listen \"%s\": host must be an IPv4 address, [IPv6], localhost or *",
                        v);
    return GOS_OK;
}

/* users = / groups =: names or numeric ids separated by commas or blanks. */
static int parse_ids(const char *v, int groups, unsigned *ids, int *n, char *why, size_t whylen)
{
    char buf[1024];
    if (strlen(v) >= sizeof buf) {
        snprintf(why, whylen, "%s list too long", groups ? "groups" : "users");
        return -1;
    }
    strcpy(buf, v);
    *n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
        if (*n == GOS_SERVE_MAX_IDS) {
            snprintf(why, whylen, "more than %d %s", GOS_SERVE_MAX_IDS, groups ? "groups" : "users");
            return -1;
        }
        unsigned id;
        char *end;
        errno = 0;
        unsigned long x = strtoul(t, &end, 10);
        if (isdigit((unsigned char)t[0]) && !*end) {
            if (errno || x >= 0xffffffffUL) {
                snprintf(why, whylen, "%s id %s out of range", groups ? "group" : "user", t);
                return -1;
            }
            id = (unsigned)x;
        } else if (groups) {
            struct group gr, *r = NULL;
            char sb[4096];
            if (getgrnam_r(t, &gr, sb, sizeof sb, &r) || !r) {
                snprintf(why, whylen, "unknown group \"%s\"", t);
                return -1;
            }
            id = (unsigned)r->gr_gid;
        } else {
            struct passwd pw, *r = NULL;
            char sb[4096];
            if (getpwnam_r(t, &pw, sb, sizeof sb, &r) || !r) {
                snprintf(why, whylen, "unknown user \"%s\"", t);
                return -1;
            }
            id = (unsigned)r->pw_uid;
        }
        ids[(*n)++] = id;
    }
    if (*n == 0) {
        snprintf(why, whylen, "%s = needs at least one %s", groups ? "groups" : "users", groups ? "group" : "user");
        return -1;
    }
    return 0;
}

int gos_serve_config_ext_key(struct gos_serve_config *c, int sect, int idx, const char *k, const char *v,
                             char *why, size_t whylen)
{
    if (sect == 0 && !strcmp(k, "state")) {
        if (!*v || strlen(v) >= sizeof c->state) {
            snprintf(why, whylen, "state must be a path (shorter than %zu) or none", sizeof c->state);
            return -1;
        }
        strcpy(c->state, v);
        return 1;
    }
    if (sect == 0 && !strcmp(k, "metrics_listen")) {
        struct sockaddr_storage sa;
        socklen_t len;
        if (strlen(v) >= sizeof c->metrics_listen || gos_serve_parse_listen(v, &sa, &len)) {
            snprintf(why, whylen, "%s", gos_last_error());
            return -1;
        }
        strcpy(c->metrics_listen, v);
        return 1;
    }
    if (sect == 0 && !strcmp(k, "socket_group")) {
        unsigned gid;
        int n;
        if (strpbrk(v, ", \t")) {
            snprintf(why, whylen, "socket_group takes one group, not \"%s\"", v);
            return -1;
        }
        if (parse_ids(v, 1, &gid, &n, why, whylen))
            return -1;
        c->socket_gid = (long)gid;
        return 1;
    }
    if (sect == 1 && !strcmp(k, "chip")) {
        if (!*v || strlen(v) >= sizeof c->devs[idx].chip) {
            snprintf(why, whylen, "chip must be a gpuos.chip/1 file (path shorter than %zu)",
                     sizeof c->devs[idx].chip);
            return -1;
        }
        strcpy(c->devs[idx].chip, v);
        return 1;
    }
    if (sect == 2 && !strcmp(k, "latency_ms")) {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (!*v || *end || errno || x < 0 || x > GOS_SERVE_LATENCY_MAX_MS) {
            snprintf(why, whylen, "latency_ms must be 0 (a batch vGPU) .. %d (ms)", GOS_SERVE_LATENCY_MAX_MS);
            return -1;
        }
        c->vgpus[idx].latency_ms = (int)x;
        return 1;
    }
    if (sect == 2 && !strcmp(k, "users")) {
        struct gos_serve_vgpucfg *g = &c->vgpus[idx];
        return parse_ids(v, 0, (unsigned *)g->users, &g->n_users, why, whylen) ? -1 : 1;
    }
    if (sect == 2 && !strcmp(k, "cgroup")) {
        if (gos_serve_cgroup_check(v, why, whylen))
            return -1;
        strcpy(c->vgpus[idx].cgroup, v);
        return 1;
    }
    if (sect == 2 && !strcmp(k, "groups")) {
        struct gos_serve_vgpucfg *g = &c->vgpus[idx];
        return parse_ids(v, 1, (unsigned *)g->groups, &g->n_groups, why, whylen) ? -1 : 1;
    }
    return 0;
}
