# test_dask.py: dftrace.dask.read_pfw on a real distributed LocalCluster of 2 worker
# processes: the same events and per-category sums as `dftrace stat --json` and dftrace.read,
# time-window partitions with known divisions from the DT fields, whole-file partitions for
# DFTracer's traces, hashes resolved on the workers.
import json

import pytest

from conftest import dt_field, forge_dt_times, gen, gzip_members, need, run

need("pandas", "distributed")
import dftrace  # noqa: E402
import dftrace.dask as dfd  # noqa: E402


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("ranks")
    for i in range(8):
        gen(d / ("r%d.pfw.gz" % i), 40000, pid=6000 + i, seed=i, threads=2)
    return d


def by_cat(st):
    out = {}
    for r in st["by_name"]:
        c = out.setdefault(r["cat"], [0, 0])
        c[0] += r["count"]
        c[1] += r["total_ns"]
    return out


def test_time_windows_equal_stat(client, ranks):
    cuts, parts = dfd.plan(ranks, partition_bytes="24MiB")
    assert cuts is not None and len(parts) >= 3  # several windows, each across the files
    assert all(len(p) == 8 for p in parts)
    ddf = dfd.read_pfw(ranks, partition_bytes="24MiB", args=["size"])
    assert ddf.known_divisions and ddf.npartitions == len(parts)
    x = ddf[ddf.ph == "X"]
    g = x.groupby("cat", observed=True).dur.agg(["count", "sum"]).compute()
    st = json.loads(run("stat", "--json", ranks).stdout)
    assert {c: [int(v["count"]), int(v["sum"])] for c, v in g.iterrows()} == by_cat(st)
    # the same rows as dftrace.read, in time order inside each partition
    df = ddf.compute()
    assert df.index.is_monotonic_increasing and (df.index == df.ts).all()
    ref = dftrace.read(ranks, args=["size"])
    assert len(df) == len(ref)
    key = ["ts", "pid", "tid", "id"]
    a = df.reset_index(drop=True).sort_values(key).reset_index(drop=True)
    b = ref.sort_values(key).reset_index(drop=True)
    for col in ("name", "cat", "dur", "size", "host", "rank"):
        assert a[col].astype(object).equals(b[col].astype(object)), col
    # a window of the divisions reads only the partitions it covers
    lo, hi = ddf.divisions[1], ddf.divisions[3]
    part = ddf.loc[lo:hi - 1].compute()
    assert len(part) == ((ref.ts >= lo) & (ref.ts < hi)).sum()


def test_small_partitions_are_runs_of_members(client, ranks):
    # Windows of 2 MiB over 8 files would inflate the members at their edges many times over:
    # runs of members of one file instead, divisions unknown, the same sums.
    cuts, parts = dfd.plan(ranks, partition_bytes="2MiB")
    assert cuts is None and len(parts) > 8
    assert all(len(p) == 1 and p[0][1] is not None for p in parts)
    ddf = dfd.read_pfw(ranks, partition_bytes="2MiB")
    g = ddf[ddf.ph == "X"].groupby("cat", observed=True).dur.agg(["count", "sum"]).compute()
    st = json.loads(run("stat", "--json", ranks).stdout)
    assert {c: [int(v["count"]), int(v["sum"])] for c, v in g.iterrows()} == by_cat(st)


def test_dftracer_files_and_hash_resolution(client, ref_files):
    ddf = dfd.read_pfw(ref_files, args=["fhash"], partition_bytes="64KiB")
    assert not ddf.known_divisions and ddf.npartitions > 1
    df = ddf.compute()
    ref = dftrace.read(ref_files, args=["fhash"])
    assert len(df) == len(ref)
    assert df.file.value_counts().to_dict() == ref.file.value_counts().to_dict()
    assert df.file.notna().sum() > 0
    assert sorted(df["rank"].unique()) == sorted(ref["rank"].unique())


def test_dftracer_v2_metadata_resolves_as_read(client, tmp_path):
    # DFTracer 2.x writes metadata as "ph":4 with hexadecimal hashes: the workers' first pass
    # must find those lines too (it looks for them without parsing every line).
    import os
    sample = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                          "dftracer-v2", "v2-sample.pfw")
    ref = dftrace.read(sample, args=["fhash"])
    df = dfd.read_pfw(sample, args=["fhash"]).compute()
    assert len(df) == len(ref) and ref.file.notna().sum() > 0 and ref.host.notna().sum() > 0
    for col in ("file", "host"):
        assert df[col].value_counts().to_dict() == ref[col].value_counts().to_dict()
    assert sorted(df["rank"].unique()) == sorted(ref["rank"].unique()) != [-1]


def same_rows(df, ref):
    assert len(df) == len(ref)
    key = ["ts", "pid", "tid", "id"]
    a = df.reset_index(drop=True).sort_values(key).reset_index(drop=True)
    b = ref.sort_values(key).reset_index(drop=True)
    for col in ("name", "cat", "ts", "dur", "size", "host", "rank"):
        assert a[col].astype(object).equals(b[col].astype(object)), col


@pytest.fixture(scope="module")
def windowed(tmp_path_factory):
    """A trace whose DT fields plan time windows at 256KiB, and its members' DT fields."""
    d = tmp_path_factory.mktemp("dt")
    f = gen(d / "w.pfw.gz", 40000, threads=2, member_bytes=64 * 1024)
    cuts, parts = dfd.plan(f, partition_bytes="256KiB")
    assert cuts is not None and len(parts) >= 4
    return f, [dt_field(m[2]) for m in gzip_members(f) if dt_field(m[2])]


@pytest.mark.parametrize("how", ["last inverted", "middle inverted", "middle without times",
                                 "beyond int64"])
def test_odd_dt_times_fall_back_to_members(client, windowed, tmp_path, how):
    # A DT field is a hint: one whose time range can not be right plans no time windows (which
    # would read an inverted range nowhere, or make unsorted divisions), and the rows are
    # dftrace.read's.
    src, dts = windowed
    k = len(dts) - 1 if how.startswith("last") else len(dts) // 2
    lo, hi = dts[k]["ts_min"], dts[k]["ts_max"]
    lo, hi = {"last inverted": (hi + 5000, lo), "middle inverted": (hi, lo - 1),
              "middle without times": (0, 0), "beyond int64": (lo, 2 ** 63)}[how]
    bad = forge_dt_times(src, tmp_path / "bad.pfw.gz", k, lo, hi)
    ddf = dfd.read_pfw(bad, partition_bytes="256KiB", args=["size"])
    same_rows(ddf.compute(), dftrace.read(bad, args=["size"]))
    cuts, _ = dfd.plan(bad, partition_bytes="256KiB")
    assert cuts is None


def test_dt_times_that_lie_fail_the_read(client, windowed, tmp_path):
    # Ordered but false: a middle member claims the time range of the next one. Windows are
    # planned from it (nothing in the fields says otherwise), and reading them finds events
    # outside their member's range: the compute fails, saying so, instead of returning a frame
    # without the events no window read.
    src, dts = windowed
    k = len(dts) // 2
    bad = forge_dt_times(src, tmp_path / "lie.pfw.gz", k, dts[k + 1]["ts_min"],
                         dts[k + 1]["ts_max"])
    ddf = dfd.read_pfw(bad, partition_bytes="256KiB", args=["size"])
    assert ddf.known_divisions
    with pytest.raises(ValueError, match="DT field"):
        ddf.compute()
    # dftrace.read with a time window skips members the same way, and says so
    df = dftrace.read(bad, start=dts[k + 1]["ts_min"] * 1000)
    assert any("DT field" in p for p in df.attrs["problems"]), df.attrs["problems"]
