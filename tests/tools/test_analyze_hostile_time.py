# test_analyze_hostile_time.py: time totals on hand-written hostile traces whose durations (each
# a valid time near 2^63 ns) add up past 2^64-1 ns: dftrace analyze, diff and stat hold every
# sum of durations at 2^64-1 (never wrapped to a small, wrong figure) and list it as they list
# byte totals held there (analyze and diff: exit 2 unless --allow-damaged; stat: exit 1). The
# same traces with one event less add up to less than 2^64-1: exact, nothing listed.
import json

from conftest import run
from test_analyze_hostile import BIG, T0, X, analyze, check_bounds, proc, stat, write

D = BIG - 1  # 2^63-1 ns: a valid duration from T0 (T0 + D < 2^64); three pass 2^64-1
MAX = 2 ** 64 - 1

IO_HELD = ("the durations of the I/O calls reach 2^64-1 ns: the io section's time figures are "
           "held at 2^64-1, not exact")
STEPS_HELD = ("the durations of the steps reach 2^64-1 ns: steps.total_ns and bound_by are held "
              "at 2^64-1, not exact")
COLL_HELD = ("the durations of the collective calls reach 2^64-1 ns: the collectives section's "
             "time figures are held at 2^64-1, not exact")


def io_trace(d, n=3, name="io.pfw.gz"):
    """n reads and n opens of D ns each on one file, nested on one thread (their union is
    bounded by the span, their sums are not)."""
    evs = []
    for i in range(n):
        evs.append(X(31, "read", "POSIX", T0 + 2 * i, D, ret=1, fhash="h1"))
        evs.append(X(31, "open", "POSIX", T0 + 2 * i + 1, D, fhash="h1"))
    return write(d / name, proc(31, evs, rank=0))


def step_traces(d, n=3):
    """One step of D ns on each of n ranks: steps.total_ns sums them across groups."""
    return [write(d / f"s{r}.pfw.gz",
                  proc(40 + r, [X(40 + r, "step", "compute", T0 + r, D)], rank=r))
            for r in range(n)]


def coll_traces(d, n=3):
    """One comm.all_reduce of D ns on each of n ranks, matched: blocked_ns sums them."""
    return [write(d / f"c{r}.pfw.gz",
                  proc(50 + r, [X(50 + r, "all_reduce", "comm", T0 + r, D, comm_size=n)],
                       rank=r))
            for r in range(n)]


def damaged(doc):
    return [x["what"] for x in doc["inputs"]["damaged"]]


def test_io_time_totals_past_2_64_are_held_and_listed(tmp_path):
    # read_ns, metadata_ns (job and file) were 3 * (2^63-1) mod 2^64 = 2^63-3: small and wrong,
    # exit 0.
    f = io_trace(tmp_path)
    doc, p = analyze(f, check=False)
    assert p.returncode == 2, p.stderr
    assert damaged(doc) == [IO_HELD]
    io = doc["io"]
    assert (io["read_ns"], io["metadata_ns"], io["data_ns"], io["write_ns"]) == (MAX, MAX, MAX, 0)
    assert (io["files"][0]["read_ns"], io["files"][0]["metadata_ns"]) == (MAX, MAX)
    check_bounds(doc)
    doc, p = analyze(f, extra=["--allow-damaged"])
    assert p.returncode == 0 and damaged(doc) == [IO_HELD]
    two, _ = analyze(io_trace(tmp_path, 2, "two.pfw.gz"))  # 2^64-2: exact, nothing listed
    assert (two["io"]["read_ns"], two["io"]["metadata_ns"]) == (2 * D, 2 * D)
    assert two["inputs"]["complete"] and damaged(two) == []


def test_metadata_share_whose_whole_passes_2_64_is_exact(tmp_path):
    # Data and metadata time, 2 x (2^63-1) ns each, are exact; their sum, the share's whole,
    # wrapped to 2^64-4: a share of 100% for 50%.
    doc, _ = analyze(io_trace(tmp_path, 2, "two.pfw.gz"))
    assert (doc["io"]["data_ns"], doc["io"]["metadata_ns"]) == (2 * D, 2 * D)
    assert [f["value"] for f in doc["findings"] if f["metric"] == "io.metadata_share"] == [50]


def test_data_time_is_held_when_reads_and_writes_pass_2_64_together(tmp_path):
    # read_ns and write_ns each exact (2^63-1 and 2^63), data_ns = their sum wrapped to 0.
    evs = [X(32, "read", "POSIX", T0, D, ret=1, fhash="h1"),
           X(32, "write", "POSIX", T0 + 1, D, ret=1, fhash="h1"),
           X(32, "write", "POSIX", T0 + 2, 1, ret=1, fhash="h1")]
    doc, p = analyze(write(tmp_path / "rw.pfw.gz", proc(32, evs, rank=0)), check=False)
    assert p.returncode == 2 and damaged(doc) == [IO_HELD]
    assert (doc["io"]["read_ns"], doc["io"]["write_ns"], doc["io"]["data_ns"]) == (D, D + 1, MAX)


def test_step_totals_past_2_64_are_held_and_listed(tmp_path):
    # steps.total_ns and each bound_by total summed three ranks' steps modulo 2^64.
    paths = step_traces(tmp_path)
    doc, p = analyze(*paths, check=False)
    assert p.returncode == 2, p.stderr
    assert damaged(doc) == [STEPS_HELD]
    st = doc["steps"]
    assert st["count"] == 3 and st["total_ns"] == MAX
    assert [i["dur_ns"] for i in st["items"]] == [D] * 3  # each step exact
    check_bounds(doc)
    doc, _ = analyze(*paths[:2])
    assert doc["steps"]["total_ns"] == 2 * D and damaged(doc) == []


def test_collective_time_totals_past_2_64_are_held_and_listed(tmp_path):
    # blocked_ns (of the op and of the run) summed three ranks' calls modulo 2^64.
    paths = coll_traces(tmp_path)
    doc, p = analyze(*paths, check=False)
    assert p.returncode == 2, p.stderr
    assert damaged(doc) == [COLL_HELD]
    c = doc["collectives"]
    assert c["instances"] == 1 and c["blocked_ns"] == MAX and c["ops"][0]["blocked_ns"] == MAX
    assert c["wait_ns"] == 1 + 2  # the waits for the last arrival: exact
    doc, _ = analyze(*paths[:2])
    assert doc["collectives"]["blocked_ns"] == 2 * D and damaged(doc) == []


def diff(*args):
    p = run("diff", "--json", *args, check=False)
    return (json.loads(p.stdout) if p.stdout.strip() else None), p


def test_diff_holds_name_step_and_io_time_totals(tmp_path):
    # POSIX/read.total, io.data_ns, io.metadata_ns and step.mean came from wrapped sums: a run
    # 3 x 2^63 ns long read as shorter than one 2^63 ns long, exit 0.
    base = io_trace(tmp_path, 1, "base.pfw.gz")
    new = io_trace(tmp_path)
    doc, p = diff(base, new)
    assert p.returncode == 2, p.stderr
    assert "diff: NEW: NOT READ: " + IO_HELD in p.stderr
    assert ("diff: NEW: NOT READ: the durations of POSIX/open and POSIX/read reach 2^64-1 ns: "
            "their totals are held at 2^64-1, not exact") in p.stderr
    assert "BASE: NOT READ" not in p.stderr
    names = {n["name"]: n for n in doc["names"]}
    assert names["POSIX/read"]["base"]["total_ns"] == D
    assert names["POSIX/read"]["new"]["total_ns"] == MAX
    m = doc["metrics"]
    assert m["io.data_ns"]["new"] == float(MAX) and m["io.metadata_ns"]["new"] == float(MAX)
    assert m["io.data_ns"]["change"] > 0
    doc, p = diff("--allow-damaged", base, new)
    assert p.returncode == 0, p.stderr
    one = tmp_path / "one"
    one.mkdir()
    sdoc, p = diff(step_traces(one, 1)[0], ",".join(step_traces(tmp_path)))
    assert p.returncode == 2 and "diff: NEW: NOT READ: " + STEPS_HELD in p.stderr
    assert ("the durations of compute/step reach 2^64-1 ns: its total is held at 2^64-1, not "
            "exact") in p.stderr
    assert {n["name"]: n for n in sdoc["names"]}["compute/step"]["new"]["total_ns"] == MAX
    assert sdoc["metrics"]["step.mean"]["new"] == float(MAX) / 3
    two = io_trace(tmp_path, 2, "two.pfw.gz")
    doc, p = diff(base, two)
    assert p.returncode == 0, p.stderr  # 2^64-2: exact
    assert {n["name"]: n for n in doc["names"]}["POSIX/read"]["new"]["total_ns"] == 2 * D


def test_stat_holds_name_and_io_time_totals(tmp_path):
    # compute/step's total and the file's read time wrapped: exit 0 with figures 2^63-3.
    paths = step_traces(tmp_path)
    s, p = stat(*paths)
    assert p.returncode == 1, p.stderr
    assert ("stat: the durations of the events reach 2^64-1 ns: the time figures are held at "
            "2^64-1, not exact") in p.stderr
    names = {(n["cat"], n["name"]): n for n in s["by_name"]}
    assert names[("compute", "step")]["total_ns"] == MAX
    f = io_trace(tmp_path)
    s, p = stat(f)
    assert p.returncode == 1 and "reach 2^64-1 ns" in p.stderr
    io = s["io_files"][0]
    assert io["read_ns"] == MAX, io
    names = {(n["cat"], n["name"]): n for n in s["by_name"]}
    assert names[("POSIX", "read")]["total_ns"] == names[("POSIX", "open")]["total_ns"] == MAX
    s, p = stat(*paths[:2])
    assert p.returncode == 0, p.stderr
    names = {(n["cat"], n["name"]): n for n in s["by_name"]}
    assert names[("compute", "step")]["total_ns"] == 2 * D
    text = run("stat", f, check=False)
    assert text.returncode == 1 and "reach 2^64-1 ns" in text.stderr


def test_stat_holds_io_time_summed_over_files(tmp_path):
    # Each file's read time exact (2^63-1, 2^63-1, 1), the text report's total over the files
    # wrapped.
    evs = [X(33, "read", "POSIX", T0, D, ret=1, fhash="h1"),
           X(33, "read", "POSIX", T0 + 1, D, ret=1, fhash="h2"),
           X(33, "read", "POSIX", T0 + 2, 2, ret=1, fhash="h3")]
    f = write(tmp_path / "files.pfw.gz", proc(33, evs, rank=0))
    s, p = stat(f)
    assert p.returncode == 1 and "reach 2^64-1 ns" in p.stderr
    assert sorted(x["read_ns"] for x in s["io_files"]) == [2, D, D]


def test_an_aggregated_record_whose_calls_pass_2_64_is_held(tmp_path):
    # 3 calls of 2^63-1 ns folded into one record (its `dur` one call's): dur x dft_cnt wrapped
    # to 2^63-3 in stat and in diff's name total.
    agg = json.dumps(dict(name="read", cat="POSIX", pid=34, tid=34, ts=T0, ph="A",
                          args=dict(dft_cnt=3, dur=D)), separators=(",", ":"))
    f = write(tmp_path / "agg.pfw.gz", proc(34, [agg], rank=0, nev=3))
    s, p = stat(f)
    assert p.returncode == 1 and "reach 2^64-1 ns" in p.stderr, p.stderr
    names = {(n["cat"], n["name"]): n for n in s["by_name"]}
    assert names[("POSIX", "read")]["count"] == 3
    assert names[("POSIX", "read")]["total_ns"] == MAX
    base = write(tmp_path / "base.pfw.gz", proc(34, [X(34, "read", "POSIX", T0, 5)], rank=0))
    doc, p = diff(base, f)
    assert p.returncode == 2
    assert ("diff: NEW: NOT READ: the durations of POSIX/read reach 2^64-1 ns: its total is "
            "held at 2^64-1, not exact") in p.stderr
    got = {n["name"]: n for n in doc["names"]}["POSIX/read"]["new"]
    assert (got["calls"], got["total_ns"]) == (3, MAX)
