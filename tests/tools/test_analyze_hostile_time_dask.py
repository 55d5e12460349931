# test_analyze_hostile_time_dask.py: the time totals of test_analyze_hostile_time.py past
# 2^64-1 ns read by the other faces of the engine: dftrace.analyze on one machine and on a
# LocalCluster of 2 workers (the partials merged), `dftrace report`'s one read
# (read_with_partial) with its sections, and its --compare (the diff of that read's names).
# Each holds the totals at 2^64-1 and lists them as `dftrace analyze --json --allow-damaged`.
import html
import json

import pytest

from conftest import need, run
from test_analyze_hostile import T0, X, j, proc, write
from test_analyze_hostile_time import COLL_HELD, D, IO_HELD, MAX, STEPS_HELD, coll_traces, \
    io_trace, step_traces

need("pandas", "distributed")
import dftrace  # noqa: E402
from dftrace import _analyze, _read, report_analysis  # noqa: E402


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    d = tmp_path_factory.mktemp("time")
    return {"io": ([io_trace(d)], IO_HELD), "steps": (step_traces(d), STEPS_HELD),
            "collectives": (coll_traces(d), COLL_HELD)}


@pytest.mark.parametrize("name", ["io", "steps", "collectives"])
def test_python_dask_and_report_hold_and_list_time_totals(client, cases, name):
    paths, held = cases[name]
    want = json.loads(run("analyze", "--json", "--allow-damaged", *paths).stdout)
    figure = {"io": lambda doc: doc["io"]["read_ns"],
              "steps": lambda doc: doc["steps"]["total_ns"],
              "collectives": lambda doc: doc["collectives"]["blocked_ns"]}[name]
    assert figure(want) == MAX
    assert [d["what"] for d in want["inputs"]["damaged"]] == [held]
    one = dict(dftrace.analyze(paths, allow_damaged=True))
    assert one == want and figure(one) == MAX
    with pytest.raises(_analyze.DamagedTraceError, match="2\\^64-1 ns"):
        dftrace.analyze(paths)  # damaged, not allowed: refused, as the command's exit 2
    dask = dict(dftrace.analyze(paths, client=client, allow_damaged=True))
    assert dask == want and figure(dask) == MAX
    files = _read.trace_files(paths)
    _, partial = _read.read_with_partial(files, ["ret"])
    assert dict(_analyze.from_partial(partial, allow_damaged=True)) == want
    body = report_analysis.sections(files, partial=partial)[0][2]
    assert "could not be read" in body and html.escape(held) in body


def test_dask_partials_each_exact_merge_to_a_held_total(client, tmp_path):
    # Each worker's partial holds one rank's step (exact); their merge passes 2^64-1.
    paths = step_traces(tmp_path)
    doc = dict(dftrace.analyze(paths, client=client, allow_damaged=True))
    assert doc["steps"]["total_ns"] == MAX
    assert [d["what"] for d in doc["inputs"]["damaged"]] == [STEPS_HELD]
    doc = dict(dftrace.analyze(paths[:2], client=client))
    assert doc["steps"]["total_ns"] == 2 * D and doc["inputs"]["complete"]


def test_dask_partials_merge_io_time_to_a_held_total(client, tmp_path):
    # One read of one file on each rank: the job's and the file's read_ns merge across partials.
    reads = [write(tmp_path / f"r{r}.pfw.gz",
                   proc(70 + r, [X(70 + r, "read", "POSIX", T0 + r, D, ret=1, fhash="h")], rank=r))
             for r in range(3)]
    doc = dict(dftrace.analyze(reads, client=client, allow_damaged=True))
    assert doc == json.loads(run("analyze", "--json", "--allow-damaged", *reads).stdout)
    assert doc["io"]["read_ns"] == doc["io"]["files"][0]["read_ns"] == MAX
    assert [d["what"] for d in doc["inputs"]["damaged"]] == [IO_HELD]


def test_report_compare_holds_name_totals(tmp_path):
    # The compare section's new total for POSIX/read came from a wrapped sum (2^63-3 ns).
    base = io_trace(tmp_path, 1, "base.pfw.gz")
    new = io_trace(tmp_path)
    files = _read.trace_files([new])
    _, partial, names = _read.read_with_partial(files, ["ret"], names=True)
    for doc in (report_analysis.diff(base, files), report_analysis.diff(base, files, partial,
                                                                         names)):
        got = {n["name"]: n for n in doc["names"]}
        assert got["POSIX/read"]["new"]["total_ns"] == MAX
        assert got["POSIX/read"]["base"]["total_ns"] == D
        assert doc["metrics"]["io.data_ns"]["new"] == float(MAX)
    section = report_analysis._compare(base, files, partial, names)
    assert ("The durations of POSIX/open, POSIX/read reach 2^64-1 ns in a run: held there, not "
            "exact.") in section
    assert "reach 2^64-1" not in report_analysis._compare(base, [base])


def test_report_tables_hold_name_totals(tmp_path):
    # The names and I/O tables summed durations in pandas' int64: 3 x (2^63-1) ns wrapped to
    # 2^63-3 ns (9223372036854.775 ms), and 2 x (2^63-1) to -2.
    need("matplotlib")
    from dftrace import report
    held = "%.3f" % (float(MAX) / 1e6)
    for n, want in ((3, held), (2, "%.3f" % (float(2 * D) / 1e6))):
        f = io_trace(tmp_path, n, "r%d.pfw.gz" % n)
        page = report.build([f])
        names = page[page.index('id="names"'):]
        names = names[:names.index("</section>")]
        io = page[page.index('id="io"'):]
        io = io[:io.index("</section>")]
        for section in (names, io):
            assert "<td>%s</td>" % want in section, (n, section[:3000])
            assert ("Totals of 2^64-1 ns are held there" in section) == (n == 3)


def test_report_window_sums_its_steps_exactly(tmp_path):
    # A flight-recorder window over two steps of 2^62 ns (two threads of rank 0): their sum,
    # 2^63 ns, wrapped in pandas' int64 to -2^63 (a negative time in the table).
    need("matplotlib")
    q = 2 ** 62
    evs = [j(dict(name="step", cat="compute", pid=61, tid=61 + k, ts=1000 + k, dur=q, ph="X"))
           for k in range(2)]
    f = write(tmp_path / "w.pfw.gz", proc(61, evs, rank=0, start_ts=1000))
    win = dict(pid=61, source="slow_step", reason="x", time_ns=1000 + q, from_ns=0, to_ns=None,
               after="")
    body = dict((s, b) for s, _, b in report_analysis.sections([f], windows=[win]))["windows"]
    assert "<td>%s</td><td>-</td><td>%s</td>" % (html.escape("window's 2 step(s)"),
                                                 report_analysis._ms(2 * q)) in body


def test_read_holds_times_past_the_int64_columns(client, tmp_path, capfd):
    # dftrace.read's ts and dur are int64: an aggregated record of 3 calls of 2^63-1 ns (its
    # dur x dft_cnt wrapped to 2^63-3 ns) and a complete event of 2^63+5 ns (read as a negative
    # dur) are held at 2^63-1 and listed in the problems; dftrace.dask.read_pfw holds them too.
    import dftrace.dask
    agg = json.dumps(dict(name="read", cat="POSIX", pid=35, tid=35, ts=T0, ph="A",
                          args=dict(dft_cnt=3, dur=D)), separators=(",", ":"))
    f = write(tmp_path / "big.pfw.gz",
              proc(35, [agg, X(35, "fwd", "compute", 1000, 2 ** 63 + 5), X(35, "ok", "c", T0, 7)],
                   rank=0, nev=5, start_ts=1000))
    df = dftrace.read(f)
    got = dict(zip(df["name"].astype(str), df["dur"].tolist()))
    assert (got["read"], got["fwd"], got["ok"]) == (2 ** 63 - 1, 2 ** 63 - 1, 7)
    assert df.attrs["problems"] == [
        "%s: 2 event(s) whose ts or dur passes 2^63-1 ns (the int64 columns' limit): held at "
        "2^63-1, not exact" % f]
    ddf = dftrace.dask.read_pfw(f).compute(scheduler=client)
    assert sorted(ddf["dur"].tolist()) == sorted(df["dur"].tolist())
