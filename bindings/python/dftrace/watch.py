"""dftrace.watch: run a Python training script traced, with a live dashboard in the terminal.

    dftrace watch [--interval S] [--prefix P | --out DIR] [--deep] train.py ARGS...
    dftrace watch [--interval S] [--prefix P | --out DIR] [--deep] -- python3 train.py ARGS...
    python3 -m dftrace.watch [options] -- python3 train.py ARGS...

The script runs as `dftrace run --torch` runs it (tracing on, PyTorch's steps, forward,
backward, optimizer and data loader recorded without annotations), with the trace flushed every
half second. This process reads the trace as it grows (whole gzip members only, found through
their DT fields, never a member being written) and redraws, at least once a second, a
dashboard that fits 80x24: steps and steps/s, recent step time, time per category, the data
loader's share, memory. A first argument ending in .py runs with this interpreter; `--deep`
adds every model's layers and their memory (DFTRACE_TORCH_DEEP). It costs the training process nothing beyond tracing: the reading and
drawing happen here. When the script ends, a last frame and a summary stay on screen; the exit
status is the script's (a signal that killed it: 128 + the signal), and Ctrl-C or SIGTERM are
passed on to the script.
"""
import argparse
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

from ._held import HELD as _HELD  # a total of durations is held there, as analyze holds it

_CLEAR = "\x1b[H\x1b[2J"


class Follower:
    """Reads the complete members a trace file gains, and keeps the running figures."""

    def __init__(self, path):
        self.path = path
        self.next_part = 0
        self.step_durs = []      # ns, in order
        self.step_ends = []      # ns since the epoch
        self.opt_ends = []       # ends of the optimizer's steps (unannotated loops)
        self.by_cat = {}         # ns
        self.fetch_ns = 0
        self.memory = None
        self.first_ts = None
        self.last_ts = None
        self.events = 0
        self.problems = []       # the reader's, each once (damaged members, held times)

    def poll(self):
        from . import _reader
        try:
            plan = _reader.plan(self.path)
        except OSError:
            return
        parts = plan["parts"]
        # Whole members only: the last part may be a member still being written (a stream).
        last = len(parts) - 1
        while last >= self.next_part and parts[last][0] != "member":
            last -= 1
        if last < self.next_part:
            return
        raw = _reader.read_columns([self.path], None, None, None, None, ["memory", "dft_cnt"],
                                   1, [(self.next_part, last)])
        self.next_part = last + 1
        self._fold(raw)

    def _fold(self, raw):
        import numpy as np
        from . import _read
        from ._held import exact_sum
        for p in raw["problems"]:
            if p not in self.problems:
                self.problems.append(p)
        rows = raw["rows"]
        if not rows:
            return
        ints = _read.int_columns(raw)
        ts, dur = ints[2], ints[3]
        # an end held at 2^63-1 (the columns' limit) where ts + dur would wrap the int64
        end = ts + np.minimum(dur, np.iinfo(np.int64).max - ts)
        names = np.asarray(raw["names"], dtype=object)[np.frombuffer(raw["name"], dtype=np.int32)]
        cats = np.asarray(raw["cats"], dtype=object)[np.frombuffer(raw["cat"], dtype=np.int32)]
        phs = np.asarray(raw["phs"], dtype=object)[np.frombuffer(raw["ph"], dtype=np.int32)]
        x = phs == "X"
        user = x & (cats != "dftracer")
        agg = (phs == "A") & (cats != "dftracer")  # dft_cnt calls of dur ns in all
        self.events += int(user.sum()) + self._calls(raw["args"][1], agg)
        if user.any():
            lo, hi = int(ts[user].min()), int(end[user].max())
            self.first_ts = lo if self.first_ts is None else min(self.first_ts, lo)
            self.last_ts = hi if self.last_ts is None else max(self.last_ts, hi)
        steps = x & (names == "step") & (cats == "compute")
        order = np.argsort(ts[steps], kind="stable")
        self.step_durs += dur[steps][order].tolist()
        self.step_ends += end[steps][order].tolist()
        opt = x & (names == "step.optimizer")
        self.opt_ends += np.sort(end[opt]).tolist()
        top = (user & ~steps) | agg  # exact sums (numpy's int64 sums wrap past 2^63-1)
        for c in set(cats[top].tolist()):
            self.by_cat[c] = self.by_cat.get(c, 0) + exact_sum(dur[top & (cats == c)])
        self.fetch_ns += exact_sum(dur[(x | agg) & (names == "fetch") & (cats == "dataloader")])
        vals = _read.arg_floats(raw["args"][0])
        have = ~np.isnan(vals)
        if have.any():
            self.memory = float(vals[have][np.argmax(ts[have])])

    @staticmethod
    def _calls(c, rows):
        """The calls the aggregated records of rows stand for (their dft_cnt), exactly."""
        import numpy as np
        kind = np.frombuffer(c["kind"], dtype=np.uint8)[rows]
        v = np.frombuffer(c["v"], dtype=np.int64)[rows]
        n = sum(int(a) for a in v[(kind == 1) & (v > 0)].tolist())
        big = v[kind == 2].view(np.float64)  # a count past 2^63-1 is read as a double
        return n + sum(int(b) for b in big[big >= 0].tolist())

    def _held(self):
        """The categories whose time reached 2^64-1 ns, the data loader's wait among them."""
        out = [c for c, v in self.by_cat.items() if v >= _HELD]
        return out + (["data loader wait"] if self.fetch_ns >= _HELD else [])

    def _steps(self):
        """(durations, ends) of the steps: the compute.step events, or, in a loop nobody
        annotated, the time from one optimizer step to the next."""
        if self.step_durs:
            return self.step_durs, self.step_ends
        e = self.opt_ends
        return [b - a for a, b in zip(e, e[1:])], e[1:]

    def frame(self, title, elapsed, done=False, status=None):
        lines = ["dftrace watch: " + title[:64], ""]
        step_durs, step_ends = self._steps()
        n = len(step_durs)
        rate = 0.0
        if len(step_ends) >= 2:
            recent = step_ends[-50:]
            span = (recent[-1] - recent[0]) / 1e9
            rate = (len(recent) - 1) / span if span > 0 else 0.0
        lines.append("steps %-8d  steps/s %-8.2f  events %-10d  elapsed %6.1f s"
                     % (n, rate, self.events, elapsed))
        if n:
            recent = sorted(step_durs[-50:])
            lines.append("step time (last %d): p50 %.2f ms  p99 %.2f ms  last %.2f ms"
                         % (len(recent), recent[len(recent) // 2] / 1e6,
                            recent[min(len(recent) - 1, int(0.99 * len(recent)))] / 1e6,
                            step_durs[-1] / 1e6))
        else:
            lines.append("step time: no step yet")
        held = self._held()
        if held:  # as `dftrace analyze` holds a total past 2^64-1 ns
            lines.append("HELD at 2^64-1 ns, not exact: time of " + ", ".join(sorted(held)))
        if self.problems:
            more = " (+%d more)" % (len(self.problems) - 1) if len(self.problems) > 1 else ""
            import textwrap  # two lines at most: the frame is 80 wide
            lines += textwrap.wrap("DAMAGED: " + self.problems[0].split(": ", 1)[-1] + more,
                                   80, subsequent_indent="  ")[:2]
        busy = sum(step_durs)
        if busy:
            # `step` events leave the wait for the batch out (it lies between steps); steps
            # measured from one optimizer step to the next hold it
            loop = busy + self.fetch_ns if self.step_durs else busy
            lines.append("data loader wait: %.1f%% of the loop (waiting + steps)"
                         % (100.0 * min(self.fetch_ns, _HELD) / min(loop, _HELD)))
        if self.memory is not None:
            lines.append("memory: %.1f MiB" % (self.memory / 2**20))
        lines += ["", "time per category (inside and outside steps):"]
        cat_ns = {c: min(v, _HELD) for c, v in self.by_cat.items()}
        total = sum(cat_ns.values()) or 1
        for c, v in sorted(cat_ns.items(), key=lambda kv: -kv[1])[:8]:
            bar = "#" * int(30 * v / total)
            lines.append("  %-12s %9.1f ms %5.1f%% %s" % (c[:12], v / 1e6, 100.0 * v / total, bar))
        lines.append("")
        if done:
            lines.append("finished: %s" % status)
            lines.append("trace: " + os.path.basename(self.path)[:70])
        else:
            lines.append("trace: " + os.path.basename(self.path)[:70])
        return [l[:80] for l in lines[:23]]


def _summary(prefix, pid):
    """The last frame of a finished run, on stderr (dftrace run --summary)."""
    path = _find_trace(prefix, pid) if pid is not None else None
    if not path:
        print("dftrace run: no trace of process %s under %s" % (pid, prefix), file=sys.stderr)
        return 0
    try:
        import numpy  # noqa: F401  (the summary's columns; not a dependency of tracing)
    except ImportError:
        print("dftrace run: no summary: it needs numpy; trace: " + path, file=sys.stderr)
        return 0
    f = Follower(path)
    f.poll()
    lines = f.frame(os.path.basename(path), (f.last_ts - f.first_ts) / 1e9 if f.first_ts else 0,
                    done=True, status="summary")
    lines[0] = "dftrace run: summary"
    lines[-1] = "trace: " + path
    print("\n".join(l for l in lines if not l.startswith("finished:")), file=sys.stderr)
    return 0


def _foreground():
    """Whether this process's group is its terminal's foreground group."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except OSError:
        return False


def _find_trace(prefix, pid):
    found = glob.glob("%s-*-%d-app.pfw*" % (prefix, pid))
    return found[0] if found else None


def _parse(argv):
    """(options, command) of `dftrace watch`'s arguments."""
    p = argparse.ArgumentParser(prog="dftrace watch",
                                description="run a Python script traced, with a live dashboard")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between frames (<= 1)")
    p.add_argument("--prefix", help="trace file prefix (default: a temporary folder)")
    p.add_argument("--out", help="directory for the traces (DIR/trace-<exec>-<pid>-app.pfw.gz)")
    p.add_argument("--deep", action="store_true", help="also every model's layers and memory")
    p.add_argument("--summary", action="store_true",
                   help="print the summary of a finished run's trace (--prefix, --pid) and exit")
    p.add_argument("--pid", type=int, help="with --summary: the process whose trace it is")
    script = next((k for k, x in enumerate(argv) if x.endswith(".py") and not x.startswith("-")
                   and (k == 0 or argv[k - 1] not in ("--prefix", "--out", "--interval"))), None)
    if "--" in argv and (script is None or argv.index("--") < script):
        k = argv.index("--")
        return p.parse_args(argv[:k]), argv[k + 1:]
    if script is not None:  # watch [options] train.py ARGS: the script's options are its own
        return p.parse_args(argv[:script]), [sys.executable] + argv[script:]
    return p.parse_known_args(argv)


def _dashboard(child, prefix, title, interval):
    """Frames until the child ends, then the last one; returns the child's status."""
    t0 = time.time()
    follower = None
    tty = sys.stdout.isatty()
    while True:
        rc = child.poll()
        if follower is None:
            path = _find_trace(prefix, child.pid)
            if path:
                follower = Follower(path)
        if follower is not None:
            follower.poll()
        if rc is not None:
            break
        frame = follower.frame(title, time.time() - t0) if follower else \
            ["dftrace watch: " + title[:64], "", "waiting for the first events ..."]
        sys.stdout.write((_CLEAR if tty else "") + "\n".join(frame) + "\n")
        sys.stdout.flush()
        time.sleep(interval)
    status = "exit status %d" % rc if rc >= 0 else "killed by signal %d" % -rc
    if follower is None:
        path = _find_trace(prefix, child.pid)
        follower = Follower(path) if path else None
    if follower is not None:
        time.sleep(0.1)
        follower.poll()
        frame = follower.frame(title, time.time() - t0, done=True, status=status)
    else:
        frame = ["dftrace watch: " + title[:64], "", "no trace was written", "finished: " + status]
    sys.stdout.write((_CLEAR if tty else "") + "\n".join(frame) + "\n")
    sys.stdout.flush()
    return rc


def main(argv=None):
    """`dftrace watch`: runs a Python script traced, with a live dashboard of its trace.

    Args:
        argv: the command's arguments (default: sys.argv[1:]).

    Returns:
        The script's exit status (128 + the signal when a signal ended it), or 2 for bad usage.

    Example:
        >>> from dftrace import watch
        >>> watch.main(["--interval", "0.5", "train.py", "--epochs", "1"])
        0
    """
    a, cmd = _parse(sys.argv[1:] if argv is None else argv)
    if a.summary:
        return _summary(a.prefix or "./trace", a.pid)
    if not cmd:
        print("dftrace watch: no command (dftrace watch [options] -- python3 script.py ...)",
              file=sys.stderr)
        return 2
    if a.out and a.prefix:
        print("dftrace watch: --out DIR and --prefix P both say where the traces go: give one",
              file=sys.stderr)
        return 2
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    prefix = a.prefix or os.path.join(a.out or tempfile.mkdtemp(prefix="dftrace-watch-"), "trace")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env.update({"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": prefix, "DFTRACE_TORCH_AUTO": "1",
                "DFTRACE_OUTPUT_FLUSH_INTERVAL": "500ms"})
    if a.deep:
        env["DFTRACE_TORCH_DEEP"] = "1"
    start = os.path.join(here, "dftrace", "_autostart") + os.pathsep + here
    env["PYTHONPATH"] = start + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        child = subprocess.Popen(cmd, env=env)
    except OSError as e:
        print("dftrace watch: can not run %s: %s" % (cmd[0], e.strerror), file=sys.stderr)
        return 127

    def forward(sig, _frame):
        # Ctrl-C in the terminal reached the script already (same foreground group): pass on
        # only what was sent to this process alone.
        if sig == signal.SIGINT and _foreground():
            return
        try:
            child.send_signal(sig)
        except OSError:
            pass
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    title = " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))
    rc = _dashboard(child, prefix, title, min(max(a.interval, 0.1), 1.0))
    if rc < 0:  # end as the script ended: killed by the same signal
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    return rc if rc >= 0 else 128 - rc

if __name__ == "__main__":
    sys.exit(main())
