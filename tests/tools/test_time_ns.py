# test_time_ns.py: traces at ns precision through every consumer. A real program
# records at DFTRACE_TIMER_PRECISION=ns: ts and dur are integer epoch nanoseconds, declared by
# the trace's time_metric; Python's json keeps them exactly, and every tool must too (stat,
# validate, cat, merge, split, convert), to the nanosecond.
import collections
import decimal
import gzip
import json
import os
import subprocess

import pytest

from conftest import run

NESTED = os.environ.get("DFTRACE_NESTED_NS", "")


def record(tmp_path, name, precision="ns", n=500):
    out = tmp_path / name
    out.mkdir()
    env = dict(os.environ, DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(out / "trace"),
               DFTRACE_TIMER_PRECISION=precision)
    subprocess.run([NESTED, str(n), "2"], env=env, check=True, timeout=120)
    (path,) = [out / f for f in os.listdir(out)]
    return path


def events(path):
    with gzip.open(path, "rt") as f:
        lines = [l for l in f.read().splitlines() if l not in ("[", "]")]
    return [json.loads(l) for l in lines]  # Python's json: integers exactly


def regions(ev):
    return [e for e in ev if e["ph"] == "X" and e["cat"] == "compute"]


def totals(ev):
    t = collections.Counter()
    for e in regions(ev):
        t[e["name"]] += e["dur"]
    return t


@pytest.fixture(scope="module")
def ns_trace(tmp_path_factory):
    if not NESTED:
        pytest.fail("DFTRACE_NESTED_NS must name tests/tools/nested_ns (run through ctest)")
    return record(tmp_path_factory.mktemp("ns"), "a")


def test_the_file_holds_integer_nanoseconds(ns_trace):
    ev = events(ns_trace)
    start = [e for e in ev if e["name"] == "start"][0]
    assert start["args"]["time_metric"] == "ns"
    pr = [e["args"]["value"] for e in ev if e["name"] == "PR" and e["args"]["name"] == "time_metric"]
    assert pr == ["ns"]
    r = regions(ev)
    assert collections.Counter(e["name"] for e in r) == {"step": 1000, "forward": 1000}
    assert all(isinstance(e["ts"], int) and isinstance(e["dur"], int) for e in r)
    assert all(e["ts"] > 10**18 for e in r)  # epoch nanoseconds
    # the children are sub-microsecond, the parents about 10 us: ns matter here
    fwd = sorted(e["dur"] for e in r if e["name"] == "forward")
    assert fwd[len(fwd) // 2] < 1000, fwd[len(fwd) // 2]
    assert any(d % 1000 for d in fwd)


def test_stat_and_validate_read_nanoseconds(ns_trace):
    ev = events(ns_trace)
    want = totals(ev)
    st = json.loads(run("stat", "--json", ns_trace).stdout, parse_float=decimal.Decimal)
    got = {r["name"]: r for r in st["by_name"] if r["cat"] == "compute"}
    for name, total in want.items():
        assert got[name]["total_ns"] == total, name
        assert decimal.Decimal(str(got[name]["total_us"])) * 1000 == total, name
        assert got[name]["count"] == 1000
    first = min(e["ts"] for e in ev if "ts" in e)
    assert decimal.Decimal(str(st["ts_min"])) * 1000 == first
    run("validate", ns_trace)  # exits 0: integers, spans inside start..end, DT ranges in us


def test_convert_keeps_every_ns_and_two_levels(ns_trace, tmp_path):
    ev = events(ns_trace)
    by_key = {(e["tid"], e["id"]): e for e in regions(ev)}
    out = tmp_path / "v.json"
    run("convert", ns_trace, "--to", "perfetto", "-o", out)
    doc = json.loads(out.read_text())  # doubles, as a browser parses them
    origin = decimal.Decimal(doc["otherData"]["ts_origin_us"]) * 1000
    conv = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "compute"]
    assert len(conv) == len(by_key)
    got = collections.Counter()
    for e in conv:
        f = by_key[(e["tid"], e["id"])]
        assert decimal.Decimal(repr(e["ts"])) * 1000 + origin == f["ts"], (e, f)
        # a region of 0 ns (two equal clock reads) is written 1 ns long: viewers drop empty ones
        assert decimal.Decimal(repr(e["dur"])) * 1000 == (f["dur"] or 1), (e, f)
        got[e["name"]] += f["dur"]
    assert got == totals(ev)
    # Nesting as a viewer builds it: a stack per thread over the converted order.
    depth = 0
    for tid in {e["tid"] for e in conv}:
        stack = []
        for e in (x for x in conv if x["tid"] == tid):
            t0 = decimal.Decimal(repr(e["ts"]))
            while stack and stack[-1] <= t0:
                stack.pop()
            stack.append(t0 + decimal.Decimal(repr(e["dur"])))
            assert not (len(stack) > 1 and stack[-1] > stack[-2]), "a child ends after its parent"
            depth = max(depth, len(stack))
    assert depth == 2


def test_cat_filters_in_microseconds(ns_trace):
    ev = regions(events(ns_trace))
    mid = sorted(e["ts"] for e in ev)[len(ev) // 2] // 1000
    out = run("cat", ns_trace, "--from", str(mid), "--cat", "compute").stdout.splitlines()
    want = [e for e in ev if e["ts"] // 1000 >= mid]
    assert len(out) == len(want) and all(json.loads(l)["ts"] // 1000 >= mid for l in out)


def test_merge_and_split_keep_the_unit(ns_trace, tmp_path):
    other = record(tmp_path, "b")
    merged = tmp_path / "m.pfw.gz"
    run("merge", ns_trace, other, "-o", merged)
    run("validate", merged)
    ev = events(merged)
    assert ev[0]["name"] == "PR" and ev[0]["args"] == {"name": "time_metric", "value": "ns"}
    want = totals(events(ns_trace)) + totals(events(other))
    assert totals(ev) == want
    st = json.loads(run("stat", "--json", merged).stdout)
    assert {r["name"]: r["total_ns"] for r in st["by_name"] if r["cat"] == "compute"} == want
    pieces = tmp_path / "pieces"
    run("split", merged, "-o", pieces, "--size", "40KiB")
    files = sorted(pieces / f for f in os.listdir(pieces))
    assert len(files) > 2
    sums = collections.Counter()
    for f in files:
        run("validate", f)
        st = json.loads(run("stat", "--json", f).stdout)
        for r in st["by_name"]:
            if r["cat"] == "compute":
                sums[r["name"]] += r["total_ns"]
    assert sums == want  # each piece declares ns: none is read as microseconds


def test_merge_refuses_to_mix_units(ns_trace, tmp_path):
    us = record(tmp_path, "us", precision="us", n=20)
    p = run("merge", ns_trace, us, "-o", tmp_path / "x.pfw.gz", check=False)
    assert p.returncode == 2
    assert "different time units" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "x.pfw.gz").exists()


def test_microsecond_traces_read_as_before(tmp_path):
    us = record(tmp_path, "us", precision="us", n=50)
    ev = events(us)
    assert [e for e in ev if e["name"] == "start"][0]["args"]["time_metric"] == "us"
    st = json.loads(run("stat", "--json", us).stdout)
    got = {r["name"]: r for r in st["by_name"] if r["cat"] == "compute"}
    for name, total in totals(ev).items():
        assert got[name]["total_us"] == total and got[name]["total_ns"] == total * 1000
