"""torch_bench.py: what dftrace.torch costs a PyTorch training loop (CPU), side by side in one
process.

1. Steps: an MLP of 4 layers (Linear 128x128 by default, ReLU), batch 64, 200 steps of SGD,
   run plain and with dftrace.torch.auto() (steps, forward, backward, optimizer, transfers, recorded into a
   trace), alternating, --repeat times; the ratio of the medians and of each pair.
2. Layers: a stack of --modules small modules (Linear 16x16 under no_grad), per module call:
   plain, traced with trace_model(forward only), and the same with tracing switched off
   (dftrace.set_enabled(False)).
3. auto()'s module wrapper: a Sequential of --modules identity modules, per module call
   (the outermost and every inner one), plain and under dftrace.torch.auto().

Run: DFTRACE_ENABLE=1 DFTRACE_LOG_FILE=/tmp/tb/t PYTHONPATH=build/bindings/python \\
     /usr/bin/python3 bench/torch_bench.py [--repeat 7] [--steps 200]
One torch thread (the machine is shared); times are the loop thread's CPU time (the writer
thread's compression runs beside it and is not counted; --wall counts wall time).
"""
import argparse
import statistics
import time

import torch

import dftrace
import dftrace.torch as dt

CLOCK = time.thread_time  # the loop thread's CPU time: preemption by other processes left out


def mlp(width):
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def train(model, opt, batches):
    t0 = CLOCK()
    for x, y in batches:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return CLOCK() - t0


def bench_steps(a):
    torch.manual_seed(0)
    model = mlp(a.width)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batches = [(torch.randn(64, a.width), torch.randn(64, a.width)) for _ in range(a.steps)]
    train(model, opt, batches[:20])  # warm-up
    plain, traced = [], []
    for _ in range(a.repeat):
        plain.append(train(model, opt, batches))
        handle = dt.auto()
        traced.append(train(model, opt, batches))
        handle.remove()
    ratio = statistics.median(traced) / statistics.median(plain)
    pairs = [t / p for t, p in zip(traced, plain)]
    print("steps: %d steps of an MLP 4 x Linear(%d), batch 64, %d repeats" %
          (a.steps, a.width, a.repeat))
    print("  plain  median %.1f ms per step (min %.1f)" %
          (1e3 * statistics.median(plain) / a.steps, 1e3 * min(plain) / a.steps))
    print("  traced median %.1f ms per step (min %.1f)" %
          (1e3 * statistics.median(traced) / a.steps, 1e3 * min(traced) / a.steps))
    print("  traced / plain: %.4f (medians); pairs %s; per step +%.1f us" % (
        ratio, " ".join("%.3f" % r for r in pairs),
        1e6 * (statistics.median(traced) - statistics.median(plain)) / a.steps))


def per_call(model, x, calls):
    with torch.no_grad():
        t0 = CLOCK()
        for _ in range(calls):
            model(x)
        return CLOCK() - t0


def bench_layers(a):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(a.modules)])
    x = torch.randn(1, 16)
    n = a.calls
    per_call(model, x, n // 10)
    rows = {"plain": [], "traced": [], "disabled": []}
    for _ in range(a.repeat):
        rows["plain"].append(per_call(model, x, n))
        h = dt.trace_model(model, backward=False)
        rows["traced"].append(per_call(model, x, n))
        dftrace.set_enabled(False)
        rows["disabled"].append(per_call(model, x, n))
        dftrace.set_enabled(True)
        h.remove()
    med = {k: statistics.median(v) / (n * a.modules) * 1e9 for k, v in rows.items()}
    print("layers: %d x Linear(16, 16) under no_grad, %d forward calls, %d repeats" %
          (a.modules, n, a.repeat))
    print("  plain %.0f ns per module call; traced +%.0f ns; traced, tracing off +%.0f ns" % (
        med["plain"], med["traced"] - med["plain"], med["disabled"] - med["plain"]))


class _Identity(torch.nn.Module):
    def forward(self, x):
        return x


def bench_auto_modules(a):
    """What auto()'s Module.__call__ wrapper adds to every module call, inner ones included."""
    model = torch.nn.Sequential(*[_Identity() for _ in range(a.modules)])
    x = torch.randn(1, 4)
    calls = a.modules + 1
    n = max(1, a.calls // 2)
    rows = {"plain": [], "auto": []}
    for _ in range(a.repeat):
        rows["plain"].append(per_call_grad(model, x, n))
        handle = dt.auto()
        rows["auto"].append(per_call_grad(model, x, n))
        handle.remove()
    med = {k: statistics.median(v) / (n * calls) * 1e9 for k, v in rows.items()}
    print("auto modules: Sequential of %d identity modules, %d forwards with gradients, %d repeats"
          % (a.modules, n, a.repeat))
    print("  plain %.0f ns per module call; under auto() +%.0f ns" % (
        med["plain"], med["auto"] - med["plain"]))


def per_call_grad(model, x, calls):
    t0 = CLOCK()
    for _ in range(calls):
        model(x)
    return CLOCK() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--modules", type=int, default=32)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--wall", action="store_true", help="wall time instead of thread CPU time")
    a = p.parse_args()
    global CLOCK
    if a.wall:
        CLOCK = time.perf_counter
    torch.set_num_threads(1)
    if not dftrace.is_enabled() and not dftrace.ai.compute.step.enabled:
        print("note: tracing is off (set DFTRACE_ENABLE=1): the traced figures record nothing")
    print(open("/proc/loadavg").read().strip(), "(load average at start)")
    bench_steps(a)
    bench_layers(a)
    bench_auto_modules(a)
    print(open("/proc/loadavg").read().strip(), "(load average at end)")
    print("events written", dftrace.events_written())


if __name__ == "__main__":
    main()
