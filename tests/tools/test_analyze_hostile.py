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
        # read under the lexically smallest of its names (other: "d/../d/a" < "d/a")
        assert doc["inputs"]["per_file"][0]["path"] == min(x if x.endswith(".gz") else f
                                                           for x in paths)
        doc["inputs"]["per_file"][0]["path"] = f
        assert doc == once
    py = subprocess.run([sys.executable, "-c", "import dftrace, json, sys; "
                         "r = dftrace.analyze(sys.argv[1:]); print(r['inputs']['events'], "
                         "r['inputs']['files'], r['steps']['count'])", f, f],
                        capture_output=True, text=True)
    assert py.returncode == 0, py.stderr
    assert py.stdout.split() == [str(once["inputs"]["events"]), "1", "1"]


def test_two_ranks_with_one_pid_on_one_host_stay_two(tmp_path):
    # Two containers on one node, each rank pid 7: read as one process (its rank the first
    # file's), exit 2 blaming the end count.
    a = write(tmp_path / "a.pfw.gz", proc(7, [X(7, "fwd", "compute", T0, 100),
                                             X(7, "step", "compute", T0, 100)], rank=0))
    b = write(tmp_path / "b.pfw.gz", proc(7, [X(7, "fwd", "compute", T0 + 50, 300),
                                             X(7, "read", "POSIX", T0 + 60, 10, ret=4),
                                             X(7, "step", "compute", T0 + 50, 300)], rank=1))
    docs = [analyze(*paths)[0] for paths in ([a, b], [b, a])]
    assert docs[0] == docs[1]
    doc = docs[0]
    assert doc["inputs"]["complete"] and doc["inputs"]["processes"] == 2
    assert doc["inputs"]["ranks"] == 2
    g = doc["groups"]
    assert [(x["rank"], x["pids"], x["union_ns"]["compute"], x["union_ns"]["io"])
            for x in g] == [(0, [7], 100, 0), (1, [7], 300, 10)]
    assert [it["dur_ns"] for it in doc["steps"]["items"]] == [100, 300]
    check_bounds(doc)


def test_a_pid_reused_is_named_ambiguous_not_blamed_on_the_end_count(tmp_path):
    # Two lifetimes of pid 9 (no rank), each with its start event: one process, exit 2 with
    # "its end event says 1 events, 2 were read".
    a = write(tmp_path / "a.pfw.gz", proc(9, [X(9, "fwd", "compute", T0, 100)]))
    b = write(tmp_path / "b.pfw.gz", proc(9, [X(9, "fwd", "compute", T0 + 500, 100)],
                                          start_ts=T0 + 400))
    whats = []
    for paths in ([a, b], [b, a]):
        doc, p = analyze(*paths, check=False)
        assert p.returncode == 2, p.stderr
        whats.append([d["what"] for d in doc["inputs"]["damaged"]])
    assert whats[0] == whats[1]
    assert whats[0] == ["process 9 on node1: 2 start events: processes that share this pid "
                        "cannot be told apart, read as one (%s, %s)" % (a, b)]


def stat(*paths, check=False):
    p = run("stat", "--json", *paths, check=check)
    return (json.loads(p.stdout) if p.stdout.strip() else None), p


def test_a_ret_that_is_no_byte_count_is_listed_not_read_as_0(tmp_path):
    # ret 2^63 (past ssize_t) was read as 0 bytes: a write silently gone from io, exit 0.
    evs = [X(20, "write", "POSIX", T0 + 10, 5, ret=BIG, fhash="h1"),
           X(20, "write", "POSIX", T0 + 20, 5, ret=7, fhash="h1"),
           X(20, "write", "POSIX", T0 + 30, 5, ret=-1, fhash="h1"),  # a failed call: no bytes
           X(20, "read", "POSIX", T0 + 40, 5, ret=1.5, fhash="h1")]
    f = write(tmp_path / "ret.pfw.gz", proc(20, evs, rank=0))
    doc, p = analyze(f, check=False)
    assert p.returncode == 2, p.stderr
    assert [d["what"] for d in doc["inputs"]["damaged"]] == [
        "2 I/O event(s) left out of the io figures: a ret, size or bytes that is no byte count "
        "(an integer up to 2^63-1; a negative ret is a failed call)"]
    doc, _ = analyze(f, extra=["--allow-damaged"])
    assert (doc["io"]["write_bytes"], doc["io"]["writes"]) == (7, 2)
    assert doc["groups"][0]["union_ns"]["io"] == 20  # their time is still I/O time
    s, p = stat(f)
    assert p.returncode == 1 and "2 I/O event(s) left out of the I/O figures" in p.stderr


def test_byte_totals_past_2_64_are_held_and_listed_not_wrapped(tmp_path):
    # Three writes of 2^63-1 bytes added up to 2^64-3 + 2^63 (mod 2^64): a small, wrong total.
    n = BIG - 1
    evs = [X(21, "write", "POSIX", T0 + 10 * i, 5, ret=n, fhash="h1") for i in range(3)]
    f = write(tmp_path / "sum.pfw.gz", proc(21, evs, rank=0))
    doc, p = analyze(f, check=False)
    assert p.returncode == 2, p.stderr
    assert [d["what"] for d in doc["inputs"]["damaged"]] == [
        "the bytes of the I/O calls add up past 2^64-1: the io section's byte figures are held "
        "at 2^64-1, not exact"]
    assert doc["io"]["write_bytes"] == 2 ** 64 - 1
    assert doc["io"]["files"][0]["write_bytes"] == 2 ** 64 - 1
    assert all(v <= 2 ** 64 - 1 for g in doc["io"]["bandwidth"]["groups"]
               for v in g["write_bytes"])
    s, p = stat(f)
    assert p.returncode == 1 and "add up past 2^64-1" in p.stderr
    two = write(tmp_path / "two.pfw.gz", proc(21, evs[:2], rank=0))
    doc, _ = analyze(two)  # 2^64-2: exact
    assert doc["io"]["write_bytes"] == 2 * n


def test_stat_lists_an_end_past_2_64_and_a_bad_time(tmp_path):
    # ts + dur wrapped to a small end (the event counted with it), a negative dur read as none:
    # exit 0.
    for evs in ([X(22, "fwd", "compute", 2 ** 64 - 6, 10)], [X(22, "fwd", "compute", T0, -5)]):
        f = write(tmp_path / "w.pfw.gz", proc(22, evs + [X(22, "fwd", "compute", T0, 5)],
                                              rank=0))
        s, p = stat(f)
        assert p.returncode == 1, p.stderr
        assert ("w.pfw.gz: 1 event(s) left out: a ts or dur that is no time in nanoseconds "
                "from 0 to 2^64-1") in p.stderr


def test_a_file_named_twice_is_read_once_by_every_tool(tmp_path):
    # `dftrace stat a a` counted every event twice; analyze's warning named the first path.
    a = write(tmp_path / "a.pfw.gz", proc(23, [X(23, "fwd", "compute", T0, 100)], rank=0))
    b = str(tmp_path / "b.pfw.gz")
    os.link(a, b)
    once, _ = stat(a, check=True)
    outs = []
    for paths in ([a, a], [a, b], [b, a]):
        s, p = stat(*paths)
        assert p.returncode == 0, p.stderr
        assert s["events"] == once["events"] and len(s["files"]) == 1, paths
        assert s["files"][0]["path"] == a
        outs.append(p.stderr)
    line = "dftrace: warning: %s: the same file as %s, given again: read once\n"
    assert outs[0] == line % (a, a)
    assert outs[1] == outs[2] == line % (b, a)  # named by the smaller name, in either order
    docs = [analyze(*paths)[0] for paths in ([a, b], [b, a])]
    assert docs[0] == docs[1]
    assert docs[0]["inputs"]["warnings"] == [
        {"file": b, "what": "the same file as %s, given again: read once" % a}]


def test_a_step_inside_a_step_of_its_thread_is_counted_once(tmp_path):
    # A step event inside another on one thread (a step function calling itself): two steps,
    # total_ns 140 for 100 ns of stepping.
    evs = [X(24, "fwd", "compute", T0, 100), X(24, "step", "compute", T0 + 10, 40),
           X(24, "step", "compute", T0, 100), X(24, "step", "compute", T0 + 100, 0),
           X(24, "step", "compute", T0 + 100, 30)]
    f = write(tmp_path / "nest.pfw.gz", proc(24, evs, rank=0))
    doc, _ = analyze(f)
    st = doc["steps"]
    assert [(i["ts_ns"] - T0, i["dur_ns"]) for i in st["items"]] == [(0, 100), (100, 30)]
    assert st["count"] == 2 and st["total_ns"] == 130
    check_bounds(doc)


def test_a_worker_whose_parent_pid_names_two_ranks_is_listed(tmp_path):
    # Its parent pid 7 is both ranks' pid on node1: it joined one of them (rank 1, by key
    # order) with nothing written to say which.
    a = write(tmp_path / "a.pfw.gz", proc(7, [X(7, "fwd", "compute", T0, 100)], rank=0))
    b = write(tmp_path / "b.pfw.gz", proc(7, [X(7, "fwd", "compute", T0, 300)], rank=1))
    w = write(tmp_path / "w.pfw.gz", proc(8, [X(8, "read", "POSIX", T0, 10, ret=4)], ppid=7))
    doc, p = analyze(a, b, w, check=False)
    assert p.returncode == 2
    assert [d["what"] for d in doc["inputs"]["damaged"]] == [
        "process 8 on node1: its parent pid 7 is the pid of 2 processes there (ranks that "
        "share a pid): which started it is not written, so it is its own group"]
    assert [(g["rank"], g["pids"]) for g in doc["groups"]] == [(0, [7]), (1, [7]), (None, [8])]
