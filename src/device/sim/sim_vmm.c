/* SPDX-License-Identifier: Apache-2.0 */
/* sim_vmm.c: device virtual memory on the simulated device (vmm_ops.h).
 *
 * The simulated device's memory is host memory, so its VMM is the host's:
 *   physical memory  a memfd of the size asked, sealed against growing and
 *                    shrinking (an importer can trust its size: no SIGBUS);
 *   export / import  dup of that descriptor (sent to another process with
 *                    SCM_RIGHTS, it names the same pages there);
 *   reservation      a PROT_NONE, MAP_NORESERVE anonymous mapping, 2 MB aligned;
 *   map              mmap(MAP_SHARED | MAP_FIXED) of the memfd over part of a
 *                    reservation: two processes mapping one memfd see each
 *                    other's writes, as two contexts mapping one cuMemCreate
 *                    allocation do;
 *   unmap            PROT_NONE anonymous memory put back over the range: the
 *                    addresses stay reserved, an access faults.
 * Physical memory created here counts against info.mem_bytes (GOS_ENOMEM past
 * it) until it is both released and unmapped, as on a GPU; imported memory is
 * the exporter's and is not counted again. The pages themselves are the host
 * kernel's: when a process dies its mappings and descriptors go, and a memfd's
 * pages with its last one, so nothing outlives the processes that use it.
 *
 * Creating physical memory takes sim.exec.vmm_create_us_per_mb of the chip (0
 * by default; sim_exec.c checks its range) per MB, as cuMemCreate of tens of
 * GB takes a while on a GPU.
 *
 * The execution pillar (sim_exec.c) accepts copies and built-in kernels on
 * mapped ranges through gos_sim_vmm_mapped (sim_internal.h). */
#include "device/sim/sim_internal.h"
#include "device/vmm_ops.h"

#include "common/grow.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <math.h>

struct sv_phys {
    uint64_t id, bytes;
    int fd;       /* -1 after release */
    int imported; /* not counted in used */
    int maps;
};
struct sv_range {
    uint64_t va, bytes, phys; /* phys: id of the mapped handle (mappings only) */
    int ro;                   /* mappings: read-only access (set_access) */
};

struct sim_vmm {
    pthread_mutex_t lock;
    uint64_t total, used, next_id;
    double create_ns_per_mb; /* sim.exec.vmm_create_us_per_mb */
    struct sv_phys *phys;
    int n_phys, cap_phys;
    struct sv_range *res, *maps;
    int n_res, cap_res, n_maps, cap_maps;
};


static void sv_close(gos_device *d)
{
    struct sim_vmm *s = d->vmm_priv;
    if (!s)
        return;
    for (int i = 0; i < s->n_maps; i++)
        munmap((void *)(uintptr_t)s->maps[i].va, s->maps[i].bytes);
    for (int i = 0; i < s->n_res; i++)
        munmap((void *)(uintptr_t)s->res[i].va, s->res[i].bytes);
    for (int i = 0; i < s->n_phys; i++)
        if (s->phys[i].fd >= 0)
            close(s->phys[i].fd);
    free(s->phys);
    free(s->res);
    free(s->maps);
    pthread_mutex_destroy(&s->lock);
    free(s);
    d->vmm_priv = NULL;
}

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sim_vmm *state(gos_device *d)
{
    pthread_mutex_lock(&state_lock);
    struct sim_vmm *s = d->vmm_priv;
    if (!s && (s = calloc(1, sizeof *s))) {
        pthread_mutex_init(&s->lock, NULL);
        s->total = d->info.mem_bytes ? d->info.mem_bytes : (16ull << 30);
        s->next_id = 1;
        json_t *c = d->chip && d->chip->json ? json_object_get(json_object_get(d->chip->json, "sim"), "exec") : NULL;
        json_t *v = c ? json_object_get(c, "vmm_create_us_per_mb") : NULL;
        s->create_ns_per_mb = json_is_number(v) ? json_number_value(v) * 1e3 : 0;
        d->vmm_priv = s;
    }
    pthread_mutex_unlock(&state_lock);
    if (!s)
        gos_fail(GOS_ENOMEM, "out of host memory");
    return s;
}

static struct sv_phys *find_phys(struct sim_vmm *s, uint64_t id)
{
    for (int i = 0; i < s->n_phys; i++)
        if (s->phys[i].id == id)
            return &s->phys[i];
    return NULL;
}

/* Drops a physical allocation that is released and no longer mapped (lock held). */
static void maybe_free(struct sim_vmm *s, struct sv_phys *p)
{
    if (p->fd >= 0 || p->maps > 0)
        return;
    if (!p->imported)
        s->used -= p->bytes;
    *p = s->phys[--s->n_phys];
}

static int add_phys(struct sim_vmm *s, int fd, uint64_t bytes, int imported, uint64_t *h)
{
    int rc = gos_grow((void **)&s->phys, &s->cap_phys, s->n_phys, sizeof *s->phys, 16);
    if (rc)
        return rc;
    s->phys[s->n_phys++] = (struct sv_phys){.id = s->next_id++, .bytes = bytes, .fd = fd, .imported = imported};
    if (!imported)
        s->used += bytes;
    *h = s->phys[s->n_phys - 1].id;
    return GOS_OK;
}

static int sv_create(gos_device *d, uint64_t bytes, uint64_t *h)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    int rc = GOS_OK, fd = -1;
    if (bytes > s->total - s->used) {
        rc = gos_fail(GOS_ENOMEM, "simulated device out of memory (%llu bytes asked, %llu free of %llu)",
                      (unsigned long long)bytes, (unsigned long long)(s->total - s->used),
                      (unsigned long long)s->total);
        goto out;
    }
    fd = memfd_create("gpuos-sim-vmm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
        rc = gos_fail(GOS_ENOMEM, "simulated device memory of %llu bytes: %s", (unsigned long long)bytes,
                      strerror(errno));
        goto out;
    }
    if ((rc = add_phys(s, fd, bytes, 0, h)))
        goto out;
    fd = -1;
out:
    if (fd >= 0)
        close(fd);
    pthread_mutex_unlock(&s->lock);
    double ns = rc ? 0 : s->create_ns_per_mb * (double)bytes / 1048576.0;
    if (ns >= 1)
        nanosleep(&(struct timespec){(time_t)(ns / 1e9), (long)fmod(ns, 1e9)}, NULL);
    return rc;
}

static int sv_release(gos_device *d, uint64_t h)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    struct sv_phys *p = find_phys(s, h);
    int rc = GOS_OK;
    if (!p || p->fd < 0)
        rc = gos_fail(GOS_EINVAL, "release: %llu is not a live simulated allocation", (unsigned long long)h);
    else {
        close(p->fd);
        p->fd = -1;
        maybe_free(s, p);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int sv_export(gos_device *d, uint64_t h, int *fd)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    struct sv_phys *p = find_phys(s, h);
    int rc = GOS_OK;
    if (!p || p->fd < 0)
        rc = gos_fail(GOS_EINVAL, "export: %llu is not a live simulated allocation", (unsigned long long)h);
    else if ((*fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0)) < 0)
        rc = gos_fail(GOS_EIO, "export: %s", strerror(errno));
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int sv_import(gos_device *d, int fd, uint64_t *h)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || seals < 0 ||
        (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW) || st.st_size <= 0 ||
        (uint64_t)st.st_size % GOS_VMM_PAGE)
        return gos_fail(GOS_EINVAL, "import: descriptor %d is not exported simulated device memory", fd);
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0)
        return gos_fail(GOS_EIO, "import: %s", strerror(errno));
    pthread_mutex_lock(&s->lock);
    int rc = add_phys(s, dup, (uint64_t)st.st_size, 1, h);
    pthread_mutex_unlock(&s->lock);
    if (rc)
        close(dup);
    return rc;
}

static int sv_reserve(gos_device *d, uint64_t bytes, uint64_t *va)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    /* Over-reserve by one page and trim to a 2 MB aligned range. */
    uint64_t len = bytes + GOS_VMM_PAGE;
    void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "reserving %llu bytes of simulated device addresses: %s",
                        (unsigned long long)bytes, strerror(errno));
    uint64_t a = (uint64_t)(uintptr_t)p, al = (a + GOS_VMM_PAGE - 1) / GOS_VMM_PAGE * GOS_VMM_PAGE;
    if (al > a)
        munmap(p, al - a);
    if (a + len > al + bytes)
        munmap((void *)(uintptr_t)(al + bytes), a + len - al - bytes);
    pthread_mutex_lock(&s->lock);
    int rc = gos_grow((void **)&s->res, &s->cap_res, s->n_res, sizeof *s->res, 16);
    if (!rc)
        s->res[s->n_res++] = (struct sv_range){al, bytes, 0, 0};
    pthread_mutex_unlock(&s->lock);
    if (rc)
        munmap((void *)(uintptr_t)al, bytes);
    else
        *va = al;
    return rc;
}

/* The index of the range [va, va + bytes) exactly in r[0..n), or n. */
static int find_range(const struct sv_range *r, int n, uint64_t va, uint64_t bytes)
{
    int i = 0;
    while (i < n && !(r[i].va == va && r[i].bytes == bytes))
        i++;
    return i;
}

static int sv_unreserve(gos_device *d, uint64_t va, uint64_t bytes)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    int rc = GOS_OK, i = find_range(s->res, s->n_res, va, bytes);
    if (i == s->n_res) {
        rc = gos_fail(GOS_EINVAL, "unreserve: 0x%llx+%llu is not a reservation", (unsigned long long)va,
                      (unsigned long long)bytes);
        goto out;
    }
    for (int m = 0; m < s->n_maps; m++)
        if (s->maps[m].va >= va && s->maps[m].va < va + bytes) {
            rc = gos_fail(GOS_EINVAL, "unreserve: 0x%llx is still mapped", (unsigned long long)s->maps[m].va);
            goto out;
        }
    munmap((void *)(uintptr_t)va, bytes);
    s->res[i] = s->res[--s->n_res];
out:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int sv_map(gos_device *d, uint64_t va, uint64_t bytes, uint64_t h)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    int rc = GOS_OK, inres = 0;
    struct sv_phys *p = find_phys(s, h);
    if (!p || p->fd < 0) {
        rc = gos_fail(GOS_EINVAL, "map: %llu is not a live simulated allocation", (unsigned long long)h);
        goto out;
    }
    if (bytes > p->bytes) {
        rc = gos_fail(GOS_EINVAL, "map: %llu bytes of a %llu-byte allocation", (unsigned long long)bytes,
                      (unsigned long long)p->bytes);
        goto out;
    }
    for (int i = 0; i < s->n_res; i++)
        inres |= va >= s->res[i].va && bytes <= s->res[i].bytes && va - s->res[i].va <= s->res[i].bytes - bytes;
    if (!inres) {
        rc = gos_fail(GOS_EINVAL, "map: 0x%llx+%llu is not inside a reservation", (unsigned long long)va,
                      (unsigned long long)bytes);
        goto out;
    }
    for (int i = 0; i < s->n_maps; i++)
        if (va < s->maps[i].va + s->maps[i].bytes && s->maps[i].va < va + bytes) {
            rc = gos_fail(GOS_EINVAL, "map: 0x%llx+%llu overlaps a mapping", (unsigned long long)va,
                          (unsigned long long)bytes);
            goto out;
        }
    if ((rc = gos_grow((void **)&s->maps, &s->cap_maps, s->n_maps, sizeof *s->maps, 16)))
        goto out;
    if (mmap((void *)(uintptr_t)va, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->fd, 0) ==
        MAP_FAILED) {
        rc = gos_fail(GOS_ENOMEM, "map: %s", strerror(errno));
        goto out;
    }
    s->maps[s->n_maps++] = (struct sv_range){va, bytes, h, 0};
    p->maps++;
out:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int sv_unmap(gos_device *d, uint64_t va, uint64_t bytes)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    int rc = GOS_OK, i = find_range(s->maps, s->n_maps, va, bytes);
    if (i == s->n_maps) {
        rc = gos_fail(GOS_EINVAL, "unmap: 0x%llx+%llu is not a mapping", (unsigned long long)va,
                      (unsigned long long)bytes);
        goto out;
    }
    if (mmap((void *)(uintptr_t)va, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
             0) == MAP_FAILED) {
        rc = gos_fail(GOS_ENOMEM, "unmap: %s", strerror(errno));
        goto out;
    }
    struct sv_phys *p = find_phys(s, s->maps[i].phys);
    s->maps[i] = s->maps[--s->n_maps];
    if (p) {
        p->maps--;
        maybe_free(s, p);
    }
out:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* The mapping holding address p (lock held), or -1. */
static int map_holding(const struct sim_vmm *s, uint64_t p)
{
    for (int i = 0; i < s->n_maps; i++)
        if (p >= s->maps[i].va && p - s->maps[i].va < s->maps[i].bytes)
            return i;
    return -1;
}

/* 1: [p, p + n) mapped (and writable there when write), 0 not mapped, -1
 * mapped read-only and write asked. The range may cross from one mapping into
 * the next one adjacent to it (two allocations mapped side by side are one
 * range on a GPU); a gap anywhere is not mapped. */
static int mapped_locked(const struct sim_vmm *s, uint64_t p, uint64_t n, int write)
{
    int ro = 0;
    if (!n)
        return map_holding(s, p) >= 0;
    if (p > UINT64_MAX - n)
        return 0;
    for (uint64_t at = p, end = p + n; at < end;) {
        int i = map_holding(s, at);
        if (i < 0)
            return 0;
        ro |= s->maps[i].ro;
        at = s->maps[i].va + s->maps[i].bytes;
    }
    return write && ro ? -1 : 1;
}

int gos_sim_vmm_mapped(gos_device *d, uint64_t p, uint64_t n)
{
    return gos_sim_vmm_access(d, p, n, 0) == 1;
}

int gos_sim_vmm_access(gos_device *d, uint64_t p, uint64_t n, int write)
{
    struct sim_vmm *s = d->vmm_priv;
    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    int ok = mapped_locked(s, p, n, write);
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Read-only: the host pages are mprotect()ed as well, so a write that got past
 * every check still cannot change the bytes (it faults this process). */
static int sv_set_access(gos_device *d, uint64_t va, uint64_t bytes, int read_only)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    int rc = GOS_OK, i = find_range(s->maps, s->n_maps, va, bytes);
    if (i == s->n_maps)
        rc = gos_fail(GOS_EINVAL, "set access: 0x%llx+%llu is not a mapping", (unsigned long long)va,
                      (unsigned long long)bytes);
    else if (mprotect((void *)(uintptr_t)va, bytes, read_only ? PROT_READ : PROT_READ | PROT_WRITE))
        rc = gos_fail(GOS_EINVAL, "set access: %s", strerror(errno));
    else
        s->maps[i].ro = read_only;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int sv_copy(gos_device *d, void *host, uint64_t va, uint64_t n, int to_device)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    /* The lock is held over the copy: an unmap of the range waits for it. */
    pthread_mutex_lock(&s->lock);
    int ok = mapped_locked(s, va, n, to_device);
    if (ok == 1) {
        if (to_device)
            memcpy((void *)(uintptr_t)va, host, n);
        else
            memcpy(host, (const void *)(uintptr_t)va, n);
    }
    pthread_mutex_unlock(&s->lock);
    if (ok < 0)
        return gos_fail(GOS_EPERM, "copy to the device: 0x%llx+%llu is mapped read-only", (unsigned long long)va,
                        (unsigned long long)n);
    return ok ? GOS_OK
              : gos_fail(GOS_EINVAL, "copy %s the device: 0x%llx+%llu is not mapped", to_device ? "to" : "from",
                         (unsigned long long)va, (unsigned long long)n);
}

static int sv_to_host(gos_device *d, void *dst, uint64_t va, uint64_t n) { return sv_copy(d, dst, va, n, 0); }
static int sv_to_device(gos_device *d, uint64_t va, const void *src, uint64_t n)
{
    return sv_copy(d, (void *)src, va, n, 1);
}

static int sv_usage(gos_device *d, uint64_t *bytes, int *handles, int *mappings)
{
    struct sim_vmm *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    *bytes = s->used;
    *handles = 0;
    for (int i = 0; i < s->n_phys; i++)
        *handles += s->phys[i].fd >= 0;
    *mappings = s->n_maps;
    pthread_mutex_unlock(&s->lock);
    return GOS_OK;
}

const struct gos_vmm_ops gos_sim_vmm_ops = {
    .close = sv_close,
    .create = sv_create,
    .release = sv_release,
    .export_fd = sv_export,
    .import_fd = sv_import,
    .reserve = sv_reserve,
    .unreserve = sv_unreserve,
    .map = sv_map,
    .unmap = sv_unmap,
    .copy_to_host = sv_to_host,
    .copy_to_device = sv_to_device,
    .usage = sv_usage,
    .set_access = sv_set_access,
};
