/* SPDX-License-Identifier: Apache-2.0 */
/* hostmem.c: what host memory the daemon may still take, and who the OOM killer
 * takes first (issue 23.3).
 *
 * The host swap pool (swap.c) is host memory the daemon's executors fault in as
 * they evict; inside a memory cgroup smaller than `swap =` the kernel's OOM
 * killer took executors and then the daemon. So every eviction that would grow
 * the pool's touched part first asks srv_host_room() and is refused with a
 * clear error when the host cannot give it (the victim stays resident, nothing
 * is lost), and the OOM scores are set on purpose: the daemon (everyone's
 * state) at SRV_OOM_DAEMON when it may lower its own, each executor (one
 * tenant's context) at SRV_OOM_EXECUTOR.
 *
 * The room is the smallest of /proc/meminfo's MemAvailable and, for each
 * memory cgroup from the daemon's own up to the root, its limit less its usage
 * (reclaimable inactive file pages not counted as used): cgroup v2's
 * memory.max and memory.high against memory.current, or v1's
 * memory.limit_in_bytes against memory.usage_in_bytes.
 * Process: the daemon (gpuos serve). */
#include "serve/hostmem.h"
#include "serve/executor.h"

#include "common/status.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CG_UNLIMITED (1ull << 62) /* v1 writes "unlimited" as about 2^63 */

/* One number from a file ("max": unlimited); 0 when the file is missing. */
static int read_u64(const char *path, uint64_t *v)
{
    char b[64];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(b, sizeof b, f) != NULL;
    fclose(f);
    if (!ok)
        return 0;
    if (!strncmp(b, "max", 3)) {
        *v = UINT64_MAX;
        return 1;
    }
    char *e;
    unsigned long long x = strtoull(b, &e, 10);
    if (e == b)
        return 0;
    *v = x >= CG_UNLIMITED ? UINT64_MAX : (uint64_t)x;
    return 1;
}

/* A "key value" line of a stat file (memory.stat, /proc/meminfo). */
static uint64_t stat_key(const char *path, const char *key)
{
    char line[256];
    size_t n = strlen(key);
    uint64_t v = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && (line[n] == ' ' || line[n] == ':')) {
            v = strtoull(line + n + 1, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    return v;
}

/* The daemon's cgroup path for v2 (ctl "") or v1's memory controller. */
static int cgroup_path(int v2, char *out, size_t cap)
{
    char line[1024];
    int found = 0;
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && !found && fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = 0;
        const char *ctl = c1 + 1, *p = c2 + 1;
        int match = 0;
        if (v2)
            match = !strcmp(line, "0") && !*ctl;
        else
            for (char *t = strtok((char *)ctl, ","); t && !match; t = strtok(NULL, ","))
                match = !strcmp(t, "memory");
        if (match) {
            snprintf(out, cap, "%s", p);
            out[strcspn(out, "\n")] = 0;
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* Walks the cgroup at mount/path up to the root, lowering *room to each level's
 * limit less usage; *limit: the tightest limit seen. */
static void cgroup_room(const char *mount, int v2, const char *path, uint64_t *room, uint64_t *limit)
{
    char dir[1200], f[1300];
    snprintf(dir, sizeof dir, "%s%s", mount, path);
    for (;;) {
        uint64_t lim = UINT64_MAX, high = UINT64_MAX, used = 0;
        int have;
        if (v2) {
            snprintf(f, sizeof f, "%s/memory.max", dir);
            have = read_u64(f, &lim);
            snprintf(f, sizeof f, "%s/memory.high", dir);
            if (read_u64(f, &high) && high < lim)
                lim = high;
            snprintf(f, sizeof f, "%s/memory.current", dir);
        } else {
            snprintf(f, sizeof f, "%s/memory.limit_in_bytes", dir);
            have = read_u64(f, &lim);
            snprintf(f, sizeof f, "%s/memory.usage_in_bytes", dir);
        }
        if (have && lim != UINT64_MAX && read_u64(f, &used)) {
            snprintf(f, sizeof f, "%s/memory.stat", dir);
            uint64_t cache = stat_key(f, v2 ? "inactive_file" : "total_inactive_file");
            used = used > cache ? used - cache : 0;
            uint64_t r = used < lim ? lim - used : 0;
            if (r < *room)
                *room = r;
            if (lim < *limit)
                *limit = lim;
        }
        char *slash = strrchr(dir + strlen(mount), '/');
        if (!slash)
            break;
        if (slash == dir + strlen(mount)) { /* the root: once more, then done */
            if (!slash[1])
                break;
            slash[1] = 0;
        } else
            *slash = 0;
    }
}

uint64_t srv_host_room(uint64_t *limit)
{
    uint64_t room = UINT64_MAX, lim = UINT64_MAX;
    uint64_t avail = stat_key("/proc/meminfo", "MemAvailable");
    if (avail)
        room = avail << 10;
    char path[1024];
    if (cgroup_path(1, path, sizeof path)) {
        cgroup_room("/sys/fs/cgroup", 1, path, &room, &lim);
        cgroup_room("/sys/fs/cgroup/unified", 1, path, &room, &lim);
    }
    if (cgroup_path(0, path, sizeof path))
        cgroup_room("/sys/fs/cgroup/memory", 0, path, &room, &lim);
    if (limit)
        *limit = lim;
    return room;
}

uint64_t srv_host_reserve(uint64_t limit)
{
    /* what the daemon, its executors and their device contexts keep for
     * themselves beyond the pool: 48 MB, and an eighth of a cgroup's limit */
    uint64_t r = 48ull << 20;
    if (limit != UINT64_MAX)
        r += limit / 8;
    return r;
}

void srv_oom_policy(void)
{
    int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    char b[16] = "";
    ssize_t n = read(fd, b, sizeof b - 1);
    int cur = n > 0 ? atoi(b) : 0;
    if (cur > SRV_OOM_DAEMON) {
        snprintf(b, sizeof b, "%d", SRV_OOM_DAEMON);
        if (lseek(fd, 0, SEEK_SET) != 0 || write(fd, b, strlen(b)) < 0)
            gos_log(LOG_INFO, "oom_score_adj stays %d (lowering it to %d needs CAP_SYS_RESOURCE): under host memory "
                              "pressure the kernel may pick the daemon; executors are raised to %d",
                    cur, SRV_OOM_DAEMON, SRV_OOM_EXECUTOR);
    }
    close(fd);
}
