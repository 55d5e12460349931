#!/usr/bin/env python3
"""read_files_bench.py: dftrace.read of many DFTracer rank files against one dftrace trace, on 1
and 2 threads, events per second of wall time and per CPU second (all threads' CPU time: the
per-core rate), for one build or two side by side.

Usage: /usr/bin/python3 bench/read_files_bench.py BUILD [BASE_BUILD] [WORK_DIR]
(env: COPIES=6: the 8 cm1 ranks of tests/data/dftracer copied that many times; V2_FILES=8 and
V2_COPIES=12: DFTracer 2.0.2-shaped rank files, each the lines of every trace in
tests/data/dftracer-2.0.2 repeated V2_COPIES times with ids renumbered and times shifted, one gzip
member per file as DFTracer 2.0.2 writes (V2_FILES=0 leaves them out); EVENTS=400000: the
gen_trace trace; REPEAT=5 rounds, alternating between the builds; THREADS="1,2").
Each read runs in a child process that imports one build's package (best of 2 reads there);
the table gives the best round. Rows are counted equal between the builds."""
import gzip
import json
import os
import re
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


_ID = re.compile(r'^\{"id":(\d+),')
_TS = re.compile(r',"ts":(\d+),')


def dftracer_202_lines(src):
    """The object lines of every DFTracer 2.0.2 trace in src, in file order."""
    lines = []
    for f in sorted(os.listdir(src)):
        if f.endswith(".pfw") or f.endswith(".pfw.gz"):
            with (gzip.open if f.endswith(".gz") else open)(os.path.join(src, f), "rt") as fh:
                lines += [l.rstrip("\n") for l in fh if l.startswith("{")]
    return lines


def write_202_rank(path, lines, copies):
    """One rank file shaped as DFTracer 2.0.2 writes: "[", the lines repeated copies times (ids
    renumbered, times shifted by a second a copy), one gzip member."""
    out, next_id = ["["], 1
    for k in range(copies):
        for l in lines:
            if _ID.match(l):
                l = _ID.sub('{"id":%d,' % next_id, l, count=1)
                next_id += 1
            l = _TS.sub(lambda m: ',"ts":%d,' % (int(m.group(1)) + k * 1000000), l, count=1)
            out.append(l)
    out.append("]")
    with gzip.open(path, "wt", compresslevel=6) as fh:
        fh.write("\n".join(out) + "\n")


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
    sets = [("cm1 x %d files" % (8 * copies), cm1)]
    v2_files, v2_copies = int(os.environ.get("V2_FILES", "8")), int(os.environ.get("V2_COPIES", "12"))
    if v2_files:
        v2 = os.path.join(work, "dftracer-2.0.2")
        os.makedirs(v2, exist_ok=True)
        lines = dftracer_202_lines(os.path.join(here, "..", "tests", "data", "dftracer-2.0.2"))
        for r in range(v2_files):
            f = os.path.join(v2, "rank-%02d.pfw.gz" % r)
            if not os.path.exists(f):
                write_202_rank(f, lines, v2_copies)
        sets.append(("DFTracer 2.0.2 x %d files" % v2_files, v2))
    gen = os.path.join(work, "gen.pfw.gz")
    if not os.path.exists(gen):
        subprocess.run([os.path.join(build, "tests", "tools", "gen_trace"), gen, "--events",
                        str(events), "--threads", "2"], check=True)
    builds = [("", build)] + ([(" (base)", base)] if base else [])
    best, rows = {}, {}
    for _ in range(repeat):
        for what, path in sets + [("gen_trace, 1 file", gen)]:
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
