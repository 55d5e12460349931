#!/usr/bin/env python3
"""read_bench.py: dftrace.read into pandas, events per second, next to Python's json per line
(what a notebook does without it) and `dftrace stat` on the same file, in one run.

Usage: /usr/bin/python3 bench/read_bench.py [BUILD_DIR] [WORK_DIR]   (env: EVENTS=3000000,
REPEAT=3). Prints a Markdown table (best of REPEAT, wall seconds).

BASE=OTHER_BUILD_DIR measures dftrace.read and `dftrace stat` of that build too, side by side:
rounds alternate between the two builds (each read in a child process that imports that
build's package), so that a change is compared on a machine whose speed drifts. NO_DASK=1
leaves out the Dask rows. THREADS=1 measures one thread only (default "1,2"): with REPEAT=8, the
per-core figure as the best of eight alternating rounds on a shared machine."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

# One build's dftrace.read, timed in a child process that imports that build's package: the
# best of two reads (the first read of a process maps the file and warms the allocator).
_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import dftrace
ts = []
for _ in range(2):
    t0 = time.perf_counter()
    n = len(dftrace.read(sys.argv[2], threads=int(sys.argv[3]), resolve=sys.argv[4] == "1"))
    ts.append(time.perf_counter() - t0)
print(json.dumps([n, min(ts)]))
"""


def read_in_child(build_dir, threads, resolve):
    out = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(build_dir, "bindings", "python"),
                          path, str(threads), "1" if resolve else "0"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    global build, work, events, repeat, path, env, ranks
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    events = int(os.environ.get("EVENTS", "3000000"))
    repeat = int(os.environ.get("REPEAT", "3"))
    sys.path.insert(0, os.path.join(build, "bindings", "python"))
    import dftrace  # noqa: E402

    path = os.path.join(work, "read_bench.pfw.gz")
    if not os.path.exists(path):
        subprocess.run([os.path.join(build, "tests", "tools", "gen_trace"), path, "--events",
                        str(events), "--threads", "2"], check=True)


    def best(fn):
        t = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            n = fn()
            t.append(time.perf_counter() - t0)
        return n, min(t)


    rows = []
    env = dict(os.environ, DFTRACE_NO_PROGRESS="1")
    base = os.environ.get("BASE")
    builds = [("", build)] + ([(" (BASE)", os.path.abspath(base))] if base else [])
    fastest = {}
    for _ in range(repeat):  # rounds alternate between the builds
        for tag, b in builds:
            for threads in [int(t) for t in os.environ.get("THREADS", "1,2").split(",")]:
                for resolve in (True, False):
                    n, t = read_in_child(b, threads, resolve)
                    key = ("dftrace.read threads=%d resolve=%s%s" % (threads, resolve, tag), n)
                    fastest[key] = min(fastest.get(key, t), t)
                env["DFTRACE_TOOL_THREADS"] = str(threads)
                t0 = time.perf_counter()
                subprocess.run([os.path.join(b, "tools", "dftrace"), "stat", path], env=env,
                               check=True, capture_output=True)
                key = ("dftrace stat (threads %d)%s" % (threads, tag), events)
                fastest[key] = min(fastest.get(key, 9e9), time.perf_counter() - t0)
    rows += [(what, n, t) for (what, n), t in sorted(fastest.items())]


    def by_json():  # a tenth of the file, per line, into a DataFrame
        import pandas as pd
        recs = []
        with gzip.open(path, "rt") as f:
            for k, line in enumerate(f):
                if k > events // 10:
                    break
                if line[0] != "{":
                    continue
                e = json.loads(line)
                if e.get("ph") == "M":
                    continue
                recs.append((e["name"], e["cat"], e["pid"], e["tid"], e["ts"], e.get("dur", 0)))
        return len(pd.DataFrame.from_records(recs, columns=["name", "cat", "pid", "tid", "ts", "dur"]))


    n, t = best(by_json)
    rows.append(("json.loads per line + DataFrame (a tenth of the file)", n, t))
    if os.environ.get("NO_DASK"):
        report(rows)
        return

    # dftrace.dask.read_pfw on 48 rank files, LocalCluster of 1 and of 2 worker processes: a
    # per-category sum of dur (the result is checked equal to dftrace stat's).
    ranks = os.path.join(work, "ranks")
    nrank = int(os.environ.get("RANKS", "48"))
    per = int(os.environ.get("RANK_EVENTS", "100000"))
    os.makedirs(ranks, exist_ok=True)
    for i in range(nrank):
        f = os.path.join(ranks, "r%02d.pfw.gz" % i)
        if not os.path.exists(f):
            subprocess.run([os.path.join(build, "tests", "tools", "gen_trace"), f, "--events", str(per),
                            "--pid", str(7000 + i), "--seed", str(i), "--threads", "2"], check=True)
    st = json.loads(subprocess.run([os.path.join(build, "tools", "dftrace"), "stat", "--json", ranks],
                                   env=env, check=True, capture_output=True, text=True).stdout)
    want = {}
    for r in st["by_name"]:
        want[r["cat"]] = want.get(r["cat"], 0) + r["total_ns"]
    import dftrace.dask  # noqa: E402
    from distributed import Client, LocalCluster  # noqa: E402

    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cl, Client(cl):
            def job():
                ddf = dftrace.dask.read_pfw(ranks, partition_bytes="64MiB")
                g = ddf[ddf.ph == "X"].groupby("cat", observed=True).dur.sum().compute()
                assert {k: int(v) for k, v in g.items()} == want
                return nrank * per
            n, t = best(job)
            rows.append(("dftrace.dask.read_pfw, %d files, %d worker(s)" % (nrank, workers), n, t))
    report(rows)


def report(rows):
    print("# %s, %d cores, load average %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                               os.cpu_count(), open("/proc/loadavg").read().strip()))
    print("| reader | events | seconds | M events/s |")
    print("| --- | ---: | ---: | ---: |")
    for what, n, t in rows:
        print("| %s | %d | %.3f | %.2f |" % (what, n, t, n / t / 1e6))


# Dask workers are spawned processes that import this module: the run only under __main__.
if __name__ == "__main__":
    main()
