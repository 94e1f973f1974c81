/* SPDX-License-Identifier: Apache-2.0 */
/* stream.c: streams, events and host functions of gpuos's libcuda.so.1 (in the
 * CUDA program's process). All streams of a process are the client's one
 * ordered queue (stronger ordering than CUDA promises: a correct program stays
 * correct; concurrency between a program's own streams is lost), so a stream
 * wait is already satisfied and a stream query waits. An event record is the
 * built-in "stamp" kernel in queue order (GPU timestamps; the host clock where
 * the daemon has no such kernel) and a completion mark that queries and
 * synchronises of the event read without waiting for the queue. */
#include "common/clock.h"
#include "cudashim/driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Thread_local CUstream op_stream; /* this thread's last stream_ok (shim_hf_before) */

int stream_ok(CUstream s)
{
    int ok = !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || s->magic == MAGIC_STREAM;
    if (ok)
        op_stream = s;
    return ok;
}

/* A stream of the program's own making (not the legacy or per-thread default,
 * which every blocking stream waits for and is waited for by). */
static int made_stream(CUstream s) { return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD; }

static CUresult stream_new(CUstream *s, unsigned flags, int priority)
{
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    struct CUstream_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = MAGIC_STREAM;
    x->flags = flags;
    x->priority = priority;
    *s = x;
    return CUDA_SUCCESS;
}
E CUresult cuStreamCreate(CUstream *s, unsigned int flags) { return stream_new(s, flags, 0); }
E CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int priority)
{
    return stream_new(s, flags, priority);
}

E CUresult cuStreamDestroy_v2(CUstream s)
{
    NEED_INIT();
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || s->magic != MAGIC_STREAM)
        return CUDA_ERROR_INVALID_HANDLE;
    s->magic = MAGIC_DEAD; /* the handle memory is kept: late uses stay detectable */
    return CUDA_SUCCESS;
}

/* Events. With the built-in "stamp" kernel, a record is a one-thread launch in
 * queue order that writes the GPU's global timer (ns) into the event's 8 bytes
 * of a small device pool, so elapsed times are GPU times between the work
 * before each record, as CUDA's own events measure. Without it (or when the
 * pool is full), a record waits for the queue and takes the host clock.
 *
 * Completion: every record (timing or not) is also followed in queue order by
 * a sequence number written into the event's host word (memory of
 * gpuos_host_alloc): by the built-in fill kernel, one thread, where the device
 * reaches that memory at its own address (mapped host memory, isolation =
 * process or mps), else written into a device word and copied asynchronously
 * from there (two copies: each a pause of the copy engine between kernels,
 * which Triton's and CuPy's event-timed loops measured as 3-4 %), so that a
 * query reads that word, NOT_READY until the work before the record
 * is done, and a synchronise waits for it alone, not for the queue behind it
 * (JAX's dispatch records and waits for an event per call: each one drained the
 * queue and its 4096^3 product ran at 0.77 x native). A word still short after
 * EV_PATIENCE_NS falls back to a synchronise, which waits and reports an error
 * of the queue (a faulted kernel never writes it). */
#define EV_SLOTS 4096
#define EV_HOST_WORDS (EV_SLOTS + 1) /* and the host functions' gate (below) */
#define EV_PATIENCE_NS 2000000000ull
static struct {
    pthread_mutex_t lock;
    uint64_t base; /* 2 x EV_SLOTS x 8 bytes of device memory (stamps, sequence
                    * words), allocated on first use */
    uint64_t *done; /* EV_HOST_WORDS x 8 bytes of gpuos_host_alloc memory: the
                     * sequence numbers the queue reached; NULL: queries synchronise */
    int reached;    /* the device writes done[] itself (gpuos_host_device_pointer) */
    uint64_t seq;
    int tried;
    unsigned char used[EV_SLOTS];
} EV = {PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0, 0, 0, {0}};

static int event_slot(void)
{
    int slot = -1;
    pthread_mutex_lock(&EV.lock);
    if (!EV.tried) {
        EV.tried = 1;
        if (gpuos_mem_alloc(shim_proc.g, 2 * EV_SLOTS * 8, &EV.base))
            EV.base = 0;
        void *h = NULL;
        if (EV.base && !gpuos_host_alloc(shim_proc.g, EV_HOST_WORDS * 8, &h)) {
            memset(h, 0, EV_HOST_WORDS * 8);
            EV.done = h;
            uint64_t dp = 0;
            EV.reached = builtin_fn(BI_FILL) && !gpuos_host_device_pointer(shim_proc.g, h, &dp) && dp == (uintptr_t)h;
        }
    }
    for (int i = 0; EV.base && i < EV_SLOTS && slot < 0; i++)
        if (!EV.used[i]) {
            EV.used[i] = 1;
            slot = i;
        }
    pthread_mutex_unlock(&EV.lock);
    return slot;
}

static void event_slot_free(int slot)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&EV.lock);
    EV.used[slot] = 0;
    pthread_mutex_unlock(&EV.lock);
}

/* The record's completion mark: a new sequence number (32 bits) into the
 * event's host word, queued (the fill kernel, or a device word and a copy). */
static int event_mark(struct CUevent_st *e)
{
    pthread_mutex_lock(&EV.lock);
    uint64_t seq = ++EV.seq & 0xffffffffu; /* (the fill kernel writes 32 bits) */
    if (!seq)
        seq = ++EV.seq & 0xffffffffu;
    pthread_mutex_unlock(&EV.lock);
    int rc;
    if (EV.reached) { /* one thread of the fill kernel writes the low word */
        struct {
            uint64_t p;
            uint32_t value, pad;
            uint64_t count;
        } prm = {(uint64_t)(uintptr_t)&EV.done[e->slot], (uint32_t)seq, 0, 1};
        gpuos_launch_config c = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
        rc = queued_one(gpuos_launch(shim_proc.g, builtin_fn(BI_FILL), &c, &prm, sizeof prm));
    } else {
        uint64_t dw = EV.base + (uint64_t)(EV_SLOTS + e->slot) * 8;
        rc = queued_one(gpuos_memcpy_htod_async(shim_proc.g, dw, &seq, 8));
        if (!rc)
            rc = queued_one(gpuos_memcpy_dtoh_async(shim_proc.g, &EV.done[e->slot], dw, 8));
    }
    if (!rc) {
        e->seq = seq;
        e->at = gos_now_ns();
    }
    return rc;
}

/* Whether the queue reached the event's last record (its host word). */
static int mark_reached(int slot, uint64_t seq)
{
    uint32_t w = (uint32_t)__atomic_load_n(&EV.done[slot], __ATOMIC_ACQUIRE);
    return (int32_t)(w - (uint32_t)seq) >= 0; /* (numbers wrap at 2^32) */
}

static int event_reached(const struct CUevent_st *e) { return mark_reached(e->slot, e->seq); }

/* Waits for a mark until `until` (gos_now_ns): 1 reached, 0 not by then.
 * Spinning 2 ms first, then polling every 20 us, as CUDA's default
 * spin-then-yield: a sleep costs 60-100 us on a virtual machine, and what waits
 * behind a mark (a host function's gate) waits that much longer. */
static int mark_wait(int slot, uint64_t seq, uint64_t until)
{
    for (uint64_t t0 = gos_now_ns(), now = t0; now < until; now = gos_now_ns()) {
        if (mark_reached(slot, seq))
            return 1;
        if (now - t0 > 2000000u) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    return mark_reached(slot, seq);
}

static int event_record(struct CUevent_st *e)
{
    shim_hf_before(1);
    gpuos_function f = e->flags & CU_EVENT_DISABLE_TIMING ? 0 : builtin_fn(BI_STAMP);
    if (e->slot < 0)
        e->slot = event_slot();
    e->seq = 0;
    int rc = GPUOS_OK;
    if (f && e->slot >= 0) {
        uint64_t p = EV.base + (uint64_t)e->slot * 8;
        gpuos_launch_config c = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
        rc = queued_one(gpuos_launch(shim_proc.g, f, &c, &p, sizeof p));
        e->recorded = rc ? 0 : 2;
    } else if (e->flags & CU_EVENT_DISABLE_TIMING) { /* queued work to wait for, no time */
        e->recorded = 3;
    } else {
        rc = shim_sync();
        gos_now_timespec(&e->t);
        e->recorded = 1;
        return rc; /* complete already */
    }
    if (!rc && e->slot >= 0 && EV.done)
        rc = event_mark(e);
    return rc;
}

/* The event's time in ns on its clock (after the queue has drained). */
static int event_ns(const struct CUevent_st *e, uint64_t *ns)
{
    if (e->recorded == 2)
        return gpuos_memcpy_dtoh(shim_proc.g, ns, EV.base + (uint64_t)e->slot * 8, 8);
    *ns = (uint64_t)e->t.tv_sec * 1000000000ull + (uint64_t)e->t.tv_nsec;
    return GPUOS_OK;
}

E CUresult cuStreamSynchronize(CUstream s)
{
    NEED_INIT();
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (shim_capturing(s))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* as CUDA: no waiting inside a capture */
    return map_rc(shim_sync(), "cuStreamSynchronize");
}
E CUresult cuStreamQuery(CUstream s)
{
    NEED_INIT();
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    return map_rc(shim_sync(), "cuStreamQuery");
}
E CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    NEED_INIT();
    if (!stream_ok(s) || !e || e->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS; /* one queue: everything recorded before is ordered before */
}
E CUresult cuStreamGetPriority(CUstream s, int *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *p = s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD ? s->priority : 0;
    return CUDA_SUCCESS;
}
E CUresult cuStreamGetFlags(CUstream s, unsigned int *f)
{
    if (!f)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *f = s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD ? s->flags : 0;
    return CUDA_SUCCESS;
}
E CUresult cuStreamGetCtx(CUstream s, CUcontext *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *c = cur_ctx ? cur_ctx : &shim_proc.primary;
    return CUDA_SUCCESS;
}
E CUresult cuEventRecord(CUevent e, CUstream s)
{
    NEED_INIT();
    if (!e || e->magic != MAGIC_EVENT || !stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (shim_capturing(s))
        return shim_capture_event(e);
    return map_rc(event_record(e), "cuEventRecord");
}
E CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags)
{
    return cuEventRecord(e, s);
}

/* Host functions (cuLaunchHostFunc, cuStreamAddCallback), asynchronous as
 * CUDA's: a completion mark (an event's, on a slot of their own) and a gate
 * (gpuos_gate) go into the queue, and the shim's host-function thread waits for
 * the mark, calls the function and opens the gate, so the work queued after it
 * waits for the function while the caller goes on (JAX ends every call with
 * one: each waited for the whole queue in the caller's thread, and its product
 * ran at 0.84 x native). Without the fast path (no gate), or with HF_MAX of
 * them waiting, one runs after a synchronise in the caller's thread, which
 * also finds every earlier one done. A function must not call CUDA (CUDA's
 * rule: here a synchronise inside it would wait for its own gate). */
#define HF_MAX 1024
/* A host function on a stream the program made (JAX's callback stream,
 * which waits for an event of its compute stream before each call's host
 * function) gates only what is queued after it on that stream, and on the
 * legacy stream: its gate goes into the queue (the one queue of every
 * stream) only before the next operation that must wait for it
 * (shim_hf_before), or a synchronise. Queued at once, it held every later
 * kernel of the compute stream until the function had run: JAX's 4096^3
 * product at 0.92-0.94 x native. */
static struct {
    pthread_mutex_t lock;
    CUstream s;   /* the stream of the host function whose gate waits, if seq */
    uint64_t seq; /* that gate's value (0: none waits) */
} HG = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

/* Queues the waiting gate (HG.lock held). A gate refused (no fast path any
 * more) is waited for here: what follows is queued once the function ran. */
static void hg_flush_locked(void)
{
    uint64_t seq = HG.seq;
    HG.seq = 0;
    if (seq && gpuos_gate(shim_proc.g, &EV.done[EV_SLOTS], seq))
        while ((int32_t)((uint32_t)__atomic_load_n(&EV.done[EV_SLOTS], __ATOMIC_ACQUIRE) - (uint32_t)seq) < 0) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
}

void shim_hf_before(int async)
{
    if (!__atomic_load_n(&HG.seq, __ATOMIC_ACQUIRE))
        return;
    CUstream s = async ? op_stream : NULL; /* synchronous: the legacy stream's */
    pthread_mutex_lock(&HG.lock);
    if (HG.seq && (!made_stream(s) || s == HG.s))
        hg_flush_locked();
    pthread_mutex_unlock(&HG.lock);
}
struct hf_item {
    CUhostFn fn;
    CUstreamCallback cb;
    CUstream s;
    void *data;
    uint64_t seq;
};
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int tried, slot; /* the marks' event slot, -1: no asynchronous host functions */
    struct hf_item q[HF_MAX];
    unsigned head, n;
} HF = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, -1, {{0}}, 0, 0};

_Thread_local int shim_in_host_fn;

static void hf_call(const struct hf_item *it, CUresult status)
{
    shim_in_host_fn = 1;
    if (it->cb)
        it->cb(it->s, status, it->data);
    else
        it->fn(it->data);
    shim_in_host_fn = 0;
}

static void *hf_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&HF.lock);
        while (!HF.n)
            pthread_cond_wait(&HF.cond, &HF.lock);
        struct hf_item it = HF.q[HF.head];
        pthread_mutex_unlock(&HF.lock);
        mark_wait(HF.slot, it.seq, UINT64_MAX); /* (a faulted queue never writes it: nothing to call) */
        hf_call(&it, CUDA_SUCCESS);
        __atomic_store_n(&EV.done[EV_SLOTS], it.seq, __ATOMIC_RELEASE); /* the gate opens */
        pthread_mutex_lock(&HF.lock);
        HF.head = (HF.head + 1) % HF_MAX;
        HF.n--;
        pthread_mutex_unlock(&HF.lock);
    }
    return NULL;
}

static void hf_forked(void)
{
    HF.tried = 0; /* the child has no host-function thread */
    HF.slot = -1;
    HF.n = 0;
    HG.seq = 0; /* (nor a gate of the parent's to wait for) */
    pthread_mutex_init(&HG.lock, NULL);
    pthread_mutex_init(&HF.lock, NULL);
    pthread_cond_init(&HF.cond, NULL);
}

/* Queues it (mark, gate or the gate kept waiting in HG, the thread's item); -1:
 * run it synchronously. */
static int hf_queue(struct hf_item *it)
{
    shim_hf_before(1); /* an earlier one's gate on the same stream: before this one's mark */
    pthread_mutex_lock(&HF.lock);
    if (!HF.tried) {
        HF.tried = 1;
        int slot = event_slot();
        pthread_t t;
        /* a gate that is open at once says whether gates work here at all */
        if (slot >= 0 && EV.done && !gpuos_gate(shim_proc.g, &EV.done[EV_SLOTS], 0) &&
            !pthread_create(&t, NULL, hf_main, NULL)) {
            pthread_detach(t);
            pthread_atfork(NULL, NULL, hf_forked);
            HF.slot = slot;
        } else {
            event_slot_free(slot);
        }
    }
    int rc = -1;
    if (HF.slot >= 0 && HF.n < HF_MAX) {
        struct CUevent_st m = {.slot = HF.slot};
        int ok = !event_mark(&m);
        if (ok && made_stream(it->s)) { /* its gate waits for what must wait for it */
            pthread_mutex_lock(&HG.lock);
            if (HG.seq && HG.s != it->s)
                hg_flush_locked(); /* (one waiting gate at a time: another stream's goes in now) */
            HG.s = it->s;
            __atomic_store_n(&HG.seq, m.seq, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&HG.lock);
        } else if (ok) {
            ok = !gpuos_gate(shim_proc.g, &EV.done[EV_SLOTS], m.seq);
        }
        if (ok) {
            it->seq = m.seq;
            HF.q[(HF.head + HF.n++) % HF_MAX] = *it;
            pthread_cond_signal(&HF.cond);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&HF.lock);
    return rc;
}

static CUresult host_func(CUstream s, CUhostFn fn, CUstreamCallback cb, void *data, const char *what)
{
    struct hf_item it = {fn, cb, s, data, 0};
    if (!hf_queue(&it))
        return CUDA_SUCCESS;
    CUresult r = map_rc(shim_sync(), what);
    if (!r || cb)
        hf_call(&it, r); /* (a stream callback is told the status) */
    return cb ? CUDA_SUCCESS : r;
}

E CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
    NEED_INIT();
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (shim_capturing(s))
        return shim_capture_host(fn, data);
    return host_func(s, fn, NULL, data, "cuLaunchHostFunc");
}

E CUresult cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *data, unsigned int flags)
{
    NEED_INIT();
    if (!cb || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    return host_func(s, NULL, cb, data, "cuStreamAddCallback");
}

E CUresult cuStreamGetId(CUstream s, unsigned long long *id)
{
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *id = (unsigned long long)(uintptr_t)s;
    return CUDA_SUCCESS;
}

E CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    struct CUevent_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = MAGIC_EVENT;
    x->flags = flags;
    x->slot = -1;
    *e = x;
    return CUDA_SUCCESS;
}

E CUresult cuEventDestroy_v2(CUevent e)
{
    NEED_INIT();
    if (!e || e->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    e->magic = MAGIC_DEAD;
    event_slot_free(e->slot); /* a record still queued writes bytes no one reads */
    return CUDA_SUCCESS;
}

E CUresult cuEventQuery(CUevent e)
{
    NEED_INIT();
    if (!e || e->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->recorded < 2)
        return CUDA_SUCCESS;
    if (e->seq && event_reached(e))
        return CUDA_SUCCESS;
    if (e->seq && gos_now_ns() - e->at < EV_PATIENCE_NS)
        return CUDA_ERROR_NOT_READY;
    return map_rc(shim_sync(), "cuEventQuery"); /* no mark, or none for long: the queue's own answer */
}

E CUresult cuEventSynchronize(CUevent e)
{
    NEED_INIT();
    if (!e || e->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->recorded < 2)
        return CUDA_SUCCESS;
    /* the event's host word alone (the queue behind it goes on) */
    if (e->seq && mark_wait(e->slot, e->seq, e->at + EV_PATIENCE_NS))
        return CUDA_SUCCESS;
    return map_rc(shim_sync(), "cuEventSynchronize"); /* no mark, or none for long */
}

E CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!a || a->magic != MAGIC_EVENT || !b || b->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded || a->recorded != b->recorded)
        return CUDA_ERROR_INVALID_HANDLE; /* not recorded, or on different clocks */
    uint64_t ta = 0, tb = 0;
    int rc = a->recorded == 2 ? shim_sync() : GPUOS_OK;
    if (!rc)
        rc = event_ns(a, &ta);
    if (!rc)
        rc = event_ns(b, &tb);
    if (rc)
        return map_rc(rc, "cuEventElapsedTime");
    *ms = (float)(((double)tb - (double)ta) / 1e6);
    return CUDA_SUCCESS;
}


E CUresult cuStreamGetDevice(CUstream s, CUdevice *d)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *d = 0;
    return CUDA_SUCCESS;
}

/* Stream attributes: priority as set at creation; the hints (access policy,
 * synchronisation policy, sync domains) are kept so that a program reads back
 * what it set, and change nothing on one ordered queue. */
static struct {
    pthread_mutex_t m;
    struct {
        CUstream s;
        CUstreamAttrID id;
        CUstreamAttrValue v;
    } kept[64];
    int n;
} SA = {.m = PTHREAD_MUTEX_INITIALIZER};

E CUresult cuStreamSetAttribute(CUstream s, CUstreamAttrID id, const CUstreamAttrValue *v)
{
    NEED_INIT();
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (id == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
        if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
            return CUDA_ERROR_INVALID_HANDLE;
        s->priority = v->priority;
        return CUDA_SUCCESS;
    }
    if (id != CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW && id != CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY &&
        id != CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP && id != CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&SA.m);
    int i;
    for (i = 0; i < SA.n && !(SA.kept[i].s == s && SA.kept[i].id == id); i++)
        ;
    if (i < (int)(sizeof SA.kept / sizeof SA.kept[0])) { /* beyond: dropped (it changes nothing) */
        SA.kept[i].s = s;
        SA.kept[i].id = id;
        SA.kept[i].v = *v;
        if (i == SA.n)
            SA.n++;
    }
    pthread_mutex_unlock(&SA.m);
    return CUDA_SUCCESS;
}

E CUresult cuStreamGetAttribute(CUstream s, CUstreamAttrID id, CUstreamAttrValue *v)
{
    NEED_INIT();
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    memset(v, 0, sizeof *v);
    if (id == CU_LAUNCH_ATTRIBUTE_PRIORITY)
        return cuStreamGetPriority(s, &v->priority);
    pthread_mutex_lock(&SA.m);
    for (int i = 0; i < SA.n; i++)
        if (SA.kept[i].s == s && SA.kept[i].id == id)
            *v = SA.kept[i].v;
    pthread_mutex_unlock(&SA.m);
    return CUDA_SUCCESS;
}

E CUresult cuStreamCopyAttributes(CUstream dst, CUstream src)
{
    NEED_INIT();
    if (!stream_ok(dst) || !stream_ok(src))
        return CUDA_ERROR_INVALID_HANDLE;
    const CUstreamAttrID ids[] = {CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY,
                                  CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN};
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && !r; i++) {
        CUstreamAttrValue v;
        r = cuStreamGetAttribute(src, ids[i], &v);
        if (!r)
            r = cuStreamSetAttribute(dst, ids[i], &v);
    }
    return r;
}

/* The capture mode of this thread (PyTorch exchanges it around allocations). */
static __thread CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
E CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}


E CUresult cuStreamGetCtx_v2(CUstream s, CUcontext *c, CUgreenCtx *g)
{
    if (!c || !g)
        return CUDA_ERROR_INVALID_VALUE;
    *g = NULL; /* no green contexts: a vGPU's SM partition is the daemon's */
    return cuStreamGetCtx(s, c);
}

/* ---- stream memory operations ----
 * A write is a small copy in queue order (after everything queued before it,
 * as on the stream). A wait is answered once the queue has drained: the value
 * is read and must already hold; one that a later operation would write cannot
 * be waited for inside the one queue, and is refused (named) rather than hung. */
static CUresult write_value(CUstream s, CUdeviceptr addr, uint64_t v, size_t n)
{
    NEED_CTX();
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!addr || addr % n)
        return CUDA_ERROR_INVALID_VALUE;
    if (shim_capturing(s))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return shim_htod(addr, &v, n, 1); /* pageable: the bytes are taken at once */
}

static CUresult wait_value(CUstream s, CUdeviceptr addr, uint64_t v, size_t n, unsigned flags)
{
    NEED_CTX();
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!addr || addr % n)
        return CUDA_ERROR_INVALID_VALUE;
    if (shim_capturing(s))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    uint64_t cur = 0;
    CUresult r = map_rc(shim_sync(), "cuStreamWaitValue");
    if (!r)
        r = shim_dtoh(&cur, addr, n, 0);
    if (r)
        return r;
    if (n == 4) {
        cur = (uint32_t)cur;
        v = (uint32_t)v;
    }
    int ok;
    switch (flags & 0xf) {
    case CU_STREAM_WAIT_VALUE_GEQ: ok = n == 4 ? (int32_t)(uint32_t)(cur - v) >= 0 : (int64_t)(cur - v) >= 0; break;
    case CU_STREAM_WAIT_VALUE_EQ: ok = cur == v; break;
    case CU_STREAM_WAIT_VALUE_AND: ok = (cur & v) != 0; break;
    case CU_STREAM_WAIT_VALUE_NOR: ok = (n == 4 ? (uint32_t) ~(cur | v) : ~(cur | v)) != 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return ok ? CUDA_SUCCESS
              : (CUresult)shim_unsupported("cuStreamWaitValue (a value not written yet: one queue cannot wait inside itself)");
}

E CUresult cuStreamWriteValue32_v2(CUstream s, CUdeviceptr addr, cuuint32_t v, unsigned int flags)
{
    return write_value(s, addr, v, 4);
}
E CUresult cuStreamWriteValue64_v2(CUstream s, CUdeviceptr addr, cuuint64_t v, unsigned int flags)
{
    return write_value(s, addr, v, 8);
}
E CUresult cuStreamWaitValue32_v2(CUstream s, CUdeviceptr addr, cuuint32_t v, unsigned int flags)
{
    return wait_value(s, addr, v, 4, flags);
}
E CUresult cuStreamWaitValue64_v2(CUstream s, CUdeviceptr addr, cuuint64_t v, unsigned int flags)
{
    return wait_value(s, addr, v, 8, flags);
}

E CUresult cuStreamBatchMemOp_v2(CUstream s, unsigned int count, CUstreamBatchMemOpParams *ops, unsigned int flags)
{
    if (count && !ops)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < count && !r; i++) {
        const CUstreamBatchMemOpParams *o = &ops[i];
        switch (o->operation) {
        case CU_STREAM_MEM_OP_WRITE_VALUE_32: r = write_value(s, o->writeValue.address, o->writeValue.value, 4); break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64: r = write_value(s, o->writeValue.address, o->writeValue.value64, 8); break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
            r = wait_value(s, o->waitValue.address, o->waitValue.value, 4, o->waitValue.flags);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            r = wait_value(s, o->waitValue.address, o->waitValue.value64, 8, o->waitValue.flags);
            break;
        case CU_STREAM_MEM_OP_BARRIER:
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES: break; /* one ordered queue: already so */
        default: r = CUDA_ERROR_INVALID_VALUE;
        }
    }
    return r;
}
