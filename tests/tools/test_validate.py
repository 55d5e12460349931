# test_validate.py: every finding of dftrace validate, each on a small crafted trace, with
# its line number and the exit status; and clean results on valid traces.
import gzip
import re
import struct
import zlib

import pytest

from conftest import gen, run

HH = '{"id":1,"name":"HH","cat":"dftracer","pid":7,"tid":7,"ph":"M","args":{"name":"vm","value":42}}'
EV = ('{{"id":{id},"name":"read","cat":"POSIX","pid":7,"tid":7,"ts":{ts},"dur":5,"ph":"X",'
      '"args":{{"hhash":42,"level":1,"p_idx":-1}}}}')


def ev(i, ts=None):
    return EV.format(id=i, ts=1000 + i if ts is None else ts)


def write(tmp_path, name, body_lines, close=True, gz=False):
    text = "\n".join(["["] + body_lines + (["]"] if close else [])) + "\n"
    p = tmp_path / name
    if gz:
        p.write_bytes(gzip.compress(text.encode()))
    else:
        p.write_text(text)
    return p


def dt_member(text, lines=None, ts=None, ulen=None):
    """One gzip member with a DT field; the DT values may be given wrong on purpose."""
    raw = text.encode()
    co = zlib.compressobj(1, zlib.DEFLATED, -15)
    body = co.compress(raw) + co.flush()
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    tss = [int(m) for m in re.findall(r'"ts":(\d+)', text)]
    ts_min, ts_max = (min(tss), max(tss)) if tss else (0, 0)
    if ts:
        ts_min, ts_max = ts
    total = 45 + len(body) + 8
    dt = struct.pack("<BIIIQQ", 1, total, len(raw) if ulen is None else ulen,
                     n_lines if lines is None else lines, ts_min, ts_max)
    header = b"\x1f\x8b\x08\x04" + b"\0\0\0\0" + b"\x00\x03" + struct.pack("<H", 4 + 29) + b"DT" + \
        struct.pack("<H", 29) + dt
    return header + body + struct.pack("<II", zlib.crc32(raw) & 0xFFFFFFFF, len(raw) & 0xFFFFFFFF)


def validate(path, expect_rc):
    p = run("validate", path, check=False)
    assert p.returncode == expect_rc, p.stdout + p.stderr
    return p.stdout


def finding(out, line, text):
    """Asserts a finding on that line (0: no line) whose message contains text."""
    pat = re.compile(r":%s: (error|warning): .*%s" % (line, re.escape(text))) if line else \
        re.compile(r": (error|warning): .*%s" % re.escape(text))
    assert pat.search(out), f"no finding {text!r} on line {line} in:\n{out}"


def test_clean_traces_have_no_findings(tmp_path, real_trace):
    out = validate(write(tmp_path, "ok.pfw", [HH, ev(2), ev(3)]), 0)
    assert "0 errors, 0 warnings" in out
    out = validate(real_trace, 0)
    assert "0 errors, 0 warnings" in out
    g = gen(tmp_path / "g.pfw.gz", 20000, threads=3, member_bytes=50000)
    assert "0 errors, 0 warnings" in validate(g, 0)


def test_reference_traces_have_warnings_only(ref_files):
    p = run("validate", *ref_files, check=False)
    assert p.returncode == 0, p.stdout
    assert "total: 0 errors" in p.stdout
    assert "numbers in quotes" in p.stdout  # the legacy files
    assert "no closing ']'" in p.stdout


def test_invalid_json(tmp_path):
    out = validate(write(tmp_path, "a.pfw", [HH, ev(2), '{"id":3,"name":"x",', ev(4)]), 1)
    finding(out, 4, "invalid JSON")


@pytest.mark.parametrize("key,typed", [
    ("ph", '"ph":7'), ("ts", '"ts":"soon"'), ("dur", '"dur":true'), ("pid", '"pid":"x"'),
    ("tid", '"tid":1.5'), ("name", '"name":7'), ("cat", '"cat":null')])
def test_missing_and_ill_typed_fields(tmp_path, key, typed):
    line = ev(2)
    missing = re.sub(r'"%s":("[^"]*"|[^,}]*),' % key, "", line, count=1)
    assert missing != line
    out = validate(write(tmp_path, "m.pfw", [HH, missing, ev(3)]), 1)
    finding(out, 3, 'missing "%s"' % key)
    ill = re.sub(r'"%s":("[^"]*"|[^,}]*)' % key, typed, line, count=1)
    out = validate(write(tmp_path, "t.pfw", [HH, ev(3), ill]), 1)
    finding(out, 4, '"%s" is not' % key)


def test_negative_duration_is_an_error(tmp_path):
    out = validate(write(tmp_path, "n.pfw", [HH, ev(2).replace('"dur":5', '"dur":-5')]), 1)
    finding(out, 3, '"dur" is negative')


def test_quoted_numbers_are_a_warning(tmp_path):
    out = validate(write(tmp_path, "q.pfw", [HH, ev(2).replace('"ts":1002', '"ts":"1002"')]), 0)
    finding(out, 3, "numbers in quotes (ts)")


def test_hash_used_without_definition(tmp_path):
    out = validate(write(tmp_path, "h.pfw", [ev(2), HH, ev(3)]), 1)
    finding(out, 2, "hash 42 is used without an earlier HH/SH/FH definition")
    fh = ev(4).replace('"level":1', '"fhash":99,"level":1')
    out = validate(write(tmp_path, "f.pfw", [HH, fh]), 1)
    finding(out, 3, "hash 99")


def test_duplicate_ids(tmp_path):
    out = validate(write(tmp_path, "d.pfw", [HH, ev(2), ev(3), ev(2, ts=2000)]), 1)
    finding(out, 5, "duplicate id 2 (first on line 3)")


def test_counter_with_an_id(tmp_path):
    c = '{"id":9,"name":"mem","cat":"device","pid":7,"tid":7,"ts":5,"ph":"C","args":{"bytes":1}}'
    out = validate(write(tmp_path, "c.pfw", [HH, ev(2), c]), 1)
    finding(out, 4, "counter with an \"id\"")
    ok = c.replace('"id":9,', "")
    assert "0 errors" in validate(write(tmp_path, "c2.pfw", [HH, ok]), 0)


def test_data_after_closing_bracket(tmp_path):
    p = tmp_path / "after.pfw"
    p.write_text("\n".join(["[", HH, ev(2), "]", ev(3)]) + "\n")
    out = validate(p, 1)
    finding(out, 5, "data after the closing ']' on line 4")


def test_json_lines_without_brackets_and_a_stray_closing_bracket(tmp_path):
    # DFTracer 2.x writes JSON lines, no '[' and no ']': valid, nothing to report
    p = tmp_path / "lines.pfw"
    p.write_text("\n".join([HH, ev(2)]) + "\n")
    assert "0 errors, 0 warnings" in validate(p, 0)
    p = tmp_path / "noopen.pfw"
    p.write_text("\n".join([HH, ev(2), "]"]) + "\n")
    finding(validate(p, 1), 3, "a closing ']' in a file that did not open with '['")


def test_missing_closing_bracket_is_a_warning(tmp_path):
    out = validate(write(tmp_path, "open.pfw", [HH, ev(2)], close=False), 0)
    finding(out, 3, "no closing ']'")


def test_truncated_final_member(tmp_path):
    text = "\n".join(["[", HH] + [ev(i) for i in range(2, 3000)] + ["]"]) + "\n"
    data = dt_member(text[:len(text) // 2 + 17]) + dt_member(text[len(text) // 2 + 17:])
    p = tmp_path / "cut.pfw.gz"
    p.write_bytes(data[:-200])
    out = validate(p, 1)
    finding(out, 0, "truncated final gzip member")
    finding(out, 0, "cut short")
    # A single gzip member without DT (DFTracer 1.0.8), cut: the same finding.
    q = tmp_path / "cut1.pfw.gz"
    q.write_bytes(gzip.compress(text.encode())[:-300])
    finding(validate(q, 1), 0, "truncated final gzip member")


def test_dt_fields_that_disagree(tmp_path):
    text = "\n".join(["[", HH, ev(2), ev(3)]) + "\n"
    tail = "]\n"
    good = dt_member(text) + dt_member(tail)
    p = tmp_path / "good.pfw.gz"
    p.write_bytes(good)
    assert "0 errors" in validate(p, 0)
    p.write_bytes(dt_member(text, lines=7) + dt_member(tail))
    finding(validate(p, 1), 1, "DT field says 7 lines, the member holds 4")
    p.write_bytes(dt_member(text, ts=(1, 2)) + dt_member(tail))
    finding(validate(p, 1), 1, "DT field says ts 1..2, its lines have 1002..1003")
    p.write_bytes(dt_member(text, ulen=10) + dt_member(tail))
    finding(validate(p, 1), 0, "uncompressed bytes, the member holds")


def test_trailing_garbage_after_gzip_data(tmp_path):
    text = "\n".join(["[", HH, ev(2), "]"]) + "\n"
    p = tmp_path / "junk.pfw.gz"
    p.write_bytes(gzip.compress(text.encode()) + b"garbage!")
    finding(validate(p, 1), 0, "bytes after the end of the gzip data")


def test_many_findings_are_capped_per_kind(tmp_path):
    bad = ['{"id":%d,"name":' % i for i in range(100)]
    out = validate(write(tmp_path, "many.pfw", [HH] + bad), 1)
    assert out.count("invalid JSON") == 20
    assert "80 more json findings not shown" in out
    assert "100 errors" in out
