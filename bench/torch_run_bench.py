"""torch_run_bench.py: what `dftrace run --torch` costs a short-step PyTorch loop per step (CPU),
against the same script untraced, in three ways a busy machine allows:

  time        the arms alternated, --rounds times, each a process running bench/torch_run_loop.py;
              the loop thread's CPU time per step (median over rounds), and the ratio;
  callgrind   valgrind's instruction count of the whole process (every thread: the writer's
              formatting and compression too) and of the loop's thread, from the loop's start
              (instrumentation switched on there) at two loop lengths: the difference divided by
              the difference of steps is the instructions per step, the end cancelled (one round;
              workers 0, the samples fetched in the loop thread);
  calls       the Python calls per step, under cProfile (those of dftrace's own files apart).

Arms: `untraced` (python3 bench/torch_run_loop.py), `run` (dftrace run --torch --out DIR --
python3 ...), `no-io` (the same without the I/O interposer), `alt` (`run` with the Python package
of --alt DIR: another commit's package beside this build's extensions, DFTRACE_PYTHON_DIR).

Usage: python3 bench/torch_run_bench.py BUILD [--mode time|callgrind|calls] [--rounds 5]
       [--steps 300] [--epochs 2] [--workers 0] [--width 128] [--arms untraced,run,no-io]
       [--alt PYTHON_DIR]
Run with /usr/bin/python3 (the loop needs torch); BUILD is a build directory with tools/dftrace.
"""
import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = os.path.join(HERE, "torch_run_loop.py")
ARMS = {"untraced": [], "run": ["--torch"], "no-io": ["--torch", "--no-io"], "alt": ["--torch"]}


def command(a, arm, out, steps, extra_env=None):
    cmd = [sys.executable, LOOP, str(steps), str(a.epochs), str(a.workers), str(a.width)]
    if arm != "untraced":
        cmd = [os.path.join(a.build, "tools", "dftrace"), "run", *ARMS[arm], "--out", out,
               "--", *cmd]
    env = dict(os.environ)
    env.update(extra_env or {})
    if arm == "alt":  # another dftrace Python package (the code before or after a change)
        env["DFTRACE_PYTHON_DIR"] = a.alt
    return cmd, env


def figures(text):
    line = [l for l in text.splitlines() if l.startswith("steps ")][-1].split()
    return {k: float(v) for k, v in zip(line[::2], line[1::2])}


def run(cmd, env, prefix=()):
    p = subprocess.run([*prefix, *cmd], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
    return p.stdout


def mode_time(a, arms, tmp):
    rows = {arm: [] for arm in arms}
    for r in range(a.rounds):
        for arm in arms:
            out = os.path.join(tmp, "%s-%d" % (arm, r))
            cmd, env = command(a, arm, out, a.steps)
            rows[arm].append(figures(run(cmd, env)))
            shutil.rmtree(out, ignore_errors=True)
    base = statistics.median(f["step_cpu_us"] for f in rows[arms[0]])
    print("%d rounds, arms alternated; %d steps x %d epochs, %d workers, width %d" %
          (a.rounds, a.steps, a.epochs, a.workers, a.width))
    for arm in arms:
        f = rows[arm]
        cpu = statistics.median(x["step_cpu_us"] for x in f)
        print("  %-9s step cpu %7.1f us (median; %s)  wall %7.1f us  start %6.1f ms  end %6.1f "
              "ms  loop %.3f s  cpu ratio %.3f" % (
                  arm, cpu, " ".join("%.0f" % x["step_cpu_us"] for x in f),
                  statistics.median(x["step_wall_us"] for x in f),
                  statistics.median(x["epoch_start_ms"] for x in f),
                  statistics.median(x["epoch_end_ms"] for x in f),
                  statistics.median(x["loop_s"] for x in f), cpu / base))


def instructions(path):
    """(command line, total instructions) of one callgrind output file."""
    cmd, total = "", 0
    with open(path) as f:
        for line in f:
            if line.startswith("cmd:"):
                cmd = line[4:].strip()
            elif line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
    return cmd, total


def callgrind_count(a, arm, steps, tmp):
    """(all threads, loop thread) instructions of the loop's process."""
    d = tempfile.mkdtemp(dir=tmp)
    cmd, env = command(a, arm, os.path.join(d, "traces"), steps, {"BENCH_CALLGRIND": "1"})
    run(cmd, env, ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--trace-children=yes",
                   "--trace-children-skip=*callgrind_control*,*perl*,*vgdb*",
                   "--separate-threads=yes", "--callgrind-out-file=%s/cg.%%p" % d])
    per_pid = {}
    for path in glob.glob(os.path.join(d, "cg.*")):
        m = re.match(r"cg\.(\d+)(?:-(\d+))?$", os.path.basename(path))
        if not m:
            continue
        c, n = instructions(path)
        if LOOP not in c or not c.startswith(sys.executable):  # not dftrace run's own process
            continue
        pid = per_pid.setdefault(m.group(1), [0, 0])
        pid[0] += n
        if m.group(2) in (None, "01"):
            pid[1] += n
    shutil.rmtree(d, ignore_errors=True)
    if len(per_pid) != 1:
        sys.exit("callgrind: expected one process running the loop, found %d" % len(per_pid))
    return list(per_pid.values())[0]


def mode_callgrind(a, arms, tmp):
    a.workers = 0
    n1, n2 = a.steps, 2 * a.steps
    print("callgrind: instructions per step, (count at %d steps - count at %d) / %d, 1 epoch, "
          "0 workers, width %d" % (n2, n1, n2 - n1, a.width))
    a.epochs = 1
    base = None
    for arm in arms:
        lo, hi = callgrind_count(a, arm, n1, tmp), callgrind_count(a, arm, n2, tmp)
        per = [(h - l) / (n2 - n1) for h, l in zip(hi, lo)]
        base = base or per
        print("  %-9s all threads %10.0f (x%.3f)  loop thread %10.0f (x%.3f)" % (
            arm, per[0], per[0] / base[0], per[1], per[1] / base[1]))


def mode_calls(a, arms, tmp):
    print("cProfile: Python calls per step (%d steps, %d workers)" % (a.steps, a.workers))
    for arm in arms:
        cmd, env = command(a, arm, os.path.join(tmp, arm), a.steps, {"BENCH_PROFILE": "1"})
        print("  %s: %s" % (arm, run(cmd, env).strip().replace("\n", "\n    ")))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--mode", choices=("time", "callgrind", "calls"), default="time")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--arms", default="untraced,run,no-io")
    p.add_argument("--alt", help="the Python package directory of the `alt` arm")
    a = p.parse_args()
    arms = a.arms.split(",")
    print(open("/proc/loadavg").read().strip(), "(load average at start)")
    tmp = tempfile.mkdtemp(prefix="torch_run_bench.")
    try:
        {"time": mode_time, "callgrind": mode_callgrind, "calls": mode_calls}[a.mode](a, arms, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(open("/proc/loadavg").read().strip(), "(load average at end)")


if __name__ == "__main__":
    main()
