"""attach_torch_bench.py: what a PyTorch loop pays per step while it waits for dftrace attach.

A small training loop (a DataLoader of 8-sample batches, a 3-layer model, SGD, one .to() per
batch) is timed in three processes, side by side on the same machine:
  torch      /usr/bin/python3 alone (no dftrace);
  installed  dftrace.torch.auto() in a process not tracing (DFTRACE_ENABLE=0): the PyTorch
             instrumentation installed and writing nothing, what a process waiting for
             dftrace attach paid before the instrumentation was switched with the windows;
  waiting    dftrace.torch.auto() in a process waiting for dftrace attach (DFTRACE_ATTACH=1,
             DFTRACE_ENABLE=0, as `dftrace run --attach` sets): only the optimizer's step is
             wrapped between windows.
Each prints the best of 5 rounds of 2000 steps, in us per step.

Usage: python3 bench/attach_torch_bench.py BUILD_DIR
"""
import os
import subprocess
import sys

LOOP = r"""
import os, time, torch
if os.environ.get("BENCH_AUTO") == "1":
    import dftrace.torch
    dftrace.torch.auto()
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(16000, 16), torch.randn(16000, 4))
best = None
for r in range(5):
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    t = time.perf_counter()
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.to(torch.float32)), y)
        loss.backward(); opt.step(); opt.zero_grad()
    dt = (time.perf_counter() - t) / len(loader)
    best = dt if best is None else min(best, dt)
print("%.2f" % (best * 1e6))
"""


def main() -> None:
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACE_")}
    env.update(DFTRACE_PYTHON="/usr/bin/python3", DFTRACE_ATTACH_DIR="/tmp/dftrace-bench-attach")
    script = "/tmp/dftrace_attach_torch_bench_loop.py"
    with open(script, "w") as f:
        f.write(LOOP)
    package = os.path.join(build, "bindings", "python")
    runs = {"torch": {}, "installed": {"DFTRACE_ENABLE": "0", "BENCH_AUTO": "1"},
            "waiting": {"DFTRACE_ENABLE": "0", "DFTRACE_ATTACH": "1", "BENCH_AUTO": "1"}}
    for name, extra in runs.items():
        e = dict(env, PYTHONPATH=package, **extra)
        r = subprocess.run(["/usr/bin/python3", script], env=e, capture_output=True, text=True,
                           timeout=600)
        line = r.stdout.strip().splitlines()[0] if r.stdout.strip() else r.stderr[-300:]
        print("%-10s %s us/step" % (name, line))

if __name__ == "__main__":
    main()
