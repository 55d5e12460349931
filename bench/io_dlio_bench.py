"""io_dlio_bench.py: a DLIO-like loop (PyTorch DataLoader, 2 workers, numpy.load of many small
files) untraced and under `dftrace run` (libdftrace_io preloaded: every POSIX and STDIO call on
the dataset traced), side by side, alternated round by round. Prints each round's seconds and
the median ratio traced/untraced, of the loop's wall time and of its CPU time (the main
process's and its reaped workers': what tracing costs in work, which a machine whose cores the
loop keeps busy pays in time). On a VM whose speed drifts both vary by +-25% from round to
round; --instructions gives a figure that does not.

    /usr/bin/python3 bench/io_dlio_bench.py BUILD [--files 4000] [--rounds 7] [--epochs 2]
        [--workers 2] [--base OTHER_BUILD] [--no-files] [--uncompressed] [--instructions [--keep DIR]]

--perf samples every process of each run on the kernel's cpu-clock (perf, no hardware counter
needed) and divides each run's samples by those of the interpreter's own code (python3.11:
the same work in every arm, so a speed meter for the moment the run took): the ratio of
those, traced against untraced, is the added CPU time with the VM's drift taken out. (The
writer threads' cache traffic slows the interpreter too; that part is divided away, so this
figure errs low by it.) Printed with the added samples by part: dftrace, kernel, C library,
the rest.

--base adds the same loop traced by another build (a change before and after, side by side);
--no-files adds a run preloaded with no file in the traced directories (the cost of tracing a
process before any I/O event: its start, its writer, its finish). --instructions counts each
arm's instructions once under valgrind's callgrind instead (load-independent; slow).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import ctypes, os, resource, sys, time, numpy as np, torch
from torch.utils.data import DataLoader, Dataset

# --instructions: callgrind's counters zeroed where the loop starts, in this process and in
# each worker (a small library's client request), so that the totals are the loop's.
zero = ctypes.CDLL(os.environ["DLIO_ZERO"]).dlio_zero if os.environ.get("DLIO_ZERO") else None

def cpu_seconds():
    """This process's CPU time and that of its children already reaped (the DataLoader's
    workers, joined at the end of each epoch)."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

class Files(Dataset):
    def __init__(self, paths): self.paths = paths
    def __len__(self): return len(self.paths)
    def __getitem__(self, i): return torch.from_numpy(np.load(self.paths[i]))

def main():
    d, epochs = sys.argv[1], int(sys.argv[2])
    paths = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".npy"))
    loader = DataLoader(Files(paths), batch_size=32, num_workers=int(sys.argv[3]), shuffle=True,
                        worker_init_fn=(lambda _: zero()) if zero else None)
    if zero:
        zero()
    c0, t0 = cpu_seconds(), time.perf_counter()
    total = 0.0
    for _ in range(epochs):
        for batch in loader:
            total += float(batch.sum())
    print("%.6f %.6f" % (time.perf_counter() - t0, cpu_seconds() - c0))

if __name__ == "__main__":
    main()
'''


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--files", type=int, default=4000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2,
                   help="DataLoader workers (2: the loop that keeps both of this "
                        "machine's cores busy; 1 leaves a core to the writer threads, as a "
                        "machine with more cores than workers does)")
    p.add_argument("--base", help="another build, traced side by side (before/after a change)")
    switches = {
        "--instructions": "count the loop's instructions (valgrind's callgrind, every process) "
                          "untraced and traced, once each, instead of timing rounds",
        "--perf": "sample each run with perf (cpu-clock) and report its CPU time in units of the "
                  "interpreter's own samples (the VM's drift divided out)",
        "--no-files": "also run preloaded with no file in the traced directories (what tracing "
                      "costs a process before any I/O event: start, writer, finish)",
        "--uncompressed": "also run traced with output.compression none (what compressing costs)",
    }
    for flag, text in switches.items():
        p.add_argument(flag, action="store_true", help=text)
    p.add_argument("--keep", metavar="DIR",
                   help="with --instructions: keep callgrind's output files in DIR, one folder "
                        "per arm (callgrind_annotate them to see where the instructions go)")
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="dlio-bench-")
    try:
        import numpy as np
        data = os.path.join(tmp, "data")
        os.mkdir(data)
        os.mkdir(os.path.join(tmp, "empty"))
        rng = np.random.default_rng(1)
        for i in range(a.files):  # 16 KiB each, as DLIO's small-sample workloads
            np.save(os.path.join(data, "s%05d.npy" % i), rng.random((64, 64), dtype=np.float32))
        child = os.path.join(tmp, "child.py")
        with open(child, "w") as f:
            f.write(CHILD)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
        env.pop("LD_PRELOAD", None)
        py = sys.executable  # the interpreter running this script (its numpy and torch)
        plain_cmd = [py, child, data, str(a.epochs), str(a.workers)]
        traces = os.path.join(tmp, "traces")

        def run_cmd(build, *opts, settings=()):
            cli = os.path.join(os.path.abspath(build), "tools", "dftrace")
            return ["env", *settings, cli, "run", "--prefix", os.path.join(traces, "t"), *opts,
                    "--", *plain_cmd]

        arms = [("untraced", plain_cmd), ("traced", run_cmd(a.build))]
        if a.no_files:
            arms.append(("no file traced", run_cmd(a.build, "--data-dirs", os.path.join(tmp, "empty"))))
        if a.uncompressed:
            arms.append(("uncompressed", run_cmd(a.build, settings=["DFTRACE_OUTPUT_COMPRESSION=none"])))
        if a.base:
            arms.append(("traced, base", run_cmd(a.base)))
        os.mkdir(traces)
        if a.instructions:
            return count_instructions(a, arms, env, tmp, traces)
        subprocess.run(plain_cmd, env=env, check=True, capture_output=True)  # warm the cache
        wall = {name: [] for name, _ in arms}
        cpu = {name: [] for name, _ in arms}
        parts = {name: [] for name, _ in arms}  # --perf: samples by part, per run
        io = 0
        for r in range(a.rounds):
            line = []
            for name, cmd in arms:
                shutil.rmtree(traces)
                os.mkdir(traces)
                if a.perf:
                    cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-o",
                           os.path.join(tmp, "perf.data"), "--", *cmd]
                res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                if a.perf:
                    parts[name].append(perf_parts(os.path.join(tmp, "perf.data")))
                w, c = map(float, res.stdout.strip().splitlines()[-1].split())
                wall[name].append(w)
                cpu[name].append(c)
                line.append("%s %.3f s (cpu %.3f s)" % (name, w, c))
                if name == "traced":
                    io = io_events(os.path.join(os.path.abspath(a.build), "tools", "dftrace"),
                                   traces)
            with open("/proc/loadavg") as f:
                load = f.read().split()[0]
            print("round %d: %s (load %s)" % (r + 1, ", ".join(line), load), flush=True)
        print("files %d x %d epochs, %d workers; I/O events in the last traced run: %d"
              % (a.files, a.epochs, a.workers, io))
        for what, times in (("wall", wall), ("cpu", cpu)):
            plain = times["untraced"]
            print("%s: median untraced %.3f s" % (what, statistics.median(plain)))
            for name, _ in arms[1:]:
                ratios = sorted(t / u for t, u in zip(times[name], plain))
                print("%s: %-16s median %.3f s; ratio to untraced: median %.3f (min %.3f, max %.3f)"
                      % (what, name, statistics.median(times[name]), statistics.median(ratios),
                         ratios[0], ratios[-1]))
        if a.perf:
            report_perf(parts, [name for name, _ in arms])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PERF_PARTS = [("dftrace", ("libdftrace", "libisal", "libdeflate")), ("kernel", ("[kernel",)),
              ("C library", ("libc.so", "libstdc++", "ld-linux")), ("interpreter", ("python3.11",))]


def perf_parts(data):
    """A perf.data file's samples by part (PERF_PARTS, else "rest")."""
    out = subprocess.run(["perf", "report", "-i", data, "--sort", "dso", "--stdio", "-F",
                          "sample,dso"], capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        f = line.split(None, 1)
        if len(f) != 2 or not f[0].isdigit():
            continue
        part = next((p for p, keys in PERF_PARTS if any(k in f[1] for k in keys)), "rest")
        got[part] = got.get(part, 0) + int(f[0])
    return got


def report_perf(parts, names):
    """Each arm's samples in units of its interpreter's own, against the untraced arm's, round
    by round; and what the traced arm added, by part, in percent of the untraced CPU time."""
    def per_py(d):
        return {k: v / d["interpreter"] for k, v in d.items()}
    plain = [per_py(d) for d in parts["untraced"]]
    for name in names[1:]:
        mine = [per_py(d) for d in parts[name]]
        ratios = sorted(sum(m.values()) / sum(u.values()) for m, u in zip(mine, plain))
        print("perf: %-16s CPU time in units of the interpreter's own samples, times the "
              "untraced run's: median %.3f (min %.3f, max %.3f)"
              % (name, statistics.median(ratios), ratios[0], ratios[-1]))
        keys = sorted({k for d in mine + plain for k in d} - {"interpreter"})
        added = ", ".join("%s %+.1f%%" % (k, 100 * statistics.median(
            (m.get(k, 0) - u.get(k, 0)) / sum(u.values()) for m, u in zip(mine, plain)))
            for k in keys)
        print("perf: %-16s added, median by part: %s" % (name, added))


ZERO_C = r'''
#include <valgrind/callgrind.h>
void dlio_zero(void) { CALLGRIND_ZERO_STATS; }
'''


def count_instructions(a, arms, env, tmp, traces):
    """Each arm once under callgrind, following every process (the DataLoader's workers are
    forked), counters zeroed where the loop starts; prints the loop's instructions, summed over
    the processes, and the ratio to the untraced loop's. Independent of the machine's load."""
    src = os.path.join(tmp, "zero.c")
    lib = os.path.join(tmp, "zero.so")
    with open(src, "w") as f:
        f.write(ZERO_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", lib, src], check=True)
    totals = {}
    for name, cmd in arms:
        shutil.rmtree(traces)
        os.mkdir(traces)
        out = os.path.join(tmp, "cg-" + name.replace(" ", "_").replace(",", ""))
        os.mkdir(out)
        # `dftrace run` sets the environment and executes the command; valgrind follows it.
        subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                        "--callgrind-out-file=" + os.path.join(out, "cg.%p"), *cmd],
                       env={**env, "DLIO_ZERO": lib}, check=True, capture_output=True)
        total = 0
        for f in os.listdir(out):
            with open(os.path.join(out, f)) as fh:
                for line in fh:
                    if line.startswith(("summary:", "totals:")):
                        total += int(line.split()[1])
                        break
        totals[name] = total
        print("%-16s %15d instructions" % (name, total), flush=True)
        if a.keep:
            shutil.copytree(out, os.path.join(a.keep, os.path.basename(out)), dirs_exist_ok=True)
    for name, _ in arms[1:]:
        print("%-16s %.3f times the untraced loop's instructions"
              % (name, totals[name] / totals["untraced"]))


def io_events(cli, traces):
    """POSIX and STDIO events in the traces of one run (dftrace stat --json)."""
    import json
    files = sorted(os.path.join(traces, f) for f in os.listdir(traces))
    st = json.loads(subprocess.run([cli, "stat", "--json", *files], capture_output=True,
                                   text=True).stdout)
    return sum(r["count"] for r in st["by_name"] if r["cat"] in ("POSIX", "STDIO"))


if __name__ == "__main__":
    sys.exit(main())
