"""test_first_call.py: each entry point as the first dftrace call of a fresh process, under both
tick sources: every event lies inside the process's start..end interval and metadata marks
bracket the events between them (a first event never starts before its process, and marks use
the events' clock)."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
FORTRAN_BIN = os.environ.get("DFTRACE_TEST_FORTRAN_BIN", "")

PY_DECORATOR = """
from dftrace import ai
@ai.compute.forward
def f():
    pass
for _ in range(3):
    f()
"""
PY_WITH = """
from dftrace import ai
for _ in range(3):
    with ai.compute.forward:
        pass
"""
PY_ITER = """
from dftrace import ai
for epoch in ai.pipeline.epoch.iter(range(3)):
    with ai.compute.forward:
        pass
"""
PY_MARK = """
from dftrace import ai
for _ in range(3):
    ai.pipeline.epoch.start(metadata=True)
    with ai.compute.forward:
        pass
    ai.pipeline.epoch.stop(metadata=True)
"""

# (id, argv, user events expected at least, marks expected)
CASES = [
    ("c-region", [os.path.join(BIN, "first_call_c"), "region"], 3, 0),
    ("c-instant", [os.path.join(BIN, "first_call_c"), "instant"], 3, 0),
    ("c-counter", [os.path.join(BIN, "first_call_c"), "counter"], 3, 0),
    ("c-mark", [os.path.join(BIN, "first_call_c"), "mark"], 3, 6),
    ("c-explicit-time", [os.path.join(BIN, "first_call_c"), "explicit"], 3, 0),
    ("c-iter", [os.path.join(BIN, "first_call_c"), "iter"], 6, 0),
    ("cpp-scope", [os.path.join(BIN, "first_call"), "scope"], 3, 0),
    ("cpp-iter", [os.path.join(BIN, "first_call"), "iter"], 9, 0),
    ("cpp-update", [os.path.join(BIN, "first_call"), "update"], 3, 0),
    ("cpp-mark", [os.path.join(BIN, "first_call"), "mark"], 3, 6),
    ("fortran-region", [os.path.join(FORTRAN_BIN, "first_call_f")], 3, 0),
    ("python-decorator", [sys.executable, "-c", PY_DECORATOR], 3, 0),
    ("python-with", [sys.executable, "-c", PY_WITH], 3, 0),
    ("python-iter", [sys.executable, "-c", PY_ITER], 9, 0),
    ("python-mark", [sys.executable, "-c", PY_MARK], 3, 6),
]


def run(tmp_path, argv, source):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE", "DFTRACER"))}
    e.update({"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": str(tmp_path / "t"), "DFTRACE_TIMER_SOURCE": source})
    if "PYTHONPATH" in os.environ:
        e["PYTHONPATH"] = os.environ["PYTHONPATH"]
    p = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return tc.load_checked(tc.only_file(tmp_path), nesting=False)


@pytest.mark.parametrize("source", ["tsc", "monotonic"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_first_call_lies_inside_the_process(tmp_path, case, source):
    name, argv, n_events, n_marks = case
    if name.startswith("fortran") and not os.path.exists(argv[0]):
        pytest.skip("no Fortran compiler: first_call_f was not built")
    ev = run(tmp_path, argv, source)
    start = next(e for e in ev if e["name"] == "start" and e["cat"] == "dftracer")
    end = ev[-1]
    if source == "tsc" and start["args"]["timer_source"] != "tsc":
        pytest.skip("this machine's TSC can not be used (no invariant TSC)")
    assert start["args"]["timer_source"] == source
    lo, hi = start["ts"], end["ts"]
    assert lo <= hi
    user = [e for e in ev if e["ph"] in ("X", "i", "C") and e["cat"] != "dftracer"]
    assert len(user) >= n_events, user
    for e in user:
        assert lo <= e["ts"], ("event before the process's start", lo, e)
        assert e["ts"] + e.get("dur", 0) <= hi, ("event after the process's end", hi, e)
    marks = [e for e in ev if e["name"] == "CM"]
    assert len(marks) == n_marks, marks
    values = [int(m["args"]["value"]) for m in marks]
    for v in values:
        assert lo <= v <= hi, ("mark outside the process", lo, v, hi)
    if marks:
        fwd = [e for e in user if e["name"] == "forward"]
        assert [m["args"]["name"] for m in marks] == ["epoch.start", "epoch.end"] * len(fwd)
        for k, f in enumerate(fwd):
            assert values[2 * k] <= f["ts"] and f["ts"] + f["dur"] <= values[2 * k + 1], (values, f)
