/* SPDX-License-Identifier: Apache-2.0 */
// pd_multiplex.cu: prefill and decode of one LLM server side by side on two
// green contexts, in paper 001 section 7.2's three placements and a fourth that
// separates their two changes (issue 45).
// tests/gpu/pd_multiplex.sh runs it after charting the chip.
//
//   pd_multiplex --chart CHIP.json --out DIR [--layers 2] [--windows 7] [--iters 5]
//                [--prefill-sms 64] [--decode-sms 56] [--cublas LIB] [--deadline 170]
//
// The model: a stack of --layers Llama-3-8B layers (hidden 4096, 32 query and 8
// KV heads of 128, MLP 14336; norms and RoPE left out: they move no weights).
//   prefill  4 prompts of 4096 tokens (16384 tokens) per iteration: the Q, KV,
//            O, gate/up and down projections as cuBLAS GEMMs (bf16, fp32
//            accumulate), attention as cuBLAS batched GEMMs per KV head
//            (QK^T, the causal softmax of pd_kernels.cuh, PV; the masked half is
//            computed too);
//   decode   128 sequences of 512 tokens of KV (the paper's batch and average
//            length), one token per step: the same projections at M = 128,
//            the new token's K and V appended to its pages, issue 26's
//            decode attention (attn_kernel.cuh, the partition-aware runtime)
//            over the paged cache.
// Weights are one copy both phases read (interleaved, as the paper's shared
// state). Each phase runs in its own host thread on its own green context's
// stream; %globaltimer stamps after every prefill iteration and decode step
// give each phase's throughput over the time both were running.
//
// Placements (src/place/pdplan.h), equal SM counts (gos_pd_fit):
//   cluster-aware       sets running clusters of 8, decode's KV pages interleaved
//   cluster-mismatched  the same counts asked with clusters of 2, interleaved
//   partition-aware     each phase's SMs in one partition; decode's KV pages (the
//                       ones it appends to and reads: its private state) in its
//                       partition's gos_pmem view. cuBLAS cannot address a view
//                       (a view is every other 4 KB unit), so the activations
//                       the GEMMs read and write stay interleaved.
//   partition-interleaved  partition-aware's sets, decode's KV interleaved: the
//                       KV placement's own share of the difference.
// Per window (--windows, the four in rotating order): overlapped (--iters
// prefill iterations, decode stepping until prefill ends), prefill alone
// (--iters), decode alone (as many steps as it made overlapped). Before timing,
// decode attention runs once per placement: outputs equal bit for bit across
// placements, every task once on an SM of the decode set (and of its partition).
// Writes DIR/pd-multiplex.json (schemas/pd-multiplex.schema.json).
extern "C" { // the core archive's C headers
#include "chip/chip.h"
#include "common/provenance.h"
#include "common/status.h"
#include "device/device.h"
#include "device/green_ops.h"
#include "place/pdplan.h"
#include "place/place.h"
}

#define ATTN_PROG "pd_multiplex"
#include "pd_kernels.cuh"

#include <cublas_api.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include <dlfcn.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <vector>

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pd_multiplex: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(code);
}

// ---- the model's shape ------------------------------------------------------------
enum { HID = 4096, QH = 32, KVH = 8, HD = 128, FFN = 14336, KVW = 2 * KVH * HD };
enum { P_SEQS = 4, P_LEN = 4096, P_TOK = P_SEQS * P_LEN, D_BATCH = 128, D_CTX = 512 };
enum { W_Q, W_KV, W_O, W_GU, W_D, NW };
static const int W_OUT[NW] = {HID, KVW, HID, 2 * FFN, HID}, W_IN[NW] = {HID, HID, HID, HID, FFN};
enum { MAX_STAMPS = 1 << 15, RING = 8 };

// ---- cuBLAS, opened at run time ----------------------------------------------------
static struct {
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                           const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *,
                           cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
    cublasStatus_t (*gemm_sb)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                              const void *, cudaDataType, int, long long, const void *, cudaDataType, int, long long,
                              const void *, void *, cudaDataType, int, long long, int, cublasComputeType_t,
                              cublasGemmAlgo_t);
} blas;

static void blas_open(const char *path)
{
    const char *names[] = {path, "libcublas.so.13", "libcublas.so"};
    void *h = NULL;
    for (int i = path ? 0 : 1; i < (path ? 1 : 3) && !h; i++) /* a path given: that one only */
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die(3, "cuBLAS unavailable: %s (pass --cublas /path/to/libcublas.so.13, e.g. pip's "
               "nvidia/cu13/lib or /usr/local/cuda/lib64)", dlerror());
    struct {
        void **fn;
        const char *name;
    } syms[] = {{(void **)&blas.create, "cublasCreate_v2"},       {(void **)&blas.destroy, "cublasDestroy_v2"},
                {(void **)&blas.set_stream, "cublasSetStream_v2"}, {(void **)&blas.gemm, "cublasGemmEx"},
                {(void **)&blas.gemm_sb, "cublasGemmStridedBatchedEx"}};
    for (auto &s : syms)
        if (!(*s.fn = dlsym(h, s.name)))
            die(3, "cuBLAS unavailable: %s has no %s", path ? path : "libcublas.so.13", s.name);
}

#define BL(call)                                                                                         \
    do {                                                                                                 \
        cublasStatus_t s_ = (call);                                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                 \
            die(1, "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__, #call, (int)s_);                   \
    } while (0)

// ---- driver entry points (green contexts current in a thread) ----------------------
static PFN_cuCtxFromGreenCtx_v12040 ctx_from_green;
static PFN_cuCtxSetCurrent_v4000 ctx_set_current;
static CUcontext primary; // the main thread's context between green-context calls

static void driver_open(void)
{
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuCtxFromGreenCtx", (void **)&ctx_from_green, 12040, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess)
        die(2, "green contexts unavailable: the driver has no cuCtxFromGreenCtx (needs CUDA 12.4 or newer)");
    CK(cudaGetDriverEntryPointByVersion("cuCtxSetCurrent", (void **)&ctx_set_current, 4000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess)
        die(2, "the driver has no cuCtxSetCurrent");
    PFN_cuCtxGetCurrent_v4000 get;
    CK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", (void **)&get, 4000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || get(&primary) != CUDA_SUCCESS || !primary)
        die(2, "no current CUDA context after cudaFree(0)");
}

static void set_current(CUcontext c)
{
    CUresult r = ctx_set_current(c);
    if (r != CUDA_SUCCESS)
        die(1, "cuCtxSetCurrent: CUresult %d", (int)r);
}

// ---- buffers -------------------------------------------------------------------------
typedef __nv_bfloat16 bf16;

struct model {
    std::vector<bf16 *> w[NW]; // [kind][layer]
    // prefill: activations, scores of one prompt (32 heads x 4096 x 4096)
    bf16 *px, *pq, *pkv, *pattn, *pgu, *pact, *ps;
    // decode
    bf16 *dx, *dq, *dkv, *dattn, *dgu, *dact;
    float *part_o, *part_ml;
    unsigned *arrive, *ctr, *owner, *runs;
    attn_plan P;
    int layers;
};

static bf16 *dalloc(size_t elems, uint32_t salt, float scale)
{
    bf16 *p;
    CK(cudaMalloc(&p, elems * sizeof(bf16)));
    pd_fill<<<1024, 256>>>(p, elems, salt, scale);
    CK(cudaGetLastError());
    return p;
}

static void model_alloc(model &m, int layers, uint32_t decode_sms)
{
    m.layers = layers;
    for (int k = 0; k < NW; k++)
        for (int l = 0; l < layers; l++) /* +-1/sqrt(in): activations stay O(1) */
            m.w[k].push_back(dalloc((size_t)W_OUT[k] * W_IN[k], 0x100u * k + l, 1.f / sqrtf((float)W_IN[k])));
    const struct {
        bf16 **p;
        size_t n;
        float scale; /* 0: zeros */
    } bufs[] = {{&m.px, (size_t)P_TOK * HID, 1.f},       {&m.pq, (size_t)P_TOK * HID, 0.f},
                {&m.pkv, (size_t)P_TOK * KVW, 0.f},      {&m.pattn, (size_t)P_TOK * HID, 0.f},
                {&m.pgu, (size_t)P_TOK * 2 * FFN, 0.f},  {&m.pact, (size_t)P_TOK * FFN, 0.f},
                {&m.ps, (size_t)QH * P_LEN * P_LEN, 0.f}, {&m.dx, (size_t)D_BATCH * HID, 1.f},
                {&m.dq, (size_t)D_BATCH * HID, 0.f},     {&m.dkv, (size_t)D_BATCH * KVW, 0.f},
                {&m.dattn, (size_t)D_BATCH * HID, 0.f},  {&m.dgu, (size_t)D_BATCH * 2 * FFN, 0.f},
                {&m.dact, (size_t)D_BATCH * FFN, 0.f}};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        *bufs[i].p = dalloc(bufs[i].n, (uint32_t)i + 1, bufs[i].scale);
    if (attn_plan_make(&m.P, D_BATCH, KVH, D_CTX, decode_sms))
        die(1, "cannot plan decode attention");
    CK(cudaMalloc(&m.part_o, sizeof(float) * (size_t)m.P.n_tasks * ATTN_G * ATTN_D));
    CK(cudaMalloc(&m.part_ml, sizeof(float) * (size_t)m.P.n_tasks * ATTN_G * 2));
    CK(cudaMalloc(&m.arrive, sizeof(unsigned) * m.P.n_kv));
    CK(cudaMemset(m.arrive, 0, sizeof(unsigned) * m.P.n_kv));
    CK(cudaMalloc(&m.ctr, sizeof(unsigned) * 2 * layers));
    CK(cudaMalloc(&m.owner, sizeof(unsigned) * m.P.n_tasks));
    CK(cudaMalloc(&m.runs, sizeof(unsigned) * m.P.n_tasks));
}

// ---- one placement -------------------------------------------------------------------
// The paper's three placements (pdplan.h's kinds) and a fourth that tells its two
// changes apart: partition-aware sets with decode's KV interleaved.
enum { PL_INTERLEAVED_KV = GOS_PD_KINDS, NPL };

static const char *pl_name(int k)
{
    return k < GOS_PD_KINDS ? gos_pd_kind_name(k) : "partition-interleaved";
}

struct placement {
    gos_pd_plan plan;
    void *gctx[2], *stream[2]; // device-layer handles (CUgreenCtx, CUstream)
    CUcontext ctx[2];
    cublasHandle_t blas[2];
    gos_prt_table rt;           // decode's runtime table (its set's SMs only)
    bool lin;                   // decode's KV pages interleaved
    uint32_t n0;                // slots of view 0 (views)
    gos_pmem_view v0, v1;       // the pool: LIN: v0.base; else the two views
    std::vector<uint32_t *> pt; // per layer: page table (attn_assign_layers: one pool for all layers)
    const char *name;
};

static void gemm(cublasHandle_t h, int k, int layer, const model &m, const bf16 *x, bf16 *y, int tokens)
{
    const float one = 1.f, zero = 0.f;
    BL(blas.gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, W_OUT[k], tokens, W_IN[k], &one, m.w[k][layer], CUDA_R_16BF, W_IN[k],
                 x, CUDA_R_16BF, W_IN[k], &zero, y, CUDA_R_16BF, W_OUT[k], CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void prefill_layer(const placement &pl, const model &m, int l)
{
    cublasHandle_t h = pl.blas[GOS_PD_PREFILL];
    cudaStream_t st = (cudaStream_t)pl.stream[GOS_PD_PREFILL];
    const float one = 1.f, zero = 0.f;
    gemm(h, W_Q, l, m, m.px, m.pq, P_TOK);
    gemm(h, W_KV, l, m, m.px, m.pkv, P_TOK);
    for (int s = 0; s < P_SEQS; s++) {
        const bf16 *q = m.pq + (size_t)s * P_LEN * HID, *kv = m.pkv + (size_t)s * P_LEN * KVW;
        bf16 *o = m.pattn + (size_t)s * P_LEN * HID;
        for (int j = 0; j < KVH; j++) /* S_h = K_j^T Q_h for the 4 query heads of KV head j */
            BL(blas.gemm_sb(h, CUBLAS_OP_T, CUBLAS_OP_N, P_LEN, P_LEN, HD, &one, kv + j * HD, CUDA_R_16BF, KVW, 0,
                            q + ATTN_G * j * HD, CUDA_R_16BF, HID, HD, &zero, m.ps + (size_t)ATTN_G * j * P_LEN * P_LEN,
                            CUDA_R_16BF, P_LEN, (long long)P_LEN * P_LEN, ATTN_G, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
        pd_softmax_causal<<<QH * P_LEN, PD_SOFTMAX_THREADS, 0, st>>>(m.ps, P_LEN, 1.4426950408889634f / sqrtf(HD));
        CK(cudaGetLastError());
        for (int j = 0; j < KVH; j++) /* O_h = V_j P_h */
            BL(blas.gemm_sb(h, CUBLAS_OP_N, CUBLAS_OP_N, HD, P_LEN, P_LEN, &one, kv + KVH * HD + j * HD, CUDA_R_16BF,
                            KVW, 0, m.ps + (size_t)ATTN_G * j * P_LEN * P_LEN, CUDA_R_16BF, P_LEN,
                            (long long)P_LEN * P_LEN, &zero, o + ATTN_G * j * HD, CUDA_R_16BF, HID, HD, ATTN_G,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    gemm(h, W_O, l, m, m.pattn, m.px, P_TOK);
    gemm(h, W_GU, l, m, m.px, m.pgu, P_TOK);
    pd_silu_mul<<<2048, 256, 0, st>>>(m.pgu, m.pact, P_TOK, FFN);
    CK(cudaGetLastError());
    gemm(h, W_D, l, m, m.pact, m.px, P_TOK);
}

static void attention(const placement &pl, const model &m, int l, bool record)
{
    cudaStream_t st = (cudaStream_t)pl.stream[GOS_PD_DECODE];
    attn_args a;
    memset(&a, 0, sizeof a);
    a.q = m.dq;
    a.pt = pl.pt[l];
    a.out = m.dattn;
    a.part_o = m.part_o;
    a.part_ml = m.part_ml;
    a.arrive = m.arrive;
    a.plan = m.P;
    a.n0 = pl.n0;
    a.qscale = (float)(1.4426950408889634 / sqrt((double)ATTN_D));
    if (record) {
        a.owner = m.owner;
        a.runs = m.runs;
    }
    unsigned *c = m.ctr + 2 * l;
    CK(cudaMemsetAsync(c, 0, 2 * sizeof(unsigned), st));
    const unsigned grid = ATTN_BLOCKS_PER_SM * (unsigned)pl.plan.set[GOS_PD_DECODE].n_sms;
    if (pl.lin)
        attn_rt<true><<<grid, THREADS, RT_SMEM, st>>>(a, pl.v0, pl.v0, pl.rt, c);
    else
        attn_rt<false><<<grid, THREADS, RT_SMEM, st>>>(a, pl.v0, pl.v1, pl.rt, c);
    CK(cudaGetLastError());
}

static void decode_layer(const placement &pl, const model &m, int l)
{
    cublasHandle_t h = pl.blas[GOS_PD_DECODE];
    cudaStream_t st = (cudaStream_t)pl.stream[GOS_PD_DECODE];
    gemm(h, W_Q, l, m, m.dx, m.dq, D_BATCH);
    gemm(h, W_KV, l, m, m.dx, m.dkv, D_BATCH);
    const unsigned n = m.P.n_kv * 2 * (ATTN_D / 8);
    if (pl.lin)
        pd_kv_append<true><<<(n + 255) / 256, 256, 0, st>>>(pl.pt[l], m.P, pl.n0, pl.v0, pl.v0, m.dkv);
    else
        pd_kv_append<false><<<(n + 255) / 256, 256, 0, st>>>(pl.pt[l], m.P, pl.n0, pl.v0, pl.v1, m.dkv);
    CK(cudaGetLastError());
    attention(pl, m, l, false);
    gemm(h, W_O, l, m, m.dattn, m.dx, D_BATCH);
    gemm(h, W_GU, l, m, m.dx, m.dgu, D_BATCH);
    pd_silu_mul<<<512, 256, 0, st>>>(m.dgu, m.dact, D_BATCH, FFN);
    CK(cudaGetLastError());
    gemm(h, W_D, l, m, m.dact, m.dx, D_BATCH);
}

// ---- a phase's thread ----------------------------------------------------------------
struct phase_run {
    const placement *pl;
    const model *m;
    int phase;
    int iters;                     // prefill iterations, decode steps; decode 0: until *stop
    std::atomic<int> *stop;        // prefill sets it once its iterations are done
    unsigned long long *d_stamps;  // device: [0] start, [i] end of iteration i
    std::vector<unsigned long long> stamps;
};

static void *phase_main(void *arg)
{
    phase_run *r = (phase_run *)arg;
    const placement &pl = *r->pl;
    set_current(pl.ctx[r->phase]);
    CK(cudaFuncSetAttribute(attn_rt<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, RT_SMEM));
    CK(cudaFuncSetAttribute(attn_rt<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, RT_SMEM));
    cudaStream_t st = (cudaStream_t)pl.stream[r->phase];
    cudaEvent_t ring[RING];
    for (auto &e : ring)
        CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    pd_stamp<<<1, 1, 0, st>>>(r->d_stamps, 0);
    int i = 0;
    for (; i + 1 < MAX_STAMPS && (r->iters ? i < r->iters : !r->stop->load()); i++) {
        if (i >= RING) /* at most RING iterations queued: the loop sees `stop` in time */
            CK(cudaEventSynchronize(ring[i % RING]));
        for (int l = 0; l < r->m->layers; l++)
            (r->phase == GOS_PD_PREFILL ? prefill_layer : decode_layer)(pl, *r->m, l);
        pd_stamp<<<1, 1, 0, st>>>(r->d_stamps, i + 1);
        CK(cudaGetLastError());
        CK(cudaEventRecord(ring[i % RING], st));
    }
    CK(cudaStreamSynchronize(st));
    if (r->phase == GOS_PD_PREFILL && r->stop)
        r->stop->store(1);
    r->stamps.resize(i + 1);
    CK(cudaMemcpy(r->stamps.data(), r->d_stamps, sizeof(unsigned long long) * (i + 1), cudaMemcpyDeviceToHost));
    for (auto &e : ring)
        CK(cudaEventDestroy(e));
    set_current(NULL);
    return NULL;
}

// Runs the phases whose iteration counts are given (prefill `pi`, decode `di`:
// -1 not at all, 0 decode until prefill ends) at once; fills the stamps.
static void run_phases(const placement &pl, const model &m, int pi, int di, unsigned long long *d_st[2],
                       phase_run out[2])
{
    std::atomic<int> stop(0);
    pthread_t th[2];
    const int n[2] = {pi, di};
    for (int ph = 0; ph < 2; ph++) {
        out[ph].pl = &pl;
        out[ph].m = &m;
        out[ph].phase = ph;
        out[ph].iters = n[ph];
        out[ph].stop = &stop;
        out[ph].d_stamps = d_st[ph];
        out[ph].stamps.clear();
        if (n[ph] >= 0 && pthread_create(&th[ph], NULL, phase_main, &out[ph]))
            die(1, "cannot start a thread");
    }
    for (int ph = 0; ph < 2; ph++)
        if (n[ph] >= 0)
            pthread_join(th[ph], NULL);
}

// Tokens per second of a phase between times t0 and t1 (ns): the iterations that
// began at or after t0 and ended by t1 (all of them when t1 = 0). *count: how many.
static double rate(const std::vector<unsigned long long> &s, unsigned long long t0, unsigned long long t1,
                   double tokens, int *count)
{
    size_t a = 0, b = 0;
    for (size_t i = 1; i < s.size(); i++)
        if (s[i - 1] >= t0 && (!t1 || s[i] <= t1)) {
            if (!b)
                a = i - 1;
            b = i;
        }
    *count = b ? (int)(b - a) : 0;
    return b ? tokens * (double)(b - a) / (1e-9 * (double)(s[b] - s[a])) : 0.0;
}

// ---- set-up of a placement ---------------------------------------------------------
static void placement_open(gos_device *d, gos_smset_pool *pool, gos_pmem *pm, const gos_pd_req *fit, int kind,
                           const model &m, void *lin_pool, placement &pl)
{
    const gos_pd_kind plan_kind = kind < GOS_PD_KINDS ? (gos_pd_kind)kind : GOS_PD_PARTITION_AWARE;
    if (gos_pd_plan_make(pool, fit, plan_kind, &pl.plan))
        die(1, "%s", gos_last_error());
    for (int ph = 0; ph < 2; ph++) {
        if (gos_smset_green(d, pool, &pl.plan.set[ph], &pl.gctx[ph]) ||
            gos_green_stream_create(d, pl.gctx[ph], &pl.stream[ph]))
            die(2, "green contexts unavailable: %s", gos_last_error());
        CUresult r = ctx_from_green(&pl.ctx[ph], (CUgreenCtx)pl.gctx[ph]);
        if (r != CUDA_SUCCESS)
            die(2, "green contexts unavailable: cuCtxFromGreenCtx: CUresult %d", (int)r);
        set_current(pl.ctx[ph]); /* a cuBLAS handle of the green context, on its stream */
        BL(blas.create(&pl.blas[ph]));
        BL(blas.set_stream(pl.blas[ph], (cudaStream_t)pl.stream[ph]));
        set_current(primary);
    }
    int idle[GOS_MAX_SMS], sms = gos_pmem_sm_count(pm);
    int n_idle = gos_pd_idle(&pl.plan, GOS_PD_DECODE, sms, idle);
    if (n_idle < 0 || gos_pmem_runtime(pm, idle, n_idle, m.P.n_tasks, GOS_PMEM_SPLIT_SMS, &pl.rt))
        die(1, "%s", gos_last_error());
    gos_pd_release(pool, &pl.plan); /* the green contexts stay; the next placement takes the groups */
    pl.lin = kind != GOS_PD_PARTITION_AWARE;
    pl.name = pl_name(kind);
    const uint32_t n = m.P.n_kv * m.P.pages;
    std::vector<uint32_t> pt((size_t)m.layers * n);
    const int64_t n0 = attn_assign_layers(&m.P, pl.rt.count[0], (uint32_t)m.layers, 0x45u, pt.data());
    if (n0 < 0)
        die(1, "out of memory");
    uint32_t *d_pt;
    CK(cudaMalloc(&d_pt, sizeof(uint32_t) * pt.size()));
    CK(cudaMemcpy(d_pt, pt.data(), sizeof(uint32_t) * pt.size(), cudaMemcpyHostToDevice));
    for (int l = 0; l < m.layers; l++)
        pl.pt.push_back(d_pt + (size_t)l * n);
    memset(&pl.v0, 0, sizeof pl.v0);
    if (pl.lin) {
        pl.v0.base = (uint64_t)(uintptr_t)lin_pool;
        pl.v0.bytes = (uint64_t)m.layers * n * ATTN_SLOT;
        pl.v0.part = GOS_PMEM_LINEAR;
        pl.n0 = 0xffffffffu;
        pl.v1 = pl.v0;
    } else { /* every decode task on partition pd: all slots in view pd */
        const int pd = pl.plan.part[GOS_PD_DECODE];
        if (pl.rt.count[pd] != m.P.n_tasks)
            die(1, "partition-aware: decode tasks outside partition %d", pd);
        pl.n0 = (uint32_t)n0; /* all slots in view pd: layers x n (pd = 0) or 0 */
        if (n0 != (pd == 0 ? (int64_t)m.layers * n : 0))
            die(1, "partition-aware: decode pages outside partition %d's pool", pd);
        if (gos_pmem_get_view(pm, 0, &pl.v0) || gos_pmem_get_view(pm, 1, &pl.v1))
            die(1, "%s", gos_pmem_error());
    }
    for (int l = 0; l < m.layers; l++) {
        if (pl.lin)
            attn_fill<true><<<1024, 256>>>(pl.pt[l], m.P, pl.n0, pl.v0, pl.v1);
        else
            attn_fill<false><<<1024, 256>>>(pl.pt[l], m.P, pl.n0, pl.v0, pl.v1);
        CK(cudaGetLastError());
    }
    CK(cudaDeviceSynchronize());
}

// Decode attention once, layer 0, on the placement's green context: the output
// into ref (the first placement) or compared with it; every task once, on an SM
// of the decode set (and, partition-aware, of its partition).
static bool placement_check(const placement &pl, const model &m, std::vector<uint16_t> &ref)
{
    const size_t n_out = (size_t)D_BATCH * HID;
    set_current(pl.ctx[GOS_PD_DECODE]);
    CK(cudaFuncSetAttribute(attn_rt<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, RT_SMEM));
    CK(cudaFuncSetAttribute(attn_rt<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, RT_SMEM));
    attn_fill_q<<<264, 256, 0, (cudaStream_t)pl.stream[GOS_PD_DECODE]>>>(m.dq, D_BATCH, QH);
    CK(cudaMemsetAsync(m.runs, 0, sizeof(unsigned) * m.P.n_tasks, (cudaStream_t)pl.stream[GOS_PD_DECODE]));
    attention(pl, m, 0, true);
    CK(cudaStreamSynchronize((cudaStream_t)pl.stream[GOS_PD_DECODE]));
    set_current(primary);
    std::vector<uint16_t> out(n_out);
    std::vector<unsigned> owner(m.P.n_tasks), runs(m.P.n_tasks);
    CK(cudaMemcpy(out.data(), m.dattn, n_out * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(owner.data(), m.owner, sizeof(unsigned) * m.P.n_tasks, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(runs.data(), m.runs, sizeof(unsigned) * m.P.n_tasks, cudaMemcpyDeviceToHost));
    bool ok = true;
    if (ref.empty())
        ref = out;
    else if (memcmp(ref.data(), out.data(), n_out * 2)) {
        // the same arithmetic in the same order; the two addressings (LIN, views)
        // are compiled apart, so a last-bit difference is reported, not failed
        // (as attn_decode does)
        size_t diff = 0;
        double mx = 0, big = 0;
        for (size_t i = 0; i < n_out; i++) {
            const double x = attn_bf16_value(out[i]), y = attn_bf16_value(ref[i]);
            diff += out[i] != ref[i];
            mx = std::max(mx, x == y ? 0.0 : fabs(x - y) == fabs(x - y) ? fabs(x - y) : INFINITY);
            big = std::max(big, fabs(y));
        }
        ok = mx <= big / 128;
        printf("%s: %s: decode attention differs from the first placement's in %zu of %zu outputs, max abs diff "
               "%.3g\n", ok ? "note" : "CHECK FAILED", pl.name, diff, n_out, mx);
    }
    unsigned char in[GOS_MAX_SMS] = {0};
    const gos_smset &ds = pl.plan.set[GOS_PD_DECODE];
    for (int i = 0; i < ds.n_sms; i++)
        in[ds.sms[i]] = 1;
    uint32_t bad = 0;
    for (uint32_t k = 0; k < m.P.n_tasks; k++) {
        bool good = runs[k] == 1 && owner[k] < GOS_MAX_SMS && in[owner[k]];
        if (good && pl.plan.part[GOS_PD_DECODE] >= 0)
            good = pl.rt.part_of_sm[owner[k]] == pl.plan.part[GOS_PD_DECODE];
        bad += !good;
    }
    if (bad) {
        printf("CHECK FAILED: %s: %u of %u decode tasks not run once on the decode set's SMs\n",
               pl.name, bad, m.P.n_tasks);
        ok = false;
    }
    return ok;
}

// ---- results -------------------------------------------------------------------------
struct series {
    std::vector<double> v;
    double med() const
    {
        std::vector<double> s = v;
        std::sort(s.begin(), s.end());
        size_t n = s.size();
        return !n ? 0 : n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    }
    double lo() const { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
    double hi() const { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
    json_t *json() const
    {
        json_t *a = json_array();
        for (double x : v)
            json_array_append_new(a, json_real(x));
        return json_pack("{s:f, s:f, s:f, s:o}", "median", med(), "min", lo(), "max", hi(), "values", a);
    }
};

enum { OV_P, OV_D, SA_P, SA_D, NS }; // overlapped / standalone x prefill / decode
static const char *const SNAME[NS] = {"overlapped_prefill", "overlapped_decode", "standalone_prefill",
                                      "standalone_decode"};

static json_t *set_json(const gos_smset &s)
{
    json_t *sms = json_array();
    for (int i = 0; i < s.n_sms; i++)
        json_array_append_new(sms, json_integer(s.sms[i]));
    return json_pack("{s:i, s:o, s:i, s:i, s:i}", "n_sms", s.n_sms, "sms", sms, "partition", s.partition,
                     "clusters_of_8", s.clusters[8], "free_floating", s.n_free_floating);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "pd_multiplex: past the --deadline: stopped (a hang on the GPU?)\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(4);
    _exit(4);
}

struct options {
    const char *chart, *out, *blas, *sim, *dry_json;
    int layers, windows, iters, deadline;
    gos_pd_req req;
};

static void usage(void)
{
    fprintf(stderr, "usage: pd_multiplex --chart CHIP.json --out DIR [--layers 2] [--windows 7] [--iters 5]\n"
                    "                    [--prefill-sms 64] [--decode-sms 56] [--cublas LIB] [--deadline 170]\n"
                    "       pd_multiplex --sim CHIP --dry-json FILE [...]   (no GPU: the plan and the document's\n"
                    "                    shape, made-up throughputs; tests/t_pd_multiplex.sh)\n");
    exit(2);
}

static int int_arg(const char *s, int lo, int hi, const char *what)
{
    char *e;
    long v = strtol(s, &e, 10);
    if (e == s || *e || v < lo || v > hi)
        die(2, "%s \"%s\" outside %d..%d", what, s, lo, hi);
    return (int)v;
}

static options parse_args(int argc, char **argv)
{
    options o = {NULL, NULL, NULL, NULL, NULL, 2, 7, 5, 170, {{64, 56}, 8}};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (!strcmp(a, "--chart"))
            o.chart = v;
        else if (!strcmp(a, "--out"))
            o.out = v;
        else if (!strcmp(a, "--cublas"))
            o.blas = v;
        else if (!strcmp(a, "--sim"))
            o.sim = v;
        else if (!strcmp(a, "--dry-json"))
            o.dry_json = v;
        else if (!strcmp(a, "--layers"))
            o.layers = int_arg(v, 1, 32, "--layers");
        else if (!strcmp(a, "--windows"))
            o.windows = int_arg(v, 1, 100, "--windows");
        else if (!strcmp(a, "--iters"))
            o.iters = int_arg(v, 1, 100, "--iters");
        else if (!strcmp(a, "--prefill-sms"))
            o.req.sms[0] = int_arg(v, 8, GOS_MAX_SMS, "--prefill-sms");
        else if (!strcmp(a, "--decode-sms"))
            o.req.sms[1] = int_arg(v, 8, GOS_MAX_SMS, "--decode-sms");
        else if (!strcmp(a, "--deadline"))
            o.deadline = int_arg(v, 10, 3600, "--deadline");
        else
            usage();
    }
    if (o.dry_json ? !o.sim : !o.chart || !o.out)
        usage();
    return o;
}

struct results {
    series st[NPL][NS];
    series ratio[4]; // partition-aware / cluster-aware: overlapped decode, overlapped prefill, decode alone;
                     // [3] overlapped decode, partition-aware / partition-interleaved (the KV placement alone)
    bool checks[NPL];
};

static void ratios(results &R, int windows)
{
    const int PA = GOS_PD_PARTITION_AWARE, CA = GOS_PD_CLUSTER_AWARE;
    for (int w = 0; w < windows; w++) {
        R.ratio[0].v.push_back(R.st[PA][OV_D].v[w] / R.st[CA][OV_D].v[w]);
        R.ratio[1].v.push_back(R.st[PA][OV_P].v[w] / R.st[CA][OV_P].v[w]);
        R.ratio[2].v.push_back(R.st[PA][SA_D].v[w] / R.st[CA][SA_D].v[w]);
        R.ratio[3].v.push_back(R.st[PA][OV_D].v[w] / R.st[PL_INTERLEAVED_KV][OV_D].v[w]);
    }
}

// The windows: per window every placement (rotating order, so that drift hits
// each alike) overlapped, then prefill alone, then decode alone.
static void measure(placement *pl, const model &m, const options &o, results &R)
{
    unsigned long long *d_st[2];
    for (auto &p : d_st)
        CK(cudaMalloc(&p, sizeof(unsigned long long) * MAX_STAMPS));
    phase_run r[2];
    for (int k = 0; k < NPL; k++) /* warm-up: cuBLAS's first calls, module loads */
        run_phases(pl[k], m, 1, 4, d_st, r);
    for (int w = 0; w < o.windows; w++)
        for (int j = 0; j < NPL; j++) {
            const int k = (w + j) % NPL;
            int n_p, n_d, dummy;
            run_phases(pl[k], m, o.iters, 0, d_st, r);
            const unsigned long long t0 = std::max(r[0].stamps[0], r[1].stamps[0]), t1 = r[0].stamps.back();
            R.st[k][OV_P].v.push_back(rate(r[0].stamps, 0, 0, (double)P_TOK, &n_p));
            R.st[k][OV_D].v.push_back(rate(r[1].stamps, t0, t1, (double)D_BATCH, &n_d));
            if (n_d < 3)
                die(1, "%s: only %d decode steps ran beside prefill", pl_name(k), n_d);
            run_phases(pl[k], m, o.iters, -1, d_st, r);
            R.st[k][SA_P].v.push_back(rate(r[0].stamps, 0, 0, (double)P_TOK, &dummy));
            run_phases(pl[k], m, -1, n_d, d_st, r);
            R.st[k][SA_D].v.push_back(rate(r[1].stamps, 0, 0, (double)D_BATCH, &dummy));
            printf("window %d %-21s prefill %6.0f / %6.0f tokens/s, decode %6.0f / %6.0f tokens/s (overlapped / "
                   "alone; %d decode steps beside %d prefill iterations)\n",
                   w + 1, pl_name(k), R.st[k][OV_P].v.back(), R.st[k][SA_P].v.back(),
                   R.st[k][OV_D].v.back(), R.st[k][SA_D].v.back(), n_d, n_p);
            fflush(stdout);
        }
    for (auto &p : d_st)
        CK(cudaFree(p));
}

static void print_plan(const gos_device *d, const options &o, const gos_pd_req &fit, const placement *pl,
                       const results &R)
{
    printf("pd_multiplex on %s (%d SMs): %d Llama-3-8B layers; prefill %d x %d tokens on %d SMs, decode batch %d "
           "x %d KV tokens on %d SMs (asked %d + %d)\n",
           d->info.name, d->info.sm_count, o.layers, P_SEQS, P_LEN, fit.sms[0], D_BATCH, D_CTX, fit.sms[1],
           o.req.sms[0], o.req.sms[1]);
    for (int k = 0; k < NPL; k++) {
        const gos_smset *s = pl[k].plan.set;
        printf("  %-21s prefill %d SMs (partition %d, %d clusters of 8), decode %d SMs (partition %d, %d clusters "
               "of 8), decode KV %s%s\n",
               pl_name(k), s[0].n_sms, s[0].partition, s[0].clusters[8], s[1].n_sms, s[1].partition,
               s[1].clusters[8], pl[k].lin ? "interleaved" : "in the decode partition's view",
               R.checks[k] ? "" : " CHECKS FAILED");
    }
    fflush(stdout);
}

static void print_results(const options &o, const results &R)
{
    printf("\n%-21s | %-35s | %-35s\n", "tokens/s", "prefill: overlapped [min-max] | alone",
           "decode: overlapped [min-max] | alone");
    for (int k = 0; k < NPL; k++) {
        const series *t = R.st[k];
        printf("%-21s | %7.0f [%7.0f-%7.0f] | %7.0f | %7.0f [%7.0f-%7.0f] | %7.0f\n", pl_name(k),
               t[OV_P].med(), t[OV_P].lo(), t[OV_P].hi(), t[SA_P].med(), t[OV_D].med(), t[OV_D].lo(), t[OV_D].hi(),
               t[SA_D].med());
    }
    printf("decode overlapped, partition-aware / cluster-aware: %.3f [%.3f-%.3f] over %d windows "
           "(paper 001: 1.143 on H200); prefill %.3f; decode alone %.3f; the KV placement alone (partition-aware / "
           "partition-interleaved, overlapped decode) %.3f [%.3f-%.3f]\n",
           R.ratio[0].med(), R.ratio[0].lo(), R.ratio[0].hi(), o.windows, R.ratio[1].med(), R.ratio[2].med(),
           R.ratio[3].med(), R.ratio[3].lo(), R.ratio[3].hi());
}

// The result document (schemas/pd-multiplex.schema.json).
static json_t *result_doc(const gos_device *d, const options &o, const gos_pd_req &fit, const attn_plan &P,
                          const placement *pl, const results &R, bool ok, int argc, char **argv)
{
    json_t *pls = json_array();
    for (int k = 0; k < NPL; k++) {
        json_t *x = json_pack("{s:s, s:o, s:o, s:b, s:s, s:b}", "name", pl_name(k), "prefill_set",
                              set_json(pl[k].plan.set[0]), "decode_set", set_json(pl[k].plan.set[1]), "mismatched",
                              pl[k].plan.mismatched, "decode_kv", pl[k].lin ? "interleaved" : "decode partition",
                              "checks_ok", (int)R.checks[k]);
        for (int s = 0; s < NS; s++)
            json_object_set_new(x, SNAME[s], R.st[k][s].json());
        json_array_append_new(pls, x);
    }
    char cmd[1024];
    gos_command_line(cmd, sizeof cmd, NULL, argc, argv);
    const double w_bytes = 2.0 * ((double)HID * HID * 2 + (double)KVW * HID + 2.0 * FFN * HID + (double)HID * FFN);
    const double kv_bytes = (double)P.n_kv * P.ctx * ATTN_D * 2 * 2;
    const double flop = 2.0 * P_TOK * w_bytes / 2 + 4.0 * P_SEQS * QH * (double)P_LEN * P_LEN * HD;
    return json_pack(
        "{s:s, s:o, s:{s:s, s:s, s:i}, s:{s:s, s:i, s:i, s:i, s:i, s:i, s:i}, s:{s:i, s:i, s:f}, "
        "s:{s:i, s:i, s:i, s:i, s:f, s:f}, s:[i, i], s:[i, i], s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:b}",
        "schema", "gpuos.pd-multiplex/1", "provenance", gos_provenance(cmd, d->info.driver_version), "gpu", "name",
        d->info.name, "uuid", d->info.uuid, "sms", d->info.sm_count, "model", "shape", "Llama-3-8B", "layers",
        o.layers, "hidden", HID, "q_heads", QH, "kv_heads", KVH, "head_dim", HD, "ffn", FFN, "prefill", "prompts",
        P_SEQS, "prompt_tokens", P_LEN, "flop_per_iteration", o.layers * flop, "decode", "batch", D_BATCH,
        "kv_tokens", D_CTX, "pages_per_split", (int)P.pps, "tasks", (int)P.n_tasks, "weight_bytes_per_step",
        o.layers * w_bytes, "kv_bytes_per_step", o.layers * kv_bytes, "sms_asked", o.req.sms[0], o.req.sms[1], "sms",
        fit.sms[0], fit.sms[1], "windows", o.windows, "prefill_iterations_per_window", o.iters, "placements", pls,
        "decode_ratio_partition_over_cluster_aware", R.ratio[0].json(), "prefill_ratio_partition_over_cluster_aware",
        R.ratio[1].json(), "standalone_decode_ratio_partition_over_cluster_aware", R.ratio[2].json(),
        "decode_ratio_placed_over_interleaved_kv", R.ratio[3].json(), "ok", (int)ok);
}

// --dry-json on a simulated chip: the plans and the document, throughputs made
// up (a window's value is 1000 x (placement + 1) + window), no CUDA call.
static int dry_run(const options &o, int argc, char **argv)
{
    gos_device *d;
    gos_device_spec spec = {o.sim, -1};
    gos_smset_pool *pool;
    gos_pd_req fit;
    if (gos_device_open(&spec, &d) || gos_smset_pool_open(d, d->chip, &pool) || gos_pd_fit(pool, &o.req, &fit))
        die(1, "%s", gos_last_error());
    placement pl[NPL];
    results R;
    for (int k = 0; k < NPL; k++) {
        if (gos_pd_plan_make(pool, &fit, k < GOS_PD_KINDS ? (gos_pd_kind)k : GOS_PD_PARTITION_AWARE, &pl[k].plan))
            die(1, "%s", gos_last_error());
        gos_pd_release(pool, &pl[k].plan);
        pl[k].lin = k != GOS_PD_PARTITION_AWARE;
        pl[k].name = pl_name(k);
        R.checks[k] = true;
        for (int s = 0; s < NS; s++)
            for (int w = 0; w < o.windows; w++)
                R.st[k][s].v.push_back(1000.0 * (k + 1) + w);
    }
    ratios(R, o.windows);
    attn_plan P;
    if (attn_plan_make(&P, D_BATCH, KVH, D_CTX, (uint32_t)fit.sms[1]))
        die(1, "cannot plan decode attention");
    print_plan(d, o, fit, pl, R);
    print_results(o, R);
    json_t *doc = result_doc(d, o, fit, P, pl, R, true, argc, argv);
    if (!doc || json_dump_file(doc, o.dry_json, JSON_INDENT(1)))
        die(1, "cannot write %s", o.dry_json);
    json_decref(doc);
    gos_smset_pool_free(pool);
    gos_device_close(d);
    return 0;
}

int main(int argc, char **argv)
{
    const options o = parse_args(argc, argv);
    if (o.dry_json)
        return dry_run(o, argc, argv);
    signal(SIGALRM, on_alarm);
    alarm((unsigned)o.deadline);
    mkdir(o.out, 0755);
    blas_open(o.blas);
    gos_device *d;
    gos_device_spec spec = {NULL, 0};
    if (gos_device_open(&spec, &d))
        die(1, "%s", gos_last_error());
    CK(cudaSetDevice(0));
    CK(cudaFree(0)); /* the primary context: gos_pmem's memory and the green contexts' parent */
    driver_open();
    gos_chip *chart;
    if (gos_pmem_chart_load(o.chart, &chart))
        die(1, "%s", gos_last_error());
    if (chart->n_parts != 2)
        die(1, "the chart has %d memory partitions: decode attention's two views need 2", chart->n_parts);
    gos_smset_pool *pool;
    if (gos_smset_pool_open(d, chart, &pool))
        die(2, "SM sets of green contexts unavailable: %s", gos_last_error());
    gos_pd_req fit;
    if (gos_pd_fit(pool, &o.req, &fit))
        die(1, "%s", gos_last_error());

    model m;
    model_alloc(m, o.layers, (uint32_t)fit.sms[1]);
    const uint64_t pool_bytes = (uint64_t)o.layers * m.P.n_kv * m.P.pages * ATTN_SLOT;
    gos_pmem *pm;
    if (gos_pmem_create(d, chart, pool_bytes, &pm))
        die(1, "%s", gos_last_error());
    placement pl[NPL];
    results R;
    std::vector<uint16_t> ref;
    bool ok = true;
    for (int k = 0; k < NPL; k++) {
        void *lin = NULL;
        if (k != GOS_PD_PARTITION_AWARE)
            CK(cudaMalloc(&lin, pool_bytes));
        placement_open(d, pool, pm, &fit, k, m, lin, pl[k]);
        ok &= R.checks[k] = placement_check(pl[k], m, ref);
    }
    print_plan(d, o, fit, pl, R);
    measure(pl, m, o, R);
    ratios(R, o.windows);
    print_results(o, R);
    json_t *doc = result_doc(d, o, fit, m.P, pl, R, ok, argc, argv);
    char path[1200];
    snprintf(path, sizeof path, "%s/pd-multiplex.json", o.out);
    if (!doc || json_dump_file(doc, path, JSON_INDENT(1)))
        die(1, "cannot write %s", path);
    json_decref(doc);
    printf("wrote %s\n", path);
    alarm(0);
    return ok ? 0 : 1;
}
