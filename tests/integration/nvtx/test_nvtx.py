"""test_nvtx.py: nvtx.forward. Each program runs with an NVTX tool of the test's own
(nvtx_recorder.c, named by NVTX_INJECTION64_PATH, as Nsight Systems names its own), which writes
down every NVTX call it receives. The calls must retell the program's own trace: per thread, one
range pushed per region, in the order the regions began, nested as the trace's `level` says,
closed as often as opened; one mark per instant, inside the right range; domain `dftrace`, each
category named once, each message registered once."""
import collections
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
RECORDER = os.environ["NVTX_RECORDER"]

PY_PROG = """
import sys
import dftrace
from dftrace import ai
dftrace.initialize(output_file=sys.argv[1], enable=True)

@ai.compute.forward
def forward():
    dftrace.instant("marker", cat="app")

for _ in range(2):
    with ai.compute.step:
        forward()
        with ai.compute.backward:
            pass
dftrace.finalize()
"""


def clean_env():
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("DFTRACE_", "DFTRACER_", "NVTX_")):
            env.pop(k)
    return env


def run(tmp_path, argv, forward="1", tool=True, extra=None):
    trace = tmp_path / "t.pfw.gz"
    record = tmp_path / "nvtx.txt"
    env = clean_env()
    if forward is not None:
        env["DFTRACE_NVTX_FORWARD"] = forward
    if tool:
        env["NVTX_INJECTION64_PATH"] = RECORDER
        env["NVTX_RECORD_FILE"] = str(record)
    env.update(extra or {})
    p = subprocess.run(argv + [str(trace)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    # Every check but nesting: the C program ends an outer region before its inner one on
    # purpose, so their events overlap whenever the two ends fall in different microseconds.
    events = tc.load_checked(str(trace), nesting=False)
    calls = None
    if record.exists():
        calls = [line.split(" ", 3) for line in record.read_text().splitlines()]
    return events, calls, p


def replay(calls):
    """Per thread: ("X" | "i", depth, category name, message) in call order."""
    what = collections.Counter(c[1] for c in calls)
    assert what["init"] == 1 and what["domain"] == 1, what
    assert [c[3] for c in calls if c[1] == "domain"] == ["dftrace"]
    cats = {}
    for c in calls:
        if c[1] == "category":
            assert c[2] not in cats, "category %s named twice" % c[2]
            cats[c[2]] = c[3]
    strings = collections.Counter(c[3] for c in calls if c[1] == "string")
    assert all(n == 1 for n in strings.values()), strings
    seq, depth = collections.defaultdict(list), collections.Counter()
    for tid, kind, num, text in (c for c in calls if c[1] in ("push", "pop", "mark")):
        tid = int(tid)
        if kind == "pop":
            assert depth[tid] > 0, "a pop without a push on thread %d" % tid
            depth[tid] -= 1
            continue
        assert num in cats, "category %s used before it was named" % num
        assert text in strings, "message %r was not registered" % text
        if kind == "push":
            depth[tid] += 1
            seq[tid].append(("X", depth[tid], cats[num], text))
        else:
            seq[tid].append(("i", depth[tid] + 1, cats[num], text))
    assert all(d == 0 for d in depth.values()), "ranges left open: %r" % depth
    return dict(seq)


def from_trace(events):
    """The same, from the trace: per thread, regions and instants in the order they began."""
    seq = collections.defaultdict(list)
    mine = [e for e in events if e["ph"] in ("X", "i") and e["cat"] != "dftracer"]
    for e in sorted(mine, key=lambda e: e["id"]):
        seq[e["tid"]].append((e["ph"], e["args"]["level"], e["cat"], e["cat"] + "." + e["name"]))
    return dict(seq)


def check_program(tmp_path, argv):
    events, calls, _ = run(tmp_path, argv)
    assert calls is not None, "the NVTX tool was never loaded"
    got, want = replay(calls), from_trace(events)
    assert sum(len(v) for v in want.values()) >= 8
    assert got == want
    return got


def test_c_regions_instants_threads_and_out_of_order_ends(tmp_path):
    events, calls, _ = run(tmp_path, [os.path.join(BIN, "nvtx_prog_c")])
    got, want = replay(calls), from_trace(events)
    assert len(want) == 2, "the program's two threads"
    # The cancelled region was pushed (NVTX cannot take a range back) and popped at once; it
    # has no event. Everything else is the trace, call for call.
    main = [t for t in got if any(x[3] == "comm.all_reduce" for x in got[t])]
    assert len(main) == 1
    cancelled = [x for x in got[main[0]] if x[3] == "comm.all_reduce"]
    assert cancelled == [("X", 1, "comm", "comm.all_reduce")]
    got[main[0]] = [x for x in got[main[0]] if x[3] != "comm.all_reduce"]
    assert got == want
    # The outer region ended first: its range stayed open until the inner one closed.
    tid = main[0]
    mine = [c for c in calls if int(c[0]) == tid and c[1] in ("push", "pop")]
    kinds = [(c[1], c[3]) for c in mine]
    i = kinds.index(("push", "checkpoint.capture"))
    assert kinds[i:i + 4] == [("push", "checkpoint.capture"), ("push", "device.transfer"),
                              ("pop", ""), ("pop", "")]


def test_a_region_begun_as_recording_switches_off_is_not_recorded(tmp_path):
    # The tool switches dftrace off as the region's range is pushed: after dftrace checked that
    # it records, before the region's clock read (where another thread's switch may fall while
    # this one is preempted). The region would begin after the switch: it is not recorded, and
    # its range is closed.
    events, calls, _ = run(tmp_path, [os.path.join(BIN, "nvtx_prog_c")],
                           extra={"NVTX_RECORD_SWITCH_OFF_AT": "app.switched",
                                  "NVTX_PROG_SWITCHED": "1"})
    what = [c[1:] for c in calls if c[1] in ("push", "pop", "switched-off")]
    at = [i for i, c in enumerate(what) if c[0] == "push" and c[2] == "app.switched"]
    assert len(at) == 1 and what[at[0] + 1][0] == "switched-off", what
    assert what[at[0] + 2][0] == "pop" and len(what) == at[0] + 3, what
    assert not [e for e in events if e.get("name") == "switched"], "recorded after the switch"
    # The program's other regions are all there.
    assert {"step", "forward", "backward", "fetch", "preprocess"} <= {
        e.get("name") for e in events if e.get("ph") == "X"}


def test_cpp_scopes(tmp_path):
    check_program(tmp_path, [os.path.join(BIN, "nvtx_prog_cpp")])


def test_python_decorators_and_with(tmp_path):
    check_program(tmp_path, [sys.executable, "-c", PY_PROG])


def test_fortran(tmp_path):
    prog = os.path.join(BIN, "nvtx_prog_f")
    if not os.path.exists(prog):
        pytest.skip("no Fortran compiler: nvtx_prog_f was not built")
    check_program(tmp_path, [prog])


def test_yaml_key(tmp_path):
    conf = tmp_path / "dftrace.yaml"
    conf.write_text("nvtx:\n  forward: true\n")
    events, calls, _ = run(tmp_path, [os.path.join(BIN, "nvtx_prog_cpp")], forward=None,
                           extra={"DFTRACE_CONFIG": str(conf)})
    assert calls is not None and replay(calls) == from_trace(events)


def test_off_by_default(tmp_path):
    # The tool is named, but nothing asks for forwarding: NVTX is never called, so never
    # loads the tool; the trace is the same.
    events, calls, _ = run(tmp_path, [os.path.join(BIN, "nvtx_prog_cpp")], forward=None)
    assert calls is None
    assert sum(len(v) for v in from_trace(events).values()) == 8  # 2 steps: step, forward, marker, backward


def test_no_tool_attached(tmp_path):
    # Forwarding asked for, no tool: one message at info level, the trace unchanged.
    events, calls, p = run(tmp_path, [os.path.join(BIN, "nvtx_prog_cpp")], tool=False,
                           extra={"DFTRACE_LOG_LEVEL": "info"})
    assert calls is None
    assert p.stderr.count("nvtx.forward: no NVTX tool is attached") == 1, p.stderr
    assert sum(len(v) for v in from_trace(events).values()) == 8  # 2 steps: step, forward, marker, backward


def test_bad_value(tmp_path):
    events, calls, p = run(tmp_path, [os.path.join(BIN, "nvtx_prog_cpp")], forward="sometimes")
    assert calls is None
    assert "DFTRACE_NVTX_FORWARD" in p.stderr, p.stderr
    assert sum(len(v) for v in from_trace(events).values()) == 8  # 2 steps: step, forward, marker, backward
