"""test_io_copy.py: data copied in the kernel (copy_file_range, sendfile, splice) counted as
read from its source file and written to its target file, in the trace (from_hash, to_hash),
in `dftrace analyze --json`'s I/O section and in `dftrace stat --json`; pwritev2 at the
descriptor's offset (-1) followed in the sequential counts; fallocate traced as metadata; and
a process that kills itself (kill or raise of its own pid) leaves an end line that says by
which signal, as the fatal-signal handler's path does."""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]
PROG = os.path.join(BIN, "copy_prog")

# What copy_prog copy moves (copy_prog.c's sizes): per file, (read bytes, write bytes). Each
# source is first written whole with write().
A, B, C, D, E = 100000, 70000, 30000 + 20000, 40000, 2 * 1000
EXPECTED = {
    "a.bin": (A, A), "a_cfr.bin": (0, A),
    "b.bin": (B, B), "b_sf.bin": (0, B),
    "c.bin": (C, C),  # to a pipe and a socket: read from the file, written to no file
    "d.bin": (D, D), "d_out.bin": (0, D),
    "e.bin": (0, E),
}
# The copies in the trace: (event, source, target) -> bytes (None: not a file traced).
COPIES = {
    ("copy_file_range", "a.bin", "a_cfr.bin"): A,
    ("sendfile", "b.bin", "b_sf.bin"): B,
    ("sendfile", "c.bin", None): C,
    ("splice", "d.bin", None): D,
    ("splice", None, "d_out.bin"): D,
}


def clean_env():
    env = dict(os.environ)
    for k in ("DFTRACE_ENABLE", "DFTRACE_LOG_FILE", "DFTRACE_IO_DATA_DIR", "LD_PRELOAD"):
        env.pop(k, None)
    return env


def traced(tmp_path, *cmd, aggregate=False, out_name="traces"):
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    out = tmp_path / out_name
    out.mkdir(exist_ok=True)
    env = clean_env()
    if aggregate:
        env["DFTRACE_AGGREGATION"] = "1"
    p = subprocess.run([CLI, "run", "--prefix", str(out / "t"), "--data-dirs", str(data), "--",
                        *cmd], capture_output=True, text=True, env=env, timeout=120)
    return data, out, p


def cli_json(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout)


def per_file(analysis, data):
    """{name in data: (read bytes, write bytes)} of analyze's I/O section."""
    files = {}
    for f in analysis["io"]["files"]:
        assert f["path_known"], f
        if os.path.dirname(f["file"]) == str(data):
            files[os.path.basename(f["file"])] = (f["read_bytes"], f["write_bytes"])
    return files


def run_copy_prog(tmp_path, aggregate=False):
    data, out, p = traced(tmp_path, PROG, "copy", str(tmp_path / "data"), aggregate=aggregate)
    if p.returncode == 3 and p.stdout.startswith("unsupported"):
        pytest.skip("this kernel or file system lacks a call: %s" % p.stdout.strip())
    assert p.returncode == 0 and p.stdout == "copied\n", p.stdout + p.stderr
    return data, tc.only_file(str(out))


def test_copies_in_the_trace_name_both_ends_and_their_bytes(tmp_path):
    data, trace = run_copy_prog(tmp_path)
    ev = tc.load_checked(trace)
    names = {e["args"]["value"]: os.path.basename(e["args"]["name"]) for e in ev
             if e.get("name") == "FH"}
    moved = collections.Counter()
    for e in ev:
        if e.get("cat") == "POSIX" and e["name"] in ("copy_file_range", "sendfile", "splice"):
            a = e["args"]
            assert a["ret"] > 0, e
            assert a["fhash"] == a.get("from_hash", a.get("to_hash")), e
            moved[(e["name"], names.get(a.get("from_hash")), names.get(a.get("to_hash")))] += \
                a["ret"]
    assert dict(moved) == COPIES
    # fallocate and posix_fallocate: metadata calls on e.bin (no bytes: analyze's test)
    reserved = [(e["name"], names[e["args"]["fhash"]]) for e in ev
                if e.get("cat") == "POSIX" and "fallocate" in e["name"]]
    assert reserved == [("fallocate", "e.bin"), ("posix_fallocate", "e.bin")], reserved


def stat_per_file(trace, data):
    """{name in data: (read bytes, write bytes)} of `dftrace stat --json`'s io_files."""
    got = {}
    for r in cli_json("stat", "--json", trace)["io_files"]:
        if r["cat"] == "POSIX" and r["path"] and os.path.dirname(r["path"]) == str(data):
            got[os.path.basename(r["path"])] = (r["read_bytes"], r["write_bytes"])
    return got


@pytest.mark.parametrize("aggregate", [False, True], ids=["full", "aggregated"])
def test_analyze_and_stat_count_a_copy_as_read_and_written(tmp_path, aggregate):
    # Aggregated, the copies are records of dft_cnt calls that name both ends as the full
    # events do: the bytes per file are the full trace's.
    data, trace = run_copy_prog(tmp_path, aggregate)
    if aggregate:
        records = [e for e in tc.load(trace) if e.get("cat") == "POSIX"
                   and e["name"] in ("copy_file_range", "sendfile", "splice")]
        assert records and all(e["ph"] == "A" for e in records), records
    analysis = cli_json("analyze", "--json", trace)
    assert per_file(analysis, data) == EXPECTED
    io = analysis["io"]
    assert io["read_bytes"] == sum(r for r, w in EXPECTED.values())
    assert io["write_bytes"] == sum(w for r, w in EXPECTED.values())
    by_name = {os.path.basename(f["file"]): f for f in io["files"]}
    assert by_name["e.bin"]["writes"] == 2
    if not aggregate:  # (aggregated records hold no offsets to order)
        # pwritev2 at -1: the second write follows the first at the descriptor's offset
        assert by_name["e.bin"]["consecutive_writes"] == 1
    assert by_name["e.bin"]["metadata_ops"] == 4  # open, fallocate, posix_fallocate, close
    assert stat_per_file(trace, data) == EXPECTED


def test_cp_of_a_file_reads_and_writes_its_size(tmp_path):
    """`cp`, traced in full and aggregated: read = write = the file's size, by analyze and by
    stat, the same in both modes."""
    cp = shutil.which("cp")
    if not cp:
        pytest.skip("no cp on PATH")
    data = tmp_path / "data"
    data.mkdir()
    size = 3 * 1024 * 1024 + 12345
    (data / "src.bin").write_bytes(os.urandom(size))
    seen = {}
    for aggregate in (False, True):
        dst = "dst_agg.bin" if aggregate else "dst.bin"
        _, out, p = traced(tmp_path, cp, str(data / "src.bin"), str(data / dst),
                           aggregate=aggregate, out_name="traces_%d" % aggregate)
        assert p.returncode == 0, p.stdout + p.stderr
        trace = tc.only_file(str(out))
        analysis = cli_json("analyze", "--json", trace)
        files = per_file(analysis, data)
        assert files["src.bin"][0] == size and files[dst] == (0, size), (aggregate, files)
        assert (analysis["io"]["read_bytes"], analysis["io"]["write_bytes"]) == (size, size)
        files = stat_per_file(trace, data)
        assert files["src.bin"][0] == size and files[dst] == (0, size), (aggregate, files)
        seen[aggregate] = (analysis["io"]["read_bytes"], analysis["io"]["write_bytes"],
                           files["src.bin"], files[dst])
    assert seen[True] == seen[False]


@pytest.mark.parametrize("how", ["kill", "raise"])
def test_a_process_that_kills_itself_records_the_signal_in_its_end_line(tmp_path, how):
    data, out, p = traced(tmp_path, PROG, how, str(tmp_path / "data"))
    assert p.returncode == -signal.SIGUSR1, (p.returncode, p.stdout, p.stderr)
    assert p.stdout == "sending\n"
    ev = tc.load_checked(tc.only_file(str(out)))
    end = ev[-1]
    assert end["name"] == "end", end
    assert end["args"].get("signal") == "SIGUSR1", end
    assert [e for e in ev if e.get("cat") == "POSIX" and e["name"] == "write"]


def test_a_writer_whose_reader_left_ends_its_trace_with_sigpipe(tmp_path):
    # `dd ... | head -c 10`: head leaves after 10 bytes, and dd's next write to the pipe (400 KiB
    # of output against a pipe of 64 KiB) kills it by SIGPIPE, the default action in place. Its
    # trace is whole: its reads of the file, then the end line naming the signal.
    dd = shutil.which("dd")
    if not dd:
        pytest.skip("no dd on PATH")
    data = tmp_path / "data"
    data.mkdir()
    (data / "z.bin").write_bytes(os.urandom(400 * 1024))
    _, out, p = traced(tmp_path, "sh", "-c",
                       "%s if=%s bs=4k 2>/dev/null | head -c 10 | wc -c" % (dd, data / "z.bin"))
    assert p.returncode == 0 and p.stdout.strip() == "10", (p.returncode, p.stdout, p.stderr)
    ends = {}
    for name in sorted(os.listdir(out)):
        ev = tc.load_checked(str(out / name))
        assert ev[-1]["name"] == "end", (name, ev[-1])
        ends[name] = (ev[-1]["args"].get("signal"), ev)
    piped = [ev for sig, ev in ends.values() if sig == "SIGPIPE"]
    assert len(piped) == 1, {k: v[0] for k, v in ends.items()}
    assert [e for e in piped[0] if e.get("cat") == "POSIX" and e["name"] == "read"], piped[0]
