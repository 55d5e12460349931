"""test_io.py: the I/O of unmodified programs, traced by `dftrace run` (libdftrace_io preloaded),
as DFTracer records it: POSIX and STDIO events with their file hashes, in every process."""
import collections
import glob
import os
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]
PROG = os.path.join(BIN, "io_prog")

# What io_prog does, in order (io_prog.c).
EXPECTED = [
    ("POSIX", "open"), ("POSIX", "write"), ("POSIX", "write"), ("POSIX", "write"),
    ("POSIX", "pwrite"), ("POSIX", "fsync"), ("POSIX", "ftruncate"), ("POSIX", "close"),
    ("POSIX", "open"), ("POSIX", "read"), ("POSIX", "lseek"), ("POSIX", "pread"),
    ("POSIX", "close"), ("POSIX", "stat"), ("POSIX", "access"), ("POSIX", "mkdir"),
    ("POSIX", "rmdir"), ("STDIO", "fopen"), ("STDIO", "fread"), ("STDIO", "fseek"),
    ("STDIO", "ftell"), ("STDIO", "fwrite"), ("STDIO", "fflush"), ("STDIO", "fclose"),
    ("POSIX", "open"), ("POSIX", "writev"), ("POSIX", "lseek"), ("POSIX", "readv"),
    ("POSIX", "dup"), ("POSIX", "close"), ("POSIX", "write"), ("POSIX", "close"),
    ("POSIX", "chmod"), ("POSIX", "rename"), ("POSIX", "rename"),
    ("POSIX", "open"), ("POSIX", "pwritev"), ("POSIX", "preadv"), ("POSIX", "close"),
    ("POSIX", "fstatat"), ("POSIX", "faccessat"), ("POSIX", "statx"), ("POSIX", "symlink"),
    ("POSIX", "readlink"), ("POSIX", "unlink"), ("POSIX", "linkat"), ("POSIX", "unlink"),
    ("POSIX", "open"), ("STDIO", "fdopen"), ("STDIO", "fwrite"), ("STDIO", "fclose"),
    ("STDIO", "fopen"), ("STDIO", "freopen"), ("STDIO", "fwrite"), ("STDIO", "fclose"),
    ("POSIX", "open"), ("POSIX", "unlink"),
]


def run(tmp_path, *cmd, options=()):
    out = tmp_path / "traces"
    out.mkdir(exist_ok=True)
    env = dict(os.environ)
    for k in ("DFTRACE_ENABLE", "DFTRACE_LOG_FILE", "DFTRACE_IO_DATA_DIR", "LD_PRELOAD"):
        env.pop(k, None)
    p = subprocess.run([CLI, "run", "--prefix", str(out / "t"), *options, "--", *cmd],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p


def io_events(events):
    return [e for e in events if e.get("cat") in ("POSIX", "STDIO") and e.get("ph") == "X"]


def file_names(events):
    return {e["args"]["value"]: e["args"]["name"] for e in events if e.get("name") == "FH"}


def test_posix_and_stdio_calls_as_dftracer_records_them(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    out, p = run(tmp_path, PROG, str(data))
    assert "io_prog: ok" in p.stdout  # results and errno unchanged (io_prog checks them)
    ev = tc.load_checked(tc.only_file(str(out)))
    io = io_events(ev)
    assert [(e["cat"], e["name"]) for e in io] == EXPECTED
    names = file_names(ev)
    path = str(data / "data.bin")
    by_name = collections.defaultdict(list)
    for e in io:
        by_name[e["name"]].append(e)
    # Every call on the file carries the file's hash, defined once by an FH line.
    unlinks = [e for e in io if e["name"] in ("unlink", "readlink")]
    for e in io:
        if e["name"] not in ("mkdir", "rmdir", "rename") and not (e["name"] == "open" and e["args"]["ret"] < 0) \
                and e not in unlinks[:3]:
            assert names[e["args"]["fhash"]] == path, e
    # the links' removal names the link (symlink and linkat name their source, as link does)
    assert [names[e["args"]["fhash"]] for e in unlinks[:3]] == [path + ".link"] * 3
    assert by_name["readlink"][0]["args"]["ret"] == len(path)
    assert all(e["args"]["ret"] == 0 for e in io
               if e["name"] in ("fstatat", "faccessat", "statx", "symlink", "linkat"))
    assert by_name["pwritev"][0]["args"]["count"] == 150 and by_name["pwritev"][0]["args"]["offset"] == 10
    assert by_name["preadv"][0]["args"]["ret"] == 150
    assert names[by_name["mkdir"][0]["args"]["fhash"]] == str(data / "sub")
    assert [e["args"]["count"] for e in by_name["write"]] == [1000, 1000, 1000, 5]
    assert [e["args"]["ret"] for e in by_name["write"]] == [1000, 1000, 1000, 5]
    assert by_name["pread"][0]["args"]["offset"] == 3990 and by_name["pread"][0]["args"]["ret"] == 10
    assert by_name["ftell"][0]["args"]["ret"] == 4000
    assert by_name["fwrite"][0]["args"]["size"] == 10 and by_name["fwrite"][0]["args"]["ret"] == 3
    assert by_name["open"][0]["args"]["flags"] & os.O_CREAT and by_name["open"][0]["args"]["mode"] == 0o644
    assert [names[e["args"]["fhash"]] for e in by_name["rename"]] == [path, path + ".moved"]
    assert by_name["writev"][0]["args"]["count"] == 150 and by_name["readv"][0]["args"]["ret"] == 150
    assert by_name["write"][3]["args"]["count"] == 5  # on the duplicate: still the file's
    failed = by_name["open"][5]  # the file opened five times before
    assert failed["args"]["ret"] == -1 and names[failed["args"]["fhash"]] == "/nonexistent-dftrace-dir/x"
    # dftrace's own file is never traced.
    assert not any(n.endswith((".pfw", ".pfw.gz")) for n in names.values())
    assert ev[-1]["args"]["num_events"] == len([e for e in ev if e.get("ph") == "X" and e["name"] not in ("start", "end")])


def test_data_dirs_limit_what_is_traced(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    out, p = run(tmp_path, PROG, str(data), options=("--data-dirs", str(tmp_path / "elsewhere")))
    assert "io_prog: ok" in p.stdout
    for f in glob.glob(str(out / "*.pfw*")):  # a trace without I/O events, if any
        assert io_events(tc.load_checked(f)) == []
    out2 = tmp_path / "traces"
    for f in glob.glob(str(out2 / "*")):
        os.unlink(f)
    out, _ = run(tmp_path, PROG, str(data), options=("--data-dirs", str(tmp_path)))
    ev = tc.load_checked(tc.only_file(str(out)))
    assert len(io_events(ev)) == len(EXPECTED) - 1  # the open outside the directory is not traced


def test_io_posix_false_switches_the_category_off(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    os.environ["DFTRACE_IO_POSIX"] = "false"
    try:
        out, p = run(tmp_path, PROG, str(data))
    finally:
        del os.environ["DFTRACE_IO_POSIX"]
    assert "io_prog: ok" in p.stdout
    ev = tc.load_checked(tc.only_file(str(out)))
    # every STDIO call, fdopen's stream included (its descriptor is looked up: POSIX calls
    # are not recorded, the file still is)
    assert [e["name"] for e in io_events(ev)] == [n for c, n in EXPECTED if c == "STDIO"]


def test_no_io_runs_traced_without_the_interposer(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    out, p = run(tmp_path, PROG, str(data), options=("--no-io",))
    assert "io_prog: ok" in p.stdout
    # The program never calls dftrace: without the interposer nothing starts a trace.
    assert glob.glob(str(out / "*.pfw*")) == []


def test_every_process_it_starts_is_traced(tmp_path):
    """fork+exec (a shell running two programs) and Python multiprocessing's spawn workers."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    script = tmp_path / "spawn.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp, sys
        def work(path):
            with open(path, "w") as f:
                f.write("x" * 100)
        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            p = ctx.Process(target=work, args=(sys.argv[1],))
            p.start(); p.join()
            sys.exit(p.exitcode)
    """))
    target = tmp_path / "from_worker.txt"
    out, _ = run(tmp_path, "sh", "-c",
                 f"{PROG} {a} && {PROG} {b} && /usr/bin/python3 {script} {target}",
                 options=("--data-dirs", str(tmp_path)))
    traces = {}
    for f in glob.glob(str(out / "*.pfw.gz")):
        ev = tc.load_checked(f, nesting=False)
        traces[f] = (ev, file_names(ev))
    progs = [ev for f, (ev, _) in traces.items() if "io_prog" in os.path.basename(f)]
    assert len(progs) == 2
    for ev in progs:
        assert [(e["cat"], e["name"]) for e in io_events(ev)] == EXPECTED[:-2] + [EXPECTED[-1]]
    # The spawned worker (a process of its own, started by the interpreter) wrote the file.
    writers = [ev for ev, names in traces.values()
               if any(n == str(target) for n in names.values())
               and any(e["name"] == "write" and names.get(e["args"].get("fhash")) == str(target)
                       for e in io_events(ev))]
    assert len(writers) == 1, sorted(os.path.basename(f) for f in traces)


def test_fortify_source_entry_points(tmp_path):
    # A program built with -O2 -D_FORTIFY_SOURCE=2 calls __open_2 and __read_chk (checked with
    # nm: the test means nothing if the compiler chose otherwise); they are recorded as open and
    # read, with the file's hash and the bytes.
    prog = os.path.join(BIN, "fortify_prog")
    syms = subprocess.run(["nm", "-D", prog], capture_output=True, text=True).stdout
    assert "__open_2" in syms and "__read_chk" in syms, syms
    data = tmp_path / "data"
    data.mkdir()
    f = data / "in.bin"
    f.write_bytes(b"x" * 100)
    out, p = run(tmp_path, prog, str(f), str(os.O_RDONLY))
    assert "fortify_prog: read 33" in p.stdout, p.stdout
    ev = tc.load_checked(tc.only_file(str(out)))
    io = io_events(ev)
    assert [e["name"] for e in io] == ["open", "read", "close"], io
    names = file_names(ev)
    assert all(names[e["args"]["fhash"]] == str(f) for e in io)
    assert io[1]["args"]["count"] == 33 and io[1]["args"]["ret"] == 33
