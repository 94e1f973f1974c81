/* SPDX-License-Identifier: Apache-2.0 */
/* state.c: `gpuos vgpu set` survives a restart. Every runtime override is kept
 * in the state file with the configuration file's value it replaced, and every
 * vGPU made by `gpuos vgpu create` (issue 25; vgpu_life.c) with its keys:
 *
 *   {"schema": "gpuos.vgpu-state/1",
 *    "overrides": [{"vgpu": "alice", "key": "compute", "value": "30", "config": "60"}],
 *    "created": [{"vgpu": "slurm-42-0", "keys": {"device": "0", "compute": "30",
 *                 "copy": "30", "memory": "30%", "users": "1001"}}]}
 *
 * A created vGPU that the configuration file now names is dropped (the file's
 * section wins, logged); one whose keys no longer apply (its device or user
 * gone) is dropped with a warning. ("created" is optional: files of earlier
 * versions load unchanged.)
 *
 * At start (and at every reload) an override is applied while the file still
 * says what it said when the override was made; once the file's value changed,
 * the file wins and the override is dropped (logged). The file is written
 * atomically (temporary file in the same directory, fsync, rename). A state file
 * that cannot be read or parsed stops the daemon with a message naming it: it is
 * never silently discarded.
 *
 * Where: `state = PATH` in the configuration (`state = none`: not persisted);
 * default $STATE_DIRECTORY/vgpu-state.json under systemd (StateDirectory=),
 * else CONFIG.state beside the configuration file. srv_vgpu_set_persist (a
 * `vgpu set` from a client: applied by vgpu.c, then saved here) is here too.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/session.h"
#include "serve/reply.h"
#include "serve/dev.h"
#include "serve/vgpu.h"
#include "serve/state.h"
#include "common/log.h"

#include "common/env.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const keys[SRV_OV_N] = {"compute", "copy", "memory"};

static void state_path(struct srv *s)
{
    const char *st = s->cfg.state, *sd = gos_env(GOS_ENV_SYS_STATE_DIRECTORY);
    if (!strcmp(st, "none"))
        s->state_path[0] = 0;
    else if (st[0])
        snprintf(s->state_path, sizeof s->state_path, "%s", st);
    else if (sd && sd[0]) /* systemd: possibly several, colon-separated */
        snprintf(s->state_path, sizeof s->state_path, "%.*s/vgpu-state.json", (int)strcspn(sd, ":"), sd);
    else
        snprintf(s->state_path, sizeof s->state_path, "%s.state", s->config_path);
}

int srv_state_reconcile(struct srv *s)
{
    int dropped = 0;
    for (int v = 0; v < s->n_vgpus; v++) {
        struct srv_vgpu *g = &s->vgpus[v];
        for (int k = 0; k < SRV_OV_N; k++) {
            struct srv_override *o = &g->ov[k];
            char file[32];
            if (!o->set)
                continue;
            srv_vgpu_file_value(&g->file, k, file, sizeof file);
            if (!strcmp(file, o->base))
                continue;
            gos_log(LOG_NOTICE, "vGPU %s: %s = %s in the configuration file (was %s when `vgpu set` made it %s): "
                                "the file's value wins", g->cfg.name, keys[k], file, o->base, o->value);
            memset(o, 0, sizeof *o);
            /* back to the file's value */
            if (k == SRV_OV_COMPUTE)
                g->cfg.compute = g->file.compute;
            else if (k == SRV_OV_COPY)
                g->cfg.copy = g->file.copy;
            else {
                struct srv_dev *d = &s->devs[g->cfg.device];
                g->cfg.mem_pct = g->file.mem_pct;
                g->cfg.mem_bytes = g->file.mem_bytes;
                g->mem_quota = gos_serve_mem_quota(g->cfg.mem_pct, g->cfg.mem_bytes, d->mem_total);
            }
            if (k != SRV_OV_MEMORY)
                gos_sched_vgpu_set_shares(s->devs[g->cfg.device].sched, g->id, g->cfg.compute, g->cfg.copy);
            dropped++;
        }
    }
    return dropped;
}

#define CORRUPT(...) gos_fail(GOS_EINVAL, __VA_ARGS__)
#define HINT "(it holds the changes of `gpuos vgpu set`: repair or remove it)"

int srv_state_load(struct srv *s)
{
    state_path(s);
    if (!s->state_path[0])
        return GOS_OK;
    const char *p = s->state_path;
    if (access(p, F_OK)) {
        if (errno != ENOENT)
            return gos_fail(GOS_EIO, "state file %s: %s", p, strerror(errno));
        gos_log(LOG_INFO, "state file %s: none yet (`vgpu set` changes will be kept there)", p);
        return GOS_OK;
    }
    json_error_t je;
    json_t *root = json_load_file(p, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return CORRUPT("state file %s:%d:%d: %s " HINT, p, je.line, je.column, je.text);
    int rc = GOS_OK, applied = 0, n_drop = 0;
    json_t *schema = json_object_get(root, "schema"), *ovs = json_object_get(root, "overrides");
    if (!json_is_string(schema) || strcmp(json_string_value(schema), "gpuos.vgpu-state/1")) {
        rc = CORRUPT("state file %s: schema is not \"gpuos.vgpu-state/1\" " HINT, p);
        goto out;
    }
    if (!json_is_array(ovs)) {
        rc = CORRUPT("state file %s: \"overrides\" is not an array " HINT, p);
        goto out;
    }
    size_t i;
    json_t *e;
    json_array_foreach(ovs, i, e) {
        const char *vg = json_string_value(json_object_get(e, "vgpu"));
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *val = json_string_value(json_object_get(e, "value"));
        const char *base = json_string_value(json_object_get(e, "config"));
        int k = -1;
        for (int j = 0; key && j < SRV_OV_N; j++)
            if (!strcmp(key, keys[j]))
                k = j;
        if (!json_is_object(e) || !vg || !val || !base || k < 0 || strlen(val) >= 32 || strlen(base) >= 32) {
            rc = CORRUPT("state file %s: override %zu needs string vgpu, key (compute, copy or memory), value "
                         "and config " HINT, p, i + 1);
            goto out;
        }
        int v = srv_vgpu_find(s, vg);
        if (v < 0) {
            gos_log(LOG_NOTICE, "state file: vGPU %s is no longer configured: its %s = %s is dropped", vg, key, val);
            n_drop++;
            continue;
        }
        struct srv_vgpu *g = &s->vgpus[v];
        char file[32];
        srv_vgpu_file_value(&g->file, k, file, sizeof file);
        if (strcmp(file, base)) {
            gos_log(LOG_NOTICE, "vGPU %s: %s = %s in the configuration file (was %s when `vgpu set` made it %s): "
                                "the file's value wins", vg, key, file, base, val);
            n_drop++;
            continue;
        }
        if (srv_vgpu_set(s, vg, key, val)) {
            rc = CORRUPT("state file %s: override %zu (%s %s = %s): %s " HINT, p, i + 1, vg, key, val,
                         gos_last_error());
            goto out;
        }
        struct srv_override *o = &g->ov[k];
        o->set = 1;
        snprintf(o->value, sizeof o->value, "%s", val);
        snprintf(o->base, sizeof o->base, "%s", base);
        applied++;
    }
    json_t *cr = json_object_get(root, "created");
    int made = 0;
    if (cr && !json_is_array(cr)) {
        rc = CORRUPT("state file %s: \"created\" is not an array " HINT, p);
        goto out;
    }
    json_array_foreach(cr, i, e) {
        const char *vg = json_string_value(json_object_get(e, "vgpu"));
        json_t *kj = json_object_get(e, "keys"), *val;
        char text[GOS_ADMIN_KEYS_MAX];
        size_t w = 0;
        const char *k;
        int ok = vg && json_is_object(kj);
        json_object_foreach(kj, k, val) {
            if (!json_is_string(val) || w >= sizeof text)
                ok = 0;
            else if (gos_serve_text_check("key", k) || gos_serve_text_check(k, json_string_value(val))) {
                rc = CORRUPT("state file %s: created vGPU %zu: %s " HINT, p, i + 1, gos_last_error());
                goto out;
            }
            else
                w += (size_t)snprintf(text + w, sizeof text - w, "%s=%s\n", k, json_string_value(val));
        }
        if (!ok || w >= sizeof text) {
            rc = CORRUPT("state file %s: created vGPU %zu needs a string vgpu and an object of string keys " HINT, p,
                         i + 1);
            goto out;
        }
        text[w] = 0;
        if (srv_vgpu_find(s, vg) >= 0) {
            gos_log(LOG_NOTICE, "state file: vGPU %s (made by `vgpu create`) is now in the configuration file: the "
                                "file's section wins", vg);
            n_drop++;
        } else if (srv_vgpu_create(s, vg, text, 0)) {
            gos_log(LOG_WARNING, "state file: vGPU %s (made by `vgpu create`) is dropped: %s", vg, gos_last_error());
            n_drop++;
        } else {
            made++;
        }
    }
    gos_log(LOG_INFO, "state file %s: %d `vgpu set` change%s applied, %d vGPU%s made by `vgpu create`%s", p, applied,
            applied == 1 ? "" : "s", made, made == 1 ? "" : "s", n_drop ? ", others dropped (above)" : "");
    if (n_drop)
        rc = srv_state_save(s);
out:
    json_decref(root);
    return rc;
}

int srv_state_save(struct srv *s)
{
    const char *p = s->state_path;
    if (!p[0])
        return GOS_OK;
    json_t *ovs = json_array();
    for (int v = 0; v < s->n_vgpus; v++)
        for (int k = 0; k < SRV_OV_N; k++) {
            struct srv_override *o = &s->vgpus[v].ov[k];
            if (o->set)
                json_array_append_new(ovs, json_pack("{s:s, s:s, s:s, s:s}", "vgpu", s->vgpus[v].cfg.name, "key",
                                                     keys[k], "value", o->value, "config", o->base));
        }
    json_t *cr = json_array();
    for (int v = 0; v < s->n_vgpus; v++)
        if (s->vgpus[v].created && !s->vgpus[v].deleted)
            json_array_append_new(cr, srv_vgpu_created_json(s, v));
    json_t *root = json_pack("{s:s, s:o, s:o}", "schema", "gpuos.vgpu-state/1", "overrides", ovs, "created", cr);
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!text)
        return gos_fail(GOS_ENOMEM, "out of memory");
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", p, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), e = 0;
    size_t n = strlen(text);
    if (fd < 0 || write(fd, text, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fsync(fd))
        e = errno ? errno : EIO;
    if (fd >= 0 && close(fd) && !e)
        e = errno;
    if (!e && rename(tmp, p))
        e = errno;
    free(text);
    if (e) {
        unlink(tmp);
        return gos_fail(e == EACCES || e == EROFS ? GOS_EPERM : GOS_EIO,
                        "cannot save the state file %s: %s (set state = PATH or state = none)", p, strerror(e));
    }
    return GOS_OK;
}

int srv_vgpu_set_persist(struct srv *s, const char *name, const char *key, const char *value)
{
    int v = srv_vgpu_find(s, name);
    int k = !strcmp(key, "compute") ? SRV_OV_COMPUTE : !strcmp(key, "copy") ? SRV_OV_COPY
                                                     : !strcmp(key, "memory") ? SRV_OV_MEMORY : -1;
    if (v < 0 || k < 0)
        return srv_vgpu_set(s, name, key, value); /* its message */
    struct srv_vgpu *g = &s->vgpus[v];
    struct srv_dev *d = &s->devs[g->cfg.device];
    struct gos_serve_vgpucfg old_cfg = g->cfg, old_file = g->file;
    struct srv_override old_ov = g->ov[k];
    uint64_t old_quota = g->mem_quota;
    int rc = srv_vgpu_set(s, name, key, value);
    if (rc)
        return rc;
    if (g->created)
        g->file = g->cfg; /* its definition is the state file's: no override */
    char now[32], file[32];
    srv_vgpu_file_value(&g->cfg, k, now, sizeof now);
    srv_vgpu_file_value(&g->file, k, file, sizeof file);
    struct srv_override *o = &g->ov[k];
    if (!strcmp(now, file)) {
        memset(o, 0, sizeof *o); /* back to the file's value: nothing to remember */
    } else {
        o->set = 1;
        snprintf(o->value, sizeof o->value, "%s", now);
        snprintf(o->base, sizeof o->base, "%s", file);
    }
    if (s->state_path[0] && (rc = srv_state_save(s))) {
        char why[512];
        snprintf(why, sizeof why, "%s", gos_last_error());
        g->cfg = old_cfg;
        g->file = old_file;
        g->ov[k] = old_ov;
        g->mem_quota = old_quota;
        gos_sched_vgpu_set_shares(d->sched, g->id, g->cfg.compute, g->cfg.copy);
        return gos_fail(rc, "%s; the change was not made", why);
    }
    gos_log(LOG_NOTICE, "vgpu set %s %s=%s%s", name, key, value, s->state_path[0] ? " (saved)" : "");
    srv_check_oversubscription(s, "after vgpu set");
    return GOS_OK;
}

/* ADMIN_SET (`gpuos vgpu set`; client.c's msg_table). */
int srv_msg_admin_set(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct srv *s = c->srv;
    const struct gos_msg_admin_set *m = p;
    int rc = srv_admin_ok(c, "change shares");
    if (!rc)
        rc = srv_vgpu_set_persist(s, m->vgpu, m->key, m->value);
    return srv_reply(c, h->seq, h->type, rc, NULL, 0);
}
