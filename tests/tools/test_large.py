# test_large.py: millions of events: merge ordering and de-duplication, split/merge round
# trip and stat counts on synthetic traces written by tests/tools/gen_trace.cpp.
import collections
import re

from conftest import gen, gzip_members, dt_field, run

TS = re.compile(r'"ts":(\d+)')
PH = re.compile(r'"ph":"(.)"')


def scan(path):
    """Streams a trace with Python's gzip module: (ordered?, #events, #meta, meta lines)."""
    import gzip
    last, ordered, n_ev, meta = -1, True, 0, collections.Counter()
    hashdefs = collections.Counter()
    with gzip.open(path, "rt") as f:
        for line in f:
            line = line.rstrip("\n")
            if line in ("[", "]"):
                continue
            ph = PH.search(line).group(1)
            if ph == "M":
                meta[line] += 1
                if '"name":"HH"' in line or '"name":"SH"' in line or '"name":"FH"' in line:
                    args = line[line.index('"args":'):]
                    args = re.sub(r'"hhash":\d+,', "", args)
                    hashdefs[re.sub(r'"(pid|tid|id)":\d+,', "", line[:line.index('"args":')]) + args] += 1
                continue
            ts = int(TS.search(line).group(1))
            ordered = ordered and ts >= last
            last = ts
            n_ev += 1
    return ordered, n_ev, meta, hashdefs


def test_merge_millions_of_events(tmp_path):
    files = [gen(tmp_path / f"r{i}.pfw.gz", 700_000, pid=1000 + i, seed=i, threads=2)
             for i in range(3)]
    out = tmp_path / "merged.pfw.gz"
    run("merge", *files, "-o", out)
    ordered, n_ev, meta, hashdefs = scan(out)
    assert ordered
    # Every X event (+ start/end) and every counter of the inputs.
    expect = 0
    for f in files:
        o, n, _, _ = scan(f)
        assert not o  # the inputs are only nearly sorted (parents after children)
        expect += n
    assert n_ev == expect > 2_100_000
    # De-duplicated: the 3 ranks share the command line, exec name and 64 file names.
    assert all(c == 1 for c in meta.values())
    assert all(c == 1 for c in hashdefs.values())
    fh = sum(1 for l in meta if '"name":"FH"' in l)
    assert fh == 64
    # Members of about 1 MiB, each with a DT field.
    ms = gzip_members(out)
    assert len(ms) > 100 and all(dt_field(m[2]) for m in ms)
    v = run("validate", out)
    assert " 0 errors, 0 warnings" in v.stdout


def test_split_merge_round_trip_large(tmp_path):
    src = gen(tmp_path / "big.pfw.gz", 1_000_000, pid=77, threads=4)
    d = tmp_path / "pieces"
    run("split", src, "-o", d, "--size", "32MiB")
    pieces = sorted(d.iterdir())
    assert len(pieces) >= 5
    back = tmp_path / "back.pfw.gz"
    run("merge", *pieces, "-o", back)
    import gzip

    def multiset(p):
        c = collections.Counter()
        with gzip.open(p, "rt") as f:
            for line in f:
                if '"ph":"M"' not in line and line.strip() not in ("[", "]"):
                    c[line] += 1
        return c
    assert multiset(src) == multiset(back)


def peak_rss(*cmd):
    """Runs the dftrace command; (its exit status, its peak resident set in KiB, stderr),
    measured by a wrapper process whose only child it is."""
    import os
    import subprocess
    import sys
    from conftest import CLI
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.stderr.write(p.stderr)\n")
    p = subprocess.run([sys.executable, "-c", wrapper, CLI, *map(str, cmd)], capture_output=True,
                       text=True, timeout=900, env=dict(os.environ, DFTRACE_NO_PROGRESS="1"))
    rc, rss = map(int, p.stdout.split())
    return rc, rss, p.stderr


def test_merge_and_split_stream_in_bounded_memory(tmp_path):
    # 64 inputs, about 200 MB of text: merge keeps sorted runs on disk, not the inputs in
    # memory; its peak resident set stays under 256 MiB, and no run file is left behind. Then
    # split --by time of the merged trace (its own external sort), the same bound, and the
    # pieces merge back into the same events.
    import json
    import os
    files = [gen(tmp_path / f"r{i:02d}.pfw.gz", 16_000, pid=2000 + i, seed=i, threads=2)
             for i in range(64)]
    st = json.loads(run("stat", "--json", *files).stdout)
    assert st["text_bytes"] > 180_000_000
    out = tmp_path / "merged.pfw.gz"
    rc, rss_kib, err = peak_rss("merge", *files, "-o", out)
    assert rc == 0, err
    assert rss_kib < 256 * 1024, f"merge peaked at {rss_kib / 1024:.0f} MiB"
    assert sorted(os.listdir(tmp_path)) == sorted([f.name for f in files] + ["merged.pfw.gz"])
    ordered, n_ev, _, _ = scan(out)
    assert ordered and n_ev == st["events"] - st["metadata"]
    m = json.loads(run("stat", "--json", out).stdout)
    assert sorted(map(json.dumps, m["by_name"])) == sorted(map(json.dumps, st["by_name"]))
    pieces = tmp_path / "pieces"
    rc, rss_kib, err = peak_rss("split", out, "-o", pieces, "--by", "time", "--size", "32MiB")
    assert rc == 0, err
    assert rss_kib < 256 * 1024, f"split peaked at {rss_kib / 1024:.0f} MiB"
    names = sorted(os.listdir(pieces))
    assert len(names) >= 6 and all(n.endswith(".pfw.gz") for n in names)  # no scratch left
    last = 0
    for n in names:  # in time order across the pieces
        o, _, _, _ = scan(pieces / n)
        assert o
        ts = [int(m.group(1)) for m in TS.finditer(open_text(pieces / n))]
        assert ts and min(ts) >= last
        last = max(ts)
    back = tmp_path / "back.pfw.gz"
    run("merge", *[pieces / n for n in names], "-o", back)
    b = json.loads(run("stat", "--json", back).stdout)
    assert sorted(map(json.dumps, b["by_name"])) == sorted(map(json.dumps, st["by_name"]))


def open_text(path):
    import gzip
    with gzip.open(path, "rt") as f:
        return f.read()
