# test_escapes.py: strings written with JSON escapes (quotes, backslashes, control characters,
# \uXXXX, surrogate pairs) are read as they are meant, as Python's json module reads them, by
# dftrace.read, dftrace.dask.read_pfw, cat's filters, stat and validate. A lone surrogate (no
# character; Python keeps it as a lone code point that UTF-8 cannot hold) reads as U+FFFD.
import json
import os
import re

import pytest

from conftest import lines, run

HOSTILE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                                        "hostile", "escaped-strings.pfw"))


def meant(s):
    """What a string decoded by Python's json means, a lone surrogate as U+FFFD."""
    return re.sub("[\ud800-\udfff]", "\ufffd", s)


def objects():
    return [json.loads(l) for l in lines(HOSTILE) if l.strip() not in ("", "[", "]")]


def timed(objs):
    return [o for o in objs if "ts" in o and o["ph"] != "M"]


def test_read_decodes_names_cats_args_and_files():
    dftrace = pytest.importorskip("dftrace")
    pytest.importorskip("pandas")
    df = dftrace.read(HOSTILE, args=["s"])
    objs = objects()
    files = {o["args"]["value"]: meant(o["args"]["name"]) for o in objs
             if o["ph"] == "M" and meant(o["name"]) == "FH"}
    want = [(meant(o["name"]), meant(o["cat"]), meant(o["ph"]),
             meant(o["args"]["s"]) if "s" in o["args"] else None,
             files.get(o["args"].get("fhash"))) for o in timed(objs)]
    got = [(r.name, r.cat, r.ph, None if not isinstance(r.s, str) else r.s,
            None if not isinstance(r.file, str) else r.file) for r in df.itertuples()]
    assert got == want
    assert df.attrs["invalid_lines"] == 0


def test_read_matches_argument_keys_as_meant():
    dftrace = pytest.importorskip("dftrace")
    pytest.importorskip("pandas")
    df = dftrace.read(HOSTILE, args=["key"])  # written "k\u0065y"
    assert [v if isinstance(v, str) else None for v in df["key"]] == \
        ["v"] + [None] * (len(df) - 1)
    assert "key" in dftrace.read(HOSTILE, args=True).columns


def test_read_name_filter_matches_the_meaning():
    dftrace = pytest.importorskip("dftrace")
    pytest.importorskip("pandas")
    df = dftrace.read(HOSTILE, name="forward")
    assert list(df["ts"]) == [1020000, 1030000]  # "\u0066orward" and "forward"
    assert set(dftrace.read(HOSTILE, cat="cat")["name"]) == {'a"b\\c', "nl\nname"}


def test_dask_decodes_as_read_does():
    dftrace = pytest.importorskip("dftrace")
    pytest.importorskip("dask")
    import dftrace.dask as dd
    a = dftrace.read(HOSTILE, args=["s"])
    b = dd.read_pfw(HOSTILE, args=["s"]).compute()
    assert list(b["name"].astype(str)) == [meant(o["name"]) for o in timed(objects())]
    assert list(b["name"].astype(str)) == list(a["name"].astype(str))
    assert list(b["cat"].astype(str)) == list(a["cat"].astype(str))
    assert [x if isinstance(x, str) else None for x in b["s"]] == \
        [x if isinstance(x, str) else None for x in a["s"]]
    assert [x if isinstance(x, str) else None for x in b["file"]] == \
        [x if isinstance(x, str) else None for x in a["file"]]


def test_cat_filters_match_the_meaning():
    out = run("cat", HOSTILE, "--name", "forward").stdout.splitlines()
    assert [json.loads(l)["ts"] for l in out] == [1020, 1030]
    out = run("cat", HOSTILE, "--cat", "cat").stdout.splitlines()
    assert [json.loads(l)["name"] for l in out] == ['a"b\\c', "nl\nname"]


def test_stat_counts_by_meaning_and_reads_escaped_phases():
    st = json.loads(run("stat", "--json", HOSTILE).stdout)
    objs = objects()
    want = {}
    for o in objs:
        if meant(o["ph"]) == "X":
            k = (meant(o["cat"]), meant(o["name"]))
            want[k] = want.get(k, 0) + 1
    assert {(r["cat"], r["name"]): r["count"] for r in st["by_name"]} == want
    assert st["complete_events"] == sum(want.values())  # "ph":"\u0058" is complete
    assert st["counters"] == 1  # "ph":"\u0043"
    assert st["metadata"] == 3
    # the file of an escaped FH line, as meant
    paths = {r["path"] for r in st["io_files"]}
    assert paths <= {meant(o["args"]["name"]) for o in objs if o["ph"] == "M"}


def test_validate_reads_escaped_phases():
    p = run("validate", HOSTILE, check=False)
    assert "is not one character" not in p.stdout
    assert "unknown \"ph\" \\u0058" not in p.stdout
    # the quote and backslash phases are unknown phases, warnings
    assert p.stdout.count("unknown \"ph\"") == 2
