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
