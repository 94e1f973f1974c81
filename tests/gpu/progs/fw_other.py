# SPDX-License-Identifier: Apache-2.0
# fw_other.py MODE: Triton, CuPy and JAX checks for tests/gpu/frameworks.sh
# (issue 21), natively and under `gpuos run`. "RESULT" lines must agree with the
# native run; "TIME key value" lines are figures.
#   triton_vadd  triton_matmul  triton_tma  cupy_raw  cupy_hostfn  cupy_matmul  jax_matmul
# triton_tma: host-side tensor descriptors (TMA; Triton's TensorDescriptor, whose
# maps the launcher encodes with cuTensorMapEncodeTiled: under gpuos, the
# daemon's device, issue 43); "RESULT tma no" and a plain kernel where this
# Triton has no TensorDescriptor.
import hashlib, sys, time

mode = sys.argv[1]

def h(b):
    return hashlib.sha256(b).hexdigest()[:16]

if mode.startswith("triton"):
    import torch, triton, triton.language as tl

    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

    @triton.jit
    def mm_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))

    torch.manual_seed(0)
    if mode == "triton_tma":
        try:
            from triton.tools.tensor_descriptor import TensorDescriptor
        except ImportError:
            TensorDescriptor = None
        M, N, BM, BN = 4096, 4096, 64, 64
        x = torch.randn(M, N, device="cuda", dtype=torch.float16)
        o = torch.empty_like(x)
        grid = (M // BM, N // BN)
        if TensorDescriptor is not None:
            @triton.jit
            def tma_scale(src, dst, BM: tl.constexpr, BN: tl.constexpr):
                pm, pn = tl.program_id(0), tl.program_id(1)
                v = src.load([pm * BM, pn * BN])
                dst.store([pm * BM, pn * BN], v * 2 + 1)

            def run():
                tma_scale[grid](TensorDescriptor(x, list(x.shape), list(x.stride()), [BM, BN]),
                                TensorDescriptor(o, list(o.shape), list(o.stride()), [BM, BN]), BM=BM, BN=BN)
        else:
            n = M * N
            def run():
                add_kernel[(triton.cdiv(n, 1024),)](x, x, o, n, BLOCK=1024)
        run()
        torch.cuda.synchronize()
        print("RESULT tma", "yes" if TensorDescriptor is not None else "no")
        want = x * 2 + 1 if TensorDescriptor is not None else x + x
        print("RESULT tma_out", h(o.cpu().numpy().tobytes()), bool(torch.equal(o, want)))
        t0 = time.perf_counter()
        for _ in range(100):
            run()
        torch.cuda.synchronize()
        print("TIME tma_GBps %.1f" % (2 * 2 * M * N * 100 / (time.perf_counter() - t0) / 1e9))
    elif mode == "triton_vadd":
        n = 1 << 24
        x = torch.rand(n, device="cuda")
        y = torch.rand(n, device="cuda")
        o = torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)
        add_kernel[grid](x, y, o, n, BLOCK=1024)
        torch.cuda.synchronize()
        print("RESULT vadd", h(o.cpu().numpy().tobytes()), bool(torch.equal(o, x + y)))
        t0 = time.perf_counter()
        for _ in range(100):
            add_kernel[grid](x, y, o, n, BLOCK=1024)
        torch.cuda.synchronize()
        print("TIME vadd_GBps %.1f" % (3 * 4 * n * 100 / (time.perf_counter() - t0) / 1e9))
    else:
        M = N = K = 4096
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        grid = (M // 128, N // 128)
        mm_kernel[grid](a, b, c, M, N, K, BM=128, BN=128, BK=64)
        torch.cuda.synchronize()
        print("RESULT matmul", h(c.cpu().numpy().tobytes()))
        for key in ("tflops", "tflops_warm"):  # the second straight after the first
            t0 = time.perf_counter()
            for _ in range(20):
                mm_kernel[grid](a, b, c, M, N, K, BM=128, BN=128, BK=64)
            torch.cuda.synchronize()
            print("TIME %s %.2f" % (key, 2 * M * N * K * 20 / (time.perf_counter() - t0) / 1e12))
elif mode.startswith("cupy"):
    import cupy as cp
    if mode == "cupy_raw":
        k = cp.RawKernel(r'''extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n)
        { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] * 2.0f + b[i]; }''', "vadd")
        n = 1 << 22
        a = cp.arange(n, dtype=cp.float32)
        b = cp.ones(n, dtype=cp.float32)
        c = cp.empty_like(a)
        k(((n + 255) // 256,), (256,), (a, b, c, cp.int32(n)))
        print("RESULT raw", h(cp.asnumpy(c).tobytes()))
        # the figure, then its parts (the launches' own time, the synchronise),
        # then the same loop again straight after: a cost paid once after the
        # host's pause (the hash above) shows as a difference of the two
        for key in ("raw_launches_per_s", "raw_warm_launches_per_s"):
            t0 = time.perf_counter()
            for _ in range(200):
                k(((n + 255) // 256,), (256,), (a, b, c, cp.int32(n)))
            t1 = time.perf_counter()
            cp.cuda.runtime.deviceSynchronize()
            t2 = time.perf_counter()
            print("TIME %s %.0f" % (key, 200 / (t2 - t0)))
            if key == "raw_launches_per_s":
                print("TIME raw_launch_us %.2f" % ((t1 - t0) / 200 * 1e6))
                print("TIME raw_sync_us %.1f" % ((t2 - t1) * 1e6))
    elif mode == "cupy_hostfn":
        # what a host function costs between two kernels (JAX ends every call
        # with one): 300 us spinning kernels back to back, then each followed
        # by a host function; the difference per kernel is the figure
        k = cp.RawKernel(r'''extern "C" __global__ void spin(unsigned long long ns, unsigned long long *out)
        { unsigned long long t0, t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
          do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
          if (threadIdx.x == 0) out[blockIdx.x] += 1; }''', "spin")
        import ctypes
        out = cp.zeros(1, dtype=cp.uint64)
        st = cp.cuda.get_current_stream()
        # the host function is C's free(NULL), through the Driver API: a Python
        # one would wait for the interpreter's lock, which the launching
        # thread holds
        cuda = ctypes.CDLL("libcuda.so.1")
        free_fn = ctypes.cast(ctypes.CDLL(None).free, ctypes.c_void_p)
        cuda.cuLaunchHostFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        calls = []
        def noop(arg):
            calls.append(arg)
        reps = 200
        fig = {}
        for key in ("plain", "hostfn", "plain_again"):
            k((1,), (32,), (cp.uint64(300000), out))
            cp.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            for i in range(reps):
                k((1,), (32,), (cp.uint64(300000), out))
                if key == "hostfn":
                    if cuda.cuLaunchHostFunc(st.ptr, free_fn, None):
                        raise SystemExit("cuLaunchHostFunc failed")
            cp.cuda.runtime.deviceSynchronize()
            fig[key] = (time.perf_counter() - t0) / reps * 1e6
        st.launch_host_func(noop, 7)  # and one of Python's
        cp.cuda.runtime.deviceSynchronize()
        print("RESULT hostfn calls", calls, "kernels", int(out.get()[0]))
        print("TIME steps_per_s %.1f" % (1e6 / fig["hostfn"]))
        print("TIME kernel_us %.2f" % ((fig["plain"] + fig["plain_again"]) / 2))
        print("TIME hostfn_us %.2f" % (fig["hostfn"] - (fig["plain"] + fig["plain_again"]) / 2))
    else:
        rs = cp.random.RandomState(0)
        a = rs.standard_normal((4096, 4096), dtype=cp.float32)
        b = rs.standard_normal((4096, 4096), dtype=cp.float32)
        c = cp.matmul(a, b)
        print("RESULT matmul", h(cp.asnumpy(c).tobytes()))
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            c = cp.matmul(a, b)
        cp.cuda.runtime.deviceSynchronize()
        print("TIME tflops %.2f" % (2 * 4096 ** 3 * 20 / (time.perf_counter() - t0) / 1e12))
elif mode == "jax_matmul":
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax, jax.numpy as jnp
    print("RESULT devices", [d.platform for d in jax.devices()])
    k = jax.random.PRNGKey(0)
    a = jax.random.normal(k, (4096, 4096), dtype=jnp.float32)
    f = jax.jit(lambda x: (x @ x).sum())
    print("RESULT sum %.6e" % float(f(a)))
    reps = int(os.environ.get("FW_JAX_REPS", "100"))
    for _ in range(3):
        r = f(a)
    r.block_until_ready()
    t0 = time.perf_counter()
    for _ in range(reps):
        r = f(a)
    r.block_until_ready()
    print("TIME tflops %.2f" % (2 * 4096 ** 3 * reps / (time.perf_counter() - t0) / 1e12))
