# test_convert_exact.py: `dftrace convert --to perfetto` for viewers whose JSON numbers are
# doubles: times relative to the first event and exact to the ns, 64-bit integers as
# strings, bookkeeping arguments left out, a parent before the children that start with it,
# every thread named. Checked by Python's json, which parses numbers as a viewer does.
import decimal
import json

from conftest import run

HHASH = 7386335834152862147  # > 2**53: a double can not hold it
FHASH = 12271664118113473283


def write_trace(path, threads=2, parents=500):
    """A dftrace trace at ns precision: per thread, `parents` 10-us regions, each with a child
    of 0.25 us starting at the same ns; children written first (they end first), as the writer
    writes them. Returns {(tid, id): (ts_us Decimal, dur_us Decimal)}."""
    base = decimal.Decimal("1795568271909959.123")
    lines = ["[", json.dumps({"id": 1, "name": "HH", "cat": "dftracer", "pid": 7, "tid": 7,
                              "ph": "M", "args": {"name": "vm", "value": 0}}).replace('"value": 0', '"value": %d' % HHASH)]
    lines.append('{"id":2,"name":"FH","cat":"dftracer","pid":7,"tid":7,"ph":"M","args":'
                 '{"hhash":%d,"name":"/data/x","value":%d}}' % (HHASH, FHASH))
    want = {}
    nid = 100
    for t in range(threads):
        tid = 8 + t
        for k in range(parents):
            ts = base + decimal.Decimal(20 * k) + decimal.Decimal(t) / 1000
            for name, dur, level in (("child", decimal.Decimal("0.250"), 2),
                                     ("parent", decimal.Decimal("10.000"), 1)):
                nid += 1
                lines.append('{"id":%d,"name":"%s","cat":"compute","pid":7,"tid":%d,"ts":%s,'
                             '"dur":%s,"ph":"X","args":{"hhash":%d,"fhash":%d,"size":4,'
                             '"level":%d,"p_idx":-1}}' % (nid, name, tid, ts, dur, HHASH, FHASH,
                                                          level))
                want[(tid, nid)] = (ts, dur)
    lines.append("]")
    path.write_text("\n".join(lines) + "\n")
    return want


def convert(tmp_path, src, *extra):
    out = tmp_path / "out.json"
    run("convert", src, "--to", "perfetto", "-o", out, *extra)
    doc = json.loads(out.read_text())
    return doc, [e for e in doc["traceEvents"] if e["ph"] == "X"]


def test_times_survive_parsing_and_nesting_is_exact(tmp_path):
    src = tmp_path / "ns.pfw"
    want = write_trace(src)
    doc, ev = convert(tmp_path, src)
    assert doc["displayTimeUnit"] == "ns"
    origin = decimal.Decimal(doc["otherData"]["ts_origin_us"])
    assert len(ev) == len(want)
    for e in ev:  # the double Python (and a browser) parsed, plus the origin, is the file's value
        ts, dur = want[(e["tid"], e["id"])]
        assert decimal.Decimal(repr(e["ts"])) + origin == ts, e
        assert decimal.Decimal(repr(e["dur"])) == dur, e
    # Two levels: every child lies inside the parent that starts with it, and comes after it.
    for tid in (8, 9):
        mine = [e for e in ev if e["tid"] == tid]
        for i, e in enumerate(mine):
            if e["name"] == "child":
                p = mine[i - 1]
                assert p["name"] == "parent" and p["ts"] == e["ts"]
                assert e["ts"] + e["dur"] <= p["ts"] + p["dur"]
    # Per-name durations to the ns.
    total = {n: sum(decimal.Decimal(repr(e["dur"])) for e in ev if e["name"] == n)
             for n in ("child", "parent")}
    assert total == {"child": decimal.Decimal("0.250") * 1000, "parent": decimal.Decimal(10) * 1000}


def test_64_bit_values_and_bookkeeping(tmp_path):
    src = tmp_path / "ns.pfw"
    write_trace(src, threads=1, parents=3)
    _, ev = convert(tmp_path, src)
    for e in ev:
        assert e["args"] == {"fhash": str(FHASH), "size": 4}  # no level, p_idx, hhash
    _, kept = convert(tmp_path, src, "--keep-args")
    for e in kept:
        assert e["args"]["hhash"] == str(HHASH) and e["args"]["fhash"] == str(FHASH)
        assert isinstance(e["args"]["level"], int) and e["args"]["p_idx"] == -1


def test_every_thread_and_process_is_named(tmp_path):
    src = tmp_path / "ns.pfw"
    write_trace(src, threads=2, parents=2)
    doc, _ = convert(tmp_path, src)
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert threads == {(7, 8): "thread 8", (7, 9): "thread 9"}
    assert [e["args"]["name"] for e in meta if e["name"] == "process_name"] == ["pid 7"]
