# test_stat.py: dftrace stat against counts computed independently in Python, on the real
# DFTracer traces of tests/data/dftracer, a real dftrace trace and synthetic ones.
import collections
import json
import os

from conftest import dt_field, events, gen, gzip_members, lines, num, run


def expected(paths):
    """What stat must say, computed with json.loads on every line."""
    by_name = collections.defaultdict(list)
    phs = collections.Counter()
    n_lines = 0
    ts_min, ts_end, dropped = None, None, 0
    pids = collections.Counter()
    threads = collections.Counter()
    for p in paths:
        n_lines += len(lines(p))
        for e in events(p):
            ph = e.get("ph", "")
            phs[ph] += 1
            if ph == "M" or "ts" not in e:
                continue
            ts = num(e["ts"])
            end = ts + num(e.get("dur", 0))
            ts_min = ts if ts_min is None else min(ts_min, ts)
            ts_end = end if ts_end is None else max(ts_end, end)
            pids[num(e["pid"])] += 1
            threads[(num(e["pid"]), num(e["tid"]))] += 1
            if ph == "X":
                by_name[(e["cat"], e["name"])].append(num(e["dur"]))
                if e["name"] == "end" and e["cat"] == "dftracer":
                    dropped += e["args"].get("dropped_events", 0)
    return dict(by_name=by_name, phs=phs, lines=n_lines, ts_min=ts_min, ts_end=ts_end,
                dropped=dropped, pids=pids, threads=threads)


def pct(v, q):
    s = sorted(v)
    return s[int(q * (len(s) - 1) + 0.5)]


def check(paths):
    exp = expected(paths)
    got = json.loads(run("stat", "--json", *paths).stdout)
    assert got["lines"] == exp["lines"]
    assert got["complete_events"] == exp["phs"]["X"]
    assert got["metadata"] == exp["phs"]["M"]
    assert got["counters"] == exp["phs"]["C"]
    assert got["invalid_lines"] == 0
    assert got["dropped_events"] == exp["dropped"]
    assert got["ts_min"] == exp["ts_min"]
    assert got["ts_end"] == exp["ts_end"]
    rows = {(r["cat"], r["name"]): r for r in got["by_name"]}
    assert set(rows) == set(exp["by_name"])
    for k, durs in exp["by_name"].items():
        r = rows[k]
        assert r["count"] == len(durs), k
        assert r["total_us"] == sum(durs), k
        assert abs(r["mean_us"] - sum(durs) / len(durs)) < 1e-3, k
        assert r["p50_us"] == pct(durs, 0.5), k
        assert r["p99_us"] == pct(durs, 0.99), k
    assert {r["pid"]: r["events"] for r in got["by_pid"]} == dict(exp["pids"])
    assert {(r["pid"], r["tid"]): r["events"] for r in got["by_thread"]} == dict(exp["threads"])
    return got


def test_reference_traces_one_by_one(ref_files):
    assert len(ref_files) == 10
    for f in ref_files:
        check([f])


def test_reference_traces_together(ref_files):
    got = check(ref_files)
    assert len(got["files"]) == 10
    # The cm1 files are DFTracer 1.0.8 single members without DT fields.
    cm1 = [f for f in got["files"] if "cm1-" in f["path"]]
    assert len(cm1) == 8 and all(f["dt_members"] == 0 for f in cm1)


def test_real_dftrace_trace(real_trace):
    got = check([real_trace])
    assert got["files"][0]["dt_members"] == got["files"][0]["members"] >= 1


def test_synthetic_multithreaded(tmp_path):
    a = gen(tmp_path / "a.pfw.gz", 30000, pid=11, threads=4, member_bytes=65536)
    b = gen(tmp_path / "b.pfw", 20000, pid=12, threads=2, plain=True)
    c = gen(tmp_path / "c.pfw.gz", 20000, pid=13, no_dt=True)
    got = check([a, b, c])
    assert got["complete_events"] == 30000 + 20000 + 20000 + 6  # + start/end of each


def test_fast_counts_lines_from_dt_fields_only(tmp_path):
    a = gen(tmp_path / "a.pfw.gz", 50000, pid=5, member_bytes=100000)
    ms = gzip_members(a)
    assert len(ms) > 5
    dts = [dt_field(m[2]) for m in ms]
    got = json.loads(run("stat", "--json", "--fast", a).stdout)
    f = got["files"][0]
    assert f["lines_from_dt"] is True
    assert f["lines"] == len(lines(a)) == sum(d["lines"] for d in dts)
    assert f["text_bytes"] == sum(d["uncompressed"] for d in dts)
    # Without DT fields, --fast still counts, by inflating.
    c = gen(tmp_path / "c.pfw.gz", 5000, no_dt=True)
    got = json.loads(run("stat", "--json", "--fast", c).stdout)
    assert got["files"][0]["lines_from_dt"] is False
    assert got["files"][0]["lines"] == len(lines(c))


def test_table_output_names_every_category(ref_files):
    out = run("stat", *ref_files).stdout
    assert "lines" in out and "time span" in out
    for cat, name in [("POSIX", "open"), ("STDIO", "fopen64"), ("dftracer", "start")]:
        assert any(l.split()[:2] == [cat, name] for l in out.splitlines()), (cat, name)


def test_ranks_from_pr_metadata(tmp_path):
    a = gen(tmp_path / "a.pfw.gz", 1000, pid=41, rank=0)
    b = gen(tmp_path / "b.pfw.gz", 1000, pid=42, rank=1)
    c = gen(tmp_path / "c.pfw.gz", 1000, pid=43)
    got = json.loads(run("stat", "--json", a, b, c).stdout)
    assert {r["pid"]: r["rank"] for r in got["by_pid"]} == {41: 0, 42: 1, 43: None}
    table = run("stat", a, b).stdout
    assert any(l.split()[:3] == ["42", "1", "*"] for l in table.splitlines())
