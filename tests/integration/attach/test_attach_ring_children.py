"""test_attach_ring_children.py: what a process in ring mode passes on to its children
(docs/attach.md, "A process in ring mode"): a trigger in the parent (here from `dftrace trigger`
and `dftrace attach`) writes the ring of a child started by exec (posix_spawn) and of a forked
child, which keep full detail while the parent's lasts (and while a window of their own lasts:
each ends by itself), and opens a window of full tracing in a child not in ring mode that waits
for an attach; and the channel's files left by a process killed with SIGKILL, removed by the
next process that waits and by `dftrace attach`."""
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_attach import (CLI, PROG, WAIT_S, Program, attach, clean_env, trace_of,  # noqa: E402
                         two_readies, parent_pid)
import tracecheck as tc  # noqa: E402  (its folder on the path: test_attach puts it there)


def ring_program(tmp_path, mode, stop, **extra):
    env = clean_env(tmp_path, **{**dict(
        DFTRACE_ENABLE="1", DFTRACE_ATTACH="1", DFTRACE_OUTPUT_MODE="ring",
        DFTRACE_RING_SECONDS="60", DFTRACE_TRIGGER_STEP_FACTOR="0",
        DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"), ATTACH_PROG_STOP=stop), **extra})
    return Program([PROG, "1000000", "-", mode], env)


def steps_after(prog, n):
    """Reads the parent's "at STEP NS" lines until n steps began after now."""
    now = time.monotonic_ns()
    first = None
    while True:
        line = prog.p.stdout.readline()
        assert line, prog.lines
        prog.lines.append(line.strip())
        word = line.split()
        if word and word[0] == "at" and int(word[2]) > now:
            first = first if first is not None else int(word[1])
            if int(word[1]) >= first + n:
                return


def trigger(tmp_path, pid):
    """`dftrace trigger PID`, once the process has its trace open (its first writer pass)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        r = subprocess.run([CLI, "trigger", str(pid)], env=clean_env(tmp_path),
                           capture_output=True, text=True, timeout=WAIT_S)
        if r.returncode == 0 or "no trace in ring mode" not in r.stderr:
            break
        assert time.monotonic() < deadline, r.stderr
        time.sleep(0.1)
    assert r.returncode == 0, r.stdout + r.stderr


def check_child_window(tmp_path, child, parent, source_text):
    """The child's trace: its ring and its full detail, told by a trigger line of source
    `parent` naming the parent, closed by a trigger_end line; nothing after that end."""
    events, lines, _ = trace_of(tmp_path, child)
    starts = [ln["args"] for ln in lines if ln["name"] == "trigger"]
    ends = [ln["args"] for ln in lines if ln["name"] == "trigger_end"]
    assert len(starts) == 1 and len(ends) == 1, lines
    assert starts[0]["name"] == "parent", starts
    assert starts[0]["value"] == "%s (pid %d)" % (source_text, parent), starts
    assert starts[0]["after"] == "the parent's window", starts
    work = sorted(e["ts"] for e in events if e["ph"] == "X" and e["cat"] == "attach")
    # The ring (every region from the start: the ring holds 60 s), the window, then nothing.
    assert work and work[0] < starts[0]["time"] < work[-1], (work[:3], starts)
    assert work[-1] <= ends[0]["time"], (work[-1], ends)
    return starts[0], ends[0]


def test_a_trigger_in_a_ring_mode_parent_writes_the_ring_of_its_child_started_by_exec(tmp_path):
    # attach_prog `spawn` in ring mode: the child (posix_spawn of a copy, which counts no step)
    # finds the parent's page in the channel; `dftrace trigger PARENT` (the signal) writes the
    # parent's ring and 1 s of detail, and the child's ring and detail for as long.
    stop = tmp_path / "stop"
    prog = ring_program(tmp_path, "spawn", stop, DFTRACE_RING_AFTER="1s")
    try:
        readies = two_readies(prog)
        child = [p for p in readies if parent_pid(p) in readies][0]
        parent = [p for p in readies if p != child][0]
        time.sleep(0.3)  # (some of the child's regions in its ring before the trigger)
        trigger(tmp_path, parent)
        steps_after(prog, 10)
        time.sleep(1.5)  # the parent's second of detail over, and then some in the ring
        steps_after(prog, 10)
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    p_events, p_lines, _ = trace_of(tmp_path, parent)
    p_start = [ln["args"] for ln in p_lines if ln["name"] == "trigger"]
    p_end = [ln["args"] for ln in p_lines if ln["name"] == "trigger_end"]
    assert len(p_start) == 1 and p_start[0]["name"] == "signal", p_lines
    assert len(p_end) == 1, p_lines
    start, end = check_child_window(tmp_path, child, parent, "a trigger of the parent")
    # The child's window lies within the parent's, give or take its thread's wake.
    assert p_start[0]["time"] <= start["time"] <= p_end[0]["time"], (p_start, start, p_end)
    assert end["time"] >= p_end[0]["time"], (end, p_end)


def test_an_attach_window_of_a_ring_mode_parent_writes_the_ring_of_its_forked_child(tmp_path):
    # attach_prog `follow` in ring mode: the forked child counts no step; an attach of the
    # parent for 5 steps is its ring and 5 steps of detail, and the child's ring and detail
    # while the parent's lasts. The parent makes no step (its window stays open) until the
    # child's trace holds its trigger line and a region after it: the child is in the window
    # however late its thread wakes (one that wakes after the window closed takes it and
    # releases it at once, with no detail: the next test).
    stop, hold = tmp_path / "stop", tmp_path / "hold"
    prog = ring_program(tmp_path, "follow", stop, ATTACH_PROG_HOLD=hold)
    try:
        readies = two_readies(prog)
        child = [p for p in readies if parent_pid(p) in readies][0]
        parent = [p for p in readies if p != child][0]
        prog.expect("first-%d" % child)  # (its first region in its ring)
        hold.write_text("")
        r = attach(tmp_path, parent, "--steps", 5)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_for_detail(tmp_path, child)
        hold.unlink()
        steps_after(prog, 40)
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    _, p_lines, _ = trace_of(tmp_path, parent)
    p_start = [ln["args"] for ln in p_lines if ln["name"] == "trigger"]
    p_end = [ln["args"] for ln in p_lines if ln["name"] == "trigger_end"]
    assert len(p_start) == 1 and p_start[0]["name"] == "attach", p_lines
    assert len(p_end) == 1, p_lines
    start, end = check_child_window(tmp_path, child, parent, "a trigger of the parent")
    assert p_start[0]["time"] <= start["time"] <= p_end[0]["time"], (p_start, start, p_end)


def wait_for_detail(tmp_path, pid):
    """Waits until pid's trace (as it is being written) holds a whole member with a `work`
    region after the member with its trigger line (its ring): detail of its window."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        names = [f for f in os.listdir(tmp_path / "traces") if "-%d-" % pid in f]
        texts = [t for _, _, t in tc.members(str(tmp_path / "traces" / names[0]))
                 if t is not None] if names else []
        at = [i for i, t in enumerate(texts) if '"name":"trigger"' in t]
        if at and any('"name":"work"' in t for t in texts[at[0] + 1:]):
            return
        time.sleep(0.05)
    raise AssertionError("the trace of %d never held detail after its trigger" % pid)


def test_a_forked_child_that_wakes_after_the_parents_window_ended_still_takes_it(tmp_path):
    # The child's thread wakes after the parent's window opened and closed (a busy machine
    # wakes it late; here the child is stopped through the window): the parent's trigger still
    # writes the child's ring, with its trigger line and its trigger_end line.
    stop = tmp_path / "stop"
    prog = ring_program(tmp_path, "follow", stop)
    try:
        readies = two_readies(prog)
        child = [p for p in readies if parent_pid(p) in readies][0]
        parent = [p for p in readies if p != child][0]
        prog.expect("first-%d" % child)  # (its first region in its ring)
        os.kill(child, signal.SIGSTOP)
        try:
            r = attach(tmp_path, parent, "--steps", 5)
            assert r.returncode == 0, r.stdout + r.stderr
            wait_for_text(tmp_path, parent, '"name":"trigger_end"')  # the parent's window over
        finally:
            os.kill(child, signal.SIGCONT)
        wait_for_text(tmp_path, child, '"name":"trigger_end"')
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    events, lines, _ = trace_of(tmp_path, child)
    starts = [ln["args"] for ln in lines if ln["name"] == "trigger"]
    ends = [ln["args"] for ln in lines if ln["name"] == "trigger_end"]
    assert len(starts) == 1 and len(ends) == 1, lines
    assert starts[0]["name"] == "parent", starts
    assert starts[0]["value"] == "a trigger of the parent (pid %d)" % parent, starts
    assert [e["from"] for e in ends] == [starts[0]["time"]], (starts, ends)
    # Its ring from its first region on, up to the window's end.
    steps = sorted(e["args"]["step"] for e in events if e["ph"] == "X" and e["cat"] == "attach")
    assert steps and steps == list(range(len(steps))), steps


# ---- a child's own window and its parent's, each ended by itself

def wait_for_text(tmp_path, pid, text):
    """Waits until the whole members of pid's trace (as it is being written) hold text."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        names = [f for f in os.listdir(tmp_path / "traces") if "-%d-" % pid in f]
        if names and any(t is not None and text in t
                         for _, _, t in tc.members(str(tmp_path / "traces" / names[0]))):
            return
        time.sleep(0.05)
    raise AssertionError("the trace of %d never held %r" % (pid, text))


def own_and_parent_windows(tmp_path, prog, child):
    """The child's trigger lines (its own, source `attach`, then the parent's), its trigger_end
    lines, and the steps of the `work` regions in its trace against all it made (0 to the N of
    its "end-PID N" line)."""
    end = [ln.split()[1] for ln in prog.lines if ln.startswith("end-%d " % child)]
    assert len(end) == 1, prog.lines
    events, lines, _ = trace_of(tmp_path, child)
    starts = [ln["args"] for ln in lines if ln["name"] == "trigger"]
    ends = [ln["args"] for ln in lines if ln["name"] == "trigger_end"]
    assert [s["name"] for s in starts] == ["attach", "parent"], starts
    steps = sorted(e["args"]["step"] for e in events if e["ph"] == "X" and e["cat"] == "attach")
    return starts, ends, steps, list(range(int(end[0]) + 1))


def test_a_forked_child_keeps_its_own_window_when_the_parents_ends_first(tmp_path):
    # The forked child (`follow`: it counts no step, so a window of 3 steps of its own lasts
    # until it ends) is attached first, then its ring-mode parent for 5 steps, which the child
    # follows. The parent's window closing ends the child's following of it (its trigger_end
    # line, from the parent's trigger), not the child's own window: every region the child made
    # until its end is in its trace (its ring holds them all from the start, 60 s).
    stop = tmp_path / "stop"
    prog = ring_program(tmp_path, "follow", stop, DFTRACE_TRIGGER_MIN_GAP="1ms")
    try:
        readies = two_readies(prog)
        child = [p for p in readies if parent_pid(p) in readies][0]
        parent = [p for p in readies if p != child][0]
        for pid, steps in ((child, 3), (parent, 5)):
            r = attach(tmp_path, pid, "--steps", steps)
            assert r.returncode == 0, r.stdout + r.stderr
        wait_for_text(tmp_path, child, '"name":"trigger_end"')  # the parent's window over there
        steps_after(prog, 20)
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    starts, ends, steps, made = own_and_parent_windows(tmp_path, prog, child)
    assert starts[0]["after"] == "3 steps", starts
    assert [e["from"] for e in ends] == [starts[1]["time"]], (starts, ends)
    assert steps == made, (steps[-3:], made[-3:])


@pytest.mark.parametrize("min_gap", ["1ms", "10s"])
def test_a_forked_child_keeps_its_parents_window_when_its_own_ends_first(tmp_path, min_gap):
    # The other way round: the child's own window is 1 s, the parent's lasts until it ends (a
    # window of many steps). The child's own window ends by its time (its trigger_end line,
    # from its own trigger), not the parent's: every region the child made until its end is in
    # its trace. The child's trigger.min_gap (10 s: the default) does not refuse the parent's
    # window, held to the parent's own.
    stop = tmp_path / "stop"
    prog = ring_program(tmp_path, "follow", stop, DFTRACE_TRIGGER_MIN_GAP=min_gap)
    try:
        readies = two_readies(prog)
        child = [p for p in readies if parent_pid(p) in readies][0]
        parent = [p for p in readies if p != child][0]
        r = attach(tmp_path, child, "--for", "1s")
        assert r.returncode == 0, r.stdout + r.stderr
        r = attach(tmp_path, parent, "--steps", 1000000)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_for_text(tmp_path, child, '"name":"parent"')  # the parent's window taken there
        wait_for_text(tmp_path, child, '"name":"trigger_end"')  # its own second over
        steps_after(prog, 20)
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    starts, ends, steps, made = own_and_parent_windows(tmp_path, prog, child)
    assert starts[0]["after"] == "1s", starts
    # (the parent's window ends with the parent's trace, which the child may see before its end)
    froms = [e["from"] for e in ends]
    assert froms[0] == starts[0]["time"], (starts, ends)
    assert froms[1:] in ([], [starts[1]["time"]]), (starts, ends)
    assert steps == made, (steps[-3:], made[-3:])


def test_a_child_not_in_ring_mode_follows_the_trigger_of_its_ring_mode_parent_as_a_window(
        tmp_path):
    # The child started by exec is not traced (DFTRACE_ENABLE=0, file mode) and waits for an
    # attach: the parent's trigger opens a window of full tracing in it, closed when the
    # parent's full detail ends.
    stop = tmp_path / "stop"
    prog = ring_program(tmp_path, "spawn", stop, DFTRACE_RING_AFTER="1s",
                        ATTACH_PROG_CHILD_OFF="1")
    try:
        readies = two_readies(prog)
        child = [p for p in readies if parent_pid(p) in readies][0]
        parent = [p for p in readies if p != child][0]
        time.sleep(0.3)
        trigger(tmp_path, parent)
        steps_after(prog, 10)
        time.sleep(1.5)  # the parent's second of detail over
        steps_after(prog, 10)
        stop.write_text("")
        prog.finish()
    finally:
        prog.kill()
    said = " ".join(prog.lines)
    assert "on-%d" % child in said and "off-%d" % child in said, prog.lines
    _, p_lines, _ = trace_of(tmp_path, parent)
    p_start = [ln["args"] for ln in p_lines if ln["name"] == "trigger"]
    p_end = [ln["args"] for ln in p_lines if ln["name"] == "trigger_end"]
    assert len(p_start) == 1 and len(p_end) == 1, p_lines
    events, lines, _ = trace_of(tmp_path, child)
    assert len(lines) == 1, lines
    line = lines[0]["args"]
    assert line["name"] == "attach", line
    assert line["value"] == ("dftrace attach: full tracing for the parent's full detail, after a "
                             "trigger of the parent (pid %d); ended as the parent's window ended"
                             % parent), line
    work = [e["ts"] for e in events if e["ph"] == "X" and e["cat"] == "attach"]
    assert work and all(line["from"] <= t <= line["to"] for t in work), (line, work)
    assert p_start[0]["time"] <= line["from"] and line["to"] >= p_end[0]["time"], (p_start, line)


# ---- the channel's files of processes that are gone

def channel_files(channel):
    return sorted(os.listdir(channel)) if os.path.isdir(channel) else []


def killed_waiter(tmp_path, channel):
    """A waiting process killed by SIGKILL: its PID.page and PID.ready stay in the channel."""
    env = clean_env(tmp_path, channel, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    prog = Program([PROG, "1000000"], env)
    prog.expect("ready")
    pid = prog.p.pid
    assert {"%d.page" % pid, "%d.ready" % pid} <= set(channel_files(channel)), \
        channel_files(channel)
    prog.p.send_signal(signal.SIGKILL)
    prog.p.wait()
    prog.p.stdout.close()
    prog.p.stderr.close()
    assert {"%d.page" % pid, "%d.ready" % pid} <= set(channel_files(channel))
    return pid


def reused_pid_files(channel, dead):
    """The killed process's files under the name of a live process (this test's pid): what a
    pid reused by another process looks like (the start time they hold is not its)."""
    me = os.getpid()
    with open(os.path.join(channel, "%d.page" % dead), "rb") as f:
        page = bytearray(f.read())
    page[8:16] = me.to_bytes(8, sys.byteorder)  # its owner's pid (channel_page_head)
    with open(os.path.join(channel, "%d.page" % me), "wb") as f:
        f.write(page)
    with open(os.path.join(channel, "%d.ready" % dead)) as f:
        text = f.read().replace("pid %d\n" % dead, "pid %d\n" % me)
    with open(os.path.join(channel, "%d.ready" % me), "w") as f:
        f.write(text)
    os.chmod(os.path.join(channel, "%d.page" % me), 0o600)
    os.chmod(os.path.join(channel, "%d.ready" % me), 0o600)
    return me


def test_the_next_waiting_process_removes_the_files_of_a_killed_one(tmp_path):
    channel = str(tmp_path / "channel")
    dead = killed_waiter(tmp_path, channel)
    me = reused_pid_files(channel, dead)
    keep = os.path.join(channel, "notes.txt")  # not a process's: left alone
    open(keep, "w").close()
    os.chmod(keep, 0o600)
    env = clean_env(tmp_path, channel, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    prog = Program([PROG, "1000000"], env)
    try:
        prog.expect("ready")
        files = channel_files(channel)
        assert not [f for f in files if f.startswith(("%d." % dead, "%d." % me))], files
        assert {"%d.page" % prog.p.pid, "%d.ready" % prog.p.pid, "notes.txt"} <= set(files)
    finally:
        prog.kill()


def test_dftrace_attach_removes_the_files_of_a_killed_process(tmp_path):
    channel = str(tmp_path / "channel")
    dead = killed_waiter(tmp_path, channel)
    r = attach(tmp_path, "--all", tmp_path / "traces", channel=channel)
    assert r.returncode == 1 and "no process that waits" in r.stderr, r.stdout + r.stderr
    assert not [f for f in channel_files(channel) if f.startswith("%d." % dead)], \
        channel_files(channel)
