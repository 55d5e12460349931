"""battery.py: runs one case of the battery untraced and traced, and lists every difference.

A case (cases.py) is a program with its setup. The engine runs it twice in the same directory
path (so that paths the program prints or records are the same): first untraced, then under
`dftrace run` with its trace directory outside that directory (DFTRACE_LOG_FILE). After each run
the directory is moved aside, and the two are compared:

- the exit status (a death by signal is a negative status), stdout and stderr (through the
  case's normaliser, for what legitimately differs);
- every file and folder produced: kind, mode, content (a case may exempt a file's content, with
  a reason: git's index records inode numbers);
- no hang (the case's timeout) and no process left behind in the run's session;
- the trace: `dftrace validate` accepts it, and the independent checker (tracecheck.py) finds
  every gzip member whole, every line JSON, no duplicate id, every hash defined in the same file
  before use, an `end` in every file, and, for the files the case names, the bytes read or
  written in the events equal to the files' sizes.

Every difference is collected (never only the first); `run_case` returns them as lines."""
import difflib
import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple, Union

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tracecheck as tc  # noqa: E402

FIXED_MTIME = 1600000000  # every file a setup makes gets this time (tar, ls -l print it)


@dataclass
class Case:
    name: str
    cmd: Union[str, List[str]]  # a string is a bash script (bash -c)
    setup: Optional[Callable] = None  # setup(work: str): makes the inputs, run untraced
    env: Dict[str, str] = field(default_factory=dict)  # for both runs
    traced_env: Dict[str, str] = field(default_factory=dict)  # dftrace's knobs, traced run only
    timeout: float = 60.0
    normalise: Optional[Callable[[str], str]] = None  # applied to stdout and stderr
    ignore_content: Dict[str, str] = field(default_factory=dict)  # glob -> reason
    # glob -> reason: compared as sets of lines (an order the program does not fix)
    unordered_content: Dict[str, str] = field(default_factory=dict)
    ignore_files: Dict[str, str] = field(default_factory=dict)  # glob -> reason (not compared)
    # (direction 'read'|'write', glob of files relative to the work directory, times each is
    # moved): the events' bytes on those files equal times x their sizes (inputs: before the
    # run; outputs: after it)
    io_bytes: List[Tuple[str, str, int]] = field(default_factory=list)
    # (signal, milliseconds, file): once the program created `file` in its directory, wait
    # that long and send it the signal
    kill: Optional[Tuple[int, int, str]] = None
    trace_tmpfs: Optional[str] = None  # a tmpfs of this size ('64k') as the trace directory
    require_end: bool = True  # every trace file has an `end` (not when the disk is full)
    end_signal: Optional[str] = None  # every trace file's `end` names this signal ("SIGUSR1")
    # a trace file is written (not by a program whose one interposed call comes during exit:
    # dftrace never initialises then, and such a process had no event to record)
    expect_trace: bool = True
    # how the traced run is traced: "run" (under `dftrace run`), or "import" (the program itself
    # initialises dftrace: the traced run gets DFTRACE_ENABLE=1 and the work directory as
    # DFTRACE_IO_DATA_DIR, no preloading)
    traced_by: str = "run"
    needs: List[str] = field(default_factory=list)  # programs that must be on PATH
    defects: str = ""  # the defects this case is there to catch (for the report)


def _fix_mtimes(top):
    for d, dirs, files in os.walk(top, topdown=False):
        for n in files + dirs:
            os.utime(os.path.join(d, n), (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)
    os.utime(top, (FIXED_MTIME, FIXED_MTIME))


def snapshot(top, unordered=None):
    """{relative path: (kind, mode, digest or link target, size)} of everything under top; a file
    matching a glob of `unordered` is digested as its sorted lines."""
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, top)
            st = os.lstat(p)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", mode, os.readlink(p), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", mode, "", 0)
            elif stat.S_ISREG(st.st_mode):
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    if unordered and _matches(rel, unordered):
                        h.update(b"\n".join(sorted(f.read().splitlines())))
                    else:
                        for block in iter(lambda: f.read(1 << 20), b""):
                            h.update(block)
                out[rel] = ("file", mode, h.hexdigest(), st.st_size)
            else:
                out[rel] = ("other", mode, "", 0)
    return out


def _matches(rel, patterns):
    for pat, why in patterns.items():
        if fnmatch.fnmatch(rel, pat):
            return why
    return None


def compare_trees(plain, traced, case):
    diffs = []
    for rel in sorted(set(plain) | set(traced)):
        if _matches(rel, case.ignore_files):
            continue
        a, b = plain.get(rel), traced.get(rel)
        if a is None:
            diffs.append("file %s: made only when traced (%s, %d bytes)" % (rel, b[0], b[3]))
        elif b is None:
            diffs.append("file %s: missing when traced (untraced: %s, %d bytes)" % (rel, a[0], a[3]))
        elif a[0] != b[0]:
            diffs.append("file %s: a %s untraced, a %s traced" % (rel, a[0], b[0]))
        else:
            if a[1] != b[1]:
                diffs.append("file %s: mode %o untraced, %o traced" % (rel, a[1], b[1]))
            if a[2] != b[2] and not _matches(rel, case.ignore_content):
                diffs.append("file %s: content differs (%d bytes untraced, %d traced)" % (rel, a[3], b[3]))
    return diffs


def _text_diff(what, a, b):
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "untraced", "traced", lineterm="", n=1))
    shown = [l if len(l) < 200 else l[:200] + "..." for l in lines[2:22]]
    more = " (+%d more diff lines)" % (len(lines) - 22) if len(lines) > 22 else ""
    return "%s differs%s:\n      %s" % (what, more, "\n      ".join(shown))


def session_processes(sid):
    """(pid, state, command line) of every live process in session sid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
            fields = s[s.rindex(")") + 2:].split()
            if int(fields[3]) != sid or fields[0] == "Z":
                continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            out.append((int(d), fields[0], cmd[:120]))
        except (OSError, ValueError, IndexError):
            continue
    return out


# The signals whose disposition a program gets from whoever started the test: a shell's `cmd &`
# in a script ignores SIGINT and SIGQUIT, nohup SIGHUP, and a program started with them ignored
# keeps them ignored (Python installs no KeyboardInterrupt). Each run starts with the default
# action of every one and no signal blocked, as from a terminal.
RESET_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM, signal.SIGUSR1,
                 signal.SIGUSR2, signal.SIGALRM, signal.SIGCHLD, signal.SIGTSTP, signal.SIGTTIN,
                 signal.SIGTTOU)


def default_signals():
    """In the forked child, before exec: the default action of RESET_SIGNALS, an empty mask."""
    for sig in RESET_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def execute(argv, work, env, case, outdir):
    """Runs argv in work, in a new session, stdout and stderr into files outside work. Returns
    (status or None on a hang, stdout, stderr, problems)."""
    problems = []
    out_path, err_path = os.path.join(outdir, "stdout"), os.path.join(outdir, "stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=err, start_new_session=True, preexec_fn=default_signals)
    deadline = time.monotonic() + case.timeout
    if case.kill:
        sig, ms, marker = case.kill
        while p.poll() is None and not os.path.exists(os.path.join(work, marker)) \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        if p.poll() is None and os.path.exists(os.path.join(work, marker)):
            time.sleep(ms / 1000.0)
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
        elif p.poll() is None:
            problems.append("never created %s to be signalled" % marker)
    status = None
    try:
        status = p.wait(max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        problems.append("hang: still running after %g s (killed)" % case.timeout)
        _kill_session(p.pid)
        p.wait()
    # What the command started must have ended with it.
    left = session_processes(p.pid)
    t = time.monotonic()
    while left and time.monotonic() - t < 3:
        time.sleep(0.05)
        left = session_processes(p.pid)
    if left:
        problems.append("process(es) left behind: " + "; ".join("%d %s %s" % x for x in left[:5]))
        _kill_session(p.pid)
    with open(out_path, "rb") as f:
        stdout = f.read().decode(errors="replace")
    with open(err_path, "rb") as f:
        stderr = f.read().decode(errors="replace")
    return status, stdout, stderr, problems


def _kill_session(sid):
    for pid, _, _ in session_processes(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(sid, signal.SIGKILL)
    except OSError:
        pass
    t = time.monotonic()
    while session_processes(sid) and time.monotonic() - t < 5:
        time.sleep(0.05)


def base_env(case, home, tmp):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DFTRACE_", "DFTRACER_")) and k not in ("LD_PRELOAD", "PYTHONPATH")}
    env.update({"LC_ALL": "C", "LANG": "C", "TZ": "UTC", "HOME": home, "TMPDIR": tmp,
                "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(case.env)
    return env


def describe_status(s):
    if s is None:
        return "none (hung)"
    return "killed by %s" % signal.Signals(-s).name if s < 0 else str(s)


def check_trace(case, trace_dir, cli, work, before, after, env):
    """The traced run's trace: what is wrong with it, as lines."""
    diffs = []
    files = sorted(os.path.join(trace_dir, f) for f in os.listdir(trace_dir) if ".pfw" in f)
    if not case.expect_trace:
        return ["trace: %s written, none expected" % f for f in files]
    if not files:
        return ["trace: no trace file in %s" % trace_dir]
    v = subprocess.run([cli, "validate", "--max-findings", "5", *files], capture_output=True,
                       text=True, env=env, timeout=120)
    if v.returncode != 0:
        lines = [l for l in (v.stdout + v.stderr).splitlines() if l.strip()]
        diffs.append("trace: dftrace validate exits %d:\n      %s" % (v.returncode, "\n      ".join(lines[:8])))
    moved = {"read": {}, "write": {}}
    by_kind = {}
    for path in files:
        problems, events, names = tc.trace_problems(path, require_end=case.require_end)
        for p in problems:
            by_kind.setdefault(re.sub(r"\d+", "N", p.split(": ", 1)[1].split(" (")[0]), []).append(p)
        if case.end_signal:
            ends = [e for e in events if e.get("name") == "end" and e.get("cat") == "dftracer"]
            got = (ends[-1].get("args") or {}).get("signal") if ends else "no end"
            if got != case.end_signal:
                diffs.append("trace: %s: end's signal %s, %s expected"
                             % (os.path.basename(path), got, case.end_signal))
        for ev in events:
            for d, fh, n in tc.io_moves(ev):
                if fh not in names:
                    continue
                name = os.path.normpath(str(names[fh]))
                if not name.startswith(work + os.sep):
                    continue
                rel = os.path.relpath(name, work)
                moved[d][rel] = moved[d].get(rel, 0) + n
    for kind, problems in by_kind.items():
        diffs += ["trace: " + p for p in problems[:3]]
        if len(problems) > 3:
            diffs.append("trace: ... and %d more file(s) of the %d with: %s" % (len(problems) - 3, len(files), kind))
    for direction, pattern, times in case.io_bytes:
        # inputs as they were before the run (or as the run left them, if it made them)
        sizes = dict(after, **before) if direction == "read" else after
        want = sum(v[3] for k, v in sizes.items() if v[0] == "file" and fnmatch.fnmatch(k, pattern))
        got = sum(n for k, n in moved[direction].items() if fnmatch.fnmatch(k, pattern))
        if got != times * want:
            diffs.append("trace: bytes %s on %s: %d in the events, %d expected (%d x the files' %d bytes)"
                         % (direction, pattern, got, times * want, times, want))
    return diffs


def _mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "mount -t tmpfs failed (%s)" % (r.stderr.strip() or r.returncode)
    return None


def run_case(case, root, cli, calibrate=False):
    """Runs the case; returns (differences, skip reason or None). calibrate: the second run is
    untraced too (to find what in the case itself varies from run to run)."""
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    for prog in case.needs:
        if shutil.which(prog) is None:
            return [], "%s is not installed" % prog
    work = os.path.join(root, "work")
    home = os.path.join(root, "home")
    trace_dir = os.path.join(root, "trace")
    os.makedirs(home)
    # TMPDIR short: a Unix socket's path (multiprocessing, PyTorch) has room for 107 bytes
    tmp = tempfile.mkdtemp(prefix="battery-")
    runs = {}
    befores = {}
    mounted = False
    try:
        if case.trace_tmpfs and not calibrate:
            why = _mount_tmpfs(trace_dir, case.trace_tmpfs)
            if why:
                return [], why
            mounted = True
        else:
            os.makedirs(trace_dir)
        for mode in ("untraced", "traced"):
            os.makedirs(work)
            if case.setup:
                case.setup(work)
            _fix_mtimes(work)
            befores[mode] = snapshot(work)
            env = base_env(case, home, tmp)
            argv = ["bash", "-c", case.cmd] if isinstance(case.cmd, str) else list(case.cmd)
            if mode == "traced" and not calibrate:
                env.update({"DFTRACE_LOG_FILE": os.path.join(trace_dir, "t")})
                if case.traced_by == "import":
                    env.update({"DFTRACE_ENABLE": "1", "DFTRACE_IO_DATA_DIR": work})
                else:
                    argv = [cli, "run", "--"] + argv
                env.update(case.traced_env)
            outdir = os.path.join(root, mode + ".out")
            os.makedirs(outdir)
            runs[mode] = execute(argv, work, env, case, outdir)
            os.rename(work, os.path.join(root, mode))
            for d in (home, tmp):
                shutil.rmtree(d)
                os.makedirs(d)
        (s1, o1, e1, p1), (s2, o2, e2, p2) = runs["untraced"], runs["traced"]
        with open(os.path.join(root, "statuses.json"), "w") as f:
            json.dump({"untraced": describe_status(s1), "traced": describe_status(s2)}, f)
        diffs = ["untraced run: " + p for p in p1] + ["traced run: " + p for p in p2]
        if s1 != s2:
            diffs.append("exit status: %s untraced, %s traced" % (describe_status(s1), describe_status(s2)))
        norm = case.normalise or (lambda s: s)
        for what, a, b in (("stdout", o1, o2), ("stderr", e1, e2)):
            if norm(a) != norm(b):
                diffs.append(_text_diff(what, norm(a), norm(b)))
        plain = snapshot(os.path.join(root, "untraced"), case.unordered_content)
        traced = snapshot(os.path.join(root, "traced"), case.unordered_content)
        diffs += compare_trees(plain, traced, case)
        if not calibrate:
            # the traced tree is checked where it was made: its files' names in the trace
            os.rename(os.path.join(root, "traced"), work)
            try:
                diffs += [d for d in check_trace(case, trace_dir, cli, work, befores["traced"],
                                                 traced, base_env(case, home, tmp)) if d]
            finally:
                os.rename(work, os.path.join(root, "traced"))
        return diffs, None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if mounted:
            subprocess.run(["umount", "-l", trace_dir], capture_output=True)


def _tail(path, n=15):
    try:
        with open(path, "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
    except OSError as e:
        return ["(%s)" % e]
    return (["... (%d lines before)" % (len(lines) - n)] if len(lines) > n else []) + \
        [l[:200] for l in lines[-n:]]


def _trace_summary(trace_dir):
    """Per trace file: its size, its events, whether it has its `end`, and its last events."""
    out = []
    try:
        files = sorted(f for f in os.listdir(trace_dir) if ".pfw" in f)
    except OSError as e:
        return ["(%s)" % e]
    for name in files:
        path = os.path.join(trace_dir, name)
        _, events, _ = tc.trace_problems(path)
        timed = [e for e in events if isinstance(e, dict) and "ts" in e]
        last = ", ".join("%s@%s" % (e.get("name"), e.get("ts")) for e in timed[-3:])
        ends = [e for e in events if e.get("name") == "end" and e.get("cat") == "dftracer"]
        sig = (ends[-1].get("args") or {}).get("signal") if ends else None
        end = "NO end" if not ends else "end (%s)" % sig if sig else "end"
        out.append("%s: %d bytes, %d events, %s; last: %s"
                   % (name, os.path.getsize(path), len(events), end, last))
    return out


def failure_context(root):
    """What a failing case's report shows besides its differences: both runs' statuses, the tails
    of their stdout and stderr, and a summary of each trace file."""
    lines = []
    try:
        with open(os.path.join(root, "statuses.json")) as f:
            lines.append("statuses: %s" % json.load(f))
    except (OSError, ValueError) as e:
        lines.append("statuses: (%s)" % e)
    for mode in ("untraced", "traced"):
        for stream in ("stdout", "stderr"):
            lines.append("%s %s:" % (mode, stream))
            lines += ["    " + l for l in _tail(os.path.join(root, mode + ".out", stream))]
    lines.append("trace files:")
    lines += ["    " + l for l in _trace_summary(os.path.join(root, "trace"))]
    return lines


def keep_failure(base, case_root, name, report):
    """pytest empties --basetemp at its next start: a failing case's folder and report are copied
    to BASETEMP-failures/NAME-TIME/ (the report in report.txt), where the next run leaves them."""
    keep = os.path.join(base.rstrip(os.sep) + "-failures",
                        "%s-%s" % (name, time.strftime("%Y%m%dT%H%M%S", time.gmtime())))
    try:
        shutil.copytree(case_root, keep, symlinks=True, ignore_dangling_symlinks=True)
    except (OSError, shutil.Error):
        os.makedirs(keep, exist_ok=True)
    with open(os.path.join(keep, "report.txt"), "w") as f:
        f.write(report + "\n")
    return keep


def check_case(case, tmp_path_factory):
    """The body of a battery test: runs the case untraced and traced (untraced twice with
    BATTERY_CALIBRATE=1), skips it saying why where it can not run, appends a line to
    summary.jsonl beside the cases' folders, and fails listing every difference."""
    import pytest  # (battery.py is imported by the battery tests alone)
    cli = os.environ.get("DFTRACE_CLI", "")
    assert os.access(cli, os.X_OK), "DFTRACE_CLI (the dftrace tool) is not set to a program"
    base = str(tmp_path_factory.getbasetemp())
    t0 = time.monotonic()
    diffs, skip = run_case(case, os.path.join(base, case.name), cli,
                           calibrate=os.environ.get("BATTERY_CALIBRATE") == "1")
    seconds = round(time.monotonic() - t0, 1)  # for the summary only: nothing is timed
    if skip:
        pytest.skip("%s: %s" % (case.name, skip))
    with open(os.path.join(base, "summary.jsonl"), "a") as f:
        f.write(json.dumps({"case": case.name, "defects": case.defects, "differences": diffs,
                            "seconds": seconds}) + "\n")
    if diffs:
        root = os.path.join(base, case.name)
        report = "%s (%s): %d difference(s):\n  - %s\n%s" % (
            case.name, case.defects, len(diffs), "\n  - ".join(diffs),
            "\n".join("  " + l for l in failure_context(root)))
        report += "\n  kept in %s" % keep_failure(base, root, case.name, report)
        pytest.fail(report, pytrace=False)


def selected(cases):
    """The cases BATTERY_CASES=name,name names (all of them when it is not set)."""
    only = [n for n in os.environ.get("BATTERY_CASES", "").split(",") if n]
    return [c for c in cases if not only or c.name in only]
