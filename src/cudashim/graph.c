/* SPDX-License-Identifier: Apache-2.0 */
/* graph.c: stream capture and CUDA graphs of gpuos's libcuda.so.1 (in the CUDA
 * program's process; PyTorch's torch.cuda.CUDAGraph).
 *
 * Every stream of a process is the client's one ordered queue, so a graph is a
 * list: what a capturing stream is given (kernel launches with their parameter
 * bytes, asynchronous copies, memsets, event records, host functions) is
 * appended to its graph instead of being queued, and a launch of the graph
 * queues the list again, in order, as the program queued it. One capture at a
 * time per process (CUDA_ERROR_ILLEGAL_STATE for a second). Graphs built node
 * by node (cuGraphAdd*Node) are not offered: those entry points stay stubs. */
#include "cudashim/driver.h"
#include "common/grow.h"
/* the first form (without edge data) is defined under its own name below */
#undef cuStreamUpdateCaptureDependencies

#include <stdlib.h>
#include <string.h>

enum { NODE_KERNEL, NODE_HTOD, NODE_DTOH, NODE_DTOD, NODE_MEMSET, NODE_HOST, NODE_EVENT };

struct node {
    int kind;
    gpuos_function fn;
    gpuos_launch_config c;
    unsigned char *params;
    size_t len;
    uint64_t dst, src, n; /* copies: bytes; memset: count of elem-byte values */
    unsigned value;
    int elem;
    CUhostFn host;
    void *data;
    CUevent ev;
};

struct CUgraph_st {
    uint32_t magic;
    struct node *nodes;
    int n, cap;
};
struct CUgraphExec_st {
    uint32_t magic;
    struct CUgraph_st g; /* a copy of the graph's nodes at instantiation */
};
#define MAGIC_GRAPH 0x67726131
#define MAGIC_GEXEC 0x67657831

static struct {
    pthread_mutex_t m;
    CUstream s;           /* the capturing stream, NULL: none */
    struct CUgraph_st *g; /* its graph */
    unsigned long long id, last_id;
    CUstreamCaptureMode mode;
} CAP = {.m = PTHREAD_MUTEX_INITIALIZER};

int shim_capturing(CUstream s)
{
    return CAP.s && s == CAP.s;
}

static int capture_status(CUstream s, unsigned long long *id, struct CUgraph_st **g)
{
    pthread_mutex_lock(&CAP.m);
    int on = shim_capturing(s);
    if (id)
        *id = on ? CAP.id : 0;
    if (g)
        *g = on ? CAP.g : NULL;
    pthread_mutex_unlock(&CAP.m);
    return on;
}

static CUresult add(const struct node *x)
{
    pthread_mutex_lock(&CAP.m);
    CUresult r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    struct CUgraph_st *g = CAP.g;
    if (g && gos_grow((void **)&g->nodes, &g->cap, g->n, sizeof *g->nodes, 64))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (g) {
        g->nodes[g->n++] = *x;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&CAP.m);
    return r;
}

CUresult shim_capture_kernel(gpuos_function fn, const gpuos_launch_config *c, const void *params, size_t len)
{
    struct node x = {.kind = NODE_KERNEL, .fn = fn, .c = *c, .len = len};
    if (len && !(x.params = malloc(len)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (len)
        memcpy(x.params, params, len);
    CUresult r = add(&x);
    if (r)
        free(x.params);
    return r;
}

CUresult shim_capture_copy(int dir, uint64_t dst, uint64_t src, size_t n)
{
    struct node x = {.kind = dir == 0 ? NODE_HTOD : dir == 1 ? NODE_DTOH : NODE_DTOD, .dst = dst, .src = src, .n = n};
    return add(&x);
}

CUresult shim_capture_memset(CUdeviceptr d, unsigned v, int elem, size_t count)
{
    struct node x = {.kind = NODE_MEMSET, .dst = d, .value = v, .elem = elem, .n = count};
    return add(&x);
}

CUresult shim_capture_host(CUhostFn fn, void *data)
{
    struct node x = {.kind = NODE_HOST, .host = fn, .data = data};
    return add(&x);
}

CUresult shim_capture_event(CUevent e)
{
    struct node x = {.kind = NODE_EVENT, .ev = e};
    return add(&x);
}

static void graph_free_nodes(struct CUgraph_st *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->nodes[i].params);
    free(g->nodes);
    g->nodes = NULL;
    g->n = g->cap = 0;
}

/* ---- capture ---- */

E CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    NEED_CTX();
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* CUDA: not the legacy stream either */
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->magic = MAGIC_GRAPH;
    pthread_mutex_lock(&CAP.m);
    CUresult r = CUDA_SUCCESS;
    if (CAP.s)
        r = CUDA_ERROR_ILLEGAL_STATE; /* one capture at a time in this library */
    else {
        CAP.s = s;
        CAP.g = g;
        CAP.id = ++CAP.last_id;
        CAP.mode = mode;
    }
    pthread_mutex_unlock(&CAP.m);
    if (r)
        free(g);
    if (r == CUDA_ERROR_ILLEGAL_STATE)
        shim_log("cuStreamBeginCapture: another stream is capturing (one capture at a time)");
    return r;
}
/* CUDA 10.0's signature (cuGetProcAddress at 10000): no mode, global capture. */
E CUresult cuStreamBeginCapture(CUstream s) { return cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL); }

E CUresult cuStreamEndCapture(CUstream s, CUgraph *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&CAP.m);
    CUresult r = CUDA_ERROR_ILLEGAL_STATE;
    if (CAP.s && CAP.s == s) {
        *out = CAP.g;
        CAP.s = NULL;
        CAP.g = NULL;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&CAP.m);
    return r;
}

/* The capture queries: the capturing stream answers ACTIVE with its capture's
 * id and graph (no dependency nodes: the graph is a list), the others NONE. */
static CUresult capture_info(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n)
{
    NEED_INIT();
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    unsigned long long cid;
    struct CUgraph_st *gr;
    *st = capture_status(s, &cid, &gr) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (id)
        *id = cid;
    if (g)
        *g = gr;
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (n)
        *n = 0;
    return CUDA_SUCCESS;
}

E CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    return capture_info(s, st, NULL, NULL, NULL, NULL, NULL);
}
E CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                     const CUgraphNode **deps, size_t *n)
{
    return capture_info(s, st, id, g, deps, NULL, n);
}
E CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                     const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n)
{
    return capture_info(s, st, id, g, deps, edges, n);
}
/* the first form of the query (id only) */
E CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id)
{
    return capture_info(s, st, id, NULL, NULL, NULL, NULL);
}

/* Dependencies are the list's order: nothing to update. */
E CUresult cuStreamUpdateCaptureDependencies_v2(CUstream s, CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
                                                unsigned int flags)
{
    NEED_INIT();
    return capture_status(s, NULL, NULL) ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_STATE;
}
E CUresult cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode *deps, size_t n, unsigned int flags)
{
    return cuStreamUpdateCaptureDependencies_v2(s, deps, NULL, n, flags);
}

/* ---- graphs ---- */

static int graph_ok(const struct CUgraph_st *g) { return g && g->magic == MAGIC_GRAPH; }

E CUresult cuGraphCreate(CUgraph *g, unsigned int flags)
{
    if (!g || flags)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    struct CUgraph_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = MAGIC_GRAPH;
    *g = x;
    return CUDA_SUCCESS;
}

E CUresult cuGraphDestroy(CUgraph g)
{
    NEED_INIT();
    if (!graph_ok(g))
        return CUDA_ERROR_INVALID_VALUE;
    graph_free_nodes(g);
    g->magic = MAGIC_DEAD;
    free(g);
    return CUDA_SUCCESS;
}

/* Nodes are the list's entries (opaque handles for counting and listing). */
E CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    NEED_INIT();
    if (!graph_ok(g) || !n)
        return CUDA_ERROR_INVALID_VALUE;
    if (nodes) {
        size_t k = *n < (size_t)g->n ? *n : (size_t)g->n;
        for (size_t i = 0; i < k; i++)
            nodes[i] = (CUgraphNode)(void *)&g->nodes[i];
        *n = k;
    } else
        *n = (size_t)g->n;
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph g)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!graph_ok(g))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = MAGIC_GEXEC;
    e->g.magic = MAGIC_GRAPH;
    if (g->n && !(e->g.nodes = calloc((size_t)g->n, sizeof *e->g.nodes))) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < g->n; i++) {
        e->g.nodes[i] = g->nodes[i];
        e->g.nodes[i].params = NULL;
        if (g->nodes[i].len && (e->g.nodes[i].params = malloc(g->nodes[i].len)))
            memcpy(e->g.nodes[i].params, g->nodes[i].params, g->nodes[i].len);
        e->g.n = i + 1;
        if (g->nodes[i].len && !e->g.nodes[i].params) {
            graph_free_nodes(&e->g);
            free(e);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    e->g.cap = e->g.n;
    *out = e;
    return CUDA_SUCCESS;
}

E CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
        return shim_unsupported("cuGraphInstantiate (device launch of a graph)");
    return instantiate(e, g);
}

/* The first form (error node and log buffer): nothing can fail at a node. */
E CUresult cuGraphInstantiate_v2(CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log, size_t log_len)
{
    if (err)
        *err = NULL;
    if (log && log_len)
        log[0] = 0;
    return instantiate(e, g);
}

E CUresult cuGraphInstantiateWithParams(CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuGraphInstantiateWithFlags(e, g, p->flags);
    p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
    p->hErrNode_out = NULL;
    return r;
}

static int exec_ok(const struct CUgraphExec_st *e) { return e && e->magic == MAGIC_GEXEC; }

E CUresult cuGraphExecDestroy(CUgraphExec e)
{
    NEED_INIT();
    if (!exec_ok(e))
        return CUDA_ERROR_INVALID_VALUE;
    graph_free_nodes(&e->g);
    e->magic = MAGIC_DEAD;
    free(e);
    return CUDA_SUCCESS;
}

E CUresult cuGraphUpload(CUgraphExec e, CUstream s)
{
    NEED_INIT();
    if (!exec_ok(e))
        return CUDA_ERROR_INVALID_VALUE;
    return stream_ok(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; /* nothing to upload ahead */
}

/* A launch queues the graph's list in order (a capture of a graph launch
 * appends the list to the capturing graph). */
E CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
    NEED_CTX();
    if (!exec_ok(e))
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    int capture = capture_status(s, NULL, NULL);
    if (!capture)
        shim_hf_before(1);
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < e->g.n && !r; i++) {
        const struct node *x = &e->g.nodes[i];
        if (capture) {
            struct node y = *x;
            y.params = NULL;
            if (x->len && !(y.params = malloc(x->len)))
                return CUDA_ERROR_OUT_OF_MEMORY;
            if (x->len)
                memcpy(y.params, x->params, x->len);
            if ((r = add(&y)))
                free(y.params);
            continue;
        }
        switch (x->kind) {
        case NODE_KERNEL: r = map_rc(queued_one(gpuos_launch(shim_proc.g, x->fn, &x->c, x->params, x->len)), "cuGraphLaunch"); break;
        case NODE_HTOD: r = shim_htod(x->dst, (const void *)(uintptr_t)x->src, x->n, 1); break;
        case NODE_DTOH: r = shim_dtoh((void *)(uintptr_t)x->dst, x->src, x->n, 1); break;
        case NODE_DTOD: r = shim_dtod(x->dst, x->src, x->n, 1); break;
        case NODE_MEMSET: r = shim_memset(x->dst, x->value, (size_t)x->elem, x->n, 1); break;
        case NODE_HOST:
            r = map_rc(shim_sync(), "cuGraphLaunch");
            if (!r)
                x->host(x->data);
            break;
        case NODE_EVENT: r = cuEventRecord(x->ev, NULL); break;
        }
    }
    return r;
}
