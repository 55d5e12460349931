"""python_overhead.py: per-event cost of dftrace's Python face (decorator, with, iter), on and off.

Run: PYTHONPATH=build/bindings/python [DFTRACE_ENABLE=1 DFTRACE_LOG_FILE=/tmp/x/b] \
     /usr/bin/python3 bench/python_overhead.py [--n N]
Prints ns per call for each style (capture: the decorator with capture= after its first N calls, and while capturing) and for the undecorated baseline (--cpu: thread CPU time). Tracing is on when the
environment enables it (the file goes where DFTRACE_LOG_FILE says).
"""
import argparse
import json
import time

import dftrace
from dftrace import ai


def plain():
    pass


@ai.compute.forward
def decorated():
    pass


def plain_x(x):
    pass


@ai.compute.forward
def decorated_x(x):
    pass


# capture=: the first call captured, every later one as a plain decorated call
@ai.compute.forward(capture=["x"], first=1)
def capture_done(x):
    pass


# every call captured (first large): the cost of summarising one int argument
@ai.compute.forward(capture=["x"], first=10**9)
def capture_all(x):
    pass


class Model:
    def plain(self):
        pass

    @ai.compute.forward
    def decorated(self):
        pass


CLOCK = time.perf_counter_ns


def per_call_ns(fn, n, repeat=7):
    """Best of `repeat` runs, in ns per call (the clock is wall time, or with --cpu the calling
    thread's CPU time, which leaves out preemption by other processes on a shared machine and
    the writer thread's background compression)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = CLOCK()
        fn(n)
        best = min(best, (CLOCK() - t0) / n)
    return best


def loop_plain(n):
    f = plain
    for _ in range(n):
        f()


def loop_decorated(n):
    f = decorated
    for _ in range(n):
        f()


def loop_with_arg(fn, warm=False):
    """A loop calling fn(i): warm calls it once first (a capture's first call)."""
    def loop(n):
        f = fn
        if warm:
            f(0)
        for i in range(n):
            f(i)
    return loop


def loop_method_plain(n):
    m = Model()
    for _ in range(n):
        m.plain()


def loop_method_decorated(n):
    m = Model()
    for _ in range(n):
        m.decorated()


def loop_empty_with(n):
    for _ in range(n):
        pass


def loop_with(n):
    for _ in range(n):
        with ai.compute.backward:
            pass


def loop_with_args(n):
    for _ in range(n):
        with ai.compute.backward(args={"layer": 3}):
            pass


def loop_range(n):
    for _ in range(n):
        pass


def loop_iter(n):
    for _ in ai.dataloader.fetch.iter(range(n)):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=200000)
    p.add_argument("--json", action="store_true")
    p.add_argument("--cpu", action="store_true", help="thread CPU time instead of wall time")
    a = p.parse_args()
    global CLOCK
    if a.cpu:
        CLOCK = time.thread_time_ns
    n = a.n
    r = {}
    r["baseline_call"] = per_call_ns(loop_plain, n)
    r["decorator_call"] = per_call_ns(loop_decorated, n)
    r["baseline_call_x"] = per_call_ns(loop_with_arg(plain_x), n)
    r["decorator_call_x"] = per_call_ns(loop_with_arg(decorated_x), n)
    r["capture_done_x"] = per_call_ns(loop_with_arg(capture_done, warm=True), n)
    r["capture_all_x"] = per_call_ns(loop_with_arg(capture_all), max(1, n // 10))
    r["baseline_method"] = per_call_ns(loop_method_plain, n)
    r["decorator_method"] = per_call_ns(loop_method_decorated, n)
    r["baseline_loop"] = per_call_ns(loop_empty_with, n)
    r["with"] = per_call_ns(loop_with, n)
    r["with_args"] = per_call_ns(loop_with_args, n)
    r["baseline_range"] = per_call_ns(loop_range, n)
    r["iter_item"] = per_call_ns(loop_iter, n)
    r["decorator_overhead"] = r["decorator_call"] - r["baseline_call"]
    r["method_overhead"] = r["decorator_method"] - r["baseline_method"]
    r["with_overhead"] = r["with"] - r["baseline_loop"]
    r["iter_overhead"] = r["iter_item"] - r["baseline_range"]
    r["enabled"] = dftrace.is_enabled() or ai.compute.forward.enabled
    if a.json:
        print(json.dumps(r))
    else:
        for k, v in r.items():
            print(f"{k:20s} {v:10.1f}" if isinstance(v, float) else f"{k:20s} {v}")
    dftrace.finalize()


if __name__ == "__main__":
    main()
