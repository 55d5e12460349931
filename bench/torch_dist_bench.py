"""torch_dist_bench.py: what dftrace.torch.instrument_distributed() adds to a torch.distributed
call, on a real gloo process group of 2 processes (CPU).

1. The instrumentation's own cost per call, without the communication: the wrapper of
   all_reduce (describe the tensor, begin, 8 arguments, end, into a trace) around a function
   that does nothing, against that function called directly; the loop thread's CPU time.
2. all_reduce end to end on 2 ranks (torch.multiprocessing.spawn), plain and instrumented,
   alternating blocks of --calls calls, --repeat times, for a small tensor (4 floats) and 1 MB:
   the median per-call wall time of each, and the difference (noisy: the call's own time
   varies far more than the instrumentation costs).

Run: DFTRACE_ENABLE=1 DFTRACE_LOG_FILE=/tmp/tdb/t PYTHONPATH=build/bindings/python \\
     /usr/bin/python3 bench/torch_dist_bench.py [--repeat 7] [--calls 2000]
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import dftrace.torch as dt
from dftrace import torch_distributed as td


def wrapper_cost(calls: int, repeat: int) -> None:
    t = torch.ones(4)
    nothing = lambda *a, **k: None  # noqa: E731
    traced = td._recorded("all_reduce", td._all_reduce, nothing)
    # as _group() caches a group of 2
    td._groups[None] = (("comm_size", 2), ("comm_rank", 0), ("comm_group", "0-1"))
    plain, wrapped = [], []
    for _ in range(repeat):
        for fn, out in ((nothing, plain), (traced, wrapped)):
            t0 = time.thread_time_ns()
            for _ in range(calls):
                fn(t)
            out.append((time.thread_time_ns() - t0) / calls)
    p, w = statistics.median(plain), statistics.median(wrapped)
    print("wrapper alone: plain %.0f ns, instrumented %.0f ns, added %.0f ns per call "
          "(median of %d x %d calls; thread CPU time)" % (p, w, w - p, repeat, calls))


def rank_main(rank: int, world: int, port: int, calls: int, repeat: int) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=world)
    for label, numel in (("4 floats", 4), ("1 MB", 1 << 18)):
        t = torch.ones(numel)
        times = {"plain": [], "instrumented": []}
        for _ in range(repeat):
            for mode in ("plain", "instrumented"):
                handle = dt.instrument_distributed() if mode == "instrumented" else None
                dist.barrier()
                n = calls if numel == 4 else max(calls // 20, 20)
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    dist.all_reduce(t)
                times[mode].append((time.perf_counter_ns() - t0) / n)
                if handle is not None:
                    handle.remove()
        if rank == 0:
            p, i = statistics.median(times["plain"]), statistics.median(times["instrumented"])
            print("all_reduce %s, 2 ranks: plain %.1f us, instrumented %.1f us, added %.2f us "
                  "per call (median of %d blocks)" % (label, p / 1e3, i / 1e3, (i - p) / 1e3,
                                                        repeat), flush=True)
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--port", type=int, default=29561)
    a = ap.parse_args()
    if os.environ.get("DFTRACE_ENABLE") != "1":
        sys.exit("set DFTRACE_ENABLE=1 and DFTRACE_LOG_FILE (the instrumented calls are recorded)")
    torch.set_num_threads(1)
    wrapper_cost(a.calls * 10, a.repeat)
    mp.spawn(rank_main, args=(2, a.port, a.calls, a.repeat), nprocs=2)


if __name__ == "__main__":
    main()
