"""test_io.py: the I/O of unmodified programs, traced by `dftrace run` (libdftrace_io preloaded),
as DFTracer records it: POSIX and STDIO events with their file hashes, in every process."""
import collections
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]
PROG = os.path.join(BIN, "io_prog")

def calls(cat, names):
    """[(cat, name)] for the names, in order."""
    return [(cat, n) for n in names.split()]


# What io_prog does, in order (io_prog.c).
EXPECTED = (
    calls("POSIX", "open write write write pwrite fsync ftruncate close open read lseek pread "
                   "close stat access mkdir rmdir")
    + calls("STDIO", "fopen fread fseek ftell fwrite fflush fclose")
    + calls("POSIX", "open writev lseek readv dup close write close chmod rename rename open "
                     "pwritev preadv close fstatat faccessat statx symlink readlink unlink linkat "
                     "unlink open")
    + calls("STDIO", "fdopen fwrite fclose fopen freopen fwrite fclose")
    + calls("POSIX", "open fcntl fcntl mmap msync munmap close close opendir readdir readdir "
                     "readdir readdir closedir open unlink")
)


def run(tmp_path, *cmd, options=(), env_extra=()):
    out = tmp_path / "traces"
    out.mkdir(exist_ok=True)
    env = dict(os.environ)
    for k in ("DFTRACE_ENABLE", "DFTRACE_LOG_FILE", "DFTRACE_IO_DATA_DIR", "LD_PRELOAD"):
        env.pop(k, None)
    env.update(dict(env_extra))
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
    dir_calls = ("opendir", "readdir", "closedir")
    for e in io:
        if e["name"] not in ("mkdir", "rmdir", "rename") + dir_calls \
                and not (e["name"] == "open" and e["args"]["ret"] < 0) and e not in unlinks[:3]:
            assert names[e["args"]["fhash"]] == path, e
    # a directory stream names its directory; readdir says whether it returned an entry
    assert {names[e["args"]["fhash"]] for e in io if e["name"] in dir_calls} == {str(data)}
    assert [e["args"]["ret"] for e in by_name["readdir"]] == [1, 1, 1, 0]
    # fcntl: F_DUPFD's duplicate (>= 10) is the file's, its F_GETFL too; the map's calls
    dupfd, getfl = by_name["fcntl"]
    assert dupfd["args"]["cmd"] == 0 and dupfd["args"]["ret"] >= 10  # F_DUPFD
    assert getfl["args"]["fd"] == dupfd["args"]["ret"] and getfl["args"]["cmd"] == 3  # F_GETFL
    assert by_name["mmap"][0]["args"]["length"] == 4096 and by_name["munmap"][0]["args"]["ret"] == 0
    assert by_name["msync"][0]["args"]["flags"] == 4  # MS_SYNC
    # a failed call says why
    assert by_name["open"][-1]["args"]["errno"] == 2  # ENOENT
    assert all("errno" not in e["args"] for e in io if e["args"].get("ret", 0) >= 0)
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
    failed = by_name["open"][6]  # the file opened six times before
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


def test_io_off_gives_the_calls_back_to_the_c_library(tmp_path):
    """Preloaded with io.enable false, the interposers are unbound when dftrace initialises: the
    program's entries for the I/O calls (a PLT's JUMP_SLOT, a function pointer's GLOB_DAT) and
    those of a library it dlopens later hold libc's functions, so a call costs nothing more than
    without dftrace; _exit stays (the trace is finalized). A `categories` rule that turns POSIX
    back on keeps them bound, and traced."""
    data = tmp_path / "data"
    data.mkdir()
    prog = os.path.join(BIN, "io_bound_prog")
    lib = os.path.join(BIN, "io_bound_lib.so")

    def bound(extra_env):
        out, p = run(tmp_path, prog, str(data), lib, env_extra=extra_env)
        where = dict(line.rsplit(" ", 1) for line in p.stdout.splitlines())
        traces = glob.glob(str(out / "*.pfw.gz"))
        assert len(traces) == 1
        ev = tc.load_checked(traces[0], nesting=False)
        for f in traces:
            os.remove(f)
        return where, [e["name"] for e in io_events(ev)]

    where, names = bound({"DFTRACE_IO_ENABLE": "false"})
    assert where == {"program pwrite jump_slot": "libc", "program pread pointer": "libc",
                     "program _exit pointer": "interposer", "library pread pointer": "libc"}
    assert names == []
    where, names = bound({})
    assert set(where.values()) == {"interposer"}, where
    assert names == ["open", "pwrite", "pread", "close"]
    where, names = bound({"DFTRACE_IO_ENABLE": "false", "DFTRACE_CATEGORIES": "POSIX"})
    assert set(where.values()) == {"interposer"}, where
    assert names == ["open", "pwrite", "pread", "close"]


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


def test_forked_children_leaving_with_exit_keep_their_events(tmp_path):
    """A forked child that leaves with _exit (Python's multiprocessing fork workers, such as a
    DataLoader's, end with os._exit(), which skips the exit handlers) still finalizes its trace:
    every event and the end line; a vfork child's _exit (a failed exec in subprocess) does not
    touch its parent's trace."""
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "fork_exit.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp, os, subprocess, sys
        def work(d, k):
            for i in range(200):
                with open(os.path.join(d, "w%d_%03d" % (k, i)), "wb") as f:
                    f.write(b"x" * 100)
        if __name__ == "__main__":
            ctx = mp.get_context("fork")
            ps = [ctx.Process(target=work, args=(sys.argv[1], k)) for k in range(2)]
            for p in ps: p.start()
            for p in ps: p.join()
            try:
                subprocess.run(["/nonexistent/program"])  # vfork, exec fails, the child _exits
            except OSError:
                pass
            with open(os.path.join(sys.argv[1], "parent"), "w") as f:
                f.write("done")
            sys.exit(max(p.exitcode for p in ps))
    """))
    out, _ = run(tmp_path, "/usr/bin/python3", str(script), str(data),
                 options=("--data-dirs", str(data)))
    written = collections.Counter()
    for f in glob.glob(str(out / "*.pfw.gz")):
        ev = tc.load_checked(f, nesting=False)  # the footer too: every file was finalized
        names = file_names(ev)
        for e in io_events(ev):
            if e["name"] == "write":
                written[os.path.basename(names[e["args"]["fhash"]])[:2]] += 1
    # Each worker's 200 writes, none lost at its os._exit; the parent's after the vfork child.
    assert written == {"w0": 200, "w1": 200, "pa": 1}, written


def traces_by_program(out):
    """{program name: [events of each of its trace files]}, every file checked whole (the end
    line included: a process that replaced its image must have finalized its trace first)."""
    got = collections.defaultdict(list)
    for f in sorted(glob.glob(str(out / "*.pfw.gz"))):
        got[os.path.basename(f).split("-")[1]].append(tc.load_checked(f, nesting=False))
    return got


def files_by_call(events, call):
    names = file_names(events)
    return sorted(os.path.basename(names[e["args"]["fhash"]]) for e in io_events(events)
                  if e["name"] == call)


@pytest.mark.parametrize("flush_interval", ["2s", "0.05s"])
def test_a_process_replacing_its_image_finalizes_its_trace_first(tmp_path, flush_interval):
    """bash -c runs its last command by execve in its own process (same pid): bash's events
    before it (its open of `f`) and its end line are in bash's file. So is the end of the forked
    bash that runs `sleep` by execve. With the default flush interval no pass has begun a file
    before the exec; with a short one (and a sleep six intervals long) bash's has: either way
    every file is whole (load_checked: the end line included)."""
    data = tmp_path / "data"
    data.mkdir()
    script = "echo a > %s/f; sleep 0.3; cat %s/f" % (data, data)
    out, p = run(tmp_path, "bash", "-c", script, options=("--data-dirs", str(data)),
                 env_extra={"DFTRACE_OUTPUT_FLUSH_INTERVAL": flush_interval})
    assert p.stdout == "a\n" and p.stderr == "", p.stdout + p.stderr
    got = traces_by_program(out)
    assert len(got["cat"]) == 1 and len(got["bash"]) == 2, got.keys()
    cat_pid = got["cat"][0][-1]["pid"]
    bash = {ev[-1]["pid"]: ev for ev in got["bash"]}
    assert files_by_call(bash.pop(cat_pid), "open") == ["f"]  # the same process, two images
    assert [files_by_call(ev, "open") for ev in bash.values()] == [[]]  # the subshell of sleep


def test_exec_family_and_a_failed_exec(tmp_path):
    """Python's os.execv reaches glibc's execv (which calls execve inside the C library): the
    trace is finalized before it too. An exec that fails leaves the process as it was: its
    later events go to a new file of its own, also finalized, and nothing is said on stderr."""
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "execs.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        d = sys.argv[1]
        open(os.path.join(d, "before"), "w").write("x")
        try:
            os.execv("/nonexistent/program", ["program"])
        except OSError:
            pass
        open(os.path.join(d, "after"), "w").write("y")
        sys.stdout.flush()
        os.execlp("cat", "cat", os.path.join(d, "before"), os.path.join(d, "after"))
    """))
    out, p = run(tmp_path, "/usr/bin/python3", str(script), str(data),
                 options=("--data-dirs", str(data)))
    assert p.stdout == "xy" and p.stderr == "", p.stdout + p.stderr
    got = traces_by_program(out)
    assert sorted(files_by_call(ev, "write") for ev in got["execs"]) == [["after"], ["before"]], got.keys()
    assert len(got["cat"]) == 1, got.keys()


def test_application_mode_child_leaving_with_exit_keeps_its_events(tmp_path):
    """The same in the application mode: the program initialises dftrace, its objects are bound
    (_exit with the I/O calls), and a forked child that writes a file and leaves with _exit has
    a finalized trace holding that write."""
    data = tmp_path / "data"
    data.mkdir()
    out, p = run_app(tmp_path, os.path.join(BIN, "fork_exit_prog"), str(data),
                     env={"DFTRACE_IO_DATA_DIR": str(data)})
    assert "fork_exit_prog: ok" in p.stdout
    writes = {}
    for f in glob.glob(str(out / "*.pfw.gz")):
        ev = tc.load_checked(f, nesting=False)
        names = file_names(ev)
        for e in io_events(ev):
            if e["name"] == "write":
                writes[os.path.basename(names[e["args"]["fhash"]])] = e["pid"]
    assert set(writes) == {"parent", "child"}, writes
    assert writes["parent"] != writes["child"]


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


def run_app(tmp_path, *cmd, env=()):
    """A program that initialises dftrace itself (no preloading), tracing into tmp/traces."""
    out = tmp_path / "traces"
    out.mkdir(exist_ok=True)
    e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    e.pop("LD_PRELOAD", None)
    e.update({"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": str(out / "t")})
    e.update(dict(env))
    p = subprocess.run(list(cmd), capture_output=True, text=True, env=e, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p


def test_application_mode_traces_the_same_calls_without_preloading(tmp_path):
    """io_prog built to call dftrace_init: with io.data_dir set, the same events as preloaded;
    with io.init preload, or without data directories, none (and libdftrace_io is not loaded)."""
    data = tmp_path / "data"
    data.mkdir()
    prog = os.path.join(BIN, "io_prog_app")
    out, p = run_app(tmp_path, prog, str(data), env={"DFTRACE_IO_DATA_DIR": str(tmp_path)})
    assert "io_prog: ok" in p.stdout
    ev = tc.load_checked(tc.only_file(str(out)))
    # the open outside the data directory (/nonexistent-dftrace-dir) is not traced
    assert [(e["cat"], e["name"]) for e in io_events(ev)] == EXPECTED[:-2] + EXPECTED[-1:]
    names = file_names(ev)
    assert names[io_events(ev)[0]["args"]["fhash"]] == str(data / "data.bin")
    for env in ({"DFTRACE_IO_DATA_DIR": str(tmp_path), "DFTRACER_INIT": "PRELOAD"}, {}):
        for f in glob.glob(str(out / "*")):
            os.unlink(f)
        out, p = run_app(tmp_path, prog, str(data), env=env)
        assert "io_prog: ok" in p.stdout
        assert io_events(tc.load_checked(tc.only_file(str(out)))) == []


def test_dftracer_annotated_cpp_program(tmp_path):
    """DFTRACER_CPP_INIT(nullptr, dir, nullptr) binds I/O tracing to dir (DFTracer's FUNCTION
    mode): every call on its files, nested in the annotated function and region, relative
    names resolved against the directory descriptor or the working directory after chdir."""
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "traces"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    env.update({"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": str(out / "t")})
    p = subprocess.run([os.path.join(BIN, "dftracer_io"), str(data)], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert p.returncode == 0 and "dftracer_io: ok" in p.stdout, p.stdout + p.stderr
    ev = tc.load_checked(tc.only_file(str(out)))
    io = io_events(ev)
    assert [e["name"] for e in io] == [
        "fopen", "fwrite", "fclose", "link", "unlink", "symlink", "chmod", "utime",
        "open", "fcntl", "faccessat", "linkat", "chdir", "openat", "close", "close", "close",
        "creat64", "close", "open", "pwrite", "pwrite64", "lseek", "pread", "pread64", "fsync",
        "fdatasync", "ftruncate", "close", "remove", "remove", "remove"]
    names = file_names(ev)
    by_id = {e["id"]: e for e in ev if e.get("ph") == "X"}
    parents = [by_id[e["args"]["p_idx"]]["name"] if e["args"]["p_idx"] in by_id else None
               for e in io]
    assert parents[:8] == ["write_greeting"] * 3 + ["NAMES"] * 5 and set(parents[8:]) == {None}
    file_of = [names[e["args"]["fhash"]] for e in io]
    d = str(data)
    assert file_of[:3] == [d + "/notes.txt"] * 3
    assert file_of[8:10] == [d] * 2  # the directory's descriptor and its F_DUPFD_CLOEXEC copy
    assert file_of[10] == file_of[11] == file_of[13] == d + "/notes.txt"  # relative to dirfd
    assert file_of[17:29] == [d + "/fresh.txt"] * 12  # relative, after chdir
    assert file_of[29:] == [d + "/fresh.txt", d + "/second.txt", d + "/alias.txt"]
    assert io[9]["args"]["ret"] >= 20 and io[13]["args"]["dirfd"] == io[8]["args"]["ret"]
    assert [e["args"]["offset"] for e in io if e["name"].startswith(("pread", "pwrite"))] == \
        [3, 4, 3, 4]


def test_dftracer_annotated_c_program_with_a_forked_child(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    out, p = run_app(tmp_path, os.path.join(BIN, "dftracer_io_c"), str(data),
                     env={"DFTRACE_ENABLE": "", "DFTRACER_ENABLE": "1"})
    assert "dftracer_io_c: ok" in p.stdout
    traces = glob.glob(str(out / "*.pfw.gz"))
    mine = [f for f in traces if f"-{p.args[0].rsplit('/', 1)[1]}-" in os.path.basename(f)]
    parent = [tc.load_checked(f, nesting=False) for f in mine]
    parent = [ev for ev in parent if any(e.get("name") == "fclose" for e in ev)]
    assert len(parent) == 1
    ev = parent[0]
    io = io_events(ev)
    assert [e["name"] for e in io] == ["fopen", "fwrite", "fclose"]
    work = [e for e in ev if e.get("name") == "work"]
    assert len(work) == 1 and {e["args"]["p_idx"] for e in io} == {work[0]["id"]}
    assert io[1]["args"]["size"] == 5 and io[1]["args"]["ret"] == 1


def test_eight_threads_at_once_and_a_program_reading_its_own_trace(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "traces"
    out.mkdir()
    _, p = run(tmp_path, os.path.join(BIN, "io_threads"), str(data), str(out),
               options=("--data-dirs", str(data)))
    assert "io_threads: ok" in p.stdout
    ev = tc.load_checked(tc.only_file(str(out)))
    names = file_names(ev)
    io = io_events(ev)
    by_tid = collections.defaultdict(list)
    for e in io:
        by_tid[e["tid"]].append(e)
    assert len(by_tid) == 8
    for tid, events in by_tid.items():
        assert [e["name"] for e in events] == ["open"] + ["write"] * 50 + ["pread"] * 50 + ["close"]
        files = {names[e["args"]["fhash"]] for e in events}
        assert len(files) == 1 and files.pop().startswith(str(data / "thread-"))
        assert [e["args"]["offset"] for e in events if e["name"] == "pread"] == \
            [i * 4096 for i in range(50)]
    assert len({names[es[0]["args"]["fhash"]] for es in by_tid.values()}) == 8
    # reading its own trace is not traced (and does not recurse)
    assert not any(n.endswith(".pfw.gz") for n in names.values())


def test_unmodified_tools_cp_and_tar(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    src = data / "input.bin"
    src.write_bytes(os.urandom(300_000))
    run(tmp_path, "cp", str(src), str(data / "copy.bin"), options=("--data-dirs", str(data)))
    run(tmp_path, "tar", "-cf", str(data / "all.tar"), "-C", str(data), "input.bin", "copy.bin",
        options=("--data-dirs", str(data)))
    traces = {}
    for f in glob.glob(str(tmp_path / "traces" / "*.pfw.gz")):
        ev = tc.load_checked(f)
        traces[os.path.basename(f).split("-")[1]] = (ev, file_names(ev))
    assert set(traces) == {"cp", "tar"}
    # cp: the bytes moved (read/write or an in-kernel copy) add up to the file's size
    ev, names = traces["cp"]
    moved = collections.Counter()
    for e in io_events(ev):
        if e["name"] in ("read", "write", "copy_file_range", "sendfile", "sendfile64") \
                and e["args"]["ret"] > 0:
            moved[(e["name"], names[e["args"]["fhash"]])] += e["args"]["ret"]
    assert sum(v for (n, f), v in moved.items() if f == str(src)) == 300_000, moved
    # tar reads both inputs whole and writes the archive
    ev, names = traces["tar"]
    read = collections.Counter()
    written = 0
    for e in io_events(ev):
        if e["name"] == "read" and e["args"]["ret"] > 0:
            read[names[e["args"]["fhash"]]] += e["args"]["ret"]
        if e["name"] == "write" and names[e["args"]["fhash"]] == str(data / "all.tar"):
            written += e["args"]["ret"]
    assert read[str(src)] == 300_000 and read[str(data / "copy.bin")] == 300_000
    assert written == os.path.getsize(data / "all.tar")


def test_python_script_numpy_and_torch_files_through_libc(tmp_path):
    """Python's own open(), numpy.load and torch.save/torch.load under `dftrace run`: their
    reads and writes are POSIX events on the right files; Python's modules are not traced."""
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "load.py"
    script.write_text(textwrap.dedent("""
        import sys, numpy as np, torch
        d = sys.argv[1]
        np.save(d + "/a.npy", np.arange(100_000, dtype=np.int64))
        assert np.load(d + "/a.npy").sum() == 4999950000
        torch.save({"w": torch.ones(1000)}, d + "/ck.pt")
        assert torch.load(d + "/ck.pt")["w"].sum() == 1000
        with open(d + "/plain.txt", "w") as f:
            f.write("x" * 1234)
    """))
    out, p = run(tmp_path, "/usr/bin/python3", str(script), str(data))
    ev = tc.load_checked(tc.only_file(str(out)))
    names = file_names(ev)
    per_file = collections.defaultdict(collections.Counter)
    for e in io_events(ev):
        kind = {"read": "read", "readv": "read", "pread64": "read", "fread": "read",
                "write": "write", "writev": "write", "pwrite64": "write", "fwrite": "write"}
        if e["name"] in kind and e["args"].get("ret", 0) > 0:
            n = e["args"]["ret"] * (e["args"]["size"] if e["name"].startswith("f") else 1)
            per_file[names[e["args"]["fhash"]]][kind[e["name"]]] += n
    npy = os.path.getsize(data / "a.npy")
    assert per_file[str(data / "a.npy")]["write"] == npy
    assert per_file[str(data / "a.npy")]["read"] >= npy
    assert per_file[str(data / "ck.pt")]["write"] == os.path.getsize(data / "ck.pt")
    assert per_file[str(data / "ck.pt")]["read"] >= os.path.getsize(data / "ck.pt")
    assert per_file[str(data / "plain.txt")]["write"] == 1234
    # excluded by default: Python's modules, shared libraries, /usr, /proc, /etc
    assert not [n for n in names.values()
                if n.endswith((".py", ".pyc", ".so")) or ".so." in n
                or n.startswith(("/usr/lib", "/proc", "/etc", "/sys", "/dev"))]


def test_spawned_children_and_a_vfork_child_that_redirects(tmp_path):
    """subprocess (vfork + exec, the child dup2()s a traced file onto its stdout) and
    os.posix_spawn: both children are traced into their own files, and the parent's table is
    not changed by the vfork child (its stdout is still not the log file)."""
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "spawner.py"
    script.write_text(textwrap.dedent("""
        import os, subprocess, sys
        d, prog = sys.argv[1], sys.argv[2]
        os.mkdir(d + "/one"); os.mkdir(d + "/two")
        with open(d + "/log.txt", "w") as f:
            subprocess.run([prog, d + "/one"], stdout=f, check=True)
        os.write(1, b"parent says hi\\n")
        pid = os.posix_spawn(prog, [prog, d + "/two"], os.environ)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    """))
    out, p = run(tmp_path, "/usr/bin/python3", str(script), str(data), PROG,
                 options=("--data-dirs", str(data)))
    assert "parent says hi" in p.stdout
    assert (data / "log.txt").read_text() == "io_prog: ok\n"
    progs, parent = [], None
    for f in glob.glob(str(out / "*.pfw.gz")):
        ev = tc.load_checked(f)
        if "io_prog" in os.path.basename(f):
            progs.append(ev)
        elif any(e.get("name") == "write" for e in io_events(ev)) or "python" in f or "spawner" in f:
            parent = ev
    assert len(progs) == 2
    # the first one's stdout is the log file: its puts("io_prog: ok") is that file's
    puts = [("STDIO", "puts")]
    assert sorted([(e["cat"], e["name"]) for e in io_events(ev)] for ev in progs) == \
        sorted([EXPECTED[:-2] + EXPECTED[-1:], EXPECTED[:-2] + EXPECTED[-1:] + puts])
    for ev in progs:
        for e in io_events(ev):
            if e["name"] == "puts":
                assert file_names(ev)[e["args"]["fhash"]] == str(data / "log.txt")
                assert e["args"]["calls"] == 1 and e["args"]["bytes"] == len("io_prog: ok\n")
    assert parent is not None
    names = file_names(parent)
    writes = [e for e in io_events(parent) if e["name"] == "write"]
    assert not [e for e in writes if names.get(e["args"]["fhash"]) == str(data / "log.txt")
                and e["args"]["count"] == len("parent says hi\n")]


@pytest.mark.parametrize("mode", ["vfork", "close_range", "closefrom", "freopen", "errno", "memfd",
                                  "symlink", "maps"])
def test_the_descriptor_table_follows_what_changes_behind_it(tmp_path, mode):
    """table_prog.c: a vfork child's open leaves its parent's table alone; a descriptor closed
    by close_range or closefrom is forgotten, so the pipe that reuses its number is not taken
    for the file; freopen(NULL) keeps a stream traced; a stream with no descriptor keeps errno;
    readv with a bad buffer array fails as untraced, its event's count 0; a memfd is no file
    (with every file traced)."""
    data = tmp_path / "data"
    data.mkdir()
    out, p = run(tmp_path, os.path.join(BIN, "table_prog"), mode, str(data),
                 options=("--data-dirs", "all" if mode == "memfd" else str(data)))
    assert "table_prog: ok" in p.stdout, p.stdout + p.stderr
    mine = [f for f in glob.glob(str(out / "*.pfw.gz")) if "table_prog" in os.path.basename(f)]
    assert len(mine) == 1, mine
    ev = tc.load_checked(mine[0])
    names = file_names(ev)
    on_file = [e for e in io_events(ev) if names.get(e["args"].get("fhash")) == str(data / "in")]
    calls = [e["name"] for e in on_file]
    if mode == "vfork":
        # the child's own open (recorded in the parent's buffers, which it shares), never a read
        assert "read" not in calls, calls
    elif mode in ("close_range", "closefrom"):
        assert calls.count("read") == 1, calls  # the file's one read, not the pipe's
    elif mode == "maps":
        assert "mmap" in calls and "munmap" not in calls, calls  # neither munmap is the file's
    elif mode == "symlink":
        assert "symlink" in calls, calls  # its hash is the target's: DIR/in
    elif mode == "memfd":
        assert not [n for n in names.values() if n.startswith("/memfd:")], names
        # making the file (fputs: one folded event), then nothing of it
        assert calls == ["fopen", "fputs", "fclose"], calls
    elif mode == "freopen":
        assert calls[-3:] == ["freopen", "fread", "fclose"], calls
        assert on_file[-2]["args"]["size"] == 1 and on_file[-2]["args"]["count"] == 4
    else:
        readv = [(e["args"]["ret"], e["args"]["count"]) for e in on_file if e["name"] == "readv"]
        assert readv == [(-1, 0), (-1, 0), (4, 4)], readv


def run_handler_mode(tmp_path, mode, i):
    """table_prog MODE (a SIGALRM handler that ends the image while the program allocates) under
    `dftrace run`, run i; the process and its trace directory, or a failure if it hung."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    out = tmp_path / ("traces%d" % i)
    out.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DFTRACE_ENABLE", "DFTRACE_LOG_FILE", "DFTRACE_IO_DATA_DIR", "LD_PRELOAD")}
    try:
        p = subprocess.run([CLI, "run", "--prefix", str(out / "t"), "--data-dirs", str(data),
                            "--", os.path.join(BIN, "table_prog"), mode, str(data)],
                           capture_output=True, text=True, env=env, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("run %d of %s hung" % (i, mode))
    return p, out


def test_exit_from_a_signal_handler_that_interrupted_the_allocator(tmp_path):
    """table_prog exit_in_handler: a SIGALRM handler calls _exit(7) while the program allocates
    (a third of such runs hung in finalizing, on the allocator's lock the handler interrupted):
    every run leaves with its status within the watchdog's 3 s, its trace complete."""
    for i in range(10):
        p, out = run_handler_mode(tmp_path, "exit_in_handler", i)
        assert p.returncode == 7, p.stdout + p.stderr
        ev = tc.load_checked(tc.only_file(str(out)))
        assert ev[-1]["name"] == "end", ev[-1]
        assert [e for e in io_events(ev) if e["name"] == "write"]


def test_exec_from_a_signal_handler_that_interrupted_the_allocator(tmp_path):
    """table_prog exec_in_handler: a SIGALRM handler execs `sh -c 'exit 7'` while the program
    allocates. The exec finalizes the trace first, as _exit does, under the same watchdog (without
    it, runs hung in finalizing on the allocator's lock the handler interrupted): every run
    reaches the new image, which leaves with 7; table_prog's trace is complete."""
    for i in range(10):
        p, out = run_handler_mode(tmp_path, "exec_in_handler", i)
        assert p.returncode == 7, p.stdout + p.stderr
        files = sorted(glob.glob(str(out / "*.pfw*")))
        mine = []
        for f in files:
            ev = tc.load_checked(f)
            assert ev[-1]["name"] == "end", (f, ev[-1])
            if [e for e in io_events(ev) if e["name"] == "write"]:
                mine.append(f)
        assert len(mine) == 1, files  # table_prog's (the shell writes nothing)


def test_sigterm_while_exit_creates_the_file(tmp_path):
    """A fork Pool's worker leaving by os._exit as Pool.terminate's SIGTERM comes: _exit's
    signal-safe flush was creating the trace (its hidden `.<name>.tmp` made, not yet written)
    when the signal's handler ran on the same thread; it could not take the writer's lock the
    flush held, gave up after 1 s, and the process died leaving the hidden file empty and no
    trace (the battery's py_inherit, about 1 run in 60). term_in_create.so forces that moment:
    the SIGTERM now waits until the flush is done, then ends the process."""
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "traces"
    out.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DFTRACE_ENABLE", "DFTRACE_LOG_FILE", "DFTRACE_IO_DATA_DIR", "LD_PRELOAD")}
    # the writer thread does not make the file first (no pass before _exit)
    env.update({"LD_PRELOAD": os.path.join(BIN, "term_in_create.so"),
                "DFTRACE_OUTPUT_FLUSH_INTERVAL": "60s"})
    p = subprocess.run([CLI, "run", "--prefix", str(out / "t"), "--data-dirs", str(data), "--",
                        os.path.join(BIN, "table_prog"), "write_exit", str(data)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == -signal.SIGTERM, (p.returncode, p.stdout, p.stderr)
    assert [f for f in os.listdir(out) if f.startswith(".")] == []  # no hidden file left
    ev = tc.load_checked(tc.only_file(str(out)))
    assert ev[-1]["name"] == "end", ev[-1]
    assert [e for e in io_events(ev) if e["name"] == "write"]


def test_signal_handler_io_while_the_thread_is_inside_dftrace(tmp_path):
    """signal_io_prog: regions in a tight loop, a SIGALRM handler writing a traced file every
    50 us. A handler interrupting a dftrace call on that thread recorded its write into the
    buffer the call was filling, and hung on the allocator lock the call held (seen in the
    first run); and on a thread of dftrace's own as it started, where the handler's event
    waited for the writer, which waited for that thread. Every run must end, its trace valid
    (dftrace validate: it holds over a million events, too many to parse here), every region
    in it."""
    data = tmp_path / "data"
    data.mkdir()
    for i in range(3):
        log = tmp_path / ("t%d" % i)
        env = dict(os.environ, DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(log),
                   DFTRACE_IO_DATA_DIR=str(data))
        env.pop("LD_PRELOAD", None)
        try:
            p = subprocess.run([os.path.join(BIN, "signal_io_prog"), str(data), "300"],
                               capture_output=True, text=True, env=env, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("run %d hung" % i)
        assert p.returncode == 0, p.stdout + p.stderr
        regions, ticks = (int(x) for x in p.stdout.split()[1::2])
        path = tc.only_file(str(tmp_path), "t%d" % i)
        v = subprocess.run([CLI, "validate", path], capture_output=True, text=True)
        assert v.returncode == 0, v.stdout + v.stderr
        st = json.loads(subprocess.run([CLI, "stat", "--json", path], capture_output=True,
                                       text=True, check=True).stdout)
        count = {(r["cat"], r["name"]): r["count"] for r in st["by_name"]}
        assert count[("compute", "forward")] == regions
        assert count.get(("POSIX", "write"), 0) <= ticks


def test_a_data_directory_reached_through_a_link(tmp_path):
    """--data-dirs names a link: a file opened by its path through the link, and one opened
    by a relative path after chdir into it (the working directory is the physical one), are
    both traced."""
    real = tmp_path / "real" / "data"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    link = tmp_path / "link" / "data"
    script = tmp_path / "through.py"
    script.write_text("import os, sys\nopen(sys.argv[1] + '/a.txt', 'w').write('a')\n"
                      "os.chdir(sys.argv[1])\nopen('b.txt', 'w').write('b')\n")
    out, _ = run(tmp_path, "/usr/bin/python3", str(script), str(link),
                 options=("--data-dirs", str(link)))
    seen = set()
    for f in glob.glob(str(out / "*.pfw.gz")):
        ev = tc.load_checked(f)
        names = file_names(ev)
        seen |= {os.path.basename(names[e["args"]["fhash"]]) for e in io_events(ev)
                 if e["name"] == "write" and e["args"].get("fhash") in names}
    assert seen == {"a.txt", "b.txt"}, seen


def test_include_and_exclude_rules_from_yaml_and_environment(tmp_path):
    """Overlapping prefixes: the most specific of io.data_dir and io.exclude decides; a
    directory that merely starts with the same letters is another directory."""
    data = tmp_path / "data"
    for sub in ("keep", "skip", "skip/again", "datax"):
        (data / sub).mkdir(parents=True)
    (tmp_path / "datax").mkdir()
    targets = [data / "a.txt", data / "keep" / "b.txt", data / "skip" / "c.txt",
               data / "skip" / "again" / "d.txt", tmp_path / "datax" / "e.txt"]
    script = tmp_path / "touch.py"
    script.write_text("import sys\nfor p in sys.argv[1:]:\n    open(p, 'w').write('x')\n")
    cmd = ("/usr/bin/python3", str(script), *map(str, targets))
    expected = {str(targets[0]), str(targets[1]), str(targets[3])}

    def traced_files(options=(), env=None):
        for f in glob.glob(str(tmp_path / "traces" / "*")):
            os.unlink(f)
        saved = dict(os.environ)
        os.environ.update(env or {})
        try:
            out, _ = run(tmp_path, *cmd, options=options)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        ev = tc.load_checked(tc.only_file(str(out)))
        names = file_names(ev)
        return {names[e["args"]["fhash"]] for e in io_events(ev) if e["name"] == "open64"}

    rules_env = {"DFTRACER_DATA_DIR": f"{data}:{data}/skip/again",
                 "DFTRACE_IO_EXCLUDE": f"{data}/skip:/proc:*.py"}
    assert traced_files(env=rules_env) == expected
    assert traced_files(options=("--data-dirs", f"{data}:{data}/skip/again"),
                        env={"DFTRACE_IO_EXCLUDE": f"{data}/skip"}) == expected
    yaml = tmp_path / "io.yaml"
    yaml.write_text(f"enable: true\nio:\n  data_dir: \"{data}:{data}/skip/again\"\n"
                    f"  exclude: \"{data}/skip:/proc:*.py\"\n")
    assert traced_files(env={"DFTRACE_CONFIG": str(yaml)}) == expected
    # DFTracer's names; a pattern excludes wherever it matches
    assert traced_files(env={"DFTRACER_DATA_DIR": str(tmp_path),
                             "DFTRACE_IO_EXCLUDE": "*/skip/*:*.py"}) == \
        {str(targets[0]), str(targets[1]), str(targets[4])}
    # DFTRACER_DISABLE_IO=1: nothing
    assert traced_files(env={"DFTRACER_DISABLE_IO": "1"}) == set()


def test_preloaded_and_initialising_itself_with_its_configuration_in_a_traced_directory(tmp_path):
    """Preloaded and initialising dftrace itself: the runtime's own reads (the YAML file, /proc)
    during initialisation are not the application's: not traced, and no deadlock (the
    interposer must not call back into an initialisation in progress on the same thread)."""
    data = tmp_path / "data"
    data.mkdir()
    conf = tmp_path / "conf.yaml"  # traced: `run` traces every file but the excluded ones
    conf.write_text("enable: true\nlog_level: warn\n")
    os.environ["DFTRACE_CONFIG"] = str(conf)
    try:
        out, p = run(tmp_path, os.path.join(BIN, "io_prog_app"), str(data))
    finally:
        del os.environ["DFTRACE_CONFIG"]
    assert "io_prog: ok" in p.stdout
    ev = tc.load_checked(tc.only_file(str(out)))
    assert [(e["cat"], e["name"]) for e in io_events(ev)] == EXPECTED
    assert str(conf) not in file_names(ev).values()


def test_hdf5_file_opened_by_a_relative_name_then_chdir(tmp_path):
    """h5_prog DIR relative: H5Fcreate("rel.h5") in DIR, then chdir("/") before H5Dwrite: the
    write and the closes still name DIR/rel.h5 (as it was opened), not /rel.h5."""
    prog = os.path.join(BIN, "h5_prog")
    if not os.path.exists(prog):
        pytest.skip("HDF5's headers were not found at build time (Debian: libhdf5-dev)")
    data = tmp_path / "data"
    data.mkdir()
    out, p = run(tmp_path, prog, str(data), "relative", options=("--data-dirs", str(data)))
    assert "h5_prog: ok" in p.stdout
    ev = tc.load_checked(tc.only_file(str(out)))
    names = file_names(ev)
    h5 = [(e["name"], names.get(e["args"]["fhash"])) for e in ev
          if e.get("cat") == "H5" and e.get("ph") == "X"]
    path = str(data / "rel.h5")
    assert h5 == [("H5Fcreate", path), ("H5Dcreate", path), ("H5Dwrite", path),
                  ("H5Dclose", path), ("H5Fclose", path)], h5


def test_hdf5_calls_with_their_posix_calls_inside(tmp_path):
    prog = os.path.join(BIN, "h5_prog")
    if not os.path.exists(prog):
        pytest.skip("HDF5's headers were not found at build time (Debian: libhdf5-dev)")
    data = tmp_path / "data"
    data.mkdir()
    out, p = run(tmp_path, prog, str(data), options=("--data-dirs", str(data)))
    assert "h5_prog: ok" in p.stdout
    ev = tc.load_checked(tc.only_file(str(out)))
    names = file_names(ev)
    h5 = [e for e in ev if e.get("cat") == "H5" and e.get("ph") == "X"]
    assert [e["name"] for e in h5] == ["H5Fcreate", "H5Dcreate", "H5Dwrite", "H5Dclose",
                                       "H5Fclose", "H5Fopen", "H5Dopen", "H5Dread", "H5Dread",
                                       "H5Dread", "H5Dclose", "H5Fclose"]
    path = str(data / "values.h5")
    assert {names[e["args"]["fhash"]] for e in h5} == {path}
    by = collections.defaultdict(list)
    for e in h5:
        by[e["name"]].append(e)
    assert by["H5Dwrite"][0]["args"]["size"] == 8000 and by["H5Dread"][0]["args"]["size"] == 8000
    assert [e["args"]["dataset"] for e in by["H5Dcreate"] + by["H5Dopen"]] == ["values", "values"]
    # 10 doubles through a file selection with memory H5S_ALL; a failed read: ret -1, size 0
    assert [(e["args"]["size"], e["args"]["ret"]) for e in by["H5Dread"][1:]] == [(80, 0), (0, -1)]
    assert by["H5Fcreate"][0]["args"]["ret"] > 0 and by["H5Dread"][0]["args"]["ret"] == 0
    # HDF5's own transfer of the data: a pwrite of the 8000 bytes inside H5Dwrite or, from its
    # cache, inside the H5Dclose that follows; a pread of them inside H5Dread
    posix = [e for e in io_events(ev) if names.get(e["args"].get("fhash")) == path]
    inside = collections.defaultdict(list)
    for e in posix:
        inside[e["args"]["p_idx"]].append((e["name"], e["args"].get("ret")))
    wrote = inside[by["H5Dwrite"][0]["id"]] + inside[by["H5Dclose"][0]["id"]]
    assert ("pwrite", 8000) in wrote
    assert ("pread", 8000) in inside[by["H5Dread"][0]["id"]]
    # io.enable false switches H5 off with POSIX and STDIO; a categories rule turning POSIX back
    # on keeps the interposers bound, and only POSIX is recorded
    for f in glob.glob(str(out / "*")):
        os.remove(f)
    out, p = run(tmp_path, prog, str(data), options=("--data-dirs", str(data)),
                 env_extra={"DFTRACE_IO_ENABLE": "false", "DFTRACE_CATEGORIES": "POSIX"})
    ev = tc.load_checked(tc.only_file(str(out)))
    assert {e["cat"] for e in ev if e.get("ph") == "X" and e["cat"] != "dftracer"} == {"POSIX"}


def test_tools_on_io_traces_stat_shows_bytes_per_file_and_bandwidth(tmp_path):
    """validate, merge and stat on I/O traces: stat's I/O table gives each file's bytes read and
    written (the files' sizes), calls, and the bandwidth in the calls."""
    data = tmp_path / "data"
    data.mkdir()
    src = data / "input.bin"
    src.write_bytes(os.urandom(200_000))
    run(tmp_path, "tar", "-cf", str(data / "a.tar"), "-C", str(data), "input.bin",
        options=("--data-dirs", str(data)))
    progdir = tmp_path / "prog"  # io_prog wants a directory of its own
    progdir.mkdir()
    run(tmp_path, PROG, str(progdir), options=("--data-dirs", str(tmp_path)))
    traces = sorted(glob.glob(str(tmp_path / "traces" / "*.pfw.gz")))
    assert len(traces) == 2
    for t in traces:
        v = subprocess.run([CLI, "validate", t], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0, v.stdout + v.stderr
    merged = tmp_path / "merged.pfw.gz"
    assert subprocess.run([CLI, "merge", "-o", str(merged), *traces], capture_output=True,
                          timeout=60).returncode == 0
    st = json.loads(subprocess.run([CLI, "stat", "--json", str(merged)], capture_output=True,
                                   text=True, timeout=60).stdout)
    io = {(r["cat"], r["path"]): r for r in st["io_files"]}
    tar_in = io[("POSIX", str(src))]
    assert tar_in["read_bytes"] == 200_000 and tar_in["write_bytes"] == 0
    assert tar_in["read_calls"] >= 1 and tar_in["read_ns"] > 0
    assert tar_in["read_mb_per_s"] == pytest.approx(200_000 * 1e3 / tar_in["read_ns"], rel=1e-3)
    assert io[("POSIX", str(data / "a.tar"))]["write_bytes"] == os.path.getsize(data / "a.tar")
    # io_prog's own file: POSIX writes 3000 + 10 + 150 (writev) + 5 (dup) + 150 (pwritev),
    # STDIO 30 + 8 + 4
    prog = io[("POSIX", str(progdir / "data.bin"))]
    assert prog["write_bytes"] == 3000 + 10 + 150 + 5 + 150
    assert io[("STDIO", str(progdir / "data.bin"))]["write_bytes"] == 30 + 8 + 4
    text = subprocess.run([CLI, "stat", str(merged)], capture_output=True, text=True,
                          timeout=60).stdout
    assert "I/O by file" in text and str(src) in text


# ---- stdio's character and line calls, folded per stream (src/plugins/io/README.md)

FOLDED_READ = ("fgetc", "getc", "getchar", "fgets", "getline", "getdelim")
FOLDED_WRITE = ("fputc", "putc", "putchar", "fputs", "puts", "fprintf", "vfprintf", "printf")


def stdio_totals(io, names, fhash):
    """{name: [calls, bytes]} of the STDIO events on one file: a folded event's `calls` and
    `bytes`, an fread's or fwrite's one call and `ret` items of `size`."""
    out = collections.defaultdict(lambda: [0, 0])
    for e in io:
        a = e["args"]
        if e["cat"] != "STDIO" or a.get("fhash") != fhash:
            continue
        if e["name"] in FOLDED_READ + FOLDED_WRITE:
            out[e["name"]][0] += a["calls"]
            out[e["name"]][1] += a["bytes"]
        elif e["name"] in ("fread", "fwrite"):
            out[e["name"]][0] += 1
            out[e["name"]][1] += a["ret"] * a["size"]
    return out


def stat_files(out):
    p = subprocess.run([CLI, "stat", "--json", str(out)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return {r["path"]: r for r in json.loads(p.stdout)["io_files"] if r["cat"] == "STDIO"}


@pytest.mark.parametrize("prog", ["stdio_text_prog", "stdio_text_prog_fortify"])
def test_stdio_character_and_line_calls_fold_to_exact_totals(tmp_path, prog):
    data = tmp_path / "data"
    data.mkdir()
    (data / "in.txt").write_bytes(b"".join(b"input line %d\n" % i for i in range(3000)))
    n = 1000000
    outdir = tmp_path / "traces"
    outdir.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DFTRACE_ENABLE", "DFTRACE_LOG_FILE", "DFTRACE_IO_DATA_DIR", "LD_PRELOAD")}
    with open(data / "in.txt", "rb") as fin, open(data / "out.txt", "wb") as fout:
        p = subprocess.run([CLI, "run", "--prefix", str(outdir / "t"), "--",
                            os.path.join(BIN, prog), str(data), str(n)],
                           stdin=fin, stdout=fout, stderr=subprocess.PIPE, text=True, env=env,
                           timeout=300)
    assert p.returncode == 0 and "stdio_text_prog: ok" in p.stderr, p.stderr
    said = {}  # the program's own count of its calls and bytes, from their results
    for line in p.stderr.splitlines()[:-1]:
        name, calls, nbytes = line.split()
        said[name] = [int(calls), int(nbytes)]
    assert said["fgetc"][0] == n + n // 10
    ev = tc.load_checked(tc.only_file(str(outdir)))
    io = io_events(ev)
    names = file_names(ev)
    hashes = {v: k for k, v in names.items()}
    text, out_txt, in_txt = (str(data / f) for f in ("text.txt", "out.txt", "in.txt"))
    got = stdio_totals(io, FOLDED_READ + FOLDED_WRITE, hashes[text])
    for name in ("fgetc", "getc", "fgets", "getline", "getdelim", "fread", "fputc", "putc",
                 "fputs", "fprintf", "vfprintf", "fwrite"):
        assert got[name] == said[name], (name, got[name], said[name])
    size = os.path.getsize(text)
    assert sum(got[k][1] for k in FOLDED_READ + ("fread",)) == size
    assert sum(got[k][1] for k in FOLDED_WRITE + ("fwrite",)) == size
    got = stdio_totals(io, FOLDED_WRITE, hashes[out_txt])
    for name in ("printf", "puts", "putchar"):
        assert got[name] == said[name], (name, got[name], said[name])
    assert sum(v[1] for v in got.values()) == os.path.getsize(out_txt)
    got = stdio_totals(io, FOLDED_READ, hashes[in_txt])
    assert got["getchar"] == said["getchar"] and got["getchar"][1] == os.path.getsize(in_txt)
    # Folded: a few events, not one per call (the calls number over 2.3 million).
    folded = [e for e in io if e["name"] in FOLDED_READ + FOLDED_WRITE]
    assert 0 < len(folded) < 200, len(folded)
    # dftrace stat counts them as the file's reads and writes.
    st = stat_files(outdir)
    assert st[text]["read_bytes"] == size and st[text]["write_bytes"] == size
    assert st[text]["read_calls"] == sum(said[k][0] for k in ("fgetc", "getc", "fgets", "getline",
                                                               "getdelim", "fread"))
    assert st[out_txt]["write_bytes"] == os.path.getsize(out_txt)
    assert st[in_txt]["read_bytes"] == os.path.getsize(in_txt)


def test_application_mode_binds_a_librarys_own_table_of_function_pointers(tmp_path):
    """fptr_table_lib calls pread, pwrite and fsync through a table the loader filled
    (R_X86_64_64 / R_AARCH64_ABS64 relocations, as SQLite's aSyscall[]): bound in the application
    mode, its calls are traced; an entry pointing inside pread (an addend) is left alone."""
    data = tmp_path / "data"
    data.mkdir()
    out, p = run_app(tmp_path, os.path.join(BIN, "fptr_table_prog"), str(data),
                     env={"DFTRACE_IO_DATA_DIR": str(data)})
    assert "fptr_table_prog: ok" in p.stdout, p.stdout + p.stderr
    ev = tc.load_checked(tc.only_file(str(out)))
    io = io_events(ev)
    names = file_names(ev)
    calls = collections.Counter(e["name"] for e in io
                                if names.get(e["args"].get("fhash")) == str(data / "table.bin"))
    assert calls["pwrite"] == 7 and calls["pread"] == 7 and calls["fsync"] == 1, calls
    assert sum(e["args"]["ret"] for e in io if e["name"] == "pread") == 700


def io_bytes_by_file(out):
    """{path: [read bytes, write bytes]} over every layer, from `dftrace stat --json`."""
    p = subprocess.run([CLI, "stat", "--json", str(out)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    files = collections.defaultdict(lambda: [0, 0])
    for r in json.loads(p.stdout)["io_files"]:
        files[r["path"]][0] += r["read_bytes"]
        files[r["path"]][1] += r["write_bytes"]
    return files


def text_file(path, lines, seed):
    import random
    r = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(lines):
            f.write("%08d %s\n" % (r.randrange(10 ** 8), "x" * r.randrange(0, 80)))


PROGRAMS = {  # name: (shell command in DIR, the inputs it reads whole, its outputs)
    "sort": ("sort -o sorted.txt big.txt", ["big.txt"], ["sorted.txt"]),
    # (its output is not checked: it puts the spaces and newline of each line with the C
    # library's inline putchar_unlocked, which no call reaches: docs/io.md, "Limits")
    "sha256sum": ("sha256sum many/* > sums.txt", ["many/%03d" % i for i in range(200)], []),
    "grep": ("grep 7 big.txt > grep.txt", ["big.txt"], ["grep.txt"]),
    "sed": ("sed -e s/x/y/g big.txt > sed.txt", ["big.txt"], ["sed.txt"]),
    "awk": ("awk '{ n += length($2) } END { print n }' big.txt > awk.txt", ["big.txt"],
            ["awk.txt"]),
    "tar": ("tar cf many.tar many", ["many/%03d" % i for i in range(200)], ["many.tar"]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_real_programs_bytes_in_the_trace_equal_the_files(tmp_path, name):
    """coreutils, grep, sed, awk and tar under `dftrace run`: the bytes the trace says each
    input was read and each output written (POSIX and STDIO events, as `dftrace stat` adds
    them) are the files' sizes: gnulib's fread_unlocked/fwrite_unlocked, sed's getdelim and the
    programs' putc and fputs are traced."""
    cmd, inputs, outputs = PROGRAMS[name]
    tool = cmd.split()[0]
    if not shutil.which(tool):
        pytest.skip("%s is not installed" % tool)
    data = tmp_path / "data"
    (data / "many").mkdir(parents=True)
    text_file(data / "big.txt", 250000, 1)  # about 12 MB
    for i in range(200):
        (data / "many" / ("%03d" % i)).write_bytes(os.urandom(100 + 37 * i))
    out = tmp_path / "traces"
    out.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DFTRACE_ENABLE", "DFTRACE_LOG_FILE", "DFTRACE_IO_DATA_DIR", "LD_PRELOAD")}
    p = subprocess.run([CLI, "run", "--prefix", str(out / "t"), "--data-dirs", str(data), "--",
                        "sh", "-c", cmd], cwd=data, capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    for f in glob.glob(str(out / "*.pfw.gz")):
        tc.load_checked(f)
    files = io_bytes_by_file(out)
    for f in inputs:
        path = str(data / f)
        assert files[path][0] == os.path.getsize(path), (f, files[path])
    for f in outputs:
        path = str(data / f)
        assert os.path.getsize(path) > 0
        assert files[path][1] == os.path.getsize(path), (f, files[path])


def test_folded_calls_of_threads_that_end_without_flushing(tmp_path):
    """4 threads put 50,000 characters each to their own stream and end; the streams are closed
    by the main thread: each thread's count is written as it ends, on its own thread id."""
    data = tmp_path / "data"
    data.mkdir()
    out, p = run(tmp_path, os.path.join(BIN, "stdio_text_prog"), str(data), "200000", "threads")
    assert "stdio_text_prog: ok" in p.stderr, p.stderr
    ev = tc.load_checked(tc.only_file(str(out)))
    names = file_names(ev)
    for k in range(4):
        path = str(data / ("t%d.txt" % k))
        puts = [e for e in io_events(ev)
                if e["name"] == "fputc" and names[e["args"]["fhash"]] == path]
        assert sum(e["args"]["calls"] for e in puts) == 50000, puts
        assert sum(e["args"]["bytes"] for e in puts) == os.path.getsize(path) == 50000
        assert len({e["tid"] for e in puts}) == 1 and puts[0]["tid"] != ev[-1]["tid"], puts


def test_folded_calls_in_a_forked_child_are_its_own(tmp_path):
    """The parent's 1,000 fputc are not flushed when it forks: the child's trace has only its
    own 500 calls, the parent's its 1,000."""
    data = tmp_path / "data"
    data.mkdir()
    out, p = run(tmp_path, os.path.join(BIN, "stdio_text_prog"), str(data), "0", "fork")
    assert "stdio_text_prog: ok" in p.stderr, p.stderr
    # (read without the format check: whether a child defines the hashes of files it inherited
    # in its own trace is not what this test is about)
    evs = [tc.load(f) for f in sorted(glob.glob(str(out / "*.pfw.gz")))]
    assert len(evs) == 2
    names = {}
    for ev in evs:
        names.update(file_names(ev))
    path = str(data / "fork.txt")
    counts = sorted(sum(e["args"]["calls"] for e in io_events(ev)
                        if e["name"] == "fputc" and names[e["args"]["fhash"]] == path)
                    for ev in evs)
    assert counts == [500, 1000], counts


@pytest.mark.parametrize("mode", ["full", "aggregated"])
def test_bytes_pushed_back_by_ungetc_are_counted_once(tmp_path, mode):
    """fgetc, getc, fgets, getline and fread mixed with ungetc (bzip2's probe for the end of
    its input: fgetc, ungetc, fread): the bytes read from each file are the file's size, a
    byte pushed back and read again counted once, one pushed back before the first read (no
    byte of the file) not at all; rewind and fseek discard a pushback; bzip2's loop across
    the emission of its fgetc slot (1 s interval) too."""
    data = tmp_path / "data"
    data.mkdir()
    for name in ("a.txt", "b.txt", "c.txt", "d.txt"):
        (data / name).write_bytes(b"".join(b"line %d of %s\n" % (i, name.encode())
                                           for i in range(12000)))
    paths = [str(data / n) for n in ("a.txt", "b.txt", "c.txt", "d.txt")]
    env = {"DFTRACE_AGGREGATION": "1"} if mode == "aggregated" else {}
    out, p = run(tmp_path, os.path.join(BIN, "ungetc_prog"), *paths, env_extra=env.items())
    assert "ungetc_prog: ok" in p.stderr, p.stderr
    said = dict(line.split() for line in p.stderr.splitlines()[:4])
    sizes = [os.path.getsize(x) for x in paths]
    # (the program's own count of what its calls took out of each file)
    assert [int(said[k]) for k in "ABCD"] == [sizes[0], sizes[1] + 10, sizes[2] + 10,
                                              sizes[3]], said
    ev = tc.load(tc.only_file(str(out))) if mode == "aggregated" else \
        tc.load_checked(tc.only_file(str(out)))
    if mode == "aggregated":  # (one record per call for the three files: their total)
        agg = [e for e in ev if e.get("ph") == "A" and e.get("cat") == "STDIO"]
        got = sum(e["args"]["bytes_sum"] for e in agg if e["name"] in FOLDED_READ)
        freads = [e["args"] for e in agg if e["name"] == "fread"]
        assert freads and all(a["size_min"] == a["size_max"] == 1 for a in freads), freads
        got += sum(a["ret_sum"] for a in freads)
        assert got == sum(int(said[k]) for k in "ABCD"), (got, said)
        return
    st = stat_files(out)
    assert [st[x]["read_bytes"] for x in paths] == [int(said[k]) for k in "ABCD"], st
    hashes = {v: k for k, v in file_names(ev).items()}
    got = stdio_totals(io_events(ev), FOLDED_READ, hashes[paths[0]])
    assert sum(v[1] for v in got.values()) == sizes[0], dict(got)
    assert all(got[k][0] > 0 for k in ("fgetc", "getc", "fgets", "getline", "fread")), got


def test_folded_calls_written_at_finalize_and_none_after(tmp_path):
    """The application mode: 300 fputc on a stream still open when the program calls
    dftrace_finalize are in the trace (the finalisation writes the folded counts before the end
    line); the 1,000 after it are not, and do not start a second trace."""
    data = tmp_path / "data"
    data.mkdir()
    out, p = run_app(tmp_path, os.path.join(BIN, "stdio_app_prog"), str(data),
                     env={"DFTRACE_IO_DATA_DIR": str(data)})
    assert "stdio_app_prog: ok" in p.stdout
    assert os.path.getsize(data / "a.txt") == 1300
    ev = tc.load_checked(tc.only_file(str(out)))
    puts = [e for e in io_events(ev) if e["name"] == "fputc"]
    assert [(e["args"]["calls"], e["args"]["bytes"]) for e in puts] == [(300, 300)], puts
    assert file_names(ev)[puts[0]["args"]["fhash"]] == str(data / "a.txt")
