/* SPDX-License-Identifier: Apache-2.0 */
/* fixtures.h: what the unit tests of pillars 1a, 1b and the scheduler set up
 * alike (header-only, static inline; include after cmocka.h): a simulated
 * device from a chip document, pillar 1a's probe of it, pillar 1b's discovery
 * on it, and a scheduler with one vGPU and one task. Used by test_topology,
 * test_smset, test_numa, test_memory, test_place and test_sched. */
#ifndef GOS_TEST_FIXTURES_H
#define GOS_TEST_FIXTURES_H

#include "common/status.h"
#include "device/device.h"
#include "device/topo_ops.h"
#include "numa/numa.h"
#include "sched/sched.h"
#include "topology/topology.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A simulated device from the chip document doc (written to a temporary file,
 * opened, the file removed; doc stays the caller's): gos_sim_open's status. */
static inline int fx_open_json(json_t *doc, gos_device **d)
{
    char path[] = "/tmp/gpuos-test-chip-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(json_dump_file(doc, path, 0), 0);
    int rc = gos_sim_open(path, d);
    unlink(path);
    return rc;
}

/* Pillar 1a on doc: the device opened (asserted) and probed with the default
 * options into *r: gos_topo_probe's status. The caller frees *r (when GOS_OK)
 * and closes *d. */
static inline int fx_topo_probe(json_t *doc, gos_device **d, gos_topo_result *r)
{
    assert_int_equal(fx_open_json(doc, d), GOS_OK);
    gos_topo_opts o;
    gos_topo_default_opts(&o);
    return gos_topo_probe(*d, &o, r);
}

/* Pillar 1b on doc, which it consumes: the device opened (asserted) and its
 * memory discovered with the default options into *m: gos_numa_discover's
 * status. The caller ends with fx_numa_close. */
static inline int fx_numa_discover(json_t *doc, gos_device **d, gos_numa_model *m)
{
    int rc = fx_open_json(doc, d);
    json_decref(doc);
    assert_int_equal(rc, GOS_OK);
    gos_numa_opts o;
    gos_numa_opts_default(&o);
    return gos_numa_discover(*d, &o, m);
}

static inline void fx_numa_close(gos_device *d, gos_numa_model *m)
{
    gos_numa_model_free(m);
    gos_device_close(d);
}

/* A scheduler of policy ("fifo", "credit", "band") over engines of mode. */
static inline gos_sched *fx_sched_new(const char *policy, int mode)
{
    gos_sched *s = NULL;
    assert_int_equal(gos_sched_new(policy, mode, 0, &s), GOS_OK);
    assert_non_null(s);
    return s;
}

static inline void fx_task_init(gos_sched_task *t, uint32_t vgpu, uint32_t client, int kind, int prio)
{
    memset(t, 0, sizeof *t);
    t->vgpu = vgpu;
    t->client = client;
    t->kind = kind;
    t->priority = prio;
}

/* A scheduler of policy (MRQ engines) with vGPU 1 at shares 50/50 and *t, a
 * compute task of it, submitted at submit_ns and asked for at next_ns: it must
 * be the one dispatched (asserted). */
static inline gos_sched *fx_sched_one(const char *policy, gos_sched_task *t, uint64_t submit_ns, uint64_t next_ns)
{
    gos_sched *s = fx_sched_new(policy, GOS_SCHED_MRQ);
    gos_sched_vgpu_add(s, 1, 50, 50);
    fx_task_init(t, 1, 0, GOS_SCHED_COMPUTE, 0);
    gos_sched_submit(s, t, submit_ns);
    assert_ptr_equal(gos_sched_next(s, 0, next_ns, NULL), t);
    return s;
}

#endif
