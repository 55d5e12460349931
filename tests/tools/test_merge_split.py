# test_merge_split.py: dftrace merge and split, checked line by line in Python: ordering,
# de-duplicated metadata, definitions before use, unique ids, clock alignment, self-describing
# members, and split-then-merge round trips that give back the same events.
import collections
import json
import os

import pytest

from conftest import dt_field, events, gen, gzip_members, lines, num, run

HASH_TYPES = ("HH", "SH", "FH")


def body(path):
    return [l for l in lines(path) if l.strip() not in ("", "[", "]")]


def check_merged(path):
    """The properties every merged trace has; returns its parsed objects."""
    objs = [json.loads(l) for l in body(path)]
    # Ordered by ts (metadata first, then everything with a ts).
    seen_event = False
    last = -1
    for o in objs:
        if o["ph"] == "M":
            assert not seen_event, "metadata after events"
            continue
        seen_event = True
        assert num(o["ts"]) >= last
        last = num(o["ts"])
    # Hash definitions unique, and before first use.
    defs = collections.Counter()
    defined = set()
    for o in objs:
        if o["ph"] == "M" and o["name"] in HASH_TYPES:
            defs[(o["name"], o["args"]["name"], str(o["args"]["value"]))] += 1
            defined.add(str(o["args"]["value"]))
        for k, v in o.get("args", {}).items():
            if k in ("hhash", "fhash") or k.endswith("_hash"):
                assert str(v) in defined, (k, v, o)
    assert all(c == 1 for c in defs.values())
    # Ids unique.
    ids = [num(o["id"]) for o in objs if "id" in o]
    assert len(ids) == len(set(ids))
    # Self-describing members, each consistent with its text.
    for off, flg, extra, n in gzip_members(path):
        dt = dt_field(extra)
        assert dt is not None, f"member at {off} has no DT field"
        assert dt["compressed"] == n
    out = run("validate", path)
    assert " 0 errors" in out.stdout
    return objs


def strip_ids(o):
    o = dict(o)
    o.pop("id", None)
    if "args" in o:
        o["args"] = {k: v for k, v in o["args"].items() if k != "p_idx"}
    return json.dumps(o, sort_keys=True)


def test_merge_reference_ranks(ref_dir, tmp_path):
    cm1 = sorted(os.path.join(ref_dir, f) for f in os.listdir(ref_dir) if f.startswith("cm1-"))
    out = tmp_path / "merged.pfw.gz"
    p = run("merge", *cm1, "-o", out)
    assert "ids remapped" in p.stderr  # every rank starts its ids at 1
    objs = check_merged(out)
    ev_in = collections.Counter(strip_ids(o) for f in cm1 for o in events(f) if o["ph"] != "M")
    ev_out = collections.Counter(strip_ids(o) for o in objs if o["ph"] != "M")
    assert ev_in == ev_out
    # Remapped ids keep parent links: id * 8 + file index, p_idx likewise.
    n = len(cm1)
    by_file = collections.Counter(num(o["id"]) % n for o in objs if o["ph"] == "X")
    assert len(by_file) == n
    # Metadata: every distinct (type, pid, args) of the inputs survives.
    meta_in = {(o["name"], o["pid"], json.dumps(o["args"], sort_keys=True))
               for f in cm1 for o in events(f) if o["ph"] == "M" and o["name"] not in HASH_TYPES}
    meta_out = {(o["name"], o["pid"], json.dumps(o["args"], sort_keys=True))
                for o in objs if o["ph"] == "M" and o["name"] not in HASH_TYPES}
    assert meta_in == meta_out
    hh = [o for o in objs if o["name"] == "HH"]
    assert len(hh) == 1  # one host, defined once for all ranks


def test_merge_accepts_directories_and_mixed_inputs(ref_dir, ref_files, tmp_path, real_trace):
    # The directory also holds a README and a licence: merge takes only its trace files.
    assert sorted(os.listdir(ref_dir)) != sorted(os.path.basename(f) for f in ref_files)
    out = tmp_path / "all.pfw.gz"
    run("merge", ref_dir, real_trace, "-o", out)
    objs = check_merged(out)
    n_in = sum(1 for f in ref_files for o in events(f)
               if o["ph"] != "M") + sum(1 for o in events(real_trace) if o["ph"] != "M")
    assert sum(1 for o in objs if o["ph"] != "M") == n_in


@pytest.mark.parametrize("offset_ns,shift_us", [(5_000_000, 5000), (1499, 1), (1500, 2),
                                                (-1500, -2), (-7_250_400, -7250)])
def test_merge_aligns_clocks(tmp_path, offset_ns, shift_us):
    a = gen(tmp_path / "a.pfw.gz", 2000, pid=100, seed=1)
    b = gen(tmp_path / "b.pfw.gz", 2000, pid=200, seed=1, clock_offset_ns=offset_ns)
    out = tmp_path / "m.pfw.gz"
    run("merge", a, b, "-o", out)
    objs = check_merged(out)
    ts_b = sorted(num(o["ts"]) for o in events(b) if o["ph"] != "M")
    got_b = sorted(num(o["ts"]) for o in objs if o["ph"] != "M" and o["pid"] == 200)
    assert got_b == [t + shift_us for t in ts_b]
    got_a = sorted(num(o["ts"]) for o in objs if o["ph"] != "M" and o["pid"] == 100)
    assert got_a == sorted(num(o["ts"]) for o in events(a) if o["ph"] != "M")
    # The uncertainty line and the offset line travel with the metadata.
    assert any(o["ph"] == "M" and o["args"].get("name") == "clock_offset_ns" for o in objs)
    off = tmp_path / "off.pfw.gz"
    run("merge", "--no-clock-align", a, b, "-o", off)
    got = sorted(num(o["ts"]) for o in check_merged(off) if o["ph"] != "M" and o["pid"] == 200)
    assert got == ts_b


def round_trip(src, tmp_path, *split_args):
    d = tmp_path / "pieces"
    run("split", src, "-o", d, *split_args)
    pieces = sorted(d.iterdir())
    assert pieces
    for p in pieces:
        # Each piece stands alone: valid, definitions and names for what it uses.
        v = run("validate", p)
        assert " 0 errors" in v.stdout, v.stdout
        objs = events(p)
        pids = {o["pid"] for o in objs if o["ph"] != "M"}
        names = {o["pid"] for o in objs if o["ph"] == "M" and o["name"] == "process_name"}
        src_names = {o["pid"] for o in events(src) if o["ph"] == "M" and o["name"] == "process_name"}
        assert pids & src_names <= names
    out = tmp_path / "back.pfw.gz"
    run("merge", *pieces, "-o", out)
    a = collections.Counter(l for l in body(src) if json.loads(l)["ph"] != "M")
    b = collections.Counter(l for l in body(out) if json.loads(l)["ph"] != "M")
    assert a == b, "split then merge changed the events"
    meta_src = {l for l in body(src) if json.loads(l)["ph"] == "M"}
    meta_back = {l for l in body(out) if json.loads(l)["ph"] == "M"}
    assert meta_back <= meta_src
    return pieces


def test_split_by_size_round_trip_reference(ref_dir, tmp_path):
    src = os.path.join(ref_dir, "cm1-DEFAULT-3537780-preload.pfw.gz")
    pieces = round_trip(src, tmp_path, "--size", "150k")
    assert len(pieces) >= 8
    for p in pieces:  # --size bounds the events' text of a piece (plus one line)
        assert len("\n".join(body(p))) < 150 * 1024 + 60 * 1024


def test_split_by_pid_and_time_round_trip(tmp_path):
    a = gen(tmp_path / "a.pfw.gz", 20000, pid=301, threads=3)
    b = gen(tmp_path / "b.pfw.gz", 20000, pid=302, threads=2, seed=7)
    m = tmp_path / "m.pfw.gz"
    run("merge", a, b, "-o", m)
    (tmp_path / "p").mkdir()
    pieces = round_trip(m, tmp_path / "p", "--by", "pid")
    assert len(pieces) == 2
    for p in pieces:
        assert len({o["pid"] for o in events(p)
                    if not (o["ph"] == "M" and o["name"] in HASH_TYPES)}) == 1
    (tmp_path / "t").mkdir()
    pieces = round_trip(m, tmp_path / "t", "--by", "time", "--size", "1MiB")
    assert len(pieces) >= 3
    ranges = []
    for p in pieces:
        ts = [num(o["ts"]) for o in events(p) if o["ph"] != "M"]
        ranges.append((min(ts), max(ts)))
    for (a0, a1), (b0, b1) in zip(ranges, ranges[1:]):
        assert a1 <= b0  # time pieces do not overlap


def test_split_real_trace_round_trip(real_trace, tmp_path):
    round_trip(real_trace, tmp_path, "--size", "4k")


def test_split_reads_sizes_as_the_configuration_does(tmp_path, real_trace):
    # One size parser for the library and the tools (docs/configuration.md, "Values"): no
    # exponent, hex or sign, and at least one byte; kB is the SI unit.
    for bad in ("1e3", "0x10", "-5", "0", "4 kilo"):
        assert run("split", real_trace, "-o", tmp_path / "x", "--size", bad, check=False).returncode == 2, bad
    round_trip(real_trace, tmp_path, "--size", "4kB")


def test_split_rejects_bad_arguments(tmp_path, real_trace):
    assert run("split", real_trace, "-o", tmp_path / "x", "--size", "lots", check=False).returncode == 2
    assert run("split", real_trace, "-o", tmp_path / "x", "--by", "colour", check=False).returncode == 2
    assert run("split", real_trace, check=False).returncode == 2
