# SPDX-License-Identifier: Apache-2.0
# oversub_job.py: one PyTorch job of tests/gpu/oversub.sh (issue 42), run natively
# and under `gpuos run`: it holds a big tensor with a known pattern, trains a
# small MLP for STEPS steps (allocating and freeing 32 MB through the driver
# every 1000 steps, as the job died at such an allocation), then checks
# the big tensor byte for byte. Deterministic (seeded, deterministic algorithms),
# so the losses of a shared run must equal those alone.
#   oversub_job.py job BYTES STEPS SEED   prints "RESULT {json}": bytes, steps,
#       losses (every STEPS/10 steps and the last), tensor_equal, seconds
#       (inside the program: allocation to check), mem_get_info at the start
#   oversub_job.py quota STEPS SEED       allocates 1 GiB tensors until
#       torch.OutOfMemoryError, frees them and trains STEPS steps: "RESULT {json}"
#       with got_bytes (what it held at the error), total (mem_get_info's), oom
#       (1: the error came), trained (1: it went on)
import json, os, sys, time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch

BLK = 64 << 20  # the pattern's block: block k is the seeded block XOR (k % 251)


def model_and_data(seed):
    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                            torch.nn.ReLU(), torch.nn.Linear(2048, 1024)).cuda()
    x = torch.randn(256, 1024, device="cuda")
    y = torch.randn(256, 1024, device="cuda")
    return m, x, y


def train(steps, seed):
    m, x, y = model_and_data(seed)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    losses = []
    every = max(1, steps // 10)
    for i in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        if i % every == 0 or i == steps - 1:
            losses.append(loss.item())
        if i % 1000 == 999:  # a fresh 32 MB allocation through the driver
            t = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")
            t.fill_(1)
            del t
            torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return losses


def job(nbytes, steps, seed):
    torch.use_deterministic_algorithms(True)
    free0, total0 = torch.cuda.mem_get_info()
    t0 = time.perf_counter()
    nblk = nbytes // BLK
    g = torch.Generator(device="cuda").manual_seed(seed)
    blk = torch.randint(0, 256, (BLK,), dtype=torch.uint8, device="cuda", generator=g)
    big = torch.empty((nblk, BLK), dtype=torch.uint8, device="cuda")
    for k in range(nblk):
        torch.bitwise_xor(blk, k % 251, out=big[k])
    torch.cuda.synchronize()
    t_alloc = time.perf_counter() - t0
    losses = train(steps, seed)
    bad = 0
    for k in range(nblk):
        bad += int(not torch.equal(big[k], torch.bitwise_xor(blk, k % 251)))
    torch.cuda.synchronize()
    return {"bytes": nblk * BLK, "steps": steps, "losses": losses, "tensor_equal": bad == 0, "bad_blocks": bad,
            "seconds": time.perf_counter() - t0, "alloc_seconds": t_alloc, "mem_free": free0, "mem_total": total0}


def quota(steps, seed):
    free0, total0 = torch.cuda.mem_get_info()
    held, oom = [], 0
    try:
        while len(held) < 4096:
            held.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        oom = 1
    got = len(held) << 30
    del held
    torch.cuda.empty_cache()
    losses = train(steps, seed)
    return {"got_bytes": got, "mem_free": free0, "mem_total": total0, "oom": oom,
            "trained": int(len(losses) > 0 and all(l == l for l in losses))}


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "job":
        r = job(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "quota":
        r = quota(int(sys.argv[2]), int(sys.argv[3]))
    else:
        print("usage: oversub_job.py job BYTES STEPS SEED | quota STEPS SEED", file=sys.stderr)
        sys.exit(2)
    print("RESULT " + json.dumps(r), flush=True)
