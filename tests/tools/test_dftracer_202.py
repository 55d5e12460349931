# test_dftracer_202.py: traces written by DFTracer 2.0.2 itself (tests/data/dftracer-2.0.2).
# validate finds no error in them (what 2.0.2 writes and dftrace would not is a warning), stat,
# dftrace.read and convert fold its aggregated calls ("ph":"C" lines with dur_min/_max/_sum) as
# calls of their name with their exact time, and convert writes 2.0.2's form and the newer
# typed form (integer ph, a type key), each read back to the same statistics.
import collections
import gzip
import json
import os

import pytest

from conftest import events, gen, lines, run

DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                                    "dftracer-2.0.2"))
FILES = sorted(os.path.join(DIR, f) for f in os.listdir(DIR) if f.endswith((".pfw", ".pfw.gz")))
AGG = os.path.join(DIR, "d2_preload_pread_agg_meta.pfw.gz")


def objects(path):
    return [json.loads(l) for l in lines(path) if l.strip() not in ("", "[", "]")]


def calls_of(o):
    """The calls a 2.0.2 aggregated line stands for, as docs/format.md section 4 says."""
    a = o["args"]
    if "count_sum" not in a:
        return a["count"]
    for k, v in a.items():
        if isinstance(v, int) and v and isinstance(a.get(k + "_sum"), int) \
                and a[k + "_sum"] % v == 0:
            return a[k + "_sum"] // v
    return 1


def want_by_name(path):
    count, total = collections.Counter(), collections.Counter()
    for o in objects(path):
        k = (o["cat"], o["name"])
        if o["ph"] == "X":
            count[k] += 1
            total[k] += o["dur"] * 1000
        elif o["ph"] == "C" and "dur_sum" in o["args"]:
            count[k] += calls_of(o)
            total[k] += o["args"]["dur_sum"] * 1000
    return count, total


def stat(path):
    st = json.loads(run("stat", "--json", path).stdout)
    return st, {(r["cat"], r["name"]): (r["count"], r["total_ns"]) for r in st["by_name"]}


def test_the_data_is_all_there():
    assert len(FILES) == 11
    assert os.path.exists(os.path.join(DIR, "LICENSE-DFTracer"))


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_validate_finds_no_error(path):
    p = run("validate", path, check=False)
    assert p.returncode == 0, p.stdout[-3000:]
    assert " 0 errors" in p.stdout


def test_repeated_ids_and_early_records_are_warnings():
    # a1 (metadata off) repeats ids of nested regions; d4's aggregated lines start before the
    # process's start event.
    a1 = run("validate", os.path.join(DIR, "a1_cpp_macros.pfw.gz")).stdout
    assert "warning: duplicate id" in a1 and "error" not in a1.replace(" 0 errors", "")


def test_other_traces_keep_the_strict_checks(tmp_path):
    # The same findings in a trace without DFTracer's marks (here one of the test generator's)
    # stay errors.
    src = gen(tmp_path / "t.pfw", 20)
    ls = lines(src)
    start = next(i for i, l in enumerate(ls) if '"name":"start"' in l)
    ev = next(i for i, l in enumerate(ls) if '"ph":"X"' in l and i > start and '"id":' in l
              and '"name":"end"' not in l)
    o = json.loads(ls[ev])
    dup = dict(o, ts=json.loads(ls[start])["ts"] - 5)
    ls.insert(ev + 1, json.dumps(dup, separators=(",", ":")))
    bad = tmp_path / "bad.pfw"
    bad.write_text("\n".join(ls) + "\n")
    out = run("validate", bad, check=False)
    assert out.returncode == 1
    assert "error: duplicate id" in out.stdout and "error: pid" in out.stdout


def test_stat_folds_aggregated_calls():
    st, got = stat(AGG)
    count, total = want_by_name(AGG)
    assert got == {k: (count[k], total[k]) for k in count}
    assert got[("POSIX", "pread")][0] == 2016
    assert st["counters"] == 0 and st["aggregated_records"] == 2019
    reads = sum(r["read_calls"] for r in st["io_files"])
    assert reads == 2016
    assert sum(r["read_bytes"] for r in st["io_files"]) == 2016 * 4096


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_stat_counts_every_file(path):
    count, total = want_by_name(path)
    assert stat(path)[1] == {k: (count[k], total[k]) for k in count}


def test_read_folds_aggregated_calls():
    dftrace = pytest.importorskip("dftrace")
    pytest.importorskip("pandas")
    df = dftrace.read(AGG, args=["dft_cnt", "count"])
    pr = df[df["name"] == "pread"]
    assert set(pr["ph"]) == {"A"}
    assert int(pr["dft_cnt"].sum()) == 2016
    assert int(pr["dur"].sum()) == sum(o["args"]["dur_sum"] for o in objects(AGG)
                                       if o["name"] == "pread") * 1000
    assert set(pr["count"]) == {4096}  # the call's own argument, as written


def test_read_args_true_is_every_argument():
    dftrace = pytest.importorskip("dftrace")
    pytest.importorskip("pandas")
    path = os.path.join(DIR, "a2_cpp_macros_meta.pfw.gz")
    df = dftrace.read(path, args=True)
    keys = []
    for o in objects(path):
        if o["ph"] != "M" and "ts" in o:
            for k in o.get("args", {}):
                if k not in keys and k not in ("level", "p_idx"):
                    keys.append(k)
    assert keys and all(k in df.columns for k in keys)
    assert list(df.columns[10:10 + len(keys)]) == keys
    assert len(dftrace.read(path, args=False).columns) == len(dftrace.read(path).columns)


def convert(src, to, out):
    p = run("convert", src, "--to", to, "-o", out)
    assert p.returncode == 0, p.stderr
    return out


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_round_trips_keep_the_statistics(tmp_path, path):
    base = stat(path)[1]
    v1 = convert(path, "dftracer", tmp_path / "v1.pfw.gz")
    assert stat(v1)[1] == base
    for to in ("dftracer-2.0.2", "dftracer-2-typed"):
        out = convert(v1, to, tmp_path / (to + ".pfw"))
        assert stat(out)[1] == base, to
        back = convert(out, "dftracer", tmp_path / (to + "-back.pfw"))
        assert stat(back)[1] == base, to


def test_the_two_forms(tmp_path):
    src = gen(tmp_path / "t.pfw.gz", 50)
    old = convert(src, "dftracer-2.0.2", tmp_path / "a.pfw")
    typed = convert(src, "dftracer-2-typed", tmp_path / "b.pfw")
    alias = convert(src, "dftracer-v2", tmp_path / "c.pfw")
    assert open(typed).read() == open(alias).read()  # the old name is the typed form
    ls = lines(old)
    assert ls[0] == "[" and ls[-1] == "]"
    for o in objects(old):
        assert isinstance(o["ph"], str) and "type" not in o
        if "hhash" in o.get("args", {}):
            assert isinstance(o["args"]["hhash"], str) and len(o["args"]["hhash"]) == 16
    for o in objects(typed):
        assert isinstance(o["ph"], int) and "type" in o
    base = stat(src)[1]
    assert stat(old)[1] == base and stat(typed)[1] == base


def test_aggregated_records_in_the_202_form(tmp_path):
    # dftrace's "A" records become 2.0.2's counter lines, and read back as the same calls.
    v2 = os.path.join(os.path.dirname(DIR), "dftracer-v2", "v2-sample.pfw")
    base = stat(v2)[1]
    old = convert(v2, "dftracer-2.0.2", tmp_path / "a.pfw")
    agg = [o for o in objects(old) if o["ph"] == "C" and "dur_sum" in o["args"]]
    assert agg and all("count" in o["args"] or "dft_cnt" in o["args"] for o in agg)
    assert stat(old)[1] == base
