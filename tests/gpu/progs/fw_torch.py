# SPDX-License-Identifier: Apache-2.0
# fw_torch.py MODE: PyTorch checks for tests/gpu/frameworks.sh, run natively and
# under `gpuos run` (issue 21). Prints "RESULT ..." lines (must agree with the
# native run; losses to 1e-3 relative) and "TIME key value" lines (figures).
#   basic   elementwise, reduction, a 512^2 matmul (cuBLAS)
#   mlp     an MLP, autograd, Adam: losses of $FW_STEPS steps (default 100),
#           steps/s over $FW_TIMED_STEPS (default 500) after the first 10
#   cnn     a small convolutional network (cuDNN), the same
#   matmul  bf16 8192^3 products: TFLOP/s
#   graph   a CUDA graph captured and replayed
#   oom     mem_get_info, allocation to the share, torch.OutOfMemoryError caught
import os, sys, time
import torch

mode = sys.argv[1]
steps = int(os.environ.get("FW_STEPS", "100"))
dev = "cuda"

def sync():
    torch.cuda.synchronize()

def train(model, x, y, loss_fn):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    t0 = None
    # the losses are those of the first $FW_STEPS steps; the speed is timed
    # from step 10 over $FW_TIMED_STEPS more (a 90-step window of a small
    # network is a fifth of a second: too short to compare two runs)
    total = max(steps, 10 + int(os.environ.get("FW_TIMED_STEPS", "500")))
    for i in range(total):
        if i == 10:
            sync()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if i in (0, steps // 2, steps - 1):
            losses.append(loss.item())
    sync()
    dt = time.perf_counter() - t0
    print("RESULT losses", " ".join("%.6e" % v for v in losses))
    print("TIME steps_per_s %.3f" % ((total - 10) / dt))

torch.manual_seed(0)
if mode == "basic":
    x = torch.arange(1 << 20, dtype=torch.float32, device=dev)
    print("RESULT sum", int((x * 2 + 1).sum().item()))
    a = torch.ones(512, 512, device=dev)
    print("RESULT matmul", (a @ a)[0, 0].item())
    print("RESULT device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
elif mode == "mlp":
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                                torch.nn.ReLU(), torch.nn.Linear(4096, 10)).to(dev)
    x = torch.randn(512, 1024, device=dev)
    y = torch.randint(0, 10, (512,), device=dev)
    train(model, x, y, torch.nn.functional.cross_entropy)
elif mode == "cnn":
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                torch.nn.Flatten(), torch.nn.Linear(64 * 8 * 8, 10)).to(dev)
    x = torch.randn(128, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (128,), device=dev)
    train(model, x, y, torch.nn.functional.cross_entropy)
elif mode == "matmul":
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    for _ in range(3):
        c = a @ b
    sync()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = int(os.environ.get("FW_MATMUL_REPS", "200"))  # 0.3 s on an H200, as bf16_ab.sh
    t0 = time.perf_counter()
    e0.record()
    for _ in range(reps):
        c = a @ b
    e1.record()
    sync()
    wall = time.perf_counter() - t0
    print("RESULT matmul_checksum %.4e" % c.float().abs().sum().item())
    print("TIME tflops %.2f" % (2 * n ** 3 * reps / wall / 1e12))
    print("TIME tflops_events %.2f" % (2 * n ** 3 * reps / (e0.elapsed_time(e1) / 1e3) / 1e12))
elif mode == "graph":
    x = torch.randn(1024, 1024, device=dev)
    w = torch.randn(1024, 1024, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y = x @ w + 1
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x @ w + 1
    for i in range(10):
        x.mul_(0.5)
        g.replay()
    sync()
    print("RESULT graph_sum %.6e" % y.sum().item())
elif mode == "oom":
    free, total = torch.cuda.mem_get_info()
    print("TIME mem_total_GiB %.2f" % (total / 2 ** 30))  # the vGPU's share under gpuos: differs by design
    held = []
    try:
        while True:
            held.append(torch.empty(1 << 30, dtype=torch.uint8, device=dev))
    except torch.OutOfMemoryError:
        print("RESULT caught torch.OutOfMemoryError")
        print("TIME oom_after_GiB", len(held))
    held.clear()
    torch.cuda.empty_cache()
    print("RESULT after", (torch.ones(1000, device=dev) * 3).sum().item())
