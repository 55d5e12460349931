# test_read.py: dftrace.read: traces into pandas through the C++ reader, checked
# against the dftrace command's own counts and against Python's json reading the same files.
import collections
import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import events, gen, need, run

pd = need("pandas")
import dftrace  # noqa: E402  (PYTHONPATH: the build tree's package)

NESTED = os.environ.get("DFTRACE_NESTED_NS", "")


def stat_by_name(paths):
    st = json.loads(run("stat", "--json", *paths).stdout)
    return {(r["cat"], r["name"]): (r["count"], r["total_ns"]) for r in st["by_name"]}, st


def read_by_name(df):
    g = df[df.ph == "X"].groupby(["cat", "name"], observed=True).dur.agg(["count", "sum"])
    return {k: (int(v["count"]), int(v["sum"])) for k, v in g.iterrows()}


# Run with thread stacks of 256 MiB (RLIMIT_STACK, read by the C library at start) and, once
# warm, an address space that holds about one more: most of the 8 readers are refused.
_FEW_THREADS = r"""
import resource, sys, threading
import dftrace
paths = sys.argv[1:]
want = dftrace.read(paths, threads=1)
def vm_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + (384 << 20), resource.RLIM_INFINITY))
got = dftrace.read(paths, threads=8)
held, hold = [], threading.Event()
try:
    for _ in range(4):
        t = threading.Thread(target=hold.wait)
        t.start()
        held.append(t)
    print("not refused")
except RuntimeError:
    print("refused")
hold.set()
for t in held:
    t.join()
print("equal" if got.equals(want) and len(got) > 0 else "differ")
"""


def test_read_goes_on_with_the_threads_the_system_gives(ref_files):
    def big_stacks():
        import resource
        resource.setrlimit(resource.RLIMIT_STACK, (256 << 20, 256 << 20))

    r = subprocess.run([sys.executable, "-c", _FEW_THREADS] + ref_files, capture_output=True,
                       text=True, preexec_fn=big_stacks, timeout=300)
    assert r.returncode == 0, f"status {r.returncode}: {r.stderr[-2000:]}"
    out = r.stdout.split()
    if "refused" not in out:
        pytest.skip("threads were not refused under the address-space limit")
    assert out[-1] == "equal"


def test_dftracer_samples_equal_stat(ref_files):
    df = dftrace.read(ref_files, args=["size", "fhash"])
    want, st = stat_by_name(ref_files)
    assert read_by_name(df) == want
    assert len(df) == st["events"] - st["metadata"]
    assert df.attrs["invalid_lines"] == 0 and df.attrs["problems"] == []
    assert set(df.attrs["time_units"].values()) == {"us"}
    # ts in ns: the files' microseconds times 1000, exactly
    py = [e for f in ref_files for e in events(f) if "ts" in e and e.get("ph") != "M"]
    assert sorted(int(e["ts"]) * 1000 for e in py) == sorted(df.ts.tolist())


def test_files_read_side_by_side_as_one_after_another(tmp_path, ref_files):
    # Small files are read whole on one worker each, beside each other: the rows, the problems
    # and the time units come back in file order, as one thread reading them in turn gives them,
    # a damaged file among them included.
    good = open(ref_files[1], "rb").read()
    cut = tmp_path / "cut.pfw.gz"
    cut.write_bytes(good[:len(good) // 2])
    flipped = bytearray(good)
    for k in range(len(flipped) // 3, len(flipped) // 3 + 64):
        flipped[k] ^= 0x5A
    bad = tmp_path / "corrupt.pfw.gz"
    bad.write_bytes(bytes(flipped))
    paths = ref_files[:3] + [str(cut)] + ref_files[3:6] + [str(bad)] + ref_files[6:]
    one = dftrace.read(paths, threads=1, args=["fhash", "size"])
    two = dftrace.read(paths, threads=2, args=["fhash", "size"])
    assert len(one) > 0 and one.equals(two)
    assert one.attrs["problems"] == two.attrs["problems"]
    assert list(dict.fromkeys(p.split(":")[0] for p in one.attrs["problems"])) == [str(cut), str(bad)]
    assert one.attrs["time_units"] == two.attrs["time_units"]
    assert one.attrs["invalid_lines"] == two.attrs["invalid_lines"]


def test_hashes_and_ranks_resolve_as_the_metadata_says(ref_files):
    f = ref_files[0]
    ev = events(f)
    fh = {str(e["args"]["value"]): e["args"]["name"] for e in ev if e.get("name") == "FH"}
    rank = [e["args"]["value"] for e in ev if e.get("name") == "PR" and e["args"].get("name") == "rank"]
    df = dftrace.read(f, args=["fhash"])
    rows = [e for e in ev if e.get("ph") == "X"]
    want = collections.Counter(fh.get(str(e.get("args", {}).get("fhash"))) for e in rows
                               if "fhash" in e.get("args", {}))
    got = collections.Counter(df.file.dropna().tolist())
    assert got == +want and got, (got.most_common(3), want.most_common(3))
    assert set(df["rank"]) == {int(rank[0])} if rank else {-1}
    assert set(df.host.dropna()) <= {e["args"]["name"] for e in ev if e.get("name") == "HH"}
    off = dftrace.read(f, resolve=False)
    assert "file" not in off.columns and "host" not in off.columns


def test_a_dftrace_trace_and_its_arguments(real_trace):
    df = dftrace.read(real_trace, args=["epoch", "step"])
    want, _ = stat_by_name([real_trace])
    assert read_by_name(df) == want
    py = [e for e in events(real_trace) if e.get("ph") == "X"]
    steps = collections.Counter(e["args"].get("step") for e in py if "step" in e["args"])
    got = collections.Counter(df["step"].dropna().tolist())
    assert got == steps and str(df["step"].dtype) == "Int64"  # integers stay integers
    assert (df.level >= 1).all() and (df.p_idx >= -1).all()


@pytest.mark.skipif(not NESTED, reason="DFTRACE_NESTED_NS is set by ctest")
def test_nanosecond_traces_read_exactly(tmp_path):
    env = dict(os.environ, DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "t"),
               DFTRACE_TIMER_PRECISION="ns")
    subprocess.run([NESTED, "500", "2"], env=env, check=True, timeout=120)
    (f,) = tmp_path.glob("*.pfw.gz")
    with gzip.open(f, "rt") as fh:  # Python's json: the file's integers
        py = [json.loads(l) for l in fh.read().splitlines() if l not in ("[", "]")]
    py = [e for e in py if e["ph"] != "M"]
    df = dftrace.read(f)
    assert df.attrs["time_units"] == {str(f): "ns"}
    assert sorted((e["ts"], e["dur"]) for e in py) == sorted(zip(df.ts.tolist(), df.dur.tolist()))


def test_filters(ref_files, tmp_path):
    df = dftrace.read(ref_files)
    some = dftrace.read(ref_files, cat="POSIX", name=["read", "write"])
    assert len(some) == ((df.cat == "POSIX") & df.name.isin(["read", "write"])).sum() > 0
    ts = sorted(df.ts)
    lo, hi = ts[len(ts) // 3], ts[2 * len(ts) // 3]
    win = dftrace.read(ref_files, start=lo, end=hi)
    assert len(win) == ((df.ts >= lo) & (df.ts < hi)).sum() > 0
    assert win.ts.min() >= lo and win.ts.max() < hi
    only = dftrace.read(ref_files, columns=["name", "ts"])
    assert list(only.columns) == ["name", "ts"]
    with pytest.raises(KeyError):
        dftrace.read(ref_files, columns=["nope"])
    with pytest.raises(TypeError):
        dftrace.read(ref_files, start=1.5)


def test_time_window_on_a_large_dt_trace(tmp_path):
    path = gen(tmp_path / "big.pfw.gz", 300000)
    df = dftrace.read(path)
    lo = int(df.ts.quantile(0.9))
    win = dftrace.read(path, start=lo)
    assert len(win) == (df.ts >= lo).sum()


def test_bad_input_is_counted_not_fatal(tmp_path, ref_files):
    good = open(ref_files[0], "rb").read()
    bad = tmp_path / "bad.pfw"
    bad.write_text('[\n{"id":1,"name":"a","cat":"c","pid":1,"tid":1,"ts":5,"dur":2,"ph":"X","args":{}}\n'
                   '{"id":2,"name":oops\n'
                   '{"id":3,"name":"b","cat":"c","pid":1,"tid":1,"ts":9,"dur":1,"ph":"X","args":{}}\n')
    df = dftrace.read(bad)
    assert df.name.tolist() == ["a", "b"] and df.attrs["invalid_lines"] == 1
    cut = tmp_path / "cut.pfw.gz"
    cut.write_bytes(good[:len(good) // 2])
    df = dftrace.read(cut)
    assert len(df) > 0 and df.attrs["problems"]
    with pytest.raises(FileNotFoundError):
        dftrace.read(tmp_path / "missing*.pfw.gz")
