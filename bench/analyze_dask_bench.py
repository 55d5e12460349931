#!/usr/bin/python3
"""analyze_dask_bench.py: dftrace.analyze on a Dask LocalCluster of 1 worker against 2 workers
(one thread each, one reader thread per partial), on a synthetic run the benchmark makes:
RANKS files of EVENTS events each (tests/tools/gen_trace, one file per rank). It checks that
both documents equal the single-machine one, then prints a Markdown row per cluster with the
best wall time of REPEAT rounds, the client's CPU seconds (its mean: placing the files and the
merge), and the speed-up. Both clusters stay up and the rounds alternate them (1, 2, 1, 2, ...),
so that a change of load touches both; the median of the rounds' ratios is printed too, and the
workers' CPU seconds with the speed-up they and the client's allow (the client serial, the
workers' part halved): on a shared machine, where wall times vary, that figure holds.

Usage: /usr/bin/python3 bench/analyze_dask_bench.py
           [BUILD_DIR] [WORK_DIR]     (env: RANKS=48 EVENTS=200000 REPEAT=3)
"""
import os
import subprocess
import sys
import tempfile
import time


def generate(gen, work, ranks, events):
    files = []
    for i in range(ranks):
        path = os.path.join(work, "r%d.pfw.gz" % i)
        if not os.path.exists(path):
            subprocess.run([gen, path, "--events", str(events), "--pid", str(7000 + i),
                            "--rank", str(i), "--seed", str(i), "--threads", "2"], check=True)
        files.append(path)
    return files


def _warm():
    import dftrace._analysis  # noqa: F401
    return True


def _cpu():
    return time.process_time()


def workers_cpu(client):
    """The CPU seconds the client's workers' processes have used (every thread of each)."""
    return sum(client.run(_cpu).values())


def best_of(repeat, fn):
    best, out = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="dftrace-dask-bench-")
    ranks = int(os.environ.get("RANKS", "48"))
    events = int(os.environ.get("EVENTS", "200000"))
    repeat = int(os.environ.get("REPEAT", "3"))
    pkg = os.path.abspath(os.path.join(build, "bindings", "python"))
    sys.path.insert(0, pkg)
    os.environ["PYTHONPATH"] = pkg + os.pathsep + os.environ.get("PYTHONPATH", "")  # workers
    import dftrace
    from distributed import Client, LocalCluster

    files = generate(os.path.join(build, "tests", "tools", "gen_trace"), work, ranks, events)
    single = dftrace.analyze(files, threads=1, allow_damaged=True)
    n = single["inputs"]["events"]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("# %s UTC, %d cores, load average %s; %d ranks, %d events" %
          (time.strftime("%F %H:%M", time.gmtime()), os.cpu_count(), load, ranks, n))
    print()
    print("| Dask workers | wall s (best of %d) | M events / s | client CPU s | workers' CPU s "
          "| speed-up |" % repeat)
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    clusters = [LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                             dashboard_address=None) for w in (1, 2)]
    clients = [Client(c, set_as_default=False) for c in clusters]
    walls, cpus, wcpus = [[], []], [[], []], [[], []]
    try:
        for c in clients:
            c.run(_warm)  # the extension imported on every worker before timing
        for _ in range(repeat):
            for k, c in enumerate(clients):
                w = workers_cpu(c)
                t, cpu = time.perf_counter(), time.process_time()
                r = dftrace.analyze(files, client=c, threads=1, allow_damaged=True)
                walls[k].append(time.perf_counter() - t)
                cpus[k].append(time.process_time() - cpu)
                wcpus[k].append(workers_cpu(c) - w)
                if r != single:
                    sys.exit("the document on %d worker(s) differs from the single-machine one"
                             % (k + 1))
                del r
    finally:
        for c in clients + clusters:
            c.close()
    base = min(walls[0])
    for k in (0, 1):
        wall = min(walls[k])
        print("| %d | %.2f | %.2f | %.2f | %.2f | %.2fx |" % (
            k + 1, wall, n / wall / 1e6, sum(cpus[k]) / repeat, sum(wcpus[k]) / repeat,
            base / wall))
    ratios = sorted(a / b for a, b in zip(walls[0], walls[1]))
    print()
    print("rounds' 1-worker / 2-worker wall ratios: %s (median %.2fx)" %
          (", ".join("%.2f" % x for x in ratios), ratios[len(ratios) // 2]))
    # What the CPU figures allow where the machine is shared: the client's part is serial, the
    # workers' split over 2 (evenly at best), with 2 free cores.
    c1, w1 = sum(cpus[0]) / repeat, sum(wcpus[0]) / repeat
    c2, w2 = sum(cpus[1]) / repeat, sum(wcpus[1]) / repeat
    print("CPU bound on the speed-up, (C1 + W1) / (C2 + W2 / 2): %.2fx" %
          ((c1 + w1) / (c2 + w2 / 2)))


if __name__ == "__main__":
    main()
