"""torch_run_loop.py: a small CPU training loop with short steps, for timing `dftrace run --torch`
against the same script untraced (bench/torch_run_bench.py runs it; it runs alone as well).

The model, batch and DataLoader are those of scripts/gpu_check.py's overhead loop (MLP
64-W-W-10, batch 32, Adam, a map-style dataset indexed per sample; W is 256 there, 128 here by
default, for steps of 1-3 ms), on the CPU with one torch thread. Prints one line of figures (key value ...):
  steps        the steps timed (every step but each epoch's first);
  step_wall_us wall time per timed step (the batch's wait, the copy, forward, backward, step);
  step_cpu_us  this thread's CPU time per timed step (what other processes do not change);
  epoch_start_ms / epoch_end_ms  mean wall time of an epoch's first step (with its workers'
               start) and of its end (the last `next`, which shuts the workers down);
  loop_s       the whole loop's wall time (as scripts/gpu_check.py reports it).
BENCH_CALLGRIND=1 (under valgrind --tool=callgrind --instr-atstart=no): callgrind's
instrumentation is switched on before the loop (callgrind_control), so that the start-up runs
uninstrumented. BENCH_PROFILE=1: the timed steps run under cProfile, and the calls per step are printed instead
(total, and those of functions defined in dftrace's files).

Usage: python3 bench/torch_run_loop.py [STEPS] [EPOCHS] [WORKERS] [WIDTH]
"""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
EPOCHS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
WORKERS = int(sys.argv[3]) if len(sys.argv) > 3 else 0
WIDTH = int(sys.argv[4]) if len(sys.argv) > 4 else 128
torch.set_num_threads(1)
torch.manual_seed(0)


class Samples(Dataset):
    def __init__(self, n):
        self.x, self.y = torch.randn(n, 64), torch.randint(0, 10, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


model = torch.nn.Sequential(torch.nn.Linear(64, WIDTH), torch.nn.ReLU(),
                            torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(Samples(STEPS * 32), batch_size=32, num_workers=WORKERS)
profile = None
if os.environ.get("BENCH_PROFILE") == "1":
    import cProfile
    profile = cProfile.Profile()
if os.environ.get("BENCH_CALLGRIND") == "1":  # under valgrind --instr-atstart=no: count the loop
    import subprocess
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True,
                   stdout=subprocess.DEVNULL)
wall = cpu = starts = ends = 0.0
timed = 0
t0 = time.perf_counter()
for epoch in range(EPOCHS):
    first = True
    ts = time.perf_counter()
    it = iter(loader)
    while True:
        w, c = time.perf_counter(), time.thread_time()
        if profile is not None and not first:
            profile.enable()
        try:
            x, y = next(it)
        except StopIteration:  # the workers' shutdown
            if profile is not None:
                profile.disable()
            ends += time.perf_counter() - w
            break
        x, y = x.to(torch.float32), y.to(torch.int64)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if profile is not None:
            profile.disable()
        if first:
            starts += time.perf_counter() - ts
            first = False
        else:
            wall += time.perf_counter() - w
            cpu += time.thread_time() - c
            timed += 1
loop = time.perf_counter() - t0
if profile is not None:
    import pstats
    stats = pstats.Stats(profile).stats
    total = sum(v[1] for v in stats.values())  # every call, recursive ones too
    ours = {k: v[1] for k, v in stats.items() if "/dftrace/" in k[0]}
    print("steps %d calls_per_step %.1f dftrace_calls_per_step %.1f" %
          (timed, total / timed, sum(ours.values()) / timed))
    for k, n in sorted(ours.items(), key=lambda kv: -kv[1])[:12]:
        print("  %8.2f %s:%d %s" % (n / timed, os.path.basename(k[0]), k[1], k[2]))
else:
    print("steps %d step_wall_us %.1f step_cpu_us %.1f epoch_start_ms %.2f epoch_end_ms %.2f "
          "loop_s %.4f" % (timed, 1e6 * wall / timed, 1e6 * cpu / timed, 1e3 * starts / EPOCHS,
                           1e3 * ends / EPOCHS, loop))
