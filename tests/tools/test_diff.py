# test_diff.py: dftrace diff on runs built here with stated step and call times: the figures
# against a reference computed here, and the --fail-if gates' exit status.
import json
import math
import os
import random
import subprocess

from conftest import CLI, gen, run
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


def random_run(d, seed, pid0):
    """Names whose durations stress the exact select: wide (up to 2^40 ns) and narrow ranges,
    heavy duplicates, one value, one or two calls."""
    rnd = random.Random(seed)
    shapes = {
        "wide": lambda: rnd.randrange(1 << 40),
        "narrow": lambda: 5_000 + rnd.randrange(300),
        "dups": lambda: rnd.choice((7, 7, 7, 1000, 1 << 33)),
        "skewed": lambda: int(rnd.paretovariate(1.2) * 1000),
        "one": lambda: 4242,
    }
    d.mkdir()
    durs = {}
    for r in range(2):
        p = Proc(pid0 + r, rank=r)
        t = 0
        for name, f in shapes.items():
            for _ in range(rnd.randrange(1500, 2500) if name != "one" else 1 + r):
                dur = f()
                durs.setdefault("app/" + name, []).append(dur)
                p.ev(name, "app", t, t + dur)
                t += dur + 1
        p.write(d)
    return durs


def test_percentiles_exact_when_durations_are_spilled(tmp_path):
    """Each name's p50 and p99 from the durations spilled to the temporary file (a budget of 8
    events: 32 durations held, radix passes until 32 candidates remain) equal the nearest ranks
    computed here, and the figures with no spill at all."""
    for seed in range(3):
        base = random_run(tmp_path / f"base{seed}", seed, 100)
        new = random_run(tmp_path / f"new{seed}", 100 + seed, 200)
        docs = []
        for budget in ("8", "0"):
            p = run("diff", tmp_path / f"base{seed}", tmp_path / f"new{seed}", "--json",
                    env={"DFTRACE_ANALYZE_SPILL_EVENTS": budget})
            docs.append(json.loads(p.stdout))
        assert docs[0] == docs[1]
        names = {n["name"]: n for n in docs[0]["names"]}
        for side, durs in (("base", base), ("new", new)):
            for name, v in durs.items():
                got = names[name][side]
                assert (got["calls"], got["total_ns"]) == (len(v), sum(v)), name
                assert (got["p50_ns"], got["p99_ns"]) == (nearest_rank(v, 50),
                                                          nearest_rank(v, 99)), name


def peak_rss_kib(*args, env):
    e = dict(os.environ, DFTRACE_NO_PROGRESS="1", **env)
    p = subprocess.Popen([CLI, *map(str, args)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=e)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0, p.stderr.read()
    return usage.ru_maxrss


def test_diff_memory_bounded_like_analyze(tmp_path):
    """The durations kept for exact percentiles (8 bytes per event) are spilled past the budget:
    diff's peak stays within 4 bytes per event of analysing the larger run alone."""
    events = 1_000_000
    gen(tmp_path / "a.pfw.gz", events, pid=7000, rank=0, seed=1, threads=2)
    gen(tmp_path / "b.pfw.gz", events, pid=7000, rank=0, seed=2, threads=2)
    env = {"DFTRACE_ANALYZE_SPILL_EVENTS": "4096", "DFTRACE_TOOL_THREADS": "1"}
    one = max(peak_rss_kib("analyze", "--json", tmp_path / f, env=env) for f in ("a.pfw.gz",
                                                                              "b.pfw.gz"))
    both = peak_rss_kib("diff", "--json", tmp_path / "a.pfw.gz", tmp_path / "b.pfw.gz", env=env)
    assert both - one < 4 * events // 1024, (one, both)


def pytest_approx(x):
    import pytest
    return pytest.approx(x, rel=1e-5)


def test_bad_gates_exit_2(tmp_path):
    make_run(tmp_path / "a", 1000, 100)
    for bad in ("step.p50 +5%", "step.p50 > 5%", "nothing.here > +1%", "step.p50 > +x%"):
        _, p = diff(tmp_path / "a", tmp_path / "a", "--fail-if", bad)
        assert p.returncode == 2, bad
        assert "--fail-if" in p.stderr
