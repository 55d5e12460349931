"""test_ring.py: the flight recorder (output.mode: ring; docs/flight-recorder.md), from a C
program (ring_prog.c): what a trigger writes (the window before it, full detail after it, a
trigger line), slow steps, the trigger signal (and a signal the program ignores left alone), no
trigger (only the header, metadata, aggregated records and the end line), and the memory bound at
a high event rate, a forked child's own ring, a burst's drops counted exactly, and ring.direct
(the dump with O_DIRECT: around the page cache on a disk, through it where the file system
refuses O_DIRECT, one message on a full file system). Every trace passes `dftrace validate` and is read
by `dftrace.read`, the same events as the file holds."""
import json
import os
import resource
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]
PROG = os.path.join(BIN, "ring_prog")


def ring_env(tmp_path, **extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("DFTRACE_", "DFTRACER_")) or k == "LD_PRELOAD":
            del env[k]
    env.update(DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"),
               DFTRACE_OUTPUT_MODE="ring", DFTRACE_CORE_AFFINITY="0")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(tmp_path, *args, **env):
    p = subprocess.run([PROG, *map(str, args)], env=ring_env(tmp_path, **env),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return p


def read_back(path, events):
    """`dftrace.read` of the file: its complete events and aggregated records, as many as the
    file holds, at the same times (in ns; the file's unit is the default, us)."""
    try:
        import dftrace
        import pandas  # noqa: F401
    except ImportError as e:  # the Python face is off, or Debian's pandas is missing
        pytest.skip("dftrace.read not available here (%s): build the Python face and install "
                    "python3-pandas" % e)
    df = dftrace.read(path)
    want = [e for e in events if e["ph"] in ("X", "A")]
    assert len(df) == len(want), (len(df), len(want))
    assert sorted(zip(df["ph"], df["ts"])) == sorted((e["ph"], e["ts"] * 1000) for e in want)


def trace(tmp_path, path=None):
    """The process's trace: valid for `dftrace validate`, with whole members and lines, read
    back whole by `dftrace.read`; its events, its trigger lines and its end line."""
    path = path or tc.only_file(str(tmp_path / "traces"))
    v = subprocess.run([CLI, "validate", path], capture_output=True, text=True, timeout=120)
    assert v.returncode == 0, v.stdout + v.stderr
    tc.check_members(path)
    events = tc.load(path)
    # Every line but the trigger and trigger_end lines (which, as the budget lines, carry no id) and the
    # aggregated records as any trace's.
    tc.check_format([e for e in events
                     if e["name"] not in ("trigger", "trigger_end") and e["ph"] != "A"])
    end = events[-1]
    assert end["name"] == "end" and end["cat"] == "dftracer", end
    triggers = [e for e in events if e["ph"] == "M" and e["name"] == "trigger"]
    read_back(path, events)
    return events, triggers, end


def work(events):
    return [e for e in events if e["ph"] == "X" and e["cat"] == "ring" and e["name"] == "work"]


def unit_us(seconds):
    return int(seconds * 1e6)


def test_api_trigger_writes_the_second_before_and_after(tmp_path):
    # 5 s of regions, a trigger at 3 s; a window of 1 s, full detail for 1 s after.
    p = run(tmp_path, "api", 5, 3, DFTRACE_RING_SECONDS="1", DFTRACE_RING_AFTER="1s")
    made = int(p.stdout.split("regions ")[1])  # one every 2 ms or so: fewer on a busy machine
    events, triggers, end = trace(tmp_path)
    assert len(triggers) == 1, triggers
    t = triggers[0]["args"]
    assert t["name"] == "api" and t["value"] == "at 3 s" and t["after"] == "1s", t
    assert t["time"] - t["from"] == unit_us(1), t
    w = work(events)
    ts = sorted(e["ts"] for e in w)
    quarter, slack = unit_us(0.25), unit_us(0.1)
    # The second before the trigger, to within a quarter of it (members close every quarter).
    assert t["from"] - quarter - slack <= ts[0] <= t["from"] + slack, (ts[0], t)
    # Then full detail for a second after it, and nothing later.
    assert t["time"] + unit_us(1) - slack <= ts[-1] <= t["time"] + unit_us(1) + quarter + slack
    # Everything in between: no region missing (their numbers follow on, whatever time a busy
    # machine put between them).
    n = [e["args"]["n"] for e in sorted(w, key=lambda e: e["ts"])]
    assert n == list(range(n[0], n[0] + len(n))), (n[:3], n[-3:], len(n))
    # The rest of the run was let go, and the end line says so: its count is what the file
    # holds, and every other region the program made (those before the window, numbers from 0,
    # and those after it) is counted as discarded by the ring, none dropped. (How many fall on
    # either side depends on how fast a busy machine let the program make them.)
    assert end["args"]["num_events"] == len(w)
    assert end["args"]["dropped_events"] == 0
    assert n[0] > 0 and n[-1] < made, (n[0], n[-1], made)
    assert end["args"]["ring_discarded_events"] == made - len(w), (end["args"], made, len(w))
    # The window's end: the trigger_end line, when full detail ended (after every event of it).
    (e,) = [x for x in events if x["ph"] == "M" and x["name"] == "trigger_end"]
    assert (e["args"]["name"], e["args"]["from"]) == ("api", t["time"]), e
    to = e["args"]["time"]
    assert t["time"] + unit_us(1) <= to <= t["time"] + unit_us(1) + quarter + slack, (to, t)
    assert max(x["ts"] + x["dur"] for x in w) <= to
    stat = subprocess.run([CLI, "stat", tc.only_file(str(tmp_path / "traces"))],
                          capture_output=True, text=True, timeout=60)
    assert stat.returncode == 0 and "trigger at %d" % t["time"] in stat.stdout, stat.stdout
    assert "api: at 3 s; window from %d to %d" % (t["from"], to) in stat.stdout, stat.stdout
    js = subprocess.run([CLI, "stat", "--json", tc.only_file(str(tmp_path / "traces"))],
                        capture_output=True, text=True, timeout=60)
    got = json.loads(js.stdout)["triggers"]
    assert [(g["source"], g["reason"], g["time"], g["from"], g["to"]) for g in got] == [
        ("api", "at 3 s", t["time"], t["from"], to)]


def test_slow_step_writes_the_step_and_the_steps_after(tmp_path):
    # 20 steps of about 100 ms; step 6 (the 7th) lasts about 5 s; a window of 1 s; full detail
    # for the 2 steps after it. A busy machine stretches the normal steps' 2 ms sleeps far more
    # than the slow step's 100 ms ones (a median step of 100 to 400 ms) and may hold one step
    # up for half a second: the slow step stays over 10 times the median, a held-up one under 5.
    run(tmp_path, "steps", 20, 6, 100, DFTRACE_RING_SECONDS="1", DFTRACE_RING_AFTER="2",
        DFTRACE_TRIGGER_STEP_FACTOR="5")
    events, triggers, end = trace(tmp_path)
    assert len(triggers) == 1, triggers
    t = triggers[0]["args"]
    assert t["name"] == "slow_step" and t["value"].startswith("step 6 lasted "), t
    assert t["after"] == "2 steps", t
    w = work(events)
    steps = sorted({e["args"]["step"] for e in w})
    # The slow step's last second, and the two steps after it in full; a third one may have
    # begun by the time the writer looked; nothing before the window.
    assert steps[:3] == [6, 7, 8] and steps[-1] <= 9, steps
    slow = sorted(e["ts"] for e in w if e["args"]["step"] == 6)
    assert t["from"] - unit_us(0.35) <= slow[0] <= t["from"] + unit_us(0.1), (slow[0], t)
    after = [e for e in w if e["args"]["step"] in (7, 8)]
    assert len(after) == 2 * 50, len(after)  # every region of the steps after it
    outer = [e for e in events if e["name"] == "step" and e["cat"] == "ring"]
    assert 6 in [e["args"]["step"] for e in outer], outer
    # dftrace stat: the window with its slow step beside the median step, and its end.
    (e,) = [x for x in events if x["ph"] == "M" and x["name"] == "trigger_end"]
    stat = subprocess.run([CLI, "stat", tc.only_file(str(tmp_path / "traces"))],
                          capture_output=True, text=True, timeout=60)
    assert "slow_step: %s; window from %d to %d" % (t["value"], t["from"], e["args"]["time"]) \
        in stat.stdout, stat.stdout
    assert "x the median step (" in t["value"], t


def test_trigger_signal_from_another_process(tmp_path):
    p = subprocess.Popen([PROG, "wait", "4"], env=ring_env(tmp_path, DFTRACE_RING_SECONDS="1",
                                                         DFTRACE_RING_AFTER="1s"),
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    os.kill(p.pid, signal.SIGUSR2)
    p.stdout.read()
    assert p.wait(timeout=60) == 0
    events, triggers, end = trace(tmp_path)
    assert [(x["args"]["name"], x["args"]["value"]) for x in triggers] == [("signal", "SIGUSR2")]
    assert len(work(events)) > 0
    assert end["args"]["ring_discarded_events"] > 0


@pytest.mark.parametrize("how", ["pid", "all"])
def test_dftrace_trigger_from_another_process(tmp_path, how):
    p = subprocess.Popen([PROG, "wait", "4"], env=ring_env(tmp_path, DFTRACE_RING_SECONDS="1",
                                                         DFTRACE_RING_AFTER="1s"),
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    args = [str(p.pid)] if how == "pid" else ["--all", str(tmp_path / "traces")]
    t = subprocess.run([CLI, "trigger", *args], capture_output=True, text=True, timeout=60)
    assert t.returncode == 0 and "pid %d: USR2 sent" % p.pid in t.stdout, t.stdout + t.stderr
    p.stdout.read()
    assert p.wait(timeout=60) == 0
    events, triggers, end = trace(tmp_path)
    assert [(x["args"]["name"], x["args"]["value"]) for x in triggers] == [("signal", "SIGUSR2")]


def test_dftrace_trigger_never_signals_a_process_dftrace_does_not_trace(tmp_path):
    # A process that is not in ring mode (a pid reused by another program, say): SIGUSR2 would
    # end it. It is not sent.
    p = subprocess.Popen(["sleep", "30"])
    try:
        t = subprocess.run([CLI, "trigger", str(p.pid)], capture_output=True, text=True,
                           timeout=60)
        assert t.returncode == 1 and "not signalled" in t.stderr, t.stderr
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_dftrace_trigger_refuses_another_users_process(tmp_path):
    if os.geteuid() == 0:  # root: a process of the user nobody
        p = subprocess.Popen(["sleep", "30"], preexec_fn=lambda: os.setuid(65534))
        pid = p.pid
    else:
        p, pid = None, 1  # init, root's
    try:
        t = subprocess.run([CLI, "trigger", str(pid)], capture_output=True, text=True, timeout=60)
        assert t.returncode == 1, t.stdout + t.stderr
        assert t.stderr.strip().endswith("another user's process; only its owner can trigger it")
        assert len(t.stderr.strip().splitlines()) == 1
    finally:
        if p:
            p.kill()
            p.wait()


def test_a_signal_the_program_ignores_is_left_alone(tmp_path):
    # SIGUSR2 ignored (inherited through exec): dftrace does not take it; the program lives.
    def ignore():
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    p = subprocess.Popen([PROG, "wait", "3"], env=ring_env(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=ignore)
    assert p.stdout.readline() == "ready\n"
    os.kill(p.pid, signal.SIGUSR2)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0
    assert "trigger.signal: signal %d is handled or ignored" % signal.SIGUSR2 in err, err
    events, triggers, end = trace(tmp_path)
    assert triggers == [] and work(events) == []


def test_a_crash_writes_the_window_before_it(tmp_path):
    p = subprocess.run([PROG, "crash", "3"], env=ring_env(tmp_path, DFTRACE_RING_SECONDS="1"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGSEGV, (p.returncode, p.stderr)
    events, triggers, end = trace(tmp_path)
    assert [(x["args"]["name"], x["args"]["value"]) for x in triggers] == [("crash", "SIGSEGV")]
    assert end["args"]["signal"] == "SIGSEGV", end
    ts = sorted(e["ts"] for e in work(events))
    t = triggers[0]["args"]
    # The last second before the crash (a quarter more at most), up to the crash.
    assert t["from"] - unit_us(0.35) <= ts[0] <= t["from"] + unit_us(0.1), (ts[0], t)
    assert ts[-1] >= t["time"] - unit_us(0.1), (ts[-1], t)
    assert end["args"]["num_events"] == len(ts)


@pytest.mark.parametrize("aggregate", [False, True])
def test_no_trigger_leaves_only_header_metadata_and_end(tmp_path, aggregate):
    extra = {"DFTRACE_AGGREGATION": "1"} if aggregate else {}
    p = run(tmp_path, "wait", 2, DFTRACE_RING_SECONDS="1", DFTRACE_TRIGGER_SIGNAL="none", **extra)
    made = int(p.stdout.split("regions ")[1])  # one every 2 ms or so: fewer on a busy machine
    assert made > 10, p.stdout
    events, triggers, end = trace(tmp_path)
    assert triggers == [] and work(events) == []
    kinds = {(e["ph"], e["cat"] if e["ph"] != "M" else "dftracer") for e in events}
    want = {("M", "dftracer"), ("X", "dftracer")} | ({("A", "ring")} if aggregate else set())
    assert kinds == want, kinds
    if aggregate:  # the totals stay exact for the whole run
        folded = sum(e["args"]["dft_cnt"] for e in events if e["ph"] == "A")
        assert folded == made and end["args"]["ring_discarded_events"] == 0, (folded, made, end)
    else:
        assert end["args"]["ring_discarded_events"] >= made, (made, end)


def test_memory_stays_within_the_ring_at_a_high_event_rate(tmp_path):
    # 3 M regions with values that do not compress away: about 60 MB of members, which a ring
    # that kept them would hold. With ring.bytes at 1 MiB the process's high-water mark stays
    # within that of the same run writing its file, plus the ring and 8 MiB.
    n = 3000000

    def hwm_kib(where, **env):
        p = subprocess.run([PROG, "fast", str(n)], capture_output=True, text=True, timeout=300,
                           env=ring_env(where, DFTRACE_OUTPUT_QUEUE_BYTES="4MiB", **env))
        assert p.returncode == 0, p.stderr
        return int(p.stdout.split()[-1])

    normal = hwm_kib(tmp_path / "normal", DFTRACE_OUTPUT_MODE="file")
    written = os.path.getsize(tc.only_file(str(tmp_path / "normal" / "traces")))
    ring = hwm_kib(tmp_path, DFTRACE_RING_BYTES="1MiB", DFTRACE_RING_SECONDS="3600")
    slack_kib = (1 + 8) * 1024
    assert written > 4 * slack_kib * 1024, written  # a ring that kept them all would go over
    assert ring < normal + slack_kib, (ring, normal, written)
    events, triggers, end = trace(tmp_path)
    assert work(events) == [] and end["args"]["ring_discarded_events"] == n
    assert end["args"]["dropped_events"] == 0


@pytest.mark.parametrize("queue_mib", [None, 16])
def test_memory_within_the_ring_and_the_queue_over_many_windows(tmp_path, queue_mib):
    # 3 M regions as fast as one thread makes them (about 60 MB of members: the 8 MiB ring is
    # filled and let go several times over). The process's high-water mark stays within that of
    # the same program with tracing off, plus ring.bytes, output.queue_bytes (the records
    # waiting for the writer) and 12 MiB: the writer's members in progress (a few of
    # output.member_bytes at a time, whatever the backlog a pass takes), its compressors and the
    # library's own state (docs/flight-recorder.md, "Memory"). With output.queue_bytes not set
    # (None: 4 MiB in ring mode), that is within ring.bytes + 16 MiB.
    n, ring_mib = 3000000, 8

    def hwm_kib(where, **env):
        p = subprocess.run([PROG, "fast", str(n)], capture_output=True, text=True, timeout=300,
                           env=ring_env(where, **env))
        assert p.returncode == 0, p.stderr
        return int(p.stdout.split()[-1])

    off = hwm_kib(tmp_path / "off", DFTRACE_ENABLE="0")
    queue = {} if queue_mib is None else {"DFTRACE_OUTPUT_QUEUE_BYTES": "%dMiB" % queue_mib}
    ring = hwm_kib(tmp_path, DFTRACE_RING_BYTES="%dMiB" % ring_mib, DFTRACE_RING_SECONDS="3600",
                   **queue)
    beside_mib = 16 if queue_mib is None else queue_mib + 12
    bound_kib = off + (ring_mib + beside_mib) * 1024
    assert ring < bound_kib, (ring, off, bound_kib)
    events, triggers, end = trace(tmp_path)
    assert work(events) == [] and end["args"]["ring_discarded_events"] == n
    assert end["args"]["dropped_events"] == 0


def test_a_burst_with_on_full_drop_counts_exactly_the_events_it_drops(tmp_path):
    # Four threads make 100 k regions each as fast as they can, with output.on_full: drop and
    # a queue of 64 KiB (four members of 16 KiB): the writer falls behind and drops chunks
    # (the chunks a pass took count against the queue in ring mode). Then a trigger writes
    # the ring, which holds every region kept. The trace is exact about what it lacks: each
    # region is in it once, or counted in the end line's dropped_events, or in its
    # ring_discarded_events.
    threads, n = 4, 100000
    p = run(tmp_path, "burst", threads, n, DFTRACE_OUTPUT_ON_FULL="drop",
            DFTRACE_OUTPUT_QUEUE_BYTES="64KiB", DFTRACE_OUTPUT_MEMBER_BYTES="16KiB",
            DFTRACE_RING_BYTES="64MiB", DFTRACE_RING_SECONDS="3600")
    assert p.stdout.startswith("trigger 1, made %d" % (threads * n)), p.stdout
    events, triggers, end = trace(tmp_path)
    assert [x["args"]["value"] for x in triggers] == ["burst"], triggers
    got = [(e["args"]["t"], e["args"]["i"]) for e in work(events)]
    assert len(set(got)) == len(got), len(got) - len(set(got))
    dropped = end["args"]["dropped_events"]
    discarded = end["args"]["ring_discarded_events"]
    assert dropped > 0, end  # the queue can not hold a burst of 400 k regions
    assert len(got) + dropped + discarded == threads * n, (len(got), dropped, discarded)


@pytest.mark.parametrize("queue", [None, "64KiB"])
def test_the_writer_uses_the_sizes_the_configuration_shows(tmp_path, queue):
    # The running process's configuration (dftrace_config_describe, from the sizes its writer
    # was made with): the queue is 4 MiB in ring mode unless output.queue_bytes was set, and a
    # queue set (64 KiB, four members of 16 KiB) is kept as it is; members are closed at least
    # every ring.seconds / 4 and hold at most ring.bytes / 4.
    env = dict(DFTRACE_RING_SECONDS="2", DFTRACE_RING_BYTES="256KiB",
               DFTRACE_OUTPUT_MEMBER_BYTES="16KiB" if queue else "1MiB")
    if queue:
        env["DFTRACE_OUTPUT_QUEUE_BYTES"] = queue
    p = run(tmp_path, "config", 100, **env)
    lines = dict(l.split(" = ", 1) for l in p.stdout.splitlines() if " = " in l)
    assert lines["output.queue_bytes"] == (
        "65536  (env DFTRACE_OUTPUT_QUEUE_BYTES)" if queue
        else "%d  (default in ring mode)" % (4 << 20)), lines["output.queue_bytes"]
    assert lines["output.flush_interval"] == "0.5s  (default, at most ring.seconds / 4 in ring mode)"
    assert lines["output.member_bytes"] == (
        "16384  (env DFTRACE_OUTPUT_MEMBER_BYTES)" if queue
        else "65536  (env DFTRACE_OUTPUT_MEMBER_BYTES, at most ring.bytes / 4 in ring mode)")
    events, triggers, end = trace(tmp_path)
    assert triggers == [] and end["args"]["ring_discarded_events"] == 100, end


def test_several_windows(tmp_path):
    # Two signals 1.5 s apart: two windows, each with its trigger line, in one valid file.
    p = subprocess.Popen([PROG, "wait", "5"], env=ring_env(
        tmp_path, DFTRACE_RING_SECONDS="0.5", DFTRACE_RING_AFTER="0.5s",
        DFTRACE_TRIGGER_MIN_GAP="1"), stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    os.kill(p.pid, signal.SIGUSR2)
    time.sleep(1.5)
    os.kill(p.pid, signal.SIGUSR2)
    p.stdout.read()
    assert p.wait(timeout=60) == 0
    events, triggers, end = trace(tmp_path)
    assert [x["args"]["value"] for x in triggers] == ["SIGUSR2", "SIGUSR2"], triggers
    first, second = (x["args"] for x in triggers)
    ts = sorted(e["ts"] for e in work(events))
    # Nothing between the first window's full detail and the second window's start.
    between = [t for t in ts if first["time"] + unit_us(0.5 + 0.25 + 0.1) < t
               < second["from"] - unit_us(0.25 + 0.1)]
    assert between == [] and ts[0] < first["time"] < second["from"] < ts[-1], (first, second)


def test_a_forked_child_has_its_own_ring(tmp_path):
    # The parent's ring holds its 2 s before the fork; the child's ring starts empty (its
    # window of 4 s would reach back before the fork if it held the parent's members), has its
    # own file, and takes `dftrace trigger CHILD`; the parent's trigger after the child ended
    # writes the parent's window across the fork, and none of the child's events.
    env = ring_env(tmp_path, DFTRACE_RING_SECONDS="4", DFTRACE_RING_AFTER="0.2s",
                   DFTRACE_LOG_LEVEL="info")
    p = subprocess.Popen([PROG, "fork", "3"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    assert line[0] == "child", line
    child = int(line[1])
    t = subprocess.run([CLI, "trigger", str(child)], capture_output=True, text=True, timeout=60)
    assert t.returncode == 0 and "pid %d: USR2 sent" % child in t.stdout, t.stdout + t.stderr
    rest = p.stdout.read()
    assert p.wait(timeout=60) == 0 and "parent trigger 1" in rest, rest
    files = sorted(os.listdir(tmp_path / "traces"))
    assert len(files) == 2, files
    by_pid = {}
    for f in files:
        events, triggers, end = trace(tmp_path, str(tmp_path / "traces" / f))
        pids = {e["pid"] for e in events}
        assert len(pids) == 1, (f, pids)
        by_pid[pids.pop()] = (events, triggers, end)
    assert child in by_pid and p.pid in by_pid, (child, p.pid, list(by_pid))
    c_events, c_triggers, _ = by_pid[child]
    p_events, p_triggers, _ = by_pid[p.pid]
    assert [(x["args"]["name"], x["args"]["value"]) for x in c_triggers] == [("signal", "SIGUSR2")]
    assert [(x["args"]["name"], x["args"]["value"]) for x in p_triggers] == [("api", "parent")]
    # ring.direct auto (the default) decided for each file, the child's again (said once a
    # file): both files lie in one directory, so both decided alike.
    said = [l for l in p.stderr.read().splitlines() if "ring.direct auto" in l]
    assert sorted(int(l.split("-app.pfw")[0].rsplit("-", 1)[1]) for l in said) == \
        sorted([child, p.pid]), said
    fs, on = auto_expectation(str(tmp_path / "traces"))
    for x in c_triggers + p_triggers:
        assert x["args"]["direct"].startswith("auto: on, " if on else "auto: off, "), (x, fs)
    c_ms = sorted(e["args"]["ms"] for e in work(c_events))
    p_ms = sorted(e["args"]["ms"] for e in work(p_events))
    # The child's window: its own regions only, from the fork (at 2 s) on.
    assert c_ms and c_ms[0] >= 2000, c_ms[:5]
    # The parent's window: its regions from before the fork through the child's life, whole.
    assert p_ms[0] < 1500 and p_ms[-1] > c_ms[-1], (p_ms[:3], p_ms[-3:], c_ms[-1])
    p_n = sorted(e["args"]["n"] for e in work(p_events))  # none missing across the fork
    assert p_n == list(range(p_n[0], p_n[0] + len(p_n))), (p_n[:3], p_n[-3:], len(p_n))


@pytest.mark.parametrize("after", ["2s", "1ms"])
def test_a_trigger_on_a_busy_writer_keeps_every_event_after_the_rings_first(tmp_path, after):
    # 1 M regions, then a trigger at once: the writer is still formatting and compressing the
    # backlog when it comes, and takes it between its chunks and members. What is written is the
    # ring (its oldest member's first event on) and every event after it, in order, none twice.
    # Every region was committed before the trigger, so none goes back to the ring even when
    # full detail ends (1ms) long before the writer has taken the backlog.
    n = 1000000
    p = run(tmp_path, "latency", n, DFTRACE_RING_BYTES="4MiB", DFTRACE_RING_SECONDS="3600",
            DFTRACE_RING_AFTER=after)
    assert p.stdout.startswith("trigger 1,"), p.stdout
    events, triggers, end = trace(tmp_path)
    assert [x["args"]["value"] for x in triggers] == ["latency"], triggers
    ids = [e["args"]["i"] for e in work(events)]
    assert ids and ids == list(range(ids[0], n)), (ids[:3], ids[-3:], len(ids))
    assert end["args"]["dropped_events"] == 0
    assert end["args"]["ring_discarded_events"] == ids[0], end


def test_a_ring_past_the_file_size_limit_is_one_message_and_leaves_no_blocks_past_the_end(
        tmp_path):
    # A 4 MiB ring, a file-size limit of 1 MiB: the ring's dump stops at the limit (no
    # SIGXFSZ reaches the program), nothing is allocated past the file's end. The program
    # ends normally, one message says why, the file holds whole members only.
    limit = 1 << 20

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = subprocess.run([PROG, "latency", "1000000"], preexec_fn=small_files, capture_output=True,
                       text=True, timeout=120,
                       env=ring_env(tmp_path, DFTRACE_RING_BYTES="4MiB",
                                    DFTRACE_RING_SECONDS="3600"))
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.startswith("dftrace:")]
    assert len(lines) == 1 and "file-size limit" in lines[0], p.stderr
    path = tc.only_file(str(tmp_path / "traces"))
    st = os.stat(path)
    assert st.st_size <= limit
    assert st.st_blocks * 512 <= -(-st.st_size // 4096) * 4096 + 4096, (st.st_size, st.st_blocks)
    ms = tc.members(path)
    assert ms and all(m[2] is not None for m in ms)  # whole members only


# ---- ring.direct: the ring's dump written with O_DIRECT

def resident_fraction(path):
    """The part of the file's pages in the page cache (mincore over a mapping of it)."""
    import ctypes
    import mmap
    size = os.path.getsize(path)
    pages = -(-size // mmap.PAGESIZE)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        at = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert at not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
        vec = ctypes.create_string_buffer(pages)
        assert libc.mincore(at, size, vec) == 0, ctypes.get_errno()
        libc.munmap(at, size)
    finally:
        os.close(fd)
    return sum(b & 1 for b in vec.raw) / pages


def fs_type(path):
    return subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True,
                          text=True).stdout.strip()


def dump_run(tmp_path, direct, **env):
    p = run(tmp_path, "latency", 1000000, DFTRACE_RING_BYTES="16MiB",
            DFTRACE_RING_SECONDS="3600", DFTRACE_RING_DIRECT=direct, **env)
    assert "trigger 1" in p.stdout, p.stdout
    return p


def test_ring_direct_writes_the_dump_around_the_page_cache_and_the_trace_reads_the_same(tmp_path):
    # 1 M regions (about 13 MB of members) in a 16 MiB ring, then a trigger: with ring.direct
    # the dump's pages are written with O_DIRECT, so most of the file is not in the page cache
    # afterwards (looked at before anything reads it); the file is the same kind of trace.
    if fs_type(str(tmp_path)) in ("tmpfs", "ramfs"):
        pytest.skip("the test directory is on %s, whose O_DIRECT (if any) goes through the page "
                    "cache: run it with TMPDIR on a disk" % fs_type(str(tmp_path)))
    dump_run(tmp_path, 1)
    path = tc.only_file(str(tmp_path / "traces"))
    size = os.path.getsize(path)
    assert size > 8 << 20, size
    resident = resident_fraction(path)
    assert resident < 0.25, resident
    events, triggers, end = trace(tmp_path)
    assert [t["args"]["name"] for t in triggers] == ["api"]
    assert end["args"]["num_events"] == len(work(events))
    assert end["args"]["dropped_events"] == 0, end
    # zcat reads it as one gzip stream, and dftrace stat counts what the file holds.
    z = subprocess.run(["sh", "-c", "zcat '%s' | wc -l" % path], capture_output=True, text=True)
    assert z.returncode == 0 and int(z.stdout) >= len(events), (z.stdout, z.stderr)
    s = subprocess.run([CLI, "stat", "--json", path], capture_output=True, text=True, timeout=120)
    assert s.returncode == 0, s.stderr
    assert json.dumps(json.loads(s.stdout)).count('"api"') >= 1
    # Without the option the same dump stays in the page cache (the check above tells them apart).
    other = tmp_path / "buffered"
    other.mkdir()
    dump_run(other, 0)
    assert resident_fraction(tc.only_file(str(other / "traces"))) > 0.75


LOCAL_BLOCK = {0xEF53: "ext2/ext3/ext4", 0x58465342: "xfs", 0x9123683E: "btrfs",
               0xF2F52010: "f2fs"}
TRIED = {0x01021994: "tmpfs", 0x794C7630: "overlay", 0x858458F6: "ramfs"}


def auto_expectation(directory):
    """(file system, O_DIRECT on) for ring.direct auto, from what statfs says of the directory
    (stat -f) and, for the file systems that are tried, whether a file there opens with
    O_DIRECT."""
    magic = int(subprocess.run(["stat", "-f", "-c", "%t", directory], capture_output=True,
                               text=True, check=True).stdout.strip(), 16)
    if magic in LOCAL_BLOCK:
        return LOCAL_BLOCK[magic], True
    if magic not in TRIED:
        return None, False  # a network or parallel file system, or one not known: off
    probe = os.path.join(directory, "probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600))
        return TRIED[magic], True
    except OSError:
        return TRIED[magic], False
    finally:
        if os.path.exists(probe):
            os.unlink(probe)


def test_ring_direct_auto_decides_by_the_trace_directory_file_system(tmp_path):
    # ring.direct: auto on the test's own directory: the decision is what statfs says there,
    # said once at info, and written in the trigger line; the trace is whole either way.
    fs, on = auto_expectation(str(tmp_path))
    p = dump_run(tmp_path, "auto", DFTRACE_LOG_LEVEL="info")
    said = [l for l in p.stderr.splitlines() if "ring.direct auto" in l]
    assert len(said) == 1, p.stderr
    how = "the ring is written " + ("with O_DIRECT" if on else "through the page cache")
    assert said[0].endswith(how), (fs, on, said)
    if fs:
        assert ("is on %s: " % fs) in said[0], (fs, said)
    if on and fs not in ("tmpfs", "ramfs"):  # (their O_DIRECT goes through the page cache)
        # Looked at before anything reads the file: the dump's pages are not in the page cache.
        assert resident_fraction(tc.only_file(str(tmp_path / "traces"))) < 0.25
    events, triggers, end = trace(tmp_path)
    assert [t["args"]["name"] for t in triggers] == ["api"]
    direct = triggers[0]["args"]["direct"]
    assert direct.startswith("auto: on, " if on else "auto: off, "), direct
    if fs:
        assert direct.endswith(", " + fs), direct
    assert end["args"]["dropped_events"] == 0, end
    assert end["args"]["num_events"] == len(work(events))


def in_private_mount(tmp_path, fstype, options, args, **env):
    """ring_prog ARGS with its traces on a new file system of `fstype` (a user and mount
    namespace of its own), the traces copied out before the namespace ends."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    out = tmp_path / "traces"
    # With DIRECT_PROBE set: first says whether a file there opens with O_DIRECT (dd's
    # oflag=direct), "o_direct: yes" or "o_direct: no" on stdout.
    script = ('mount -t %s -o %s none "$1" || exit 97; shift; '
              'if [ -n "$DIRECT_PROBE" ]; then if dd if=/dev/zero of="$DIRECT_MNT/probe" bs=4096 '
              'count=1 oflag=direct 2>/dev/null; then echo "o_direct: yes"; else '
              'echo "o_direct: no"; fi; rm -f "$DIRECT_MNT/probe"; fi; "$@"; rc=$?; '
              'cp -r "$DIRECT_MNT/traces" "$DIRECT_OUT"; exit $rc') % (fstype, options)
    e = ring_env(tmp_path, **env)
    e.update(DFTRACE_LOG_FILE=str(mnt / "traces" / "t"), DIRECT_MNT=str(mnt), DIRECT_OUT=str(out))
    probe = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("no user and mount namespace here (unshare -Urm: %s): a file system of its "
                    "own can not be made" % probe.stderr.strip())
    p = subprocess.run(["unshare", "-Urm", "sh", "-c", script, "sh", str(mnt), PROG,
                        *map(str, args)], env=e, capture_output=True, text=True, timeout=120)
    if p.returncode == 97:
        pytest.skip("%s can not be mounted in a user namespace here: %s" % (fstype, p.stderr))
    return p


def test_ring_direct_auto_on_tmpfs_takes_o_direct_only_where_it_opens(tmp_path):
    # tmpfs is tried: O_DIRECT where a file there opens with it (Linux 6.6 and later), the page
    # cache where it does not; the expectation is dd's open with oflag=direct in the same mount.
    p = in_private_mount(tmp_path, "tmpfs", "size=64m", ["latency", 300000],
                         DFTRACE_RING_BYTES="16MiB", DFTRACE_RING_SECONDS="3600",
                         DFTRACE_RING_DIRECT="auto", DFTRACE_LOG_LEVEL="info", DIRECT_PROBE="1")
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    on = "o_direct: yes" in p.stdout
    assert on or "o_direct: no" in p.stdout, p.stdout
    said = [l for l in p.stderr.splitlines() if "ring.direct auto" in l]
    how = "with O_DIRECT" if on else "through the page cache"
    assert len(said) == 1 and said[0].endswith("is on tmpfs: the ring is written " + how), \
        p.stderr
    events, triggers, end = trace(tmp_path)
    assert triggers[0]["args"]["direct"] == ("auto: on, tmpfs" if on else "auto: off, tmpfs")
    assert end["args"]["dropped_events"] == 0, end
    assert end["args"]["num_events"] == len(work(events)) > 100000


@pytest.mark.parametrize("direct", ["1", "auto"])
def test_ring_direct_on_a_file_system_that_refuses_o_direct_writes_through_the_page_cache(
        tmp_path, direct):
    # ramfs refuses O_DIRECT (EINVAL). Forced on (1): the dump's first O_DIRECT attempt fails
    # and the dump goes through the page cache, said once at info. auto: ramfs is tried, found
    # to refuse it, and the dump is written through the page cache, said once. Both: the trace
    # is whole.
    p = in_private_mount(tmp_path, "ramfs", "mode=0755", ["latency", 300000],
                         DFTRACE_RING_BYTES="16MiB", DFTRACE_RING_SECONDS="3600",
                         DFTRACE_RING_DIRECT=direct, DFTRACE_LOG_LEVEL="info")
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert "trigger 1" in p.stdout, p.stdout
    said = [l for l in p.stderr.splitlines()
            if "refuses O_DIRECT" in l or "ring.direct auto" in l]
    if direct == "1":
        assert len(said) == 1 and "refuses O_DIRECT" in said[0], p.stderr
    else:
        assert len(said) == 1 and "is on ramfs: the ring is written through the page cache" \
            in said[0], p.stderr
    events, triggers, end = trace(tmp_path)
    assert [t["args"]["name"] for t in triggers] == ["api"]
    assert triggers[0]["args"]["direct"] == ("on (refused)" if direct == "1"
                                             else "auto: off, ramfs")
    assert end["args"]["dropped_events"] == 0, end
    assert end["args"]["num_events"] == len(work(events)) > 100000


def test_ring_direct_on_a_full_file_system_is_one_message_and_the_program_unharmed(tmp_path):
    # A 3 MiB tmpfs (it takes O_DIRECT since Linux 6.6) and a dump of about 4 MB: the dump
    # fails with ENOSPC; the program ends as it would, one message says why, and the file
    # holds whole members only.
    p = in_private_mount(tmp_path, "tmpfs", "size=3m", ["latency", 300000],
                         DFTRACE_RING_BYTES="16MiB", DFTRACE_RING_SECONDS="3600",
                         DFTRACE_RING_DIRECT="1")
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert "trigger 1" in p.stdout and "vmhwm_kb" in p.stdout, p.stdout
    lines = [l for l in p.stderr.splitlines() if l.startswith("dftrace:")]
    assert len(lines) == 1 and "No space left on device" in lines[0], p.stderr
    path = tc.only_file(str(tmp_path / "traces"))
    ms = tc.members(path)
    assert ms and all(m[2] is not None for m in ms)  # whole members only
    v = subprocess.run([CLI, "validate", path], capture_output=True, text=True, timeout=120)
    assert v.returncode == 0, v.stdout + v.stderr
    end = tc.load(path)[-1]
    assert end["name"] == "end", end
    assert end["args"]["num_events"] + end["args"]["dropped_events"] == 300000, end
