# test_diff.py: dftrace diff on runs built here with stated step and call times: the figures
# against a reference computed here, and the --fail-if gates' exit status.
import json
import math

from conftest import run
from test_analyze import Proc


def nearest_rank(values, p):
    v = sorted(values)
    return v[max(math.ceil(p * len(v) / 100), 1) - 1] if v else 0


def make_run(d, step_ns, pid0, extra=False, reads=(4096,)):
    """Two ranks, 20 steps each: a forward of 3/5 of the step and one read per step."""
    d.mkdir()
    procs = []
    for r in range(2):
        p = Proc(pid0 + r, rank=r)
        t = 0
        for k in range(20):
            dur = step_ns + 7 * k + 13 * r  # distinct durations
            p.ev("step", "compute", t, t + dur, step=k)
            p.ev("forward", "compute", t + 1, t + 1 + dur * 3 // 5)
            n = reads[k % len(reads)]
            p.ev("read", "POSIX", t + 2 + dur * 3 // 5, t + dur - 1, fhash=77, fd=3, ret=n)
            if extra:
                p.ev("extra", "app", t, t + 1)
            t += dur + 10
        procs.append(p)
        p.write(d)
    return procs


def diff(base, new, *extra, check=False):
    p = run("diff", base, new, "--json", *extra, check=False)
    return (json.loads(p.stdout) if p.stdout else None), p


def step_durs(procs):
    return [e[4] - e[3] for p in procs for e in p.events if e[0] == "step"]


def test_slower_step_fails_the_gate_equal_passes(tmp_path):
    base = make_run(tmp_path / "base", 100_000, 100)
    same = make_run(tmp_path / "same", 100_000, 200)
    slow = make_run(tmp_path / "slow", 110_000, 300, extra=True)
    gate = ("--fail-if", "step.p50 > +5%")
    d, p = diff(tmp_path / "base", tmp_path / "same", *gate)
    assert p.returncode == 0, p.stderr
    assert d["failed"] == [] and d["metrics"]["step.p50"]["change"] == 0
    d, p = diff(tmp_path / "base", tmp_path / "slow", *gate)
    assert p.returncode == 1
    b50, s50 = nearest_rank(step_durs(base), 50), nearest_rank(step_durs(slow), 50)
    m = d["metrics"]["step.p50"]
    assert (m["base"], m["new"], m["change"]) == (b50, s50, s50 - b50)
    assert m["change_pct"] == (s50 - b50) * 100 / b50
    assert len(d["failed"]) == 1 and d["failed"][0].startswith("step.p50 > +5%:")
    assert "diff: failed: step.p50 > +5%" in p.stderr
    assert d["metrics"]["step.p99"]["new"] == nearest_rank(step_durs(slow), 99)
    assert d["appeared"] == ["app/extra"] and d["vanished"] == []
    # a gate that does not hold, and one on a name
    _, p = diff(tmp_path / "base", tmp_path / "slow", "--fail-if", "step.p50 > +20%")
    assert p.returncode == 0
    _, p = diff(tmp_path / "base", tmp_path / "slow", "--fail-if", "compute/forward.p99 > +5%")
    assert p.returncode == 1


def test_names_and_io_against_reference(tmp_path):
    base = make_run(tmp_path / "base", 50_000, 100, reads=(4096,))
    new = make_run(tmp_path / "new", 50_000, 200, reads=(4096, 1 << 20))
    d, p = diff(tmp_path / "base", tmp_path / "new")
    assert p.returncode == 0, p.stderr
    names = {n["name"]: n for n in d["names"]}
    for side, procs in (("base", base), ("new", new)):
        durs = [e[4] - e[3] for pr in procs for e in pr.events if e[0] == "forward"]
        got = names["compute/forward"][side]
        assert got == {"calls": len(durs), "total_ns": sum(durs), "mean_ns": sum(durs) / len(durs),
                       "p50_ns": nearest_rank(durs, 50), "p99_ns": nearest_rank(durs, 99)}
        rb = sum(e[5]["ret"] for pr in procs for e in pr.events if e[0] == "read")
        rn = sum(e[4] - e[3] for pr in procs for e in pr.events if e[0] == "read")
        assert d["metrics"]["io.read_bytes"][side] == rb
        assert d["metrics"]["io.read_bandwidth"][side] == pytest_approx(rb * 1e9 / rn)
    # bound_by shares are percentages of step time that sum to 100
    assert sum(d["metrics"]["bound_by." + k]["base"]
               for k in ("compute", "comm", "io", "data", "other")) == pytest_approx(100)


def pytest_approx(x):
    import pytest
    return pytest.approx(x, rel=1e-5)


def test_bad_gates_exit_2(tmp_path):
    make_run(tmp_path / "a", 1000, 100)
    for bad in ("step.p50 +5%", "step.p50 > 5%", "nothing.here > +1%", "step.p50 > +x%"):
        _, p = diff(tmp_path / "a", tmp_path / "a", "--fail-if", bad)
        assert p.returncode == 2, bad
        assert "--fail-if" in p.stderr
