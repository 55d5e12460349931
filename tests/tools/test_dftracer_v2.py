# test_dftracer_v2.py: DFTracer 2.x's dialect: JSON lines without brackets, integer
# ph (1 complete, 2 counter, 3 aggregated, 4 metadata), a "type" layer field, hashes as 16
# hexadecimal characters, aggregated records. Read by every tool and by dftrace.read; written by
# `dftrace convert --to dftracer-v2`, and back with `--to dftracer`, keeping every event.
import collections
import json
import os

import pytest

from conftest import events, run

V2 = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                                   "dftracer-v2", "v2-sample.pfw"))


def test_every_tool_reads_the_sample(tmp_path):
    ev = events(V2)
    assert run("validate", V2).returncode == 0
    st = json.loads(run("stat", "--json", V2).stdout)
    rows = {(r["cat"], r["name"]): r for r in st["by_name"]}
    # complete events counted one by one, aggregated records folded in by dft_cnt and dur_sum
    want = collections.Counter()
    total = collections.Counter()
    for e in ev:
        k = (e["cat"], e["name"])
        if e["ph"] == 1:
            want[k] += 1
            total[k] += e["dur"]
        elif e["ph"] == 3:
            n = e["args"]["dft_cnt"]
            want[k] += n
            total[k] += e["args"].get("dur_sum", e["args"].get("dur", 0) * n)
    assert {k: r["count"] for k, r in rows.items()} == dict(want)
    assert {k: r["total_us"] for k, r in rows.items()} == dict(total)
    assert st["aggregated_records"] == 2 and st["counters"] == 1
    assert len(run("cat", V2).stdout.splitlines()) == len(ev)
    assert len(run("cat", V2, "--cat", "POSIX").stdout.splitlines()) == sum(
        1 for e in ev if e["cat"] == "POSIX")
    out = tmp_path / "v.json"
    run("convert", V2, "--to", "perfetto", "-o", out)
    doc = json.loads(out.read_text())
    phs = collections.Counter(e["ph"] for e in doc["traceEvents"])
    # start and end: instants; aggregated records: regions (test_cat_convert.py)
    assert phs["X"] == sum(1 for e in ev if e["ph"] == 1) - 2 + sum(1 for e in ev if e["ph"] == 3)
    assert phs["i"] == 2
    assert phs["C"] == sum(1 for e in ev if e["ph"] == 2)
    merged = tmp_path / "m.pfw.gz"
    run("merge", V2, "-o", merged)
    assert run("validate", merged).returncode == 0
    run("split", merged, "-o", tmp_path / "pieces", "--size", "1KiB")
    assert sum(len(events(tmp_path / "pieces" / f)) for f in os.listdir(tmp_path / "pieces")) >= len(ev)


def test_read_resolves_hexadecimal_hashes():
    pytest.importorskip("pandas", reason="Debian's python3-pandas is not installed")
    import dftrace
    df = dftrace.read(V2, args=["fhash", "dft_cnt"])
    ev = [e for e in events(V2) if e["ph"] != 4]
    assert len(df) == len(ev)
    assert set(df.ph.astype(str)) == {"X", "C", "A"}
    fh = {e["args"]["value"]: e["args"]["name"] for e in events(V2) if e["name"] == "FH"}
    want = collections.Counter(fh[e["args"]["fhash"]] for e in ev if "fhash" in e["args"])
    assert collections.Counter(df.file.dropna()) == want
    assert set(df["rank"]) == {3} and set(df.host.dropna()) == {"corona171"}
    assert df[df.ph == "A"].dft_cnt.tolist() == [2, 1]


def canonical(path):
    """Every event of a trace, dialect aside: ph as a letter (v2 instants have none), hashes as
    integers, no type field."""
    out = collections.Counter()
    for e in events(path):
        ph = {1: "X", 2: "C", 3: "A", 4: "M"}.get(e["ph"], e["ph"]) if isinstance(e["ph"], int) else e["ph"]
        args = {}
        for k, v in e.get("args", {}).items():
            hashy = k in ("hhash", "fhash") or k.endswith("_hash") or (
                ph == "M" and e["name"] in ("HH", "SH", "FH") and k == "value")
            args[k] = int(v, 16) if hashy and isinstance(v, str) and len(v) == 16 else v
        out[json.dumps([e["name"], e.get("cat"), e.get("pid"), e.get("tid"), e.get("ts"),
                        e.get("dur"), ph, args], sort_keys=True)] += 1
    return out


@pytest.mark.parametrize("which", ["dftracer", "dftrace"])
def test_v1_to_v2_to_v1_keeps_every_event(tmp_path, which, ref_files, real_trace):
    src = ref_files[0] if which == "dftracer" else real_trace
    v2 = tmp_path / "v2.pfw.gz"
    back = tmp_path / "v1.pfw.gz"
    run("convert", src, "--to", "dftracer-v2", "-o", v2)
    lines = [json.loads(l) for l in open_text(v2)]
    assert all(isinstance(e["ph"], int) and "type" in e for e in lines)
    hashes = [e["args"]["hhash"] for e in lines if "hhash" in e.get("args", {})]
    assert hashes and all(isinstance(h, str) and len(h) == 16 for h in hashes)
    assert run("validate", v2).returncode == 0
    a = json.loads(run("stat", "--json", src).stdout)["by_name"]
    b = json.loads(run("stat", "--json", v2).stdout)["by_name"]
    assert sorted(map(json.dumps, a)) == sorted(map(json.dumps, b))
    run("convert", v2, "--to", "dftracer", "-o", back)
    assert run("validate", back).returncode == 0
    assert canonical(back) == canonical(src)


def open_text(path):
    import gzip
    with gzip.open(path, "rt") as f:
        return f.read().splitlines()


def nested_trace(tmp_path, **env):
    """The trace of `nested_ns 300 2` (600 steps and 600 forwards) under `env`: its path and
    its events."""
    import subprocess
    e = dict(os.environ, DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "t"), **env)
    subprocess.run([os.environ.get("DFTRACE_NESTED_NS", ""), "300", "2"], env=e, check=True,
                   timeout=120)
    (src,) = tmp_path.glob("t-*.pfw.gz")
    return src, events(src)


def test_dftrace_aggregated_records_in_every_tool(tmp_path):
    # A real trace in aggregation mode: validate accepts its records, stat folds them into
    # exact counts, convert --to dftracer-v2 writes them as "ph":3 and back as "A".
    src, ev = nested_trace(tmp_path, DFTRACE_AGGREGATION="1", DFTRACE_AGGREGATION_INTERVAL="1ms")
    recs = [e for e in ev if e["ph"] == "A"]
    assert recs and not [e for e in ev if e["ph"] == "X" and e["cat"] == "compute"]
    assert run("validate", src).returncode == 0
    st = json.loads(run("stat", "--json", src).stdout)
    rows = {r["name"]: r for r in st["by_name"] if r["cat"] == "compute"}
    assert rows["step"]["count"] == rows["forward"]["count"] == 600
    assert rows["step"]["total_us"] == sum(e["args"]["dur_sum"] for e in recs if e["name"] == "step")
    assert st["aggregated_records"] == len(recs)
    v2 = tmp_path / "v2.pfw.gz"
    run("convert", src, "--to", "dftracer-v2", "-o", v2)
    assert sum(1 for e in events(v2) if e["ph"] == 3) == len(recs)
    back = tmp_path / "back.pfw.gz"
    run("convert", v2, "--to", "dftracer", "-o", back)
    assert canonical(back) == canonical(src)


def test_sampled_and_budgeted_trace_in_every_tool(tmp_path):
    # compute.forward sampled 1 in 3, every name over a budget of 50 events a second: validate
    # accepts the trace, stat's counts and totals are the run's (lines plus the records'
    # dft_cnt and dur_sum) and it names what was folded and why; the v2 conversion keeps them.
    src, ev = nested_trace(tmp_path, DFTRACE_OUTPUT_SAMPLE="compute.forward=3",
                           DFTRACE_OUTPUT_BUDGET="50/s")
    assert run("validate", src).returncode == 0
    st = json.loads(run("stat", "--json", src).stdout)
    rows = {r["name"]: r for r in st["by_name"] if r["cat"] == "compute"}
    for name in ("step", "forward"):
        mine = [e for e in ev if e["name"] == name and e["cat"] == "compute"]
        lines = [e for e in mine if e["ph"] == "X"]
        recs = [e for e in mine if e["ph"] == "A"]
        assert recs, name
        assert rows[name]["count"] == 600 == len(lines) + sum(e["args"]["dft_cnt"] for e in recs)
        assert rows[name]["total_ns"] == 1000 * (sum(e["dur"] for e in lines) +
                                                 sum(e["args"]["dur_sum"] for e in recs))
    folded = {(f["kind"], f["name"]) for f in st["folded_names"]}
    assert ("sample", "forward") in folded and ("budget", "step") in folded, folded
    text = run("stat", src).stdout
    assert "sample forward: sampled: 1 in 3 written" in text, text
    v2 = tmp_path / "v2.pfw.gz"
    run("convert", src, "--to", "dftracer-v2", "-o", v2)
    st2 = json.loads(run("stat", "--json", v2).stdout)
    assert {r["name"]: r["count"] for r in st2["by_name"] if r["cat"] == "compute"} == {
        r["name"]: r["count"] for r in st["by_name"] if r["cat"] == "compute"}
