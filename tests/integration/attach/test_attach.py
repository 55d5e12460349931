"""test_attach.py: `dftrace attach` (docs/attach.md) on running programs that wait for it
(DFTRACE_ATTACH=1, not traced): a C program (attach_prog.c) and a Python loop under `dftrace run
--attach` get events only inside the window (`--steps 5`, `--for`), `--all DIR` reaches every
waiting process writing into DIR, another user's attach is refused with one line, and a hostile
or malformed request, or a channel directory others can enter, changes nothing. Every trace
passes `dftrace validate`. Nothing is timed: the programs say when they see tracing switch on
and off, and the tests wait for what they say."""
import os
import pwd
import shutil
import stat
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]
PROG = os.path.join(BIN, "attach_prog")
WAIT_S = 120  # the most a test waits for a program to say something (a hang, not a timing)

# A loop's head: it says when tracing comes on and goes off, and writes a region a step.
LOOP_HEAD = """
seen_on, off = False, None
for i in range(1000000):
    on = dftrace.is_enabled()
    if on and not seen_on:
        seen_on = True
        print("on", i, flush=True)
    elif not on and seen_on and off is None:
        off = i
        print("off", i, flush=True)
    with dftrace.region("work", "attach", args={"step": i}):
        pass
"""

PY_LOOP = """
import os, time
import dftrace
""" + LOOP_HEAD + """    if i == 0:
        print("ready", os.getpid(), flush=True)
    time.sleep(0.005)
    dftrace.step()
    if off is not None and i >= off + 3:
        break
print("done", flush=True)
"""


def clean_env(tmp_path, channel=None, **extra):
    env = dict(os.environ)
    for k in list(env):
        if (k.startswith(("DFTRACE_", "DFTRACER_")) and not k.startswith("DFTRACE_PYTHON")) \
                or k == "LD_PRELOAD":
            del env[k]
    env.update(DFTRACE_ATTACH_DIR=str(channel or tmp_path / "channel"),
               DFTRACE_CORE_AFFINITY="0")
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Program:
    """A program that waits for an attach; its stdout read line by line."""

    def __init__(self, cmd, env):
        self.p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        self.lines = []

    def expect(self, word):
        """The first stdout line that begins with word (its other fields)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            for line in self.lines:
                if line.split()[0] == word:
                    return line.split()[1:]
            line = self.p.stdout.readline()
            if not line:
                break
            self.lines.append(line.strip())
        raise AssertionError("never said %r: %r %r" % (word, self.lines, self.p.stderr.read()))

    def finish(self):
        out, err = self.p.communicate(timeout=WAIT_S)
        assert self.p.returncode == 0, (self.p.returncode, out, err)
        self.lines += out.split("\n")
        return err

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def c_program(tmp_path, name="traces", **extra):
    env = clean_env(tmp_path, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / name / "t"), **extra)
    prog = Program([PROG, "1000000"], env)
    prog.expect("ready")
    return prog


def attach(tmp_path, *args, channel=None, user=None):
    cmd = [CLI, "attach", *map(str, args)]
    if user:
        cmd = ["runuser", "-u", user, "--"] + cmd
    return subprocess.run(cmd, env=clean_env(tmp_path, channel), capture_output=True, text=True,
                          timeout=WAIT_S)


def trace(directory):
    """The one trace in directory, valid; its events and its attach lines."""
    path = tc.only_file(str(directory))
    v = subprocess.run([CLI, "validate", path], capture_output=True, text=True, timeout=WAIT_S)
    assert v.returncode == 0, v.stdout + v.stderr
    tc.check_members(path)
    events = tc.load(path)
    tc.check_format([e for e in events if e["name"] not in ("trigger", "trigger_end")
                     and e["ph"] != "A"])  # aggregated records: checked by dftrace validate
    lines = [e for e in events if e["ph"] == "M" and e["name"] in ("trigger", "trigger_end")]
    return events, lines, path


def work_steps(events):
    return sorted(e["args"]["step"] for e in events
                  if e["ph"] == "X" and e["cat"] == "attach" and e["name"] == "work")


def test_steps_window_of_a_c_program(tmp_path):
    prog = c_program(tmp_path)
    try:
        r = attach(tmp_path, prog.p.pid, "--steps", 5)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.startswith("pid %d: full tracing for 5 steps" % prog.p.pid), r.stdout
        on, off = int(prog.expect("on")[0]), int(prog.expect("off")[0])
        prog.finish()
    finally:
        prog.kill()
    assert off == on + 5, (on, off)
    events, lines, path = trace(tmp_path / "traces")
    # Exactly the five whole steps of the window: none before, none after.
    assert work_steps(events) == list(range(on, on + 5)), (work_steps(events), on)
    assert len(lines) == 1, lines
    a = lines[0]["args"]
    assert a["name"] == "attach" and a["after"] == "5 steps", a
    assert "ended after its steps" in a["value"], a
    assert a["from"] == a["time"] <= a["to"], a
    # dftrace stat lists the window with the triggers.
    s = subprocess.run([CLI, "stat", path], capture_output=True, text=True, timeout=WAIT_S)
    assert s.returncode == 0 and "trigger at %d (pid %d): attach:" % (a["time"], prog.p.pid) \
        in s.stdout, s.stdout


def test_window_closed_while_another_thread_records(tmp_path):
    # attach_prog's `spin` thread begins a region about every microsecond while the main
    # thread's step closes the window. Every event written begins within the trigger line's
    # [from, to] (`from` read before recording is on, `to` after it is off); only the spinner's
    # region in flight at the close may end after `to` (docs/attach.md).
    env = clean_env(tmp_path, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    prog = Program([PROG, "1000000", "-", "spin"], env)
    try:
        prog.expect("ready")
        r = attach(tmp_path, prog.p.pid, "--steps", 5)
        assert r.returncode == 0, r.stdout + r.stderr
        on, off = int(prog.expect("on")[0]), int(prog.expect("off")[0])
        prog.finish()
    finally:
        prog.kill()
    assert off == on + 5, (on, off)
    events, lines, _ = trace(tmp_path / "traces")
    assert work_steps(events) == list(range(on, on + 5)), (work_steps(events), on)
    assert len(lines) == 1, lines
    a = lines[0]["args"]
    x = [e for e in events if e["ph"] == "X" and e["cat"] == "attach"]
    # (The spinner may get no CPU in the window on a busy machine: spins may be empty.)
    spins = [e for e in x if e["name"] == "spin"]
    outside = [(e["name"], e["ts"], e["dur"]) for e in x if not a["from"] <= e["ts"] <= a["to"]]
    assert not outside, (a["from"], a["to"], outside)
    # The spinner has one region open at a time: one at most was in flight at the close.
    assert len([e for e in spins if e["ts"] + e["dur"] > a["to"]]) <= 1, a


def test_time_window_of_a_c_program(tmp_path):
    prog = c_program(tmp_path)
    try:
        r = attach(tmp_path, prog.p.pid, "--for", "1s")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "full tracing for 1s" in r.stdout, r.stdout
        on, off = int(prog.expect("on")[0]), int(prog.expect("off")[0])
        prog.finish()
    finally:
        prog.kill()
    events, lines, _ = trace(tmp_path / "traces")
    steps = work_steps(events)
    # One run of steps, none missing, around what the program saw (it looks before each step's
    # region, so the switch may fall between its look and the region).
    assert steps and steps == list(range(steps[0], steps[-1] + 1)), steps
    assert on - 1 <= steps[0] <= on and off - 1 <= steps[-1] <= off, (steps, on, off)
    assert len(lines) == 1 and lines[0]["args"]["after"] == "1s", lines
    assert "its time ran out" in lines[0]["args"]["value"], lines


def test_python_loop_under_dftrace_run(tmp_path):
    beside = os.path.join(os.path.dirname(os.path.dirname(CLI)), "bindings", "python")
    package = os.environ.get("DFTRACE_PYTHON_DIR") or beside
    if not os.path.exists(os.path.join(package, "dftrace", "_autostart", "sitecustomize.py")):
        pytest.skip("the Python face is not built (no dftrace package in %s)" % package)
    script = tmp_path / "loop.py"
    script.write_text(PY_LOOP)
    env = clean_env(tmp_path)
    prog = Program([CLI, "run", "--attach", "--out", str(tmp_path / "traces"), str(script)], env)
    try:
        pid = int(prog.expect("ready")[0])
        r = attach(tmp_path, pid, "--steps", 5)
        assert r.returncode == 0, r.stdout + r.stderr
        on, off = int(prog.expect("on")[0]), int(prog.expect("off")[0])
        prog.finish()
    finally:
        prog.kill()
    assert off == on + 5, (on, off)
    path = [f for f in os.listdir(tmp_path / "traces") if "-%d-" % pid in f]
    assert len(path) == 1, os.listdir(tmp_path / "traces")
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(tmp_path / "traces" / path[0], only)
    events, lines, _ = trace(only)
    assert work_steps(events) == list(range(on, on + 5)), (work_steps(events), on)
    assert [ln["args"]["name"] for ln in lines] == ["attach"], lines


def test_all_reaches_every_waiting_process_of_a_directory(tmp_path):
    progs = [c_program(tmp_path), c_program(tmp_path), c_program(tmp_path, name="elsewhere")]
    try:
        r = attach(tmp_path, "--all", tmp_path / "traces", "--steps", 3)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "2 process(es) attached" in r.stdout, r.stdout
        for p in progs[:2]:
            assert "pid %d: full tracing for 3 steps" % p.p.pid in r.stdout, r.stdout
            p.expect("off")
            p.finish()
        # The process writing elsewhere was not asked.
        assert not any(line.startswith("on") for line in progs[2].lines), progs[2].lines
        assert not os.path.exists(tmp_path / "elsewhere")
    finally:
        for p in progs:
            p.kill()
    for p in progs[:2]:
        d = tmp_path / ("only%d" % p.p.pid)
        d.mkdir()
        name = [f for f in os.listdir(tmp_path / "traces") if "-%d-" % p.p.pid in f][0]
        shutil.copy(tmp_path / "traces" / name, d)
        events, lines, _ = trace(d)
        assert len(work_steps(events)) == 3 and len(lines) == 1, (work_steps(events), lines)


def test_another_users_attach_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user (useradd); running as uid %d"
                    % os.geteuid())
    if not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("useradd or runuser is missing")
    user = "dftrace_attach_t"
    try:
        pwd.getpwnam(user)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", user], check=True, timeout=WAIT_S)
    probe = subprocess.run(["runuser", "-u", user, "--", CLI, "--help"], capture_output=True,
                           timeout=WAIT_S)
    if probe.returncode != 0:
        pytest.skip("user %s can not run %s (its directories are closed to it)" % (user, CLI))
    prog = c_program(tmp_path)
    try:
        r = attach(tmp_path, prog.p.pid, "--steps", 2, user=user)
        assert r.returncode == 1, r.stdout + r.stderr
        assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
        assert "another user's process; refused" in r.stderr, r.stderr
        assert not os.path.exists(tmp_path / "channel" / ("%d.req" % prog.p.pid))
    finally:
        prog.kill()
    assert not any(line.startswith("on") for line in prog.lines), prog.lines


def wait_answer(channel, pid):
    ack = channel / ("%d.ack" % pid)
    deadline = time.monotonic() + WAIT_S
    while not ack.exists():
        assert time.monotonic() < deadline, "no answer"
        time.sleep(0.02)
    text = ack.read_text()
    ack.unlink()
    return text


def test_answer_outlives_a_process_that_ends_after_its_window(tmp_path):
    # A window whose last step is near the program's last: the program may end before the asker
    # reads its answer (it polls every 20 ms), which must still be there then.
    prog = c_program(tmp_path)
    channel = tmp_path / "channel"
    tmp = channel / "incoming"
    tmp.write_text("dftrace-attach 1\nfor 0\nsteps 1\nlevel full\n")
    os.chmod(tmp, 0o600)
    try:
        os.rename(tmp, channel / ("%d.req" % prog.p.pid))  # as dftrace attach asks
        prog.expect("off")
        prog.finish()  # it ends 3 steps after its window; nobody has read the answer
    finally:
        prog.kill()
    ack = channel / ("%d.ack" % prog.p.pid)
    assert ack.exists(), sorted(os.listdir(channel))
    assert ack.read_text().startswith("ok full tracing for 1 steps"), ack.read_text()
    assert not (channel / ("%d.ready" % prog.p.pid)).exists(), sorted(os.listdir(channel))
    # The next asker's sweep removes what a process gone left.
    r = attach(tmp_path, "--all", str(tmp_path / "traces"))
    assert not ack.exists(), (r.stdout, r.stderr, sorted(os.listdir(channel)))


@pytest.mark.parametrize("kind", ["garbage", "both", "partial", "symlink", "huge"])
def test_malformed_or_hostile_request_changes_nothing(tmp_path, kind):
    prog = c_program(tmp_path)
    channel = tmp_path / "channel"
    req = channel / ("%d.req" % prog.p.pid)
    tmp = channel / "incoming"
    try:
        if kind == "symlink":
            (tmp_path / "elsewhere").write_text("dftrace-attach 1\nfor 1000000000\n")
            os.symlink(tmp_path / "elsewhere", tmp)
        else:
            text = {"garbage": "\x00\xffnot a request\n",
                    "both": "dftrace-attach 1\nfor 1000000000\nsteps 3\n",
                    "partial": "dftrace-attach 1\nsteps 3",
                    "huge": "dftrace-attach 1\n" + "level full\n" * 1000}[kind]
            tmp.write_text(text)
            os.chmod(tmp, 0o600)
        os.rename(tmp, req)
        answer = wait_answer(channel, prog.p.pid)
        assert answer.startswith("refused: ") and answer.endswith("; nothing changed\n"), answer
        assert answer.count("\n") == 1, answer
        assert not os.path.lexists(req)
        if kind == "symlink":
            assert "symbolic link" in answer and (tmp_path / "elsewhere").exists(), answer
        # Still waiting, and untouched: a good request works after it.
        r = attach(tmp_path, prog.p.pid, "--steps", 1)
        assert r.returncode == 0, r.stdout + r.stderr
        on, off = int(prog.expect("on")[0]), int(prog.expect("off")[0])
        err = prog.finish()
    finally:
        prog.kill()
    assert off == on + 1
    assert err.count("attach: refused") == 1, err
    events, lines, _ = trace(tmp_path / "traces")
    assert work_steps(events) == [on] and len(lines) == 1, (work_steps(events), lines)


def test_a_channel_others_can_enter_is_refused(tmp_path):
    channel = tmp_path / "open"
    channel.mkdir()
    os.chmod(channel, 0o755)
    env = clean_env(tmp_path, channel, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    p = subprocess.run([PROG, "2"], env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert p.returncode == 0 and "has mode 755, not 0700; refused" in p.stderr, p.stderr
    assert os.listdir(channel) == []
    r = attach(tmp_path, os.getpid(), channel=channel)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "not 0700; refused" in r.stderr, r.stderr
    assert stat.S_IMODE(os.stat(channel).st_mode) == 0o755


@pytest.mark.parametrize("args", [[], ["1", "--for", "1s", "--steps", "2"], ["1", "--for", "x"],
                                  ["1", "--steps", "0"], ["1", "--level", "all"], ["x"],
                                  ["1", "--all", "/"]])
def test_bad_use_exits_2_with_one_line(tmp_path, args):
    r = attach(tmp_path, *args)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, (r.stdout, r.stderr)


def run_program(tmp_path, *args, out="traces"):
    """attach_prog under `dftrace run --attach` (the I/O plug-in preloaded), waiting."""
    env = clean_env(tmp_path)
    prog = Program([CLI, "run", "--attach", "--out", str(tmp_path / out), "--", PROG,
                    "1000000", *map(str, args)], env)
    return prog


def trace_of(tmp_path, pid, out="traces"):
    """The trace of pid in tmp_path/out, checked as trace() checks it."""
    names = [f for f in os.listdir(tmp_path / out) if "-%d-" % pid in f]
    assert len(names) == 1, os.listdir(tmp_path / out)
    only = tmp_path / ("only%d" % pid)
    only.mkdir()
    shutil.copy(tmp_path / out / names[0], only)
    return trace(only)


def files_by_event(events):
    """{(cat, name, file's base name)} of the events that name a file (FH lines)."""
    names = {e["args"]["value"]: e["args"]["name"] for e in events if e.get("name") == "FH"}
    return {(e["cat"], e["name"], os.path.basename(names[e["args"]["fhash"]]))
            for e in events if e["ph"] == "X" and "fhash" in e.get("args", {})}


def level_window(tmp_path, steps, level):
    """attach_prog under `dftrace run --attach`, one window of `steps` steps at `level`: the
    program's pid, attach's stdout and the steps at which tracing came on and went off."""
    data = tmp_path / "data"
    data.mkdir()
    prog = run_program(tmp_path, data)
    try:
        prog.expect("ready")
        pid = prog.p.pid
        r = attach(tmp_path, pid, "--steps", steps, "--level", level)
        assert r.returncode == 0, r.stdout + r.stderr
        on, off = int(prog.expect("on")[0]), int(prog.expect("off")[0])
        prog.finish()
    finally:
        prog.kill()
    return pid, r.stdout, on, off


def test_level_io_traces_only_the_io_of_the_window(tmp_path):
    pid, out, on, off = level_window(tmp_path, 4, "io")
    assert out.startswith("pid %d: io tracing for 4 steps" % pid), out
    assert off == on + 4, (on, off)
    events, lines, _ = trace_of(tmp_path, pid)
    window = range(on, on + 4)
    # The I/O calls, and only them: no region of the program's own category.
    x = [e for e in events if e["ph"] == "X" and e["cat"] != "dftracer"]  # not start and end
    cats = {e["cat"] for e in x}
    assert cats == {"POSIX", "STDIO"}, cats
    assert work_steps(events) == []
    # Every step of the window has its calls, and no other step has any.
    touched = files_by_event(events)
    want = {("POSIX", call, "posix-%d" % i) for i in window for call in ("open", "write", "close")}
    want |= {("STDIO", call, "stdio-%d" % i) for i in window for call in ("fopen", "fclose")}
    assert want <= touched, sorted(want - touched)
    steps_seen = {int(f.split("-")[1]) for (_, _, f) in touched if f[:5] in ("posix", "stdio")}
    assert steps_seen == set(window), (steps_seen, on)
    assert len(lines) == 1 and lines[0]["args"]["after"] == "4 steps", lines
    a = lines[0]["args"]
    assert all(a["from"] <= e["ts"] <= a["to"] for e in x), a


def test_level_full_under_dftrace_run_has_both_io_and_regions(tmp_path):
    pid, _, on, off = level_window(tmp_path, 3, "full")
    events, lines, _ = trace_of(tmp_path, pid)
    assert work_steps(events) == list(range(on, on + 3)), (work_steps(events), on)
    steps_seen = {int(f.split("-")[1]) for (_, _, f) in files_by_event(events)
                  if f[:5] in ("posix", "stdio")}
    assert steps_seen == set(range(on, on + 3)), (steps_seen, on)
    assert len(lines) == 1, lines


def test_attach_after_fork_reaches_only_the_process_asked(tmp_path):
    env = clean_env(tmp_path, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    prog = Program([PROG, "1000000", "-", "fork"], env)
    parent = prog.p.pid
    try:
        child = next_ready_child(prog, parent)
        prog.expect("ready-%d" % parent)
        # The child first: its window, the parent's steps untouched.
        r = attach(tmp_path, child, "--steps", 3)
        assert r.returncode == 0, r.stdout + r.stderr
        c_on, c_off = (int(prog.expect("on-%d" % child)[0]),
                       int(prog.expect("off-%d" % child)[0]))
        assert not any(ln.startswith("on-%d" % parent) for ln in prog.lines), prog.lines
        # Then the parent: its own window, after the child's ended.
        r = attach(tmp_path, parent, "--steps", 2)
        assert r.returncode == 0, r.stdout + r.stderr
        p_on, p_off = (int(prog.expect("on-%d" % parent)[0]),
                       int(prog.expect("off-%d" % parent)[0]))
        prog.finish()
    finally:
        prog.kill()
    assert (c_off - c_on, p_off - p_on) == (3, 2)
    c_events, c_lines, _ = trace_of(tmp_path, child)
    p_events, p_lines, _ = trace_of(tmp_path, parent)
    assert work_steps(c_events) == list(range(c_on, c_on + 3)), (work_steps(c_events), c_on)
    assert work_steps(p_events) == list(range(p_on, p_on + 2)), (work_steps(p_events), p_on)
    assert {e["pid"] for e in c_events if e["ph"] == "X"} == {child}
    assert {e["pid"] for e in p_events if e["ph"] == "X"} == {parent}
    assert len(c_lines) == 1 and c_lines[0]["args"]["after"] == "3 steps", c_lines
    assert len(p_lines) == 1 and p_lines[0]["args"]["after"] == "2 steps", p_lines


def test_forked_child_follows_the_parents_window(tmp_path):
    # The child, forked before the window, counts no step of its own (attach_prog's `follow`):
    # the parent's window of 30 steps is its window too, opened and closed with the parent's;
    # it writes nothing before or after. (30 steps of 5 ms: the child's thread, woken as the
    # parent's window opens, finds it still open on a busy machine.)
    env = clean_env(tmp_path, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    prog = Program([PROG, "1000000", "-", "follow"], env)
    parent = prog.p.pid
    try:
        child = next_ready_child(prog, parent)
        prog.expect("ready-%d" % parent)
        r = attach(tmp_path, parent, "--steps", 30)
        assert r.returncode == 0, r.stdout + r.stderr
        p_on, p_off = (int(prog.expect("on-%d" % parent)[0]),
                       int(prog.expect("off-%d" % parent)[0]))
        prog.finish()
    finally:
        prog.kill()
    assert p_off - p_on == 30
    p_events, p_lines, _ = trace_of(tmp_path, parent)
    assert work_steps(p_events) == list(range(p_on, p_on + 30)), (work_steps(p_events), p_on)
    c_events, c_lines, _ = trace_of(tmp_path, child)
    assert len(p_lines) == 1 and len(c_lines) == 1, (p_lines, c_lines)
    a, b = p_lines[0]["args"]["from"], p_lines[0]["args"]["to"]
    line = c_lines[0]["args"]
    assert "the window of the parent (pid %d)" % parent in line["value"], line
    assert "ended as the parent's window ended" in line["value"] and line["after"] == "30 steps"
    # Its window: from the parent's opening (seen after it) to the parent's closing (seen after
    # it); its events within it.
    assert a <= line["from"] <= line["to"] and line["to"] >= b, (a, b, line)
    work = [e for e in c_events if e["ph"] == "X" and e["cat"] == "attach"]
    assert work and all(line["from"] <= e["ts"] <= line["to"] for e in work), (line, work)
    assert {e["pid"] for e in c_events if e["ph"] == "X"} == {child}
    assert "on-%d" % child in " ".join(prog.lines), prog.lines


def test_forked_child_follows_the_parents_window_once_its_own_ends(tmp_path):
    # The child (`follow`) is attached for 2 s, then its parent for 600 steps (at least 3 s: a
    # step sleeps 5 ms), which opens while the child's own window is open. When its own ends,
    # the child follows the rest of the parent's: a second line, ended with the parent's, that
    # begins where its own ended (recording is not switched off between them: the child's
    # "off" is the end of the parent's window).
    env = clean_env(tmp_path, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    prog = Program([PROG, "1000000", "-", "follow"], env)
    parent = prog.p.pid
    try:
        child = next_ready_child(prog, parent)
        prog.expect("ready-%d" % parent)
        for pid, how in ((child, ("--for", "2s")), (parent, ("--steps", 600))):
            r = attach(tmp_path, pid, *how)
            assert r.returncode == 0, r.stdout + r.stderr
        prog.expect("off-%d" % parent)
        # The child switches on its own thread, after the parent: its end of the window it
        # follows is seen before it finishes.
        prog.expect("off-%d" % child)
        prog.finish()
    finally:
        prog.kill()
    _, p_lines, _ = trace_of(tmp_path, parent)
    c_events, c_lines, _ = trace_of(tmp_path, child)
    assert len(p_lines) == 1 and len(c_lines) == 2, (p_lines, c_lines)
    own, followed = (ln["args"] for ln in c_lines)
    assert own["value"].endswith("ended its time ran out") and own["after"] == "2s", own
    assert "the window of the parent (pid %d)" % parent in followed["value"], followed
    assert followed["value"].endswith("ended as the parent's window ended"), followed
    assert own["to"] == followed["from"] and followed["to"] >= p_lines[0]["args"]["to"], \
        (own, followed, p_lines)
    work = [e["ts"] for e in c_events if e["ph"] == "X" and e["cat"] == "attach"]
    assert [t for t in work if followed["from"] <= t <= followed["to"]], (followed, work)


def next_ready_child(prog, parent):
    """The pid of the child (the "ready-PID" line that is not the parent's)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for line in prog.lines:
            word = line.split()[0] if line.split() else ""
            if word.startswith("ready-") and word != "ready-%d" % parent:
                return int(word[6:])
        line = prog.p.stdout.readline()
        if not line:
            break
        prog.lines.append(line.strip())
    raise AssertionError("no child said ready: %r" % prog.lines)


def test_ring_mode_window_writes_the_ring_then_full_detail(tmp_path):
    stop = tmp_path / "stop"
    # No slow-step trigger: on a busy machine one of the program's short steps can last 3 times
    # their median, and the trigger it takes would refuse the attach (trigger.min_gap).
    env = clean_env(tmp_path, DFTRACE_ENABLE="1", DFTRACE_ATTACH="1",
                    DFTRACE_OUTPUT_MODE="ring", DFTRACE_RING_SECONDS="60",
                    DFTRACE_TRIGGER_STEP_FACTOR="0",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"), ATTACH_PROG_STOP=stop)
    prog = Program([PROG, "1000000"], env)
    try:
        prog.expect("ready")
        r = attach(tmp_path, prog.p.pid, "--steps", 3, "--level", "io")
        assert r.returncode == 1 and "ring mode" in r.stderr, r.stdout + r.stderr
        r = attach(tmp_path, prog.p.pid, "--steps", 3)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "the ring, then full tracing for 3 steps" in r.stdout, r.stdout
        # Twenty steps after the answer (the program's clock says which steps came after it),
        # in the ring again after the window; then the program ends.
        answered = time.monotonic_ns()
        first_after = None
        while True:
            line = prog.p.stdout.readline()
            assert line, prog.lines
            prog.lines.append(line.strip())
            word = line.split()
            if word[0] == "at" and int(word[2]) > answered:
                first_after = first_after if first_after is not None else int(word[1])
                if int(word[1]) >= first_after + 20:
                    break
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    last = max(int(ln.split()[1]) for ln in prog.lines if ln.startswith("at "))
    events, lines, path = trace(tmp_path / "traces")
    starts = [ln for ln in lines if ln["name"] == "trigger"]
    ends = [ln for ln in lines if ln["name"] == "trigger_end"]
    assert len(starts) == 1 and len(ends) == 1, lines
    a = starts[0]["args"]
    assert a["name"] == "attach" and a["after"] == "3 steps", a
    steps = work_steps(events)
    # The ring before (every step from the first, the ring holds 60 s), the window, then
    # nothing: the steps after the window went to the ring again and were never written.
    assert steps == list(range(0, steps[-1] + 1)), steps
    at_trigger = max(e["args"]["step"] for e in events if e["ph"] == "X" and
                     e["cat"] == "attach" and e["ts"] <= a["time"])
    assert steps[-1] >= at_trigger + 3, (steps[-1], at_trigger)
    assert steps[-1] < last, (steps[-1], last)
    s = subprocess.run([CLI, "stat", path], capture_output=True, text=True, timeout=WAIT_S)
    assert s.returncode == 0 and "attach:" in s.stdout, s.stdout
    read_back(path, events)


def test_ring_mode_window_of_steps_ends_after_its_release(tmp_path):
    # A second thread records a region about every microsecond: the writer's passes are long
    # (each compresses what came since the last), and the window of one step (about 10 ms) is
    # released while the pass that took its trigger is under way. Full detail ends at the first
    # pass that began after the release: the window's step, still in the main thread's buffer
    # then, is in the file, and the window ends after it began.
    stop = tmp_path / "stop"
    env = clean_env(tmp_path, DFTRACE_ENABLE="1", DFTRACE_ATTACH="1",
                    DFTRACE_OUTPUT_MODE="ring", DFTRACE_RING_SECONDS="60",
                    DFTRACE_RING_BYTES="2097152", DFTRACE_TRIGGER_STEP_FACTOR="0",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"), ATTACH_PROG_STOP=stop)
    prog = Program([PROG, "1000000", "-", "spin"], env)
    try:
        while not any(ln.startswith("at 50 ") for ln in prog.lines):
            line = prog.p.stdout.readline()
            assert line, prog.lines
            prog.lines.append(line.strip())
        r = attach(tmp_path, prog.p.pid, "--steps", 1)
        assert r.returncode == 0, r.stdout + r.stderr
        answered = time.monotonic_ns()
        first_after = None
        while True:
            line = prog.p.stdout.readline()
            assert line, prog.lines[-5:]
            word = line.split()
            if word[0] == "at" and int(word[2]) > answered:
                first_after = first_after if first_after is not None else int(word[1])
                if int(word[1]) >= first_after + 10:
                    break
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    events, lines, _ = trace(tmp_path / "traces")
    starts = [ln["args"] for ln in lines if ln["name"] == "trigger"]
    ends = [ln["args"] for ln in lines if ln["name"] == "trigger_end"]
    assert len(starts) == 1 and len(ends) == 1, lines
    assert ends[0]["time"] >= starts[0]["time"], (starts, ends)
    steps = work_steps(events)
    assert steps and steps == list(range(steps[0], steps[-1] + 1)), steps[-5:]
    at_trigger = max(e["args"]["step"] for e in events if e["ph"] == "X" and
                     e["name"] == "work" and e["ts"] <= starts[0]["time"])
    # The step in progress at the trigger, then one whole step.
    assert steps[-1] >= at_trigger + 1, (steps[-1], at_trigger)


def read_back(path, events):
    """`dftrace.read` of the file: as many complete events as the file holds."""
    try:
        import dftrace
        import pandas  # noqa: F401
    except ImportError as e:
        pytest.skip("dftrace.read not available here (%s): build the Python face and install "
                    "python3-pandas" % e)
    df = dftrace.read(path)
    assert len(df) == len([e for e in events if e["ph"] in ("X", "A")])


TORCH_LOOP = """
import os
import torch
import dftrace
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 4), torch.randn(8, 2)
""" + LOOP_HEAD + """    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()  # the automatic step ends here (dftrace.torch.auto under dftrace run)
    opt.zero_grad()
    if i == 0:
        print("ready", os.getpid(), flush=True)
    if off is not None and i >= off + 3:
        break
print("done", flush=True)
"""


def torch_loop(tmp_path, text, args=(), deep=False):
    """The PyTorch loop `text` started under `dftrace run --attach` (with `deep`: `--deep`, every
    model's layers too) with /usr/bin/python3 and its arguments `args` (a visible skip where the
    Python face or Debian's torch is missing)."""
    beside = os.path.join(os.path.dirname(os.path.dirname(CLI)), "bindings", "python")
    package = os.environ.get("DFTRACE_PYTHON_DIR") or beside
    if not os.path.exists(os.path.join(package, "dftrace", "_autostart", "sitecustomize.py")):
        pytest.skip("the Python face is not built (no dftrace package in %s)" % package)
    probe = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True,
                           timeout=WAIT_S)
    if probe.returncode != 0:
        pytest.skip("/usr/bin/python3 has no torch (Debian's python3-torch)")
    script = tmp_path / "loop.py"
    script.write_text(text)
    env = clean_env(tmp_path, DFTRACE_PYTHON="/usr/bin/python3")
    return Program([CLI, "run", "--attach", *(["--deep"] if deep else []), "--out",
                    str(tmp_path / "traces"), str(script), *args], env)


def test_level_torch_traces_only_the_pytorch_events_of_the_window(tmp_path):
    prog = torch_loop(tmp_path, TORCH_LOOP)
    try:
        pid = int(prog.expect("ready")[0])
        r = attach(tmp_path, pid, "--steps", 4, "--level", "torch")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "torch tracing for 4 steps" in r.stdout, r.stdout
        on, off = int(prog.expect("on")[0]), int(prog.expect("off")[0])
        prog.finish()
    finally:
        prog.kill()
    assert off == on + 4, (on, off)
    events, lines, _ = trace_of(tmp_path, pid)
    x = [e for e in events if e["ph"] == "X" and e["cat"] != "dftracer"]  # not start and end
    # PyTorch's events only (the AI tree's categories): not the script's own region, nor its
    # I/O; and of each kind one a step, four steps.
    assert {e["cat"] for e in x} == {"compute"}, {e["cat"] for e in x}
    count = {}
    for e in x:
        count[e["name"]] = count.get(e["name"], 0) + 1
    assert count == {"step": 4, "forward": 4, "backward": 4, "step.optimizer": 4}, count
    assert len(lines) == 1 and lines[0]["args"]["after"] == "4 steps", lines
    a = lines[0]["args"]
    assert all(a["from"] <= e["ts"] and e["ts"] + e["dur"] <= a["to"] for e in x), a


def test_level_io_in_an_aggregating_process_keeps_folding_the_rest(tmp_path):
    data, stop = tmp_path / "data", tmp_path / "stop"
    data.mkdir()
    env = clean_env(tmp_path, DFTRACE_AGGREGATION="1", ATTACH_PROG_STOP=stop)
    prog = Program([CLI, "run", "--out", str(tmp_path / "traces"), "--", "env",
                    "DFTRACE_ATTACH=1", PROG, "1000000", str(data)], env)
    try:
        prog.expect("ready")
        pid = prog.p.pid
        r = attach(tmp_path, pid, "--steps", 3, "--level", "io")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "io tracing for 3 steps" in r.stdout, r.stdout
        # Ten steps after the answer (the program's clock says which came after it).
        answered, first_after = time.monotonic_ns(), None
        while True:
            line = prog.p.stdout.readline()
            assert line, prog.lines
            word = line.split()
            if word[0] == "at" and int(word[2]) > answered:
                first_after = first_after if first_after is not None else int(word[1])
                if int(word[1]) >= first_after + 10:
                    break
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    events, lines, _ = trace_of(tmp_path, pid)
    x = [e for e in events if e["ph"] == "X" and e["cat"] != "dftracer"]
    # One by one: the I/O of the window's three steps only; the program's regions folded.
    assert {e["cat"] for e in x} == {"POSIX", "STDIO"}, {e["cat"] for e in x}
    steps = sorted({int(f.split("-")[1]) for (_, _, f) in files_by_event(events)
                    if f[:5] in ("posix", "stdio")})
    assert len(steps) == 3 and steps == list(range(steps[0], steps[0] + 3)), steps
    folded = {e["cat"] for e in events if e["ph"] == "A"}
    assert {"attach", "POSIX", "STDIO"} <= folded, folded
    assert len(lines) == 1 and lines[0]["args"]["after"] == "3 steps", lines


def wait_all_threads_stopped(pid, limit=30):
    """Waits until every thread of pid shows state T: SIGSTOP reaches each thread on its own."""
    deadline = time.time() + limit
    while time.time() < deadline:
        states = []
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        if states and all(st == "T" for st in states):
            return
        time.sleep(0.01)
    raise AssertionError("the process's threads did not all stop within %d s" % limit)


def test_no_answer_says_where_the_request_was_lost(tmp_path):
    # A waiting process that can not answer (stopped): after its 30 s, attach withdraws the
    # request and says what the channel and the process show.
    import signal
    prog = c_program(tmp_path)
    try:
        os.kill(prog.p.pid, signal.SIGSTOP)
        wait_all_threads_stopped(prog.p.pid)
        r = attach(tmp_path, prog.p.pid, "--steps", 2)
        os.kill(prog.p.pid, signal.SIGCONT)
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert "no answer within 30 s; the request is withdrawn (the request was not read " \
            "(PID.req is still there); the process is in state T; its dftrace-attach thread " \
            "(tid " in r.stderr and ") is in state T" in r.stderr, r.stderr
        assert not os.path.exists(tmp_path / "channel" / ("%d.req" % prog.p.pid))
    finally:
        prog.kill()


def parent_pid(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def two_readies(prog):
    """The pids of the first two "ready-PID" lines."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        words = [ln.split()[0] for ln in prog.lines if ln.split()]
        readies = [int(w[6:]) for w in words if w.startswith("ready-")]
        if len(readies) >= 2:
            return readies[:2]
        line = prog.p.stdout.readline()
        if not line:
            break
        prog.lines.append(line.strip())
    raise AssertionError("two processes never said ready: %r" % prog.lines)


def check_follower_trace(tmp_path, pid, parent, parent_line, steps):
    """The trace of a child that followed the parent's window: one attach line naming the
    parent's window, within it, and its events within its own [from, to]."""
    events, lines, _ = trace_of(tmp_path, pid)
    assert len(lines) == 1, lines
    line = lines[0]["args"]
    assert "the window of the parent (pid %d)" % parent in line["value"], line
    assert "ended as the parent's window ended" in line["value"], line
    assert line["after"] == "%d steps" % steps, line
    a, b = parent_line["from"], parent_line["to"]
    assert a <= line["from"] <= line["to"] and line["to"] >= b, (a, b, line)
    work = [e for e in events if e["ph"] == "X" and e["cat"] == "attach"]
    assert work and all(line["from"] <= e["ts"] <= line["to"] for e in work), (line, work)
    assert {e["pid"] for e in events if e["ph"] == "X"} == {pid}


def test_child_started_by_posix_spawn_follows_the_parents_window(tmp_path):
    # attach_prog `spawn` under dftrace run --attach (libdftrace_io preloaded, inherited by the
    # child): the child, a new image started by posix_spawn before the window, counts no step
    # of its own; it finds the parent's page in the channel and follows its window.
    prog = run_program(tmp_path, "-", "spawn")
    try:
        readies = two_readies(prog)
        # The child is the one whose parent is the other (posix_spawn: its OS parent).
        child = [p for p in readies if parent_pid(p) in readies][0]
        parent = [p for p in readies if p != child][0]
        r = attach(tmp_path, parent, "--steps", 30)
        assert r.returncode == 0, r.stdout + r.stderr
        p_on, p_off = (int(prog.expect("on-%d" % parent)[0]),
                       int(prog.expect("off-%d" % parent)[0]))
        prog.finish()
    finally:
        prog.kill()
    assert p_off - p_on == 30
    p_events, p_lines, _ = trace_of(tmp_path, parent)
    assert work_steps(p_events) == list(range(p_on, p_on + 30)), (work_steps(p_events), p_on)
    assert len(p_lines) == 1, p_lines
    check_follower_trace(tmp_path, child, parent, p_lines[0]["args"], 30)
    assert "on-%d" % child in " ".join(prog.lines), prog.lines


# A Python parent whose workers are started by multiprocessing's `spawn`: one before the window
# (A), one in it (B: started when the parent sees the window open). Each worker counts no step,
# says when it sees tracing on and off, and sets its event `seen` when it sees tracing on; the
# parent, once it sees the window open, starts B and waits for both events before its next step,
# so the window (in steps) stays open until both workers are in it, however late their threads
# wake. A worker ends three loops after "off", or at the parent's end when it never saw tracing
# on. (multiprocessing's resource tracker, started by exec before the window, follows it too.)
SPAWN_LOOP = """
import multiprocessing as mp
import os, time
import dftrace


# One write of the whole line: three processes share the pipe, and the built-in print writes
# its pieces apart when Python's output is unbuffered (lines of two processes would mix).
def print(*words, flush=False):
    os.write(1, (" ".join(map(str, words)) + "\\n").encode())


def worker(stop, ready, seen):
    seen_on, off, i = False, None, 0
    while not (stop.is_set() and (off is not None or not seen_on)):
        on = dftrace.is_enabled()
        if on and not seen_on:
            seen_on = True
            print("on-%d %d" % (os.getpid(), i), flush=True)
            seen.set()
        elif not on and seen_on and off is None:
            off = i
            print("off-%d %d" % (os.getpid(), i), flush=True)
        with dftrace.region("work", "attach", args={"step": i}):
            pass
        if i == 0:
            ready.set()
        if off is not None and i >= off + 3:
            break
        i += 1
        time.sleep(0.005)


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    ready_a, ready_b, seen_a, seen_b = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Event()
    a = ctx.Process(target=worker, args=(stop, ready_a, seen_a))
    a.start()
    ready_a.wait()
    print("ready", os.getpid(), a.pid, flush=True)
    b = None
""" + LOOP_HEAD.replace("""        print("on", i, flush=True)
""", """        print("on", i, flush=True)
        b = ctx.Process(target=worker, args=(stop, ready_b, seen_b))
        b.start()
        ready_b.wait()
        print("inside", b.pid, flush=True)
        seen_a.wait(120)
        seen_b.wait(120)
""").replace("\n", "\n    ") + """
        time.sleep(0.005)
        dftrace.step()
        if off is not None and i >= off + 3:
            break
    stop.set()
    a.join()
    b.join()
    print("done", flush=True)
"""


def test_workers_started_by_spawn_follow_the_parents_window(tmp_path):
    beside = os.path.join(os.path.dirname(os.path.dirname(CLI)), "bindings", "python")
    package = os.environ.get("DFTRACE_PYTHON_DIR") or beside
    if not os.path.exists(os.path.join(package, "dftrace", "_autostart", "sitecustomize.py")):
        pytest.skip("the Python face is not built (no dftrace package in %s)" % package)
    script = tmp_path / "spawner.py"
    script.write_text(SPAWN_LOOP)
    env = clean_env(tmp_path)
    prog = Program([CLI, "run", "--attach", "--out", str(tmp_path / "traces"), str(script)], env)
    try:
        parent, a = map(int, prog.expect("ready"))
        r = attach(tmp_path, parent, "--steps", 20)
        assert r.returncode == 0, r.stdout + r.stderr
        on = int(prog.expect("on")[0])
        b = int(prog.expect("inside")[0])
        off = int(prog.expect("off")[0])
        for w in (a, b):  # each worker switches on its own thread, after the parent
            prog.expect("off-%d" % w)
        prog.finish()
    finally:
        prog.kill()
    assert off == on + 20, (on, off)
    p_events, p_lines, _ = trace_of(tmp_path, parent)
    assert work_steps(p_events) == list(range(on, on + 20)), (work_steps(p_events), on)
    assert [ln["args"]["name"] for ln in p_lines] == ["attach"], p_lines
    for w in (a, b):
        check_follower_trace(tmp_path, w, parent, p_lines[0]["args"], 20)
        said = " ".join(prog.lines)
        assert "on-%d" % w in said and "off-%d" % w in said, (w, prog.lines)
    # Any other process that wrote a trace (the resource tracker, which follows the window too)
    # wrote a valid one whose lines name the parent's window alone.
    for name in os.listdir(tmp_path / "traces"):
        pid = int(name.rsplit("-", 2)[-2])
        if pid not in (parent, a, b):
            _, lines, _ = trace_of(tmp_path, pid)
            assert all("the window of the parent (pid %d)" % parent in ln["args"]["value"]
                       for ln in lines), lines
