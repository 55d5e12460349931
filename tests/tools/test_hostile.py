# test_hostile.py: trace files are input from elsewhere. Real traces mutated the way a
# hostile or damaged file would be (forged DT fields, a deflate bomb, quoted numbers that are
# not plain digits, absurd clock offsets) go through every tool: each tool either writes valid
# output or fails with "dftrace: ..." lines and a non-zero status, and never crashes. The
# sanitizer run (scripts/sanitize.sh) runs this file against tools built with ASan+UBSan.
import gzip
import json
import os
import zlib

import pytest

from conftest import events, gen, gzip_members, lines, run

TOOLS = ["stat", "stat-json", "stat-fast", "cat", "validate", "convert", "merge", "split"]


def run_tool(tool, path, tmp_path, env=None):
    """Runs one tool on path; returns (CompletedProcess, output path or None)."""
    out = None
    if tool == "stat":
        args = ["stat", path]
    elif tool == "stat-json":
        args = ["stat", "--json", path]
    elif tool == "stat-fast":
        args = ["stat", "--fast", path]
    elif tool == "cat":
        args = ["cat", path]
    elif tool == "validate":
        args = ["validate", path]
    elif tool == "convert":
        out = tmp_path / "out.json"
        args = ["convert", path, "--to", "perfetto", "-o", out]
    elif tool == "merge":
        out = tmp_path / "merged.pfw.gz"
        args = ["merge", path, "-o", out]
    else:
        out = tmp_path / "pieces"
        args = ["split", path, "-o", out, "--size", "64k"]
    if out is not None and out.exists():
        if out.is_dir():
            for f in out.iterdir():
                f.unlink()
        else:
            out.unlink()
    return run(*args, check=False, env=env), out


def check_sane(tool, p, out):
    """What every run must satisfy, whatever the input."""
    assert p.returncode in (0, 1), (tool, p.returncode, p.stderr[-2000:])
    for bad in ("AddressSanitizer", "runtime error", "terminate called", "Traceback",
                "LeakSanitizer"):
        assert bad not in p.stderr, (tool, p.stderr[-3000:])
    if p.returncode != 0:
        assert any(l.startswith("dftrace: ") for l in p.stderr.splitlines()) or \
            (tool == "validate" and "error: " in p.stdout), (tool, p.stderr[-2000:])
    if tool == "stat-json":
        json.loads(p.stdout)
    if tool == "cat":
        for l in p.stdout.splitlines():
            if l.strip() not in ("", "[", "]"):
                json.loads(l)
    if tool == "convert" and out.exists():
        json.load(open(out))["traceEvents"]
    if tool == "merge" and out.exists():
        events(out)  # every line parses
    if tool == "split" and out.exists():
        for f in out.iterdir():
            events(f)


def dt_offsets(path):
    """For each DT member: (member offset, offset of the DT payload in the file)."""
    res = []
    for off, flg, extra, n in gzip_members(path):
        i = 0
        while i + 4 <= len(extra):
            ln = int.from_bytes(extra[i + 2:i + 4], "little")
            if extra[i:i + 2] == b"DT":
                res.append((off, off + 12 + i + 4))
                break
            i += 4 + ln
    return res


def forge(src, dst, field, value, member=0):
    """A copy of src with one DT field of one member replaced (little-endian u32)."""
    data = bytearray(open(src, "rb").read())
    _, dt = dt_offsets(src)[member]
    at = {"compressed": 1, "uncompressed": 5, "lines": 9}[field]
    data[dt + at:dt + at + 4] = value.to_bytes(4, "little")
    open(dst, "wb").write(bytes(data))
    return dst


@pytest.fixture(scope="module")
def dt_trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    return gen(d / "base.pfw.gz", 6000, member_bytes=65536)


@pytest.mark.parametrize("value", [0xFFFFFFFF, 0xFFFFFFFE, 0x80000000, 0x7FFFFFFF, 0, 1,
                                   "plus1", "minus1", "half"])
@pytest.mark.parametrize("tool", TOOLS)
def test_forged_dt_uncompressed_length(dt_trace, tmp_path, tool, value):
    members = dt_offsets(dt_trace)
    assert len(members) >= 3
    real = gzip_members(dt_trace)[1]
    text_len = len(zlib.decompressobj(31).decompress(open(dt_trace, "rb").read()[real[0]:]))
    v = {"plus1": text_len + 1, "minus1": text_len - 1, "half": text_len // 2}.get(value, value)
    bad = forge(dt_trace, tmp_path / "forged.pfw.gz", "uncompressed", v, member=1)
    p, out = run_tool(tool, bad, tmp_path)
    check_sane(tool, p, out)
    if tool in ("stat", "stat-json", "cat", "convert", "merge", "split"):
        # The member is read anyway (the slow way), and the mismatch is reported.
        assert p.returncode == 1, p.stderr
        assert f"DT field says {v} uncompressed bytes, the member holds {text_len}" in p.stderr
    if tool == "validate":
        assert p.returncode == 1
        assert f"DT field says {v} uncompressed bytes, the member holds {text_len}" in p.stdout
    if tool == "merge":  # nothing lost
        want = [json.loads(l) for l in lines(dt_trace) if l.strip() not in ("[", "]", "")]
        assert len(events(out)) == len(want)


@pytest.mark.parametrize("tool", ["merge", "split", "stat", "validate"])
def test_forged_dt_line_count_allocates_nothing_it_says(dt_trace, tmp_path, tool):
    # Every member claims 4294967295 lines: merge and split used to reserve that many records.
    src = dt_trace
    for m in range(len(dt_offsets(dt_trace))):
        src = forge(src, tmp_path / f"lines{m}.pfw.gz", "lines", 0xFFFFFFFF, member=m)
    p, out = run_tool(tool, src, tmp_path)
    check_sane(tool, p, out)
    if tool == "merge":
        assert p.returncode == 0, p.stderr
        want = [l for l in lines(dt_trace) if l.strip() not in ("[", "]", "")]
        assert len(events(out)) == len(want)
    if tool == "validate":
        assert p.returncode == 1 and "DT field says 4294967295 lines" in p.stdout


@pytest.mark.parametrize("tool", TOOLS)
def test_forged_dt_compressed_length(dt_trace, tmp_path, tool):
    for v in (0xFFFFFFFF, 23, 40):
        bad = forge(dt_trace, tmp_path / "clen.pfw.gz", "compressed", v, member=1)
        p, out = run_tool(tool, bad, tmp_path)
        check_sane(tool, p, out)


def deflate_bomb(text_bytes):
    """One gzip member of a single line that inflates to text_bytes (a few KiB compressed)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"a" * (1 << 20)
    parts = [z.compress(b'{"name":"')]
    for _ in range(text_bytes >> 20):
        parts.append(z.compress(chunk))
    parts.append(z.compress(b'"}\n'))
    parts.append(z.flush())
    return b"".join(parts)


@pytest.mark.parametrize("tool", ["stat", "cat", "validate", "merge"])
def test_a_tiny_member_cannot_take_unbounded_memory(tmp_path, tool):
    # 64 MiB of text from ~64 KiB of gzip, read with a 4 MiB limit: the reader stops at the
    # limit with a message instead of growing its buffer without end.
    bomb = tmp_path / "bomb.pfw.gz"
    good = gzip.compress(b'[\n{"id":1,"name":"a","cat":"c","pid":1,"tid":1,"ts":5,"dur":1,"ph":"X"}\n')
    bomb.write_bytes(good + deflate_bomb(64 << 20))
    assert bomb.stat().st_size < 200_000
    p, out = run_tool(tool, bomb, tmp_path, env={"DFTRACE_READER_MAX_TEXT": str(4 << 20)})
    check_sane(tool, p, out)
    assert p.returncode == 1
    assert "the reader's limit" in (p.stdout + p.stderr)


def test_a_dt_member_bomb_is_cut_at_the_limit(dt_trace, tmp_path):
    # The same bomb behind a DT field that tells the truth: still cut at the limit.
    data = open(dt_trace, "rb").read()
    first = gzip_members(dt_trace)[0]
    bomb = bytearray(deflate_bomb(16 << 20))
    # Give the bomb the first member's header (with its DT field), fixing its lengths.
    hdr_len = 12 + len(first[2])
    member = bytearray(data[:hdr_len]) + bomb[10:]
    _, dt = dt_offsets(dt_trace)[0]
    member[dt + 1:dt + 5] = len(member).to_bytes(4, "little")
    member[dt + 5:dt + 9] = bomb[-4:]  # the true length (the trailer's), over the limit
    path = tmp_path / "dtbomb.pfw.gz"
    path.write_bytes(bytes(member) + data[first[3]:])
    for tool in ("stat", "validate", "merge"):
        p, out = run_tool(tool, path, tmp_path, env={"DFTRACE_READER_MAX_TEXT": str(1 << 20)})
        check_sane(tool, p, out)
        assert p.returncode == 1 and "the reader's limit" in (p.stdout + p.stderr), p.stderr


LEGACY = [
    # pid with a leading zero, tid with '+', ts with an exponent: all plain numbers.
    {"id": 1, "name": "read", "cat": "POSIX", "pid": "0677792", "tid": "+5", "ts": "1e5",
     "dur": "0010", "ph": "X"},
    # hexadecimal is not guessed at: the pid stays a string.
    {"id": 2, "name": "write", "cat": "POSIX", "pid": "0x10", "tid": "7", "ts": "200",
     "dur": "3", "ph": "X"},
    # a dur that is no number: the event is skipped and counted, not written with dur 0.
    {"id": 3, "name": "open", "cat": "POSIX", "pid": "1", "tid": "1", "ts": "300",
     "dur": "0x10", "ph": "X"},
    {"id": 4, "name": "close", "cat": "POSIX", "pid": "1", "tid": "1", "ts": ".5e3",
     "dur": "-0", "ph": "X"},
    {"id": 5, "name": "process_name", "ph": "M", "pid": "0042", "tid": "0",
     "args": {"name": "p42"}},
    {"id": 6, "name": "step", "cat": "c", "pid": "0042", "tid": "1", "ts": "12.250", "dur": 1,
     "ph": "X"},
    {"id": 7, "name": "x", "cat": "c", "pid": {"a": "b\""}, "tid": ["t"], "ts": 1, "dur": 1,
     "ph": "X"},
]


def test_convert_quoted_numbers_become_valid_numbers_or_strings(tmp_path):
    src = tmp_path / "legacy.pfw"
    src.write_text("[\n" + "\n".join(json.dumps(e) for e in LEGACY) + "\n]\n")
    out = tmp_path / "legacy.json"
    p = run("convert", src, "--to", "perfetto", "-o", out, check=False)
    assert p.returncode == 0, p.stderr
    whole = json.load(open(out))  # valid JSON (it used to hold "pid":0677792)
    doc = whole["traceEvents"]
    origin = float(whole["otherData"]["ts_origin_us"])
    by_name = {e["name"]: e for e in doc if e["ph"] != "M"}
    r = by_name["read"]
    assert (r["pid"], r["tid"], r["ts"] + origin, r["dur"]) == (677792, 5, 100000, 10)
    assert by_name["write"]["pid"] == "0x10" and by_name["write"]["tid"] == 7
    assert "open" not in by_name
    assert "skipped 1 lines" in p.stderr
    assert by_name["close"]["ts"] + origin == 500 and by_name["close"]["dur"] == 0.001  # 0 us: 1 ns
    assert by_name["step"]["pid"] == 42 and by_name["step"]["ts"] + origin == 12.25
    assert by_name["x"]["pid"] == 0 and by_name["x"]["tid"] == 0
    names = [e for e in doc if e["ph"] == "M"]
    assert {"name": "process_name", "ph": "M", "pid": 42, "tid": 0,
            "args": {"name": "p42"}} in names
    # A made-up process name only for numeric pids, under the number itself.
    made = {e["pid"] for e in names if e["args"]["name"].startswith("pid ")}
    assert 677792 in made and 1 in made and 42 not in made and "0x10" not in made

    # ts "1e5" and the like are no time for stat: left out, and said so (exit status 1)
    p = run("stat", "--json", src, check=False)
    assert p.returncode == 1 and "3 event(s) left out: a ts or dur that is no time" in p.stderr
    st = json.loads(p.stdout)
    pids = {e["pid"] for e in st["by_pid"]}
    assert 42 in pids and "0x10" in pids and "0042" not in pids


@pytest.mark.parametrize("offset", [-9223372036854775808, 9223372036854775807,
                                    -1000000000000000001])
def test_merge_rejects_absurd_clock_offsets(tmp_path, offset):
    a = gen(tmp_path / "a.pfw.gz", 300, pid=1, clock_offset_ns=offset)
    b = gen(tmp_path / "b.pfw.gz", 300, pid=2)
    out = tmp_path / "m.pfw.gz"
    p = run("merge", a, b, "-o", out, check=False)
    check_sane("merge", p, out)
    assert p.returncode == 1
    assert f"clock_offset_ns {offset} is out of range" in p.stderr
    ts_a = sorted(e["ts"] for e in events(a) if e.get("ph") == "X")
    ts_m = sorted(e["ts"] for e in events(out) if e.get("ph") == "X" and e["pid"] == 1)
    assert ts_m == ts_a  # not shifted


@pytest.mark.parametrize("offset", [-1000000000000000000, 1000000000000000000])
def test_merge_clamps_large_valid_offsets(tmp_path, offset):
    a = gen(tmp_path / "a.pfw.gz", 300, pid=1, clock_offset_ns=offset)
    out = tmp_path / "m.pfw.gz"
    p = run("merge", a, "-o", out, check=False)
    check_sane("merge", p, out)
    assert p.returncode == 0, p.stderr
    ts = [e["ts"] for e in events(out) if e.get("ph") == "X"]
    shift = offset // 1000
    want = sorted(max(0, e["ts"] + shift) for e in events(a) if e.get("ph") == "X")
    assert sorted(ts) == want


def test_committed_hostile_files(tmp_path):
    # Small hostile inputs kept in the repository (tests/data/hostile): every tool survives.
    d = os.path.join(os.path.dirname(__file__), "..", "data", "hostile")
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith((".pfw", ".gz")))
    assert files
    for f in files:
        for tool in TOOLS:
            p, out = run_tool(tool, f, tmp_path)
            check_sane(tool, p, out)


def test_merge_ids_too_large_to_remap_are_kept_and_reported(tmp_path):
    # Three inputs share id 9223372036854775807: remapping (id * 3 + file) would pass 2^64.
    big = 9223372036854775807
    names = ["a.pfw", "b.pfw", "c.pfw"]
    for pid, name in enumerate(names, 1):
        (tmp_path / name).write_text("[\n" + json.dumps(
            {"id": big, "name": "x", "cat": "c", "pid": pid, "tid": pid, "ts": 10 + pid,
             "dur": 1, "ph": "X", "args": {"p_idx": big}}) + "\n" + json.dumps(
            {"id": 5, "name": "y", "cat": "c", "pid": pid, "tid": pid, "ts": 20, "dur": 1,
             "ph": "X"}) + "\n]\n")
    out = tmp_path / "m.pfw.gz"
    p = run("merge", *[tmp_path / n for n in names], "-o", out, check=False)
    check_sane("merge", p, out)
    assert p.returncode == 1
    assert "6 ids or p_idx values are too large to remap" in p.stderr
    ids = sorted(e["id"] for e in events(out) if e.get("ph") == "X")
    assert ids == [15, 16, 17, big, big, big]  # 5 * 3 + file index; the big ones kept


@pytest.mark.parametrize("to", ["dftracer", "dftracer-2.0.2", "dftracer-2-typed"])
def test_dialect_conversions_of_hostile_files_are_valid(tmp_path, to):
    # convert --to dftracer once wrote "ph":"\" for a phase written "\u0058" (exit 0): every
    # line a dialect conversion writes parses, or the tool fails with a message.
    d = os.path.join(os.path.dirname(__file__), "..", "data", "hostile")
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith((".pfw", ".gz")))
    for f in files:
        out = tmp_path / "out.pfw"
        if out.exists():
            out.unlink()
        p = run("convert", f, "--to", to, "-o", out, check=False)
        check_sane("convert-" + to, p, out)
        if p.returncode == 0 or out.exists():
            for l in lines(out):
                if l.strip() not in ("", "[", "]"):
                    json.loads(l)
