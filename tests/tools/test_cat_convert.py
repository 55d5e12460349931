# test_cat_convert.py: dftrace cat (filters, time windows through DT fields) and dftrace
# convert (the Chrome JSON that Perfetto and chrome://tracing import), checked in Python.
import decimal
import gzip
import json
import os
import zlib

from conftest import dt_field, events, gen, gzip_members, lines, num, run


def body(path):
    return [l.strip() for l in lines(path) if l.strip() not in ("", "[", "]")]


def test_cat_without_filters_prints_every_object_line(ref_files, real_trace):
    for f in ref_files + [real_trace]:
        assert run("cat", f).stdout.splitlines() == body(f)


def test_cat_filters_match_python(ref_files):
    cm1 = [f for f in ref_files if "cm1-" in f]
    objs = [(l, json.loads(l)) for f in cm1 for l in body(f)]
    pid = str(objs[100][1]["pid"])
    cases = [
        (["--cat", "STDIO"], lambda o: o.get("cat") == "STDIO"),
        (["--name", "open,close"], lambda o: o.get("name") in ("open", "close")),
        (["--name", "open", "--name", "close"], lambda o: o.get("name") in ("open", "close")),
        (["--pid", pid, "--cat", "POSIX"], lambda o: str(o.get("pid")) == pid and o.get("cat") == "POSIX"),
    ]
    for args, pred in cases:
        got = run("cat", *args, *cm1).stdout.splitlines()
        want = [l for l, o in objs if pred(o)]
        assert got == want, args
        assert want


def test_cat_time_window_skips_members_and_keeps_order(tmp_path):
    f = gen(tmp_path / "t.pfw.gz", 60000, threads=2, member_bytes=64 * 1024)
    objs = [(l, json.loads(l)) for l in body(f)]
    ts = sorted(num(o["ts"]) for _, o in objs if "ts" in o)
    lo, hi = ts[len(ts) // 3], ts[len(ts) // 2]
    got = run("cat", "--from", lo, "--to", hi, f).stdout.splitlines()
    want = [l for l, o in objs if "ts" in o and lo <= num(o["ts"]) <= hi]
    assert got == want and want
    # Members entirely outside the window exist, so DT skipping is exercised.
    dts = [dt_field(m[2]) for m in gzip_members(f)]
    assert any(d["ts_max"] < lo for d in dts) and any(d["ts_min"] > hi for d in dts)
    # A window with nothing in it.
    assert run("cat", "--from", ts[-1] + 10**9, f).stdout == ""
    assert run("cat", "--from", "yesterday", f, check=False).returncode == 2


def test_cat_legacy_quoted_numbers_filter_by_time(ref_dir):
    f = os.path.join(ref_dir, "legacy-small.pfw")
    got = run("cat", "--from", "100", "--to", "200", f).stdout.splitlines()
    want = [l for l in body(f) if 100 <= int(json.loads(l)["ts"]) <= 200]
    assert got == want and 0 < len(want) < len(body(f))


def check_chrome(path, src_paths):
    raw = open(path, "rb").read()
    if str(path).endswith(".gz"):
        d = zlib.decompressobj(31)
        text = d.decompress(raw)
        assert d.eof and d.unused_data == b"", "more than one gzip member"
    else:
        text = raw
    doc = json.loads(text)
    assert isinstance(doc, dict) and doc["displayTimeUnit"] == "ns"
    arr = doc["traceEvents"]
    origin = decimal.Decimal(doc["otherData"]["ts_origin_us"])
    src = [o for p in src_paths for o in events(p)]
    src_events = [o for o in src if o.get("ph") != "M"]
    out_events = [o for o in arr if o["ph"] != "M"]
    assert len(out_events) == len(src_events)
    for o in out_events:  # what Perfetto's JSON importer needs, as numbers
        assert isinstance(o["ts"], int) and isinstance(o["pid"], int) and isinstance(o["tid"], int)
        if o["ph"] == "X":  # a region of 0 us is given 1 ns (it stays visible, inside its parent)
            assert isinstance(o["dur"], int) or o["dur"] == 0.001
        if o["ph"] == "C":
            assert "id" not in o
    named = {o["pid"] for o in arr if o["ph"] == "M" and o["name"] == "process_name"}
    assert {o["pid"] for o in out_events} <= named
    src_threads = {(num(o["pid"]), num(o["tid"])) for o in src
                   if o.get("ph") == "M" and o["name"] == "thread_name"}
    out_threads = {(o["pid"], o["tid"]) for o in arr if o["ph"] == "M" and o["name"] == "thread_name"}
    assert src_threads <= out_threads
    # Same events: name, ts (relative to the first event in the output) and dur survive exactly.
    dec = lambda v: decimal.Decimal(str(v))
    def dur(o, converted):
        if "dur" not in o or (o["cat"] == "dftracer" and o["name"] in ("start", "end")):
            return dec(0)  # start and end: instants of the process in the viewer
        return dec("0.001") if not converted and dec(o["dur"]) == 0 else dec(o["dur"])
    key = lambda o, base: (o["name"], num(o["pid"]), num(o["tid"]), dec(o["ts"]) + base,
                           dur(o, base != 0))
    assert sorted(key(o, origin) for o in out_events) == sorted(key(o, 0) for o in src_events)
    assert min(o["ts"] for o in out_events) == 0
    return arr


def test_convert_real_and_synthetic_traces(tmp_path, real_trace):
    out = tmp_path / "real.json"
    run("convert", real_trace, "--to", "perfetto", "-o", out)
    check_chrome(out, [real_trace])
    g = gen(tmp_path / "g.pfw.gz", 20000, threads=3)
    outz = tmp_path / "g.json.gz"
    run("convert", g, "--to", "perfetto", "-o", outz)
    arr = check_chrome(outz, [g])
    assert any(o["ph"] == "C" for o in arr)
    names = [o["args"]["name"] for o in arr if o["ph"] == "M" and o["name"] == "thread_name"]
    assert sorted(names) == ["worker-0", "worker-1", "worker-2"]


def test_convert_legacy_quoted_numbers(tmp_path, ref_files):
    for f in ref_files:
        out = tmp_path / (os.path.basename(f) + ".json.gz")
        run("convert", f, "--to", "perfetto", "-o", out)
        check_chrome(out, [f])


def test_convert_rejects_unknown_format(tmp_path, real_trace):
    assert run("convert", real_trace, "--to", "svg", "-o", tmp_path / "x", check=False).returncode == 2


def test_cat_time_window_does_not_inflate_members_outside_it(tmp_path):
    # Damage a member that lies entirely before the window: a time-window cat never reads
    # it (so reports nothing), while a plain cat trips over it.
    f = gen(tmp_path / "w.pfw.gz", 40000, member_bytes=64 * 1024)
    ms = gzip_members(f)
    dts = [dt_field(m[2]) for m in ms]
    k = len(ms) // 4
    off, _, _, n = ms[k]
    data = bytearray(open(f, "rb").read())
    for i in range(off + 60, off + n - 20, 7):
        data[i] ^= 0x5A
    bad = tmp_path / "damaged.pfw.gz"
    bad.write_bytes(bytes(data))
    lo = dts[len(ms) // 2]["ts_min"]
    p = run("cat", "--from", lo, bad)
    assert p.stderr == "" and p.stdout
    p = run("cat", bad, check=False)
    assert p.returncode == 1 and f"byte {off}" in p.stderr


def write_lines(path, objs):
    with open(path, "w") as f:
        f.write("[\n" + "".join(json.dumps(o, separators=(",", ":")) + "\n" for o in objs) + "]\n")
    return path


def thread_order(arr, pid, tid):
    """The names of a thread's complete events in the order a viewer reads them."""
    return [o["name"] for o in arr if o["ph"] == "X" and o["pid"] == pid and o["tid"] == tid]


def test_convert_nests_regions_of_equal_times_by_level(tmp_path):
    # Three nested regions that begin and end at the same microsecond, written as a tracer
    # writes them: each when it ends, the innermost first. A viewer nests a later region of the
    # same times inside the earlier one, so the outermost must come first: on thread 1 by their
    # level, on thread 2 (no level: DFTracer with metadata off) by being written last.
    t = 1795262848000000
    objs = []
    for tid, with_level in ((1, True), (2, False)):
        for level, name in ((3, "inner"), (2, "middle"), (1, "outer")):
            o = {"id": len(objs) + 1, "name": name, "cat": "c", "pid": 7, "tid": tid, "ts": t,
                 "dur": 40, "ph": "X", "args": {"level": level} if with_level else {}}
            objs.append(o)
    # siblings of one level at equal times keep the order they were written in
    for k, name in enumerate(("first", "second")):
        objs.append({"id": 10 + k, "name": name, "cat": "c", "pid": 7, "tid": 3, "ts": t,
                     "dur": 5, "ph": "X", "args": {"level": 2}})
    src = write_lines(tmp_path / "eq.pfw", objs)
    out = tmp_path / "eq.json"
    run("convert", src, "--to", "perfetto", "-o", out)
    arr = json.load(open(out))["traceEvents"]
    assert thread_order(arr, 7, 1) == ["outer", "middle", "inner"]
    assert thread_order(arr, 7, 2) == ["outer", "middle", "inner"]
    assert thread_order(arr, 7, 3) == ["first", "second"]
    check_chrome(out, [src])


def aggregated_trace(tmp_path):
    import subprocess
    e = dict(os.environ, DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "t"),
             DFTRACE_AGGREGATION="1", DFTRACE_AGGREGATION_INTERVAL="1ms")
    subprocess.run([os.environ.get("DFTRACE_NESTED_NS", ""), "300", "2"], env=e, check=True,
                   timeout=120)
    (src,) = tmp_path.glob("t-*.pfw.gz")
    return src


def region_key(name, cat, pid, tid, interval_ts, dur, figures):
    dec = lambda v: decimal.Decimal(str(v))
    return (name, cat, pid, tid, dec(interval_ts), dec(dur), json.dumps(figures, sort_keys=True))


def check_aggregated_regions(out, recs):
    """Each aggregated record is one complete event of its name and thread, as long as its calls
    took together (dur_sum; 1 ns for 0), its figures exact in args with interval_ts, the start of
    its interval; the regions of a thread do not overlap and none begins before its interval."""
    doc = json.load(open(out))
    arr = doc["traceEvents"]
    origin = decimal.Decimal(doc["otherData"]["ts_origin_us"])
    regions = [o for o in arr if o["ph"] == "X" and "interval_ts" in o.get("args", {})]
    want = []
    for r in recs:
        figures = {k: v for k, v in r["args"].items() if k not in ("hhash", "level", "p_idx")}
        dur = r["args"]["dur_sum"] or "0.001"
        want.append(region_key(r["name"], r["cat"], r["pid"], r["tid"],
                               decimal.Decimal(str(r["ts"])) - origin, dur, figures))
    got = [region_key(o["name"], o["cat"], o["pid"], o["tid"], o["args"]["interval_ts"],
                      o["dur"], {k: v for k, v in o["args"].items() if k != "interval_ts"})
           for o in regions]
    assert sorted(got) == sorted(want)
    by_thread = {}
    for o in regions:
        assert decimal.Decimal(str(o["ts"])) >= decimal.Decimal(str(o["args"]["interval_ts"]))
        by_thread.setdefault((o["pid"], o["tid"]), []).append(
            (decimal.Decimal(str(o["ts"])), decimal.Decimal(str(o["dur"]))))
    for spans in by_thread.values():
        spans.sort()
        for (a, da), (b, _) in zip(spans, spans[1:]):
            assert a + da <= b
    return arr


def test_convert_aggregated_records_become_regions(tmp_path):
    # A real trace in aggregation mode (every compute event folded): converted, each record is
    # a region a viewer draws (counters alone leave Chrome DevTools empty and speedscope loading)
    src = aggregated_trace(tmp_path)
    recs = [e for e in events(src) if e.get("ph") == "A"]
    assert len({(r["name"], r["tid"]) for r in recs}) == 4  # step and forward on 2 threads
    out = tmp_path / "agg.json"
    run("convert", src, "--to", "perfetto", "-o", out)
    arr = check_aggregated_regions(out, recs)
    assert not [o for o in arr if o["ph"] == "C"]
    # DFTracer 2.0.2's form of the same (a counter line per call, its figures as *_min, *_max,
    # *_sum; `count` is the call's own argument) goes the same way; plain counters stay counters
    t = 1795737798200000
    recs = [{"name": "pread", "cat": "POSIX", "ts": t, "ph": "C", "pid": 5, "tid": 5,
             "args": {"hhash": "6882804a826580cd", "dur_min": d, "dur_sum": d, "dur_max": d,
                      "count": 4096, "count_min": 4096, "count_max": 4096, "count_sum": 4096,
                      "offset": 4096 * k, "level": 1, "p_idx": -1}}
            for k, d in enumerate((3, 0, 2))]
    counter = {"name": "mem", "cat": "sys", "ts": t + 5, "ph": "C", "pid": 5, "tid": 5,
               "args": {"rss": 12}}
    src = write_lines(tmp_path / "v202.pfw", recs + [counter])
    out = tmp_path / "v202.json"
    run("convert", src, "--to", "perfetto", "-o", out)
    arr = check_aggregated_regions(out, recs)
    assert [o["args"] for o in arr if o["ph"] == "C"] == [{"rss": 12}]
