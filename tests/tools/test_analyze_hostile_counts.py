# test_analyze_hostile_counts.py: counts of calls and events on hand-written hostile traces
# whose aggregated records' dft_cnt (each a valid uint64) add up past 2^64-1: dftrace analyze,
# diff and stat hold every such count at 2^64-1 (never wrapped to a small, wrong figure, never
# wrapped to 0 by one more call) and list it as they list time and byte totals held there
# (analyze and diff: exit 2 unless --allow-damaged; stat: exit 1). The same traces with smaller
# counts are exact, with nothing listed.
import json

from conftest import run
from test_analyze_hostile import T0, X, analyze, check_bounds, j, proc, stat, write

MAX = 2 ** 64 - 1
HALF = 2 ** 63  # two of them wrap to 0

IO_CALLS_HELD = ("the calls of the I/O records reach 2^64-1: the io section's counts of calls "
                 "are held at 2^64-1, not exact")


def events_held(pid):
    return ("process %d on node1: its events (aggregated records' dft_cnt) reach 2^64-1: their "
            "count is held at 2^64-1, not checked" % pid)


def A(pid, name, cat, ts, cnt, **a):
    """An aggregated record of cnt calls (1 ns of time in all)."""
    return j(dict(name=name, cat=cat, pid=pid, tid=pid, ts=ts, ph="A",
                  args=dict(dft_cnt=cnt, dur_sum=1, **a)))


def agg_trace(d, cnt, name="agg.pfw.gz", pid=41, nev=None):
    """Two aggregated reads and two aggregated opens of one file, cnt calls each; the end
    event's count is the events' sum modulo 2^64 (what a wrapping reader would find)."""
    evs = [A(pid, "read", "POSIX", T0, cnt, fhash="h1"), A(pid, "open", "POSIX", T0 + 1, cnt,
                                                           fhash="h1"),
           A(pid, "read", "POSIX", T0 + 2, cnt, fhash="h1"), A(pid, "open", "POSIX", T0 + 3, cnt,
                                                               fhash="h1")]
    return write(d / name, proc(pid, evs, rank=0, nev=(4 * cnt) % 2 ** 64 if nev is None else nev))


def damaged(doc):
    return [x["what"] for x in doc["inputs"]["damaged"]]


def test_io_call_counts_past_2_64_are_held_and_listed(tmp_path):
    # reads and metadata_ops (job and file) were 2 x 2^63 mod 2^64 = 0, and the process's
    # event count 4 x 2^63 wrapped to 0 matched its end event's 0: exit 0, nothing listed.
    f = agg_trace(tmp_path, HALF)
    doc, p = analyze(f, check=False)
    assert p.returncode == 2, p.stderr
    assert damaged(doc) == [events_held(41), IO_CALLS_HELD]
    io = doc["io"]
    assert (io["reads"], io["metadata_ops"], io["writes"]) == (MAX, MAX, 0)
    assert (io["files"][0]["reads"], io["files"][0]["metadata_ops"]) == (MAX, MAX)
    assert io["access_sizes"]["not_binned"]["read"] == MAX  # calls of unknown single size
    check_bounds(doc)
    doc, p = analyze(f, extra=["--allow-damaged"])
    assert p.returncode == 0 and damaged(doc) == [events_held(41), IO_CALLS_HELD]
    small, _ = analyze(agg_trace(tmp_path, 2 ** 61, "small.pfw.gz"))  # 2^62 each: exact
    assert (small["io"]["reads"], small["io"]["metadata_ops"]) == (2 ** 62, 2 ** 62)
    assert small["inputs"]["complete"] and damaged(small) == []


def test_a_held_count_is_not_wrapped_by_one_more_call(tmp_path):
    # One record of 2^64-1 calls, then one complete read of the same file: the count wrapped
    # to 0 with the +1 (and the event count 2^64-1 + 1 = 0 matched an end event's 0).
    evs = [A(42, "read", "POSIX", T0, MAX, fhash="h1"),
           X(42, "read", "POSIX", T0 + 5, 3, ret=1, fhash="h1")]
    f = write(tmp_path / "one.pfw.gz", proc(42, evs, rank=0, nev=0))
    doc, p = analyze(f, check=False)
    assert p.returncode == 2, p.stderr
    assert damaged(doc) == [events_held(42), IO_CALLS_HELD]
    assert doc["io"]["reads"] == MAX and doc["io"]["files"][0]["reads"] == MAX
    s, p = stat(f)
    assert p.returncode == 1, p.stderr
    assert {(n["cat"], n["name"]): n for n in s["by_name"]}[("POSIX", "read")]["count"] == MAX
    assert s["io_files"][0]["read_calls"] == MAX


def diff(*args):
    p = run("diff", "--json", *args, check=False)
    return (json.loads(p.stdout) if p.stdout.strip() else None), p


def test_diff_holds_name_call_counts(tmp_path):
    # POSIX/read.calls and POSIX/open.calls were 0 in the new run (2 x 2^63 wrapped): a run of
    # 2^64 reads read as one of none, exit 0.
    base = write(tmp_path / "base.pfw.gz",
                 proc(43, [X(43, "read", "POSIX", T0, 5, ret=1, fhash="h1")], rank=0))
    new = agg_trace(tmp_path, HALF)
    doc, p = diff(base, new)
    assert p.returncode == 2, p.stderr
    assert ("diff: NEW: NOT READ: the calls of POSIX/open and POSIX/read reach 2^64-1: their "
            "counts of calls are held at 2^64-1, not exact") in p.stderr
    assert "diff: NEW: NOT READ: " + IO_CALLS_HELD in p.stderr
    assert "diff: NEW: NOT READ: " + events_held(41) in p.stderr
    assert "BASE: NOT READ" not in p.stderr
    names = {n["name"]: n for n in doc["names"]}
    assert names["POSIX/read"]["base"]["calls"] == 1
    assert names["POSIX/read"]["new"]["calls"] == MAX
    assert names["POSIX/open"]["new"]["calls"] == MAX
    doc, p = diff("--allow-damaged", base, new)
    assert p.returncode == 0, p.stderr
    doc, p = diff(base, agg_trace(tmp_path, 2 ** 61, "small.pfw.gz"))
    assert p.returncode == 0, p.stderr  # 2^62: exact
    assert {n["name"]: n for n in doc["names"]}["POSIX/read"]["new"]["calls"] == 2 ** 62


def test_stat_holds_name_and_io_call_counts_and_dropped_events(tmp_path):
    # POSIX/read's count and the file's read calls wrapped to 0 (exit 0); two end events that
    # name 2^63 dropped events each summed to 0 dropped.
    f = agg_trace(tmp_path, HALF)
    s, p = stat(f)
    assert p.returncode == 1, p.stderr
    assert ("stat: the calls of the events reach 2^64-1: the counts of calls are held at "
            "2^64-1, not exact") in p.stderr
    names = {(n["cat"], n["name"]): n for n in s["by_name"]}
    assert names[("POSIX", "read")]["count"] == names[("POSIX", "open")]["count"] == MAX
    assert s["io_files"][0]["read_calls"] == MAX
    text = run("stat", f, check=False)
    assert text.returncode == 1 and "reach 2^64-1:" in text.stderr
    ends = []
    for pid in (44, 45):
        end = j(dict(id=2, name="end", cat="dftracer", pid=pid, tid=pid, ts=T0 + 10, dur=0,
                     ph="X", args=dict(num_events=1, dropped_events=HALF)))
        body = proc(pid, [X(pid, "fwd", "compute", T0, 5)], rank=pid - 44, end=False)
        ends.append(write(tmp_path / ("d%d.pfw.gz" % pid), body + end + "\n]\n"))
    s, p = stat(*ends)
    assert p.returncode == 1 and "reach 2^64-1:" in p.stderr, p.stderr
    assert s["dropped_events"] == MAX
    s, p = stat(ends[0], agg_trace(tmp_path, 2 ** 61, "small.pfw.gz"))
    assert p.returncode == 0, p.stderr
    assert s["dropped_events"] == HALF
    names = {(n["cat"], n["name"]): n for n in s["by_name"]}
    assert names[("POSIX", "read")]["count"] == 2 ** 62
