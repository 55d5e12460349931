"""tracecheck.py: an independent reader of dftrace traces for the integration tests.

It uses only Python's gzip, zlib and json (a real JSON parser), never dftrace's own code, so
that a bug in the writer can not hide behind the same bug in the reader.
"""
import gzip
import json
import os
import struct
import subprocess
import sys
import zlib

X_KEYS = ["id", "name", "cat", "pid", "tid", "ts", "dur", "ph", "args"]
M_KEYS = ["id", "name", "cat", "pid", "tid", "ph", "args"]
C_KEYS = ["name", "cat", "pid", "tid", "ts", "ph", "args"]
I_KEYS = ["id", "name", "cat", "pid", "tid", "ts", "ph", "s", "args"]


def members(path):
    """Splits a .pfw.gz file into its gzip members: [(dt or None, raw bytes, text)].
    A final member cut short is returned with text=None."""
    data = open(path, "rb").read()
    out = []
    off = 0
    while off < len(data):
        dt = parse_dt(data[off:off + 64])
        d = zlib.decompressobj(16 + 15)
        try:
            text = d.decompress(data[off:])
        except zlib.error:
            out.append((dt, data[off:], None))
            break
        if not d.eof:
            out.append((dt, data[off:], None))
            break
        used = len(data) - off - len(d.unused_data)
        out.append((dt, data[off:off + used], text.decode("utf-8")))
        off += used
    return out


def parse_dt(head):
    """The DT extra field of a gzip member header, as a dict, or None."""
    if len(head) < 12 or head[0:3] != b"\x1f\x8b\x08" or not head[3] & 4:
        return None
    xlen = struct.unpack_from("<H", head, 10)[0]
    pos, end = 12, 12 + xlen
    while pos + 4 <= end and pos + 4 <= len(head):
        sid, slen = head[pos:pos + 2], struct.unpack_from("<H", head, pos + 2)[0]
        if sid == b"DT" and slen >= 29:
            if pos + 4 + 29 > len(head):
                return None  # a header cut short (a file that hit its size limit there)
            v, clen, ulen, lines, tmin, tmax = struct.unpack_from("<BIIIQQ", head, pos + 4)
            return {"version": v, "compressed_len": clen, "uncompressed_len": ulen,
                    "lines": lines, "ts_min": tmin, "ts_max": tmax}
        pos += 4 + slen
    return None


def check_members(path):
    """Every member's DT field matches the member; returns the members."""
    ms = members(path)
    assert ms, "no gzip member in " + path
    # DT times are epoch microseconds whatever the trace's time_metric (ns traces: ts // 1000).
    scale = 1000 if ms[0][2] and '"name":"time_metric","value":"ns"' in ms[0][2] else 1
    for i, (dt, raw, text) in enumerate(ms):
        assert text is not None, "member %d of %s is cut short" % (i, path)
        assert dt is not None, "member %d has no DT field" % i
        lines = text.splitlines()
        assert dt["compressed_len"] == len(raw), (i, dt, len(raw))
        assert dt["uncompressed_len"] == len(text.encode()), (i, dt)
        assert dt["lines"] == len(lines), (i, dt, len(lines))
        tss = [json.loads(l)["ts"] // scale for l in lines if l not in ("[", "]") and '"ts":' in l]
        if tss:
            assert dt["ts_min"] == min(tss) and dt["ts_max"] == max(tss), (i, dt, min(tss), max(tss))
        else:
            assert dt["ts_min"] == 0 and dt["ts_max"] == 0, (i, dt)
        assert text.endswith("\n"), "member %d does not end on a whole line" % i
    return ms


def read_lines(path):
    """The decompressed lines, read with Python's gzip (and checked equal to zcat's)."""
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            text = f.read()
        z = subprocess.run(["zcat", path], capture_output=True, check=True).stdout.decode()
        assert z == text, "zcat and Python's gzip disagree on " + path
    else:
        text = open(path, encoding="utf-8").read()
    return text.splitlines()


def load(path, complete=True):
    """Parses every line; checks the bracket lines. Returns the list of event dicts."""
    lines = read_lines(path)
    assert lines and lines[0] == "[", "first line is not '['"
    if complete:
        assert lines[-1] == "]", "last line is not ']'"
        body = lines[1:-1]
    else:
        body = lines[1:-1] if lines[-1] == "]" else lines[1:]
    events = []
    for n, line in enumerate(body, start=2):
        assert line and line.strip() == line and " " not in line.split('"')[0], "whitespace at line %d" % n
        try:
            ev = json.loads(line, object_pairs_hook=_no_duplicates)
        except ValueError as e:
            raise AssertionError("line %d is not valid JSON (%s): %r" % (n, e, line[:200]))
        events.append(ev)
    return events


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), "duplicate JSON key in %r" % keys
    return dict(pairs)


def check_format(events, metadata=True):
    """Key order, types, unique ids, hashes defined before use, header and footer."""
    ids = set()
    defined = set()
    start = end = None
    for ev in events:
        ph = ev["ph"]
        keys = list(ev.keys())
        expect = {"X": X_KEYS, "M": M_KEYS, "C": C_KEYS, "i": I_KEYS}[ph]
        assert keys == expect, "key order %r for %r" % (keys, ev)
        for k in ("pid", "tid"):
            assert isinstance(ev[k], int), ev
        if ph != "C":
            assert isinstance(ev["id"], int) and ev["id"] not in ids, "id %r not unique" % ev.get("id")
            ids.add(ev["id"])
        args = ev["args"]
        if ph == "M":
            if ev["name"] in ("HH", "SH", "FH"):
                assert isinstance(args["value"], int)
                defined.add(args["value"])
            continue
        assert isinstance(ev["ts"], int) and ev["ts"] > 10**15, ev
        if ph == "X":
            assert isinstance(ev["dur"], int) and ev["dur"] >= 0, ev
        if ph == "C":
            continue
        keys = list(args.keys())
        if metadata:
            assert keys[0] == "hhash", ev
            assert args["hhash"] in defined, "hhash used before its HH line: %r" % ev
            assert keys[-2:] == ["level", "p_idx"], ev
        for k in ("fhash", "exec_hash", "cmd_hash"):
            if k in args:
                assert args[k] in defined, "%s used before its definition: %r" % (k, ev)
        if ev["name"] == "start" and ev["cat"] == "dftracer":
            start = ev
        if ev["name"] == "end" and ev["cat"] == "dftracer":
            end = ev
    head = [e["name"] for e in events[:3]]
    assert head == ["HH", "SH", "SH"], head
    assert start is not None, "no start event"
    for k in ("version", "date", "ppid", "exec_hash", "cmd_hash", "clock_offset_ns", "time_metric"):
        assert k in start["args"], "start lacks " + k
    metric = [e for e in events if e["name"] == "PR" and e["args"]["name"] == "time_metric"]
    assert [e["args"]["value"] for e in metric] == [start["args"]["time_metric"]], metric
    return start, end


def check_footer(events):
    end = events[-1]
    assert end["name"] == "end" and end["cat"] == "dftracer", end
    n = sum(1 for e in events if e["ph"] in ("X", "i", "C") and e["cat"] != "dftracer")
    assert end["args"]["num_events"] == n, (end, n)
    return end


def user_events(events, ph="X"):
    return [e for e in events if e["ph"] == ph and e["cat"] != "dftracer"]


def check_nesting(events):
    """level/p_idx per thread: the parent exists, is on the same thread, one level up, and
    encloses the child in time."""
    by_id = {e["id"]: e for e in events if e["ph"] == "X"}
    for e in by_id.values():
        a = e["args"]
        if e["cat"] == "dftracer":
            continue
        if a["p_idx"] == -1:
            assert a["level"] == 1, e
            continue
        p = by_id.get(a["p_idx"])
        assert p is not None, "parent %d missing for %r" % (a["p_idx"], e)
        assert p["tid"] == e["tid"], ("parent on another thread", p, e)
        assert p["args"]["level"] == a["level"] - 1, (p, e)
        assert p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"], ("not enclosed", p, e)


def load_checked(path, nesting=True):
    """A finished trace, checked the way most tests check one: its members, its lines, the
    format of every line, the footer and (unless nesting=False) the nesting. Returns the events."""
    check_members(path)
    ev = load(path)
    check_format(ev)
    check_footer(ev)
    if nesting:
        check_nesting(ev)
    return ev


def only_file(directory, pattern=".pfw"):
    files = [os.path.join(directory, f) for f in os.listdir(directory) if pattern in f]
    assert len(files) == 1, files
    return files[0]


# ---- for the scenario scripts (mpi, topology), which report with one FAIL line and exit 1
# rather than through pytest.

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def read_objects(path):
    """The JSON objects of a .pfw.gz file (every line but the brackets and blank lines), without
    load()'s checks of the layout (merged and per-rank files alike)."""
    out = []
    with gzip.open(path, "rt") as f:
        for line in f:
            line = line.strip()
            if line not in ("[", "]", ""):
                out.append(json.loads(line))
    return out


def pr_values(events):
    """PR lines as {name: value} (a repeated key keeps its last value), and every
    affinity_warning's value in order."""
    pr, warnings = {}, []
    for e in events:
        if e.get("ph") == "M" and e["name"] == "PR":
            pr[e["args"]["name"]] = e["args"]["value"]
            if e["args"]["name"] == "affinity_warning":
                warnings.append(e["args"]["value"])
    return pr, warnings


# ---- for the battery (tests/integration/battery), which reports every problem it finds in a
# trace instead of stopping at the first.

DEFINING = ("HH", "SH", "FH")
HASH_KEYS = ("hhash", "fhash", "exec_hash", "cmd_hash", "from_hash", "to_hash")
POSIX_READS = {"read", "pread", "pread64", "readv", "preadv", "preadv64", "preadv2",
               "preadv64v2"}
POSIX_COPIES = {"copy_file_range", "sendfile", "sendfile64", "splice"}
POSIX_WRITES = {"write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev64", "pwritev2",
                "pwritev64v2"}
STDIO_READS = {"fread", "fgets", "getline", "getdelim", "fgetc", "getc", "fscanf", "vfscanf"}
STDIO_WRITES = {"fwrite", "fputs", "fputc", "putc", "fprintf", "vfprintf"}


def io_moves(ev):
    """[(direction, file hash, bytes)] of an event that moves files' data ('read' or 'write'):
    an in-kernel copy (copy_file_range, sendfile, splice) reads its `ret` bytes from the file of
    its `from_hash` and writes them to that of its `to_hash` (each where that end is a traced
    file); any other call is io_bytes's, on its `fhash`."""
    args = ev.get("args") or {}
    if ev.get("ph") == "X" and ev.get("cat") == "POSIX" and ev.get("name") in POSIX_COPIES:
        ret = args.get("ret")
        n = ret if isinstance(ret, int) and ret > 0 else 0
        return [(d, args[k], n) for d, k in (("read", "from_hash"), ("write", "to_hash"))
                if k in args]
    io = io_bytes(ev)
    return [] if io is None or "fhash" not in args else [(io[0], args["fhash"], io[1])]


def io_bytes(ev):
    """(direction, bytes) for an event that moves a file's data ('read' or 'write'), else None.
    POSIX calls count their `ret` (in-kernel copies: io_moves); fread and fwrite count `ret`
    items of `size`; other stdio calls count a `bytes` argument when they have one, else the
    `ret` of the calls that return a byte count (getline, getdelim, fprintf, vfprintf)."""
    if ev.get("ph") != "X":
        return None
    cat, name, args = ev.get("cat"), ev.get("name"), ev.get("args") or {}
    ret = args.get("ret")
    if cat == "POSIX":
        d = "read" if name in POSIX_READS else "write" if name in POSIX_WRITES else None
        if d is None:
            return None
        return d, ret if isinstance(ret, int) and ret > 0 else 0
    if cat != "STDIO":
        return None
    d = "read" if name in STDIO_READS else "write" if name in STDIO_WRITES else None
    if d is None:
        return None
    if isinstance(args.get("bytes"), int):
        return d, max(args["bytes"], 0)
    if name in ("fread", "fwrite") and isinstance(args.get("size"), int):
        return d, args["size"] * ret if isinstance(ret, int) and ret > 0 else 0
    if name in ("getline", "getdelim", "fprintf", "vfprintf"):
        return d, ret if isinstance(ret, int) and ret > 0 else 0
    return d, 0


def trace_problems(path, require_end=True):
    """Checks one trace file the battery's way and returns (problems, events, names): every
    problem found (a gzip member cut short or broken, a line that is not JSON, an id used twice,
    a hash used before its definition in this file, no `end`), the events it could read, and
    {hash: name} of its FH lines."""
    problems, events, names = [], [], {}
    base = os.path.basename(path)
    try:
        ms = members(path)
    except OSError as e:
        return ["%s: can not be read: %s" % (base, e)], events, names
    if not ms:
        return ["%s: empty (no gzip member)" % base], events, names
    texts = []
    for i, (_, raw, text) in enumerate(ms):
        if text is None:
            problems.append("%s: gzip member %d of %d is cut short or broken (%d bytes)"
                            % (base, i + 1, len(ms), len(raw)))
        else:
            texts.append(text)
    lines = "".join(texts).splitlines()
    if not lines or lines[0] != "[":
        problems.append("%s: the first line is not '['" % base)
    ids, defined = {}, set()
    bad_json = undefined = dup = 0
    first_undefined = first_dup = first_bad = None
    for n, line in enumerate(lines, start=1):
        if line in ("[", "]", ""):
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            bad_json += 1
            first_bad = first_bad or (n, line[:120])
            continue
        events.append(ev)
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        if ev.get("ph") == "M" and ev.get("name") in DEFINING:
            defined.add(args.get("value"))
            if ev.get("name") == "FH":
                names[args.get("value")] = args.get("name")
        if ev.get("ph") != "C" and "id" in ev:
            if ev["id"] in ids:
                dup += 1
                first_dup = first_dup or (n, ids[ev["id"]], ev["id"])
            else:
                ids[ev["id"]] = n
        if ev.get("ph") != "M":
            for k in HASH_KEYS:
                if k in args and args[k] not in defined:
                    undefined += 1
                    first_undefined = first_undefined or (n, k, args[k], ev.get("name"))
    if bad_json:
        problems.append("%s: %d line(s) are not JSON (first: line %d: %r)" % ((base, bad_json) + first_bad))
    if dup:
        problems.append("%s: %d duplicate id(s) (first: line %d repeats the id of line %d: %r)"
                        % ((base, dup) + first_dup))
    if undefined:
        problems.append("%s: %d event(s) use a hash not defined earlier in the file (first: line "
                        "%d: %s %r in %r)" % ((base, undefined) + first_undefined))
    has_end = any(e.get("name") == "end" and e.get("cat") == "dftracer" for e in events)
    if require_end and not has_end:
        problems.append("%s: no `end` event (%d events)" % (base, len(events)))
    return problems, events, names
