#!/usr/bin/python3
"""analyze_dask_client.py: where the client's CPU goes in dftrace.analyze(paths, client=...),
phase by phase, on the synthetic run of analyze_dask_bench.py (RANKS files of EVENTS events,
made by tests/tools/gen_trace; the files are reused when WORK_DIR has them). The client's CPU
is the serial part of a Dask run: with it C and the workers' part W, 2 workers give at most
(C + W) / (C + W / 2). Each phase is timed by time.process_time() of this process (every
thread of it, the LocalCluster's scheduler included), so the figures hold on a loaded machine
where wall times do not.

Phases: `place` (dftrace._analyze's batches for the workers), `compute` (the tasks submitted
and their results gathered: the scheduler and the transfer; the workers' own CPU is not
counted), `merge_doc` (the partials decoded and merged, the document written as text without
its step items, which stay in the extension's store), `json` (the text parsed), and `total`
(one whole dftrace.analyze call, timed apart). Then what a caller pays to read the steps of
that result: `frame` (steps_frame(), from the steps' columns) and `items`
(r["steps"]["items"], the list of dicts made on first read); neither is in `total`.

Usage: /usr/bin/python3 bench/analyze_dask_client.py [BUILD_DIR] [WORK_DIR]
           (env: RANKS=48 EVENTS=200000 REPEAT=3 WORKERS=2)
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze_dask_bench import generate  # noqa: E402


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="dftrace-dask-bench-")
    ranks = int(os.environ.get("RANKS", "48"))
    events = int(os.environ.get("EVENTS", "200000"))
    repeat = int(os.environ.get("REPEAT", "3"))
    nworkers = int(os.environ.get("WORKERS", "2"))
    pkg = os.path.abspath(os.path.join(build, "bindings", "python"))
    sys.path.insert(0, pkg)
    os.environ["PYTHONPATH"] = pkg + os.pathsep + os.environ.get("PYTHONPATH", "")  # workers
    import dftrace
    from dftrace import _analysis, _analyze
    from distributed import Client, LocalCluster

    files = generate(os.path.join(build, "tests", "tools", "gen_trace"), work, ranks, events)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("# %s UTC, load average %s; %d files, %d worker(s); client CPU s per phase" %
          (time.strftime("%F %H:%M", time.gmtime()), load, len(files), nworkers))
    cluster = LocalCluster(n_workers=nworkers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    rows = []
    try:
        client.run(lambda: __import__("dftrace._analysis"))
        for _ in range(repeat):
            row = {}
            t = time.process_time()
            batches = _analyze._place(client, files)
            row["place"] = time.process_time() - t
            t = time.process_time()
            parts = list(_analyze._compute(client, batches, None, None, 1))  # fetched here
            row["compute"] = time.process_time() - t
            t = time.process_time()
            doc = _analyze._join(client, files, parts, None, None, None, 1,
                                 _analysis.merge_doc)
            row["merge_doc"] = time.process_time() - t
            t = time.process_time()
            _analyze._result(doc, True)
            row["json"] = time.process_time() - t
            del parts, doc
            t = time.process_time()
            r = dftrace.analyze(files, client=client, threads=1, allow_damaged=True)
            row["total"] = time.process_time() - t
            t = time.process_time()
            r.steps_frame()
            row["frame"] = time.process_time() - t
            t = time.process_time()
            r["steps"]["items"]
            row["items"] = time.process_time() - t
            del r
            rows.append(row)
            print("  ".join("%s %.2f" % kv for kv in row.items()), flush=True)
    finally:
        client.close()
        cluster.close()
    print()
    print("| phase | client CPU s (rounds) |")
    print("| --- | ---: |")
    for name in rows[0]:
        print("| %s | %s |" % (name, ", ".join("%.2f" % r[name] for r in rows)))


if __name__ == "__main__":
    main()
