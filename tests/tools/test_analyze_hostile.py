# test_analyze_hostile.py: dftrace analyze (and diff, stat, dftrace.analyze) on hand-written
# edge-case and hostile traces: each gives exact figures, or exit 2 with the loss listed (and
# the figures of what was read under --allow-damaged), never a crash, never a figure past the
# span, never a share past 100%, never a silent under- or over-count.
import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import run

T0 = 1_700_000_000_000_000_000
BIG = 2 ** 63


def j(d):
    return json.dumps(d, separators=(",", ":"))


def meta(pid, name, n, v):
    return j(dict(id=0, name=name, cat="dftracer", pid=pid, tid=pid, ph="M",
                  args=dict(name=n, value=v)))


def X(pid, name, cat, ts, dur, **a):
    d = dict(name=name, cat=cat, pid=pid, tid=pid, ts=ts, dur=dur, ph="X")
    if a:
        d["args"] = a
    return j(d)


def proc(pid, evs, rank=None, ppid=1, end=True, start_ts=T0, nev=None):
    """A process's lines as dftrace writes them: header, start, events, end (its count)."""
    out = ["[", meta(pid, "PR", "time_metric", "ns"), meta(pid, "HH", "node1", 12345)]
    if rank is not None:
        out.append(meta(pid, "PR", "rank", rank))
    out.append(j(dict(id=1, name="start", cat="dftracer", pid=pid, tid=pid, ts=start_ts, dur=0,
                      ph="X", args=dict(ppid=ppid))))
    out += evs
    if end:
        out.append(j(dict(id=2, name="end", cat="dftracer", pid=pid, tid=pid, ts=T0 + 10 ** 9,
                          dur=0, ph="X", args=dict(num_events=len(evs) if nev is None else nev))))
        out.append("]")
    return "\n".join(out) + "\n"


def write(path, text):
    with gzip.open(str(path), "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)
    return str(path)


def analyze(*paths, check=True, extra=()):
    p = run("analyze", "--json", *extra, *paths, check=check)
    return json.loads(p.stdout), p


def check_bounds(doc):
    """No figure past its group's span, each step's split summing to it, no share past 100%."""
    for g in doc["groups"]:
        for k in ("union_ns", "overlap_ns", "unoverlapped_ns", "self_ns"):
            assert all(0 <= v <= g["span_ns"] for v in g[k].values()), (k, g)
    for it in doc["steps"]["items"]:
        assert sum(it[k] for k in ("compute_ns", "comm_ns", "io_ns", "data_ns",
                                   "other_ns")) == it["dur_ns"]
    for g in doc["collectives"]["groups"]:
        assert 0 <= g["comm_overlap_pct"] <= 100
    for f in doc["findings"]:
        if f["metric"].endswith("_pct"):
            assert 0 <= f["value"] <= 100, f


def test_negative_or_unparsable_times_are_listed_not_read_as_zero(tmp_path):
    # dur -50 was read as 0 (exit 0, the event silently gone from compute's union); a ts of
    # 2^64 or -100 was dropped, noticed only through the end event's count.
    evs = [X(12, "fwd", "compute", T0 + 100, -50), X(12, "read", "POSIX", T0 + 200, 10, ret=5),
           X(12, "fwd", "compute", 2 ** 64, 1), X(12, "fwd", "compute", -100, 50)]
    for end in (True, False):  # without an end event there is no count to catch it
        f = write(tmp_path / f"neg{end}.pfw.gz", proc(12, evs, rank=0, end=end))
        doc, p = analyze(f, check=False)
        assert p.returncode == 2, p.stderr
        what = [d["what"] for d in doc["inputs"]["damaged"]]
        assert what == ["3 event(s) left out: a ts or dur that is no time in nanoseconds from 0 "
                        "to 2^64-1 (negative, not a number, or ending past it)"]
        assert doc["inputs"]["damaged"][0]["file"] == f
        doc, p = analyze(f, extra=["--allow-damaged"])
        g = doc["groups"][0]
        assert g["union_ns"]["compute"] == 0 and g["union_ns"]["io"] == 10
        check_bounds(doc)


def test_an_end_past_2_64_is_listed_not_cut(tmp_path):
    # ts + dur past 2^64-1 ns was cut at 2^64-1: an inexact union and step, exit 0.
    evs = [X(13, "fwd", "compute", BIG - 10, 100),
           X(13, "read", "POSIX", BIG - 5, BIG + 7, ret=1),
           X(13, "step", "compute", BIG - 20, 2 ** 64 - 1)]
    f = write(tmp_path / "big.pfw.gz", proc(13, evs, rank=0, end=False, start_ts=BIG - 30))
    doc, p = analyze(f, check=False)
    assert p.returncode == 2
    assert doc["inputs"]["damaged"][0]["what"].startswith("2 event(s) left out")
    doc, _ = analyze(f, extra=["--allow-damaged"])
    g = doc["groups"][0]
    assert (g["start_ns"], g["span_ns"]) == (BIG - 30, 120)
    assert g["union_ns"]["compute"] == 100 and g["union_ns"]["io"] == 0
    assert doc["steps"]["count"] == 0
    check_bounds(doc)
    # ts close to 2^64 that fits is read exactly
    f2 = write(tmp_path / "edge.pfw.gz", proc(14, [X(14, "fwd", "compute", 2 ** 64 - 6, 5)],
                                              rank=0, end=False, start_ts=2 ** 64 - 10))
    doc, _ = analyze(f2)
    assert doc["groups"][0]["union_ns"]["compute"] == 5 and doc["groups"][0]["span_ns"] == 9


def test_a_file_given_twice_is_read_once(tmp_path):
    # Read twice, the process held every event twice and its end count disagreed (exit 2).
    d = tmp_path / "d"
    d.mkdir()
    f = write(d / "a.pfw.gz", proc(80, [X(80, "fwd", "compute", T0, 100),
                                       X(80, "step", "compute", T0, 100)], rank=0))
    once, _ = analyze(f)
    other = str(tmp_path / "d" / ".." / "d" / "a.pfw.gz")
    for paths in ([f, f], [f, other], [str(d), f]):
        doc, p = analyze(*paths)
        assert doc["inputs"]["files"] == 1 and doc["inputs"]["complete"], paths
        assert doc["inputs"]["warnings"][0]["what"].endswith(", given again: read once")
        doc["inputs"]["warnings"] = once["inputs"]["warnings"]
        assert doc == once
    py = subprocess.run([sys.executable, "-c", "import dftrace, json, sys; "
                         "r = dftrace.analyze(sys.argv[1:]); print(r['inputs']['events'], "
                         "r['inputs']['files'], r['steps']['count'])", f, f],
                        capture_output=True, text=True)
    assert py.returncode == 0, py.stderr
    assert py.stdout.split() == [str(once["inputs"]["events"]), "1", "1"]
