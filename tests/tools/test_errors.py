# test_errors.py: bad inputs give one clear "dftrace: ..." line each, the other inputs are
# still processed, and the exit status is non-zero; a progress bar only on a terminal.
import gzip
import json
import os
import pty
import select
import subprocess

import pytest

from conftest import CLI, gen, lines, run


@pytest.fixture
def bad_inputs(tmp_path):
    missing = tmp_path / "missing.pfw.gz"
    corrupt = tmp_path / "damaged.pfw.gz"
    corrupt.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + os.urandom(2000))
    notrace = tmp_path / "photo.png"
    notrace.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(100))
    empty = tmp_path / "empty.pfw"
    empty.write_bytes(b"")
    gzjunk = tmp_path / "archive.pfw.gz"
    gzjunk.write_bytes(gzip.compress(b"\x00\x01binary, not JSON lines\n" * 100))
    return [missing, corrupt, notrace, empty, gzjunk]


@pytest.mark.parametrize("cmd", ["stat", "validate", "cat", "convert", "merge"])
def test_each_bad_input_gives_one_line_and_the_rest_is_processed(cmd, tmp_path, bad_inputs,
                                                                  real_trace):
    args = [cmd, bad_inputs[0], bad_inputs[1], real_trace, bad_inputs[2], bad_inputs[3],
            bad_inputs[4]]
    if cmd == "merge":
        args += ["-o", tmp_path / "m.pfw.gz"]
    if cmd == "convert":
        args += ["-o", tmp_path / "c.json"]
    p = run(*args, check=False)
    assert p.returncode == 1, p.stderr
    err = [l for l in p.stderr.splitlines() if l.startswith("dftrace: ")]
    assert sum(str(bad_inputs[0]) in l and "No such file" in l for l in err) == 1
    if cmd == "validate":  # damage inside a file is one of validate's findings
        assert sum(str(bad_inputs[1]) in l and "error: " in l and "corrupt" in l
                   for l in p.stdout.splitlines()) == 1
    else:
        assert sum(str(bad_inputs[1]) in l and "corrupt" in l for l in err) == 1
    assert sum(str(bad_inputs[2]) in l and "not a trace" in l for l in err) == 1
    assert sum(str(bad_inputs[3]) in l and "empty" in l for l in err) == 1
    if cmd == "validate":
        assert sum(str(bad_inputs[4]) in l and "error: " in l and "not a trace" in l
                   for l in p.stdout.splitlines()) == 1
    else:
        assert sum(str(bad_inputs[4]) in l and "not a trace" in l for l in err) == 1
    assert "Traceback" not in p.stderr and "terminate" not in p.stderr
    n_events = sum(1 for l in lines(real_trace) if '"ph":"X"' in l)
    if cmd == "stat":
        assert f"{n_events} complete" in p.stdout
    elif cmd == "cat":
        assert sum('"ph":"X"' in l for l in p.stdout.splitlines()) == n_events
    elif cmd == "validate":
        assert f"{real_trace}: " in p.stdout
    elif cmd == "merge":
        assert sum('"ph":"X"' in l for l in lines(tmp_path / "m.pfw.gz")) == n_events
    elif cmd == "convert":
        arr = json.load(open(tmp_path / "c.json"))["traceEvents"]
        # the process's start and end become instants of the process in the viewer
        assert sum(o["ph"] == "X" or (o["ph"] == "i" and o["cat"] == "dftracer") for o in arr) == n_events


def test_usage_errors():
    assert run(check=False).returncode == 2
    p = run("frobnicate", check=False)
    assert p.returncode == 2 and p.stderr.startswith("dftrace: unknown command")
    p = run("stat", "--colour", check=False)
    assert p.returncode == 2 and "unknown option --colour" in p.stderr
    assert run("merge", "x.pfw", check=False).returncode == 2  # no -o
    assert "usage: dftrace" in run("--help").stdout


def test_unwritable_output_is_one_line(tmp_path, real_trace):
    p = run("merge", real_trace, "-o", tmp_path / "no" / "such" / "dir.pfw.gz", check=False)
    assert p.returncode == 1
    assert [l for l in p.stderr.splitlines() if "No such file or directory" in l]


def run_on_pty(args, env):
    """Runs the command with stderr on a pseudo-terminal; returns what it wrote there."""
    master, slave = pty.openpty()
    p = subprocess.Popen([CLI, *map(str, args)], stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, out.decode(errors="replace")


def test_progress_bar_only_on_a_terminal(tmp_path):
    f = gen(tmp_path / "p.pfw.gz", 300000, member_bytes=256 * 1024)
    env = dict(os.environ, DFTRACE_PROGRESS_DELAY="0")
    env.pop("DFTRACE_NO_PROGRESS", None)
    rc, tty = run_on_pty(["stat", f], env)
    assert rc == 0
    assert "stat [" in tty and "100%" in tty and "MB/s" in tty
    p = subprocess.run([CLI, "stat", f], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "stat [" not in p.stderr
    env["DFTRACE_NO_PROGRESS"] = "1"
    rc, tty = run_on_pty(["stat", f], env)
    assert "stat [" not in tty


def test_merge_refuses_to_overwrite_an_input(tmp_path):
    f = gen(tmp_path / "in.pfw", 1000, plain=True)
    before = f.read_bytes()
    p = run("merge", f, "-o", f, check=False)
    assert p.returncode == 2 and "is also an input" in p.stderr
    assert f.read_bytes() == before


def test_merge_says_how_many_lines_were_not_json(tmp_path):
    # Lines that are not JSON can not be merged: merge says how many it dropped, in one line,
    # and merges the rest.
    f = tmp_path / "bad.pfw"
    good = '{"id":%d,"name":"x","cat":"c","pid":1,"tid":1,"ts":%d,"dur":1,"ph":"X","args":{}}'
    f.write_text("\n".join(["[", good % (1, 10), '{"id":2,"name":oops', good % (3, 30), "]"]) + "\n")
    out = tmp_path / "m.pfw.gz"
    p = run("merge", f, "-o", out, check=False)
    assert p.returncode == 0, p.stderr
    msg = [l for l in p.stderr.splitlines() if "not valid JSON" in l]
    assert msg == ["dftrace: merge: dropped 1 lines that are not valid JSON (run dftrace validate for details)"]
    assert [l for l in lines(out) if '"name":"x"' in l].__len__() == 2


@pytest.mark.parametrize("cmd", ["merge", "convert"])
@pytest.mark.parametrize("threads", ["1", "4"])
def test_a_full_disk_is_one_line_and_a_non_zero_status(cmd, threads, real_trace):
    # /dev/full: every write fails with ENOSPC (with 4 threads, on the output's flusher thread).
    if not os.path.exists("/dev/full"):
        pytest.skip("/dev/full is not on this system")
    p = run(cmd, real_trace, "-o", "/dev/full", check=False, env={"DFTRACE_TOOL_THREADS": threads})
    assert p.returncode == 1, (p.returncode, p.stderr)
    err = [l for l in p.stderr.splitlines() if l.startswith("dftrace: ")]
    assert len(err) == 1 and "/dev/full" in err[0], p.stderr
    assert "terminate" not in p.stderr
