# test_analyze_steps.py: dftrace.analyze keeps a run's steps in the extension's store, not as one
# dict per step: the Python objects it makes do not grow with the number of steps, and
# steps_frame() is built from columns. What the caller reads is unchanged: r["steps"]["items"]
# is the list of dicts the JSON text holds, and steps_frame() the frame pandas made from it.
import copy
import gc
import json
import os
import pickle
import sys
import tracemalloc

import pytest

from conftest import need
from test_analyze import T0, Proc
from test_analyze_hostile_time import step_traces
from test_analyze_memory import write_trace

need("pandas")
import pandas as pd  # noqa: E402

import dftrace  # noqa: E402
from dftrace import _analysis, _analyze  # noqa: E402

COLS = ["rank", "group", "index", "step", "epoch", "ts_ns", "dur_ns", "compute_ns", "comm_ns",
        "io_ns", "data_ns", "other_ns"]


def mixed_run(d):
    """Steps with and without `step` and `epoch` arguments, on a ranked process and on one
    without a rank, so that the frame's optional columns hold both values and None."""
    a = Proc(4242, rank=None)
    for k in range(5):
        args = dict(step=k, epoch=-k) if k % 2 else {}
        a.ev("step", "compute", 100 * k, 100 * k + 90, **args)
        a.ev("read", "POSIX", 100 * k + 10, 100 * k + 40, fd=3, ret=10)
    b = Proc(5000, rank=7)
    for k in range(3):
        b.ev("step", "compute", 100 * k, 100 * k + 80, step=k)
    return [a.write(d), b.write(d)]


def inputs(tmp_path, ref_files):
    """(name, paths): steps with every optional value, some, and none; DFTracer's traces."""
    (tmp_path / "mixed").mkdir()
    (tmp_path / "ranked").mkdir()
    ranked = []
    for r in range(3):
        p = Proc(100 + r, rank=r)
        for k in range(4):
            p.ev("step", "compute", 1000 * k, 1000 * k + 900 + r, step=k, epoch=0)
            p.ev("allreduce", "comm", 1000 * k + 100, 1000 * k + 300)
        ranked.append(p.write(tmp_path / "ranked"))
    # steps that start past 2^63 ns (a uint64 column), and steps of 2^63-1 ns each (their total
    # held: damaged input)
    late = Proc(77, rank=0)
    for k in range(3):
        late.ev("step", "compute", 2 ** 63 - T0 + 100 * k, 2 ** 63 - T0 + 100 * k + 90, step=k)
    (tmp_path / "late").mkdir()
    (tmp_path / "long").mkdir()
    return [("mixed", mixed_run(tmp_path / "mixed")), ("ranked", ranked),
            ("late", [late.write(tmp_path / "late")]), ("long", step_traces(tmp_path / "long")),
            ("dftracer", ref_files)]


def test_items_and_frame_equal_the_text(tmp_path, ref_files):
    for name, paths in inputs(tmp_path, ref_files):
        text = json.loads(dftrace._analyze.analyze_text(paths))
        want = text["steps"]["items"]
        assert want or name == "dftracer", name  # DFTracer's sample traces have no steps
        r = dftrace.analyze(paths, allow_damaged=True)
        # the frame from the columns: the values and dtypes pandas gives the list of dicts
        pd.testing.assert_frame_equal(r.steps_frame(), pd.DataFrame(want, columns=COLS))
        # the lazy sequence: equal to the list, indexed, sliced, iterated
        lazy = r.step_items()
        assert isinstance(lazy, _analyze.StepItems), name
        assert lazy is dict.__getitem__(r["steps"], "items")
        assert lazy == want and want == lazy and not (lazy != want), name
        assert len(lazy) == len(want) and list(lazy) == want
        assert list(reversed(lazy)) == want[::-1]
        with pytest.MonkeyPatch.context() as m:  # ranges of 3 items: their edges crossed
            m.setattr(_analyze.StepItems, "_CHUNK", 3)
            assert list(lazy) == want and list(reversed(lazy)) == want[::-1] and lazy == want
        assert lazy[1:3] == want[1:3] and lazy[::2] == want[::2] and lazy[::-3] == want[::-3]
        assert lazy[5:2] == [] and lazy[len(want):] == []
        with pytest.raises(IndexError):
            lazy[len(want)]
        if want:
            assert lazy[-1] == want[-1] and lazy[0] == want[0]
            assert lazy != want[:-1] and lazy != tuple(want)
        # the whole document equal to the command's; comparing made no list
        assert dict(r) == text and r == text
        assert isinstance(dict.__getitem__(r["steps"], "items"), _analyze.StepItems)
        # as the command writes it, key order and value types included (the items read as a
        # list through items(), and kept)
        assert json.dumps(r) == json.dumps(text), name
        assert dict.__getitem__(r["steps"], "items") == want


def test_items_become_the_list_on_first_read(tmp_path):
    paths = mixed_run(tmp_path)
    want = json.loads(dftrace._analyze.analyze_text(paths))["steps"]["items"]
    r = dftrace.analyze(paths)
    items = r["steps"]["items"]
    assert type(items) is list and items == want
    assert r["steps"]["items"] is items and r.step_items() is items  # made once, kept
    items[0]["step"] = "changed"
    assert r["steps"]["items"][0]["step"] == "changed"
    assert r.steps_frame()["step"].iloc[0] == "changed"  # the frame of the list as it is now
    # every way of reading a dict gives the same list
    for read in (lambda s: s.get("items"), lambda s: dict(s)["items"], lambda s: {**s}["items"],
                 lambda s: dict(s.items())["items"], lambda s: s.copy()["items"]):
        s = dftrace.analyze(paths)["steps"]
        got = read(s)
        assert type(got) is list and got == want
    s = dftrace.analyze(paths)["steps"]
    assert list(s.values())[list(s).index("items")] == want
    for clone in (copy.deepcopy, copy.copy, lambda s: pickle.loads(pickle.dumps(s))):
        got = clone(dftrace.analyze(paths)["steps"])
        assert got["items"] == want and type(got["items"]) is list
    whole = pickle.loads(pickle.dumps(dftrace.analyze(paths)))
    assert whole["steps"]["items"] == want


def test_python_objects_do_not_grow_with_the_steps(tmp_path):
    """200,000 steps on 8 ranks: analyze() makes no dict per step (the items stay in the
    extension's store, in memory up to its budget, beyond it in a file), and steps_frame() is
    made from columns of fixed-width integers. Measured with tracemalloc (Python's allocations
    and numpy's) and the blocks of Python's allocator: the list of dicts held 432 bytes and 5
    blocks a step, and the frame made from it peaked at 1,022 bytes a step."""
    ranks, steps = 8, 25_000
    paths = []
    for r in range(ranks):
        paths.append(tmp_path / f"r{r}.pfw.gz")
        write_trace(paths[-1], steps, 0, rank=r, pid=100 + r)
    n = ranks * steps
    gc.collect()
    blocks = sys.getallocatedblocks()
    tracemalloc.start()
    try:
        r = dftrace.analyze(paths)
        last = r.step_items()[-10:]  # a few items of a long run: only those made
        held, _ = tracemalloc.get_traced_memory()
        grown = sys.getallocatedblocks() - blocks
        assert r["steps"]["count"] == n
        tracemalloc.reset_peak()
        f = r.steps_frame()
        _, frame_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(f) == n and (f["dur_ns"] == f[COLS[7:]].sum(axis=1)).all()
    assert pd.DataFrame(last, columns=COLS).equals(f.iloc[-10:].reset_index(drop=True))
    assert list(f["rank"].unique()) == list(range(ranks))
    assert grown < n // 100, f"{grown} more blocks allocated after analyze() of {n} steps"
    assert held < 16 * n, f"analyze() holds {held / n:.0f} bytes a step of Python objects"
    # the columns (82 bytes a step), a few int64 conversions and the frame's blocks (96)
    assert frame_peak < 400 * n, f"steps_frame() peaked at {frame_peak / n:.0f} bytes a step"


def test_steps_held_are_read_in_ranges(tmp_path):
    paths = mixed_run(tmp_path)
    parts = [_analysis.partial(paths, None, None, 1)]
    want = json.loads(_analysis.merge(parts, None, None, None))["steps"]["items"]
    _, held = _analysis.merge_doc(parts, None, None, None)
    assert _analysis.step_count(held) == len(want) == 8
    assert _analysis.step_items(held, 0, 100) == want  # clipped to the steps held
    assert _analysis.step_items(held, 3, 2) == want[3:5]
    assert _analysis.step_items(held, 8, 1) == [] and _analysis.step_items(held, -1, 0) == []
    with pytest.raises(ValueError):
        _analysis.step_count(object())


def test_a_lost_steps_file_is_an_error_never_fewer_items(tmp_path, monkeypatch):
    """The steps stay in the merged store's temporary file past its budget (a budget of 1024
    events, so 128 step rows in memory): when that file can no longer be read, reading the items
    or the frame raises OSError, never a shorter list."""
    (tmp_path / "run").mkdir()
    (tmp_path / "tmp").mkdir()
    paths = []
    for r in range(2):
        p = Proc(300 + r, rank=r)
        for k in range(1000):
            p.ev("step", "compute", 100 * k, 100 * k + 90, step=k)
        paths.append(p.write(tmp_path / "run"))
    want = json.loads(dftrace._analyze.analyze_text(paths))["steps"]["items"]
    monkeypatch.setenv("DFTRACE_ANALYZE_SPILL_EVENTS", "1024")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    r = dftrace.analyze(paths)
    lazy = r.step_items()
    assert len(lazy) == 2000 and lazy == want  # read back from the files
    spilled = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.startswith(str(tmp_path / "tmp" / "dftrace-analyze-")):
            spilled.append(fd)
    assert spilled, "no temporary file held the steps"
    for fd in spilled:
        os.ftruncate(int(fd), 0)
    for read in (lambda: r.steps_frame(), lambda: lazy[0], lambda: list(lazy),
                 lambda: r["steps"]["items"], lambda: json.dumps(r)):
        with pytest.raises(OSError, match="could not be read back"):
            read()
