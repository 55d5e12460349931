# test_hostile_sums_python.py: the Python faces that add up a trace themselves, `dftrace watch`
# (its Follower, also `dftrace run --summary`) and dftrace.torch.summary, on hand-written
# hostile traces whose durations (each a valid time near 2^63 ns) or aggregated records'
# dft_cnt add up past what an int64 holds: their totals are exact Python integers, held at
# 2^64-1 as `dftrace analyze` holds them, and the damage is shown, never a wrapped figure.
import json
import struct
import zlib

import pytest

from test_analyze_hostile import T0, X, j, proc, write

D = 2 ** 63 - 1  # the largest duration the int64 columns hold
MAX = 2 ** 64 - 1


def A(pid, name, cat, ts, cnt, dur, key="dur_sum"):
    """An aggregated record of cnt calls: dur_sum their total, or dur one call's."""
    return j(dict(name=name, cat=cat, pid=pid, tid=pid, ts=ts, ph="A",
                  args={"dft_cnt": cnt, key: dur}))


def member(path, text):
    """text as one gzip member with dftrace's DT field (docs/format.md section 3), which the
    Follower needs to take a member as whole; its times in microseconds, as the field holds."""
    raw = text.encode()
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = c.compress(raw) + c.flush()
    ts = [json.loads(x)["ts"] for x in text.splitlines() if x.startswith("{") and '"ts"' in x]
    size = 10 + 2 + 33 + len(body) + 8
    dt = struct.pack("<BIIIQQ", 1, size, len(raw), text.count("\n"), min(ts) // 1000,
                     max(ts) // 1000)
    head = b"\x1f\x8b\x08\x04" + b"\0\0\0\0\0\xff" + struct.pack("<H", 33) + b"DT" + \
        struct.pack("<H", 29) + dt
    with open(str(path), "wb") as f:
        f.write(head + body + struct.pack("<II", zlib.crc32(raw), len(raw) & 0xFFFFFFFF))
    return str(path)


def follow(path, text):
    pytest.importorskip("numpy", reason="dftrace watch's Follower reads columns with numpy")
    from dftrace.watch import Follower
    f = Follower(member(path, text))
    f.poll()
    return f


def test_watch_category_times_are_exact_and_held(tmp_path):
    # compute's time was numpy's int64 sum of 3 x (2^63-1) ns: 2^63-3 ns shown as a small,
    # wrong figure with nothing said; two of them (2^64-2 ns) showed -0.000 ms.
    evs = [X(70, "fwd", "compute", 1000 + k, D) for k in range(2)]
    f = follow(tmp_path / "two.pfw.gz", proc(70, evs, rank=0, start_ts=1000))
    assert f.by_cat["compute"] == 2 * D
    frame = "\n".join(f.frame("t", 1.0))
    assert "HELD" not in frame and "%.1f ms" % (2 * D / 1e6) in frame
    evs.append(X(70, "fwd", "compute", 1002, D))
    f = follow(tmp_path / "three.pfw.gz", proc(70, evs, rank=0, start_ts=1000))
    assert f.by_cat["compute"] == 3 * D  # exact
    frame = "\n".join(f.frame("t", 1.0))
    assert "HELD at 2^64-1 ns, not exact: time of compute" in frame, frame
    assert "%.1f ms" % (MAX / 1e6) in frame


def test_watch_shows_the_readers_damage_and_counts_aggregated_calls(tmp_path):
    # An aggregated record of 3 calls of 2^63-1 ns each (its time held at 2^63-1 by the reader
    # and listed in its problems): the record was left out (events 1, no POSIX time) and the
    # reader's problem never shown. A data loader wait of 2 x (2^63-1) ns wrapped negative.
    evs = [A(71, "read", "POSIX", 1000, 3, D, "dur"), X(71, "fwd", "compute", 1000, 5),
           X(71, "fetch", "dataloader", 1001, D), X(71, "fetch", "dataloader", 1002, D),
           X(71, "step", "compute", 1003, 7)]
    f = follow(tmp_path / "agg.pfw.gz", proc(71, evs, rank=0, start_ts=1000, nev=8))
    assert f.events == 3 + 4
    assert f.by_cat["POSIX"] == D and f.fetch_ns == 2 * D
    frame = "\n".join(f.frame("t", 1.0))
    assert ("DAMAGED: 1 event(s) whose ts or dur passes 2^63-1 ns (the int64 columns' limit):"
            "\n  held at 2^63-1, not exact") in frame, frame
    assert "data loader wait: 100.0% of the loop" in frame, frame


def test_watch_holds_an_end_past_the_int64_columns(tmp_path):
    # ts + dur of an event from T0 lasting 2^63-1 ns wrapped negative: the run's last time
    # (its elapsed time in `dftrace run --summary`) fell before its first.
    evs = [X(72, "fwd", "compute", T0, D), X(72, "step", "compute", T0, D)]
    f = follow(tmp_path / "end.pfw.gz", proc(72, evs, rank=0))
    assert f.last_ts == D and f.step_ends == [D]
    assert f.last_ts >= f.first_ts


def summary(path, capsys):
    pytest.importorskip("pandas", reason="dftrace.torch.summary builds a pandas table")
    import dftrace.torch
    t = dftrace.torch.summary(str(path), show=True)
    return t, capsys.readouterr().out


def test_torch_summary_totals_and_calls_are_exact_and_held(tmp_path, capsys):
    # total_ms was pandas' int64 sum: 3 x (2^63-1) ns showed as 2^63-3 ns; aggregated records
    # were left out of the table (POSIX/read missing, 2 x 2^63 calls).
    evs = [X(73, "fwd", "compute", 1000 + k, D) for k in range(3)]
    evs += [A(73, "read", "POSIX", 1000, 2 ** 63, 1), A(73, "read", "POSIX", 1001, 2 ** 63, 1)]
    evs += [A(73, "write", "POSIX", 1002, 2 ** 62, 5), X(73, "write", "POSIX", 1003, 7)]
    t, out = summary(write(tmp_path / "s.pfw.gz", proc(73, evs, rank=0, start_ts=1000, nev=0)),
                     capsys)
    assert t.loc[("compute", "fwd"), "total_ms"] == MAX / 1e6
    assert int(t.loc[("compute", "fwd"), "calls"]) == 3
    assert int(t.loc[("POSIX", "read"), "calls"]) == MAX
    assert int(t.loc[("POSIX", "write"), "calls"]) == 2 ** 62 + 1  # exact
    assert t.loc[("POSIX", "write"), "total_ms"] == 12 / 1e6
    assert t.loc[("POSIX", "write"), "p50_ms"] == 7 / 1e6  # the complete event's only
    assert t.attrs["held"] == ["POSIX/read", "compute/fwd"]
    assert ("held at %d (2^64-1), not exact: the calls or durations of POSIX/read, compute/fwd "
            "add up to it or past it" % MAX) in out, out


def test_torch_summary_self_time_is_exact(tmp_path, capsys):
    # A parent of 2^63-1 ns with two children of 2^63-1 ns each (a hostile trace: they overlap):
    # the children's sum wrapped to -2 in int64, and the parent's self time read as 2^63+1 ns.
    par = j(dict(id=5, name="outer", cat="app", pid=74, tid=74, ts=1000, dur=D, ph="X"))
    kids = [j(dict(id=6 + k, name="inner", cat="app", pid=74, tid=74, ts=1000 + k, dur=D, ph="X",
                   args=dict(p_idx=5, level=2))) for k in range(2)]
    t, out = summary(write(tmp_path / "k.pfw.gz", proc(74, [par] + kids, rank=0, start_ts=1000)),
                     capsys)
    assert t.loc[("app", "outer"), "self_ms"] == -D / 1e6
    assert t.loc[("app", "inner"), "total_ms"] == 2 * D / 1e6 and t.attrs["held"] == []
    assert "held at" not in out


def test_report_compare_lists_held_call_counts(tmp_path):
    # The compare section said nothing of a name whose calls were held at 2^64-1 (2 x 2^63
    # calls folded into two aggregated records): a run of 2^64 reads shown as exact.
    pytest.importorskip("pandas", reason="the report reads traces into pandas")
    from dftrace import _read, report_analysis
    base = write(tmp_path / "base.pfw.gz",
                 proc(75, [X(75, "read", "POSIX", T0, 5, ret=1, fhash="h1")], rank=0))
    evs = [A(76, "read", "POSIX", T0, 2 ** 63, 1), A(76, "read", "POSIX", T0 + 1, 2 ** 63, 1)]
    new = write(tmp_path / "new.pfw.gz", proc(76, evs, rank=0, nev=0))
    files = _read.trace_files([new])
    doc = report_analysis.diff(base, files)
    assert {n["name"]: n for n in doc["names"]}["POSIX/read"]["new"]["calls"] == MAX
    section = report_analysis._compare(base, files)
    assert "The calls of POSIX/read reach 2^64-1 in a run: held there, not exact." in section
    assert "reach 2^64-1" not in report_analysis._compare(base, [base])
