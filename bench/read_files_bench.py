#!/usr/bin/env python3
"""read_files_bench.py: dftrace.read of many DFTracer rank files against one dftrace trace, on 1
and 2 threads, events per second of wall time and per CPU second (all threads' CPU time: the
per-core rate), for one build or two side by side.

Usage: /usr/bin/python3 bench/read_files_bench.py BUILD [BASE_BUILD] [WORK_DIR]
(env: COPIES=6: the 8 cm1 ranks of tests/data/dftracer copied that many times; EVENTS=400000:
the gen_trace trace; REPEAT=5 rounds, alternating between the builds; THREADS="1,2").
Each read runs in a child process that imports one build's package (best of 2 reads there);
the table gives the best round. Rows are counted equal between the builds."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import dftrace
best = None
for _ in range(2):
    w0, c0 = time.perf_counter(), time.process_time()
    n = len(dftrace.read(sys.argv[2], threads=int(sys.argv[3]), resolve=False))
    w, c = time.perf_counter() - w0, time.process_time() - c0
    best = (n, w, c) if best is None or w < best[1] else best
print(json.dumps(best))
"""


def child(build, path, threads):
    out = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(build, "bindings", "python"),
                          path, str(threads)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    base = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else None
    work = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp()
    copies = int(os.environ.get("COPIES", "6"))
    events = int(os.environ.get("EVENTS", "400000"))
    repeat = int(os.environ.get("REPEAT", "5"))
    threads = [int(t) for t in os.environ.get("THREADS", "1,2").split(",")]
    cm1 = os.path.join(work, "cm1")
    os.makedirs(cm1, exist_ok=True)
    src = os.path.join(here, "..", "tests", "data", "dftracer")
    for k in range(copies):
        for f in sorted(os.listdir(src)):
            if f.startswith("cm1-") and f.endswith(".pfw.gz"):
                dst = os.path.join(cm1, f.replace(".pfw.gz", "-%d.pfw.gz" % k))
                if not os.path.exists(dst):
                    shutil.copy(os.path.join(src, f), dst)
    gen = os.path.join(work, "gen.pfw.gz")
    if not os.path.exists(gen):
        subprocess.run([os.path.join(build, "tests", "tools", "gen_trace"), gen, "--events",
                        str(events), "--threads", "2"], check=True)
    builds = [("", build)] + ([(" (base)", base)] if base else [])
    best, rows = {}, {}
    for _ in range(repeat):
        for what, path in (("cm1 x %d files" % (8 * copies), cm1), ("gen_trace, 1 file", gen)):
            for t in threads:
                for tag, b in builds:
                    n, w, c = child(b, path, t)
                    key = (what, t, tag)
                    rows.setdefault((what, t), set()).add(n)
                    old = best.get(key)
                    best[key] = (n, min(w, old[1]) if old else w, min(c, old[2]) if old else c)
    for k, v in rows.items():
        assert len(v) == 1, ("the builds read different row counts", k, v)
    print("# %s, %d cores, load average %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                               os.cpu_count(), open("/proc/loadavg").read().strip()))
    print("| trace | threads | build | events | wall s | M events/s | CPU s | M events per CPU s |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for (what, t, tag), (n, w, c) in sorted(best.items()):
        print("| %s | %d | %s | %d | %.3f | %.2f | %.3f | %.2f |" %
              (what, t, tag.strip(" ()") or "this", n, w, n / w / 1e6, c, n / c / 1e6))


if __name__ == "__main__":
    main()
