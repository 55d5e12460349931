"""test_trace_fd.py: the trace's descriptor is not the program's, and the trace file never
harms it. Programs that close every descriptor, close a number twice, dup2 onto the trace's
number or fork children that write to inherited files are run untraced and traced (preloaded
by `dftrace run`, and linked with libdftrace alone): what they print, their files and exit
status must be the same, and every trace valid with its end line. Also a full file system and
a file-size limit (RLIMIT_FSIZE) as the trace's limits."""
import glob
import os
import resource
import shutil
import signal
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]
PROG = os.path.join(BIN, "trace_fd_prog")
LINKED = os.path.join(BIN, "trace_fd_prog_linked")
FLUSH = "100ms"  # short, so that the trace file exists and is written while the program runs


def clean_env():
    e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    e.pop("LD_PRELOAD", None)
    return e


def untraced(cmd, preexec=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=300,
                          preexec_fn=preexec)


def preloaded(out, cmd, preexec=None, env=()):
    e = clean_env()
    e["DFTRACE_OUTPUT_FLUSH_INTERVAL"] = FLUSH
    e.update(dict(env))
    return subprocess.run([CLI, "run", "--prefix", str(out / "t"), "--", *cmd],
                          capture_output=True, text=True, env=e, timeout=300, preexec_fn=preexec)


def linked(out, cmd, preexec=None, env=()):
    e = clean_env()
    e.update({"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": str(out / "t"),
              "DFTRACE_OUTPUT_FLUSH_INTERVAL": FLUSH})
    e.update(dict(env))
    return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=300,
                          preexec_fn=preexec)


def validate(path):
    """`dftrace validate` on one trace: no error, and its end line is there."""
    v = subprocess.run([CLI, "validate", path], capture_output=True, text=True, timeout=120)
    assert v.returncode == 0, f"{path}: {v.stdout}{v.stderr}"
    assert "truncated" not in v.stdout + v.stderr, v.stdout + v.stderr
    ev = tc.load(path, complete=False)
    assert ev and ev[-1].get("name") == "end", f"{path}: no end line"
    return ev


def traces(out):
    found = sorted(glob.glob(str(out / "*.pfw*")))
    assert found, "no trace written"
    return found


def files_of(d):
    return {p: open(os.path.join(d, p), "rb").read() for p in sorted(os.listdir(d))}


MODES = ["reuse", "closerange", "closeloop", "closefrom", "dup2"]


@pytest.mark.parametrize("way", ["preloaded", "linked"])
@pytest.mark.parametrize("mode", MODES)
def test_a_program_that_closes_reuses_or_dup2s_descriptors_runs_as_untraced(tmp_path, mode, way):
    """Untraced, a second close of a number fails with EBADF, closing every descriptor closes
    only the program's, and out.txt gets exactly its 20,000 lines. Traced, before the trace
    lived at a high number, the second close (or the loop, or close_range) closed the trace,
    whose next members went into out.txt."""
    prog = PROG if way == "preloaded" else LINKED
    run = preloaded if way == "preloaded" else linked
    (tmp_path / "plain").mkdir()
    (tmp_path / "traced").mkdir()
    (tmp_path / "out").mkdir()
    u = untraced([prog, mode, str(tmp_path / "plain")])
    t = run(tmp_path / "out", [prog, mode, str(tmp_path / "traced")])
    assert (t.returncode, t.stdout) == (u.returncode, u.stdout), t.stderr
    assert u.returncode == 0, u.stdout + u.stderr
    assert files_of(tmp_path / "traced") == files_of(tmp_path / "plain")
    assert len(files_of(tmp_path / "plain")["out.txt"].splitlines()) == 20000
    # the trace lived above the program's numbers (the floor, 1000); linked with libdftrace
    # alone, it holds none between writes (one seen during a write is there too)
    seen = [ln for ln in t.stderr.splitlines() if ln.startswith("trace fd before: ")]
    if way == "preloaded":
        assert "trace fd before: 1000" in seen, t.stderr
    assert all(ln == "trace fd before: 1000" for ln in seen), t.stderr
    for p in traces(tmp_path / "out"):
        validate(p)


def test_a_small_descriptor_limit_puts_the_trace_at_the_highest_free_number(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    (tmp_path / "plain").mkdir()
    (tmp_path / "traced").mkdir()
    (tmp_path / "out").mkdir()
    u = untraced([PROG, "closeloop", str(tmp_path / "plain")], preexec=limit)
    t = preloaded(tmp_path / "out", [PROG, "closeloop", str(tmp_path / "traced")], preexec=limit)
    assert (t.returncode, t.stdout) == (u.returncode, u.stdout), t.stderr
    assert files_of(tmp_path / "traced") == files_of(tmp_path / "plain")
    assert "trace fd before: 63" in t.stderr, t.stderr
    for p in traces(tmp_path / "out"):
        validate(p)


EMFILE_PROG = os.path.join(BIN, "emfile_prog")


@pytest.mark.parametrize("at_exit", ["closed", "hold"])
def test_emfile_comes_at_the_same_count_while_the_writer_writes(tmp_path, at_exit):
    """Under RLIMIT_NOFILE 20 the program opens until EMFILE, round after round, each time
    holding every number for 20 ms, while its other thread's I/O is traced (passes every 100 ms
    come while it holds them all): every round's count is the untraced one, and the trace is
    whole with its end line, also when the program exits holding them all ("hold")."""
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))

    for d in ("plain", "traced", "out"):
        (tmp_path / d).mkdir()
    cmd = [EMFILE_PROG, "{dir}", "40", "20"] + (["hold"] if at_exit == "hold" else [])
    u = untraced([a.replace("{dir}", str(tmp_path / "plain")) for a in cmd], preexec=limit)
    t = preloaded(tmp_path / "out", [a.replace("{dir}", str(tmp_path / "traced")) for a in cmd],
                  preexec=limit)
    assert u.returncode == 0 and "round 39: " in u.stdout, u.stdout + u.stderr
    assert (t.returncode, t.stdout) == (u.returncode, u.stdout), t.stderr
    [p] = traces(tmp_path / "out")
    ev = validate(p)
    writes = [e for e in ev if e.get("name") == "pwrite" and e.get("ph") == "X"]
    assert len(writes) > 1000, f"{len(writes)} pwrite events: the I/O thread was not traced"
    end = ev[-1]
    assert end.get("args", {}).get("dropped_events", 0) == 0, end


KINDS_PROG = os.path.join(BIN, "emfile_kinds_prog")
KINDS = ["open", "openat", "creat", "fopen", "opendir", "dup", "fcntl", "socket", "socketpair",
         "pipe", "pipe2", "accept", "accept4", "eventfd", "signalfd", "timerfd", "epoll",
         "inotify", "memfd", "mkstemp", "tmpfile", "popen"]


def kinds_compare(tmp_path, kind, env=(), way="preloaded"):
    """emfile_kinds_prog KIND untraced and traced (preloaded, or linked with libdftrace alone)
    under RLIMIT_NOFILE 20: the same count of descriptors before EMFILE; every trace whole.
    Returns the untraced output."""
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))

    prog = KINDS_PROG if way == "preloaded" else KINDS_PROG + "_linked"
    run = preloaded if way == "preloaded" else linked
    for d in ("plain", "traced", "out"):
        (tmp_path / d).mkdir()
    u = untraced([prog, str(tmp_path / "plain"), kind], preexec=limit)
    t = run(tmp_path / "out", [prog, str(tmp_path / "traced"), kind], preexec=limit, env=env)
    assert u.returncode == 0 and u.stdout.endswith(" EMFILE\n"), u.stdout + u.stderr
    assert (t.returncode, t.stdout) == (u.returncode, u.stdout), t.stderr
    for p in traces(tmp_path / "out"):
        validate(p)
    return u.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_every_call_that_makes_a_descriptor_meets_emfile_at_the_untraced_count(tmp_path, kind):
    """Before, only open's forms were made again after EMFILE: a program making sockets, pipes,
    dups, eventfds... met EMFILE one descriptor early (the trace file's)."""
    kinds_compare(tmp_path, kind)


@pytest.mark.parametrize("kind", ["open", "socket"])
def test_attach_and_telemetry_descriptors_are_given_up_too(tmp_path, kind):
    """With attach on (an inotify instance for the run) and telemetry on (the node lock file held
    for the run), the program met EMFILE two descriptors early; each is given up at the first
    EMFILE as the trace file's is."""
    (tmp_path / "ch").mkdir(mode=0o700)
    kinds_compare(tmp_path, kind, env={"DFTRACE_ATTACH": "1", "DFTRACE_ATTACH_DIR":
                                       str(tmp_path / "ch"), "DFTRACE_TELEMETRY_INTERVAL": "50ms"})


def test_preloaded_with_io_tracing_off_meets_emfile_at_the_untraced_count(tmp_path):
    """io.enable false gives the I/O calls back to the C library, so nothing makes a call again
    after EMFILE: the trace file holds no descriptor between writes then. Before, it held one
    and the program met EMFILE one descriptor early."""
    kinds_compare(tmp_path, "open", env={"DFTRACE_IO_ENABLE": "0"})


@pytest.mark.parametrize("kind", ["open", "socket", "pipe"])
def test_a_program_linked_with_dftrace_alone_meets_emfile_at_the_untraced_count(tmp_path, kind):
    """Without libdftrace_io nothing can give the trace file's number back when the program
    needs it: the file is opened for each write instead. Before, it held one descriptor for the
    run and such a program met EMFILE one descriptor early."""
    kinds_compare(tmp_path, kind, way="linked")


def test_emfile_at_the_same_count_in_many_short_rounds_beside_telemetry(tmp_path):
    """2000 rounds of opening until EMFILE (each holding every number 1 ms) while the writer
    opens the trace file for each write (every 100 ms) and the telemetry thread opens its /proc
    files (every 10 ms): a round whose last open came while dftrace had a descriptor open for
    a moment (the trace file just opened at a low number, a sample's file) met EMFILE one early,
    about one round in 1,500 before; such a call now waits for that moment and is made again."""
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))

    for d in ("plain", "traced", "out"):
        (tmp_path / d).mkdir()
    cmd = [EMFILE_PROG, "{dir}", "2000", "1"]
    u = untraced([a.replace("{dir}", str(tmp_path / "plain")) for a in cmd], preexec=limit)
    t = preloaded(tmp_path / "out", [a.replace("{dir}", str(tmp_path / "traced")) for a in cmd],
                  preexec=limit, env={"DFTRACE_TELEMETRY_INTERVAL": "10ms"})
    assert u.returncode == 0 and "round 1999: " in u.stdout, u.stdout + u.stderr
    differ = [(a, b) for a, b in zip(u.stdout.splitlines(), t.stdout.splitlines()) if a != b]
    assert not differ and t.returncode == 0, (differ[:5], t.stderr)
    [p] = traces(tmp_path / "out")  # (millions of I/O events: `dftrace validate` alone reads them)
    v = subprocess.run([CLI, "validate", p], capture_output=True, text=True, timeout=300)
    assert v.returncode == 0 and "truncated" not in v.stdout + v.stderr, v.stdout + v.stderr


def shell_compare(tmp_path, script, stderr=True):
    (tmp_path / "out").mkdir()
    u = untraced(["bash", "-c", script])
    t = preloaded(tmp_path / "out", ["bash", "-c", script])
    assert (t.returncode, t.stdout) == (u.returncode, u.stdout), t.stderr
    if stderr:
        assert t.stderr == u.stderr
    for p in traces(tmp_path / "out"):
        validate(p)
    return u


def test_bash_pipeline_counts_what_it_counts_untraced(tmp_path):
    """bash closes a pipe's end twice; traced, the second close took the trace's descriptor
    and the next pipe got its number: `ls -lR | wc -l` printed 0."""
    u = shell_compare(tmp_path, "ls -lR /usr/share/doc 2>/dev/null | wc -l; echo rc=$?")
    assert int(u.stdout.split()[0]) > 100


def test_bash_loop_of_command_substitutions(tmp_path):
    u = shell_compare(tmp_path, "for i in $(seq 200); do x=$(basename /a/b/f$i.txt); "
                                "echo \"$x\"; done | tail -n 2")
    assert u.stdout == "f199.txt\nf200.txt\n"


def undefined_hashes(ev):
    """fhash values that an event uses and no FH line of the same file defines."""
    defined = {e["args"]["value"] for e in ev if e.get("name") == "FH"}
    return {e["args"]["fhash"] for e in ev if "fhash" in e.get("args", {})} - defined


def test_a_forked_child_defines_the_hash_of_an_inherited_file(tmp_path):
    """Before: the child's writes on the descriptor its parent opened carried the parent's
    fhash, whose FH line is only in the parent's file."""
    (tmp_path / "d").mkdir()
    (tmp_path / "out").mkdir()
    t = preloaded(tmp_path / "out", [PROG, "fork", str(tmp_path / "d")])
    assert t.returncode == 0 and "child: 0" in t.stdout, t.stdout + t.stderr
    files = traces(tmp_path / "out")
    assert len(files) == 2
    writes = 0
    for p in files:
        ev = validate(p)
        assert not undefined_hashes(ev), p
        writes += sum(1 for e in ev if e.get("name") == "write")
    assert writes == 4


def test_bash_subshell_and_multiprocessing_fork_worker_on_inherited_files(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (tmp_path / "out").mkdir()
    script = f"exec 3>{d}/f; echo a >&3; (echo b >&3; echo c >&3); echo d >&3"
    t = preloaded(tmp_path / "out", ["bash", "-c", script])
    assert t.returncode == 0 and open(d / "f").read() == "a\nb\nc\nd\n", t.stderr
    py = (f"import multiprocessing as mp\n"
          f"f = open('{d}/g', 'w', buffering=1)\n"
          f"f.write('parent\\n')\n"
          f"def work(i):\n    f.write('worker %d\\n' % i); f.flush(); return i\n"
          f"if __name__ == '__main__':\n"
          f"    p = mp.get_context('fork').Pool(2)\n"
          f"    print(sum(p.map(work, range(4))))\n"
          f"    p.close(); p.join()\n")  # (no terminate: its SIGTERM may cut a worker's exit)
    t = preloaded(tmp_path / "out", ["/usr/bin/python3", "-c", py])
    assert t.returncode == 0 and t.stdout == "6\n", t.stderr
    users = 0  # the processes with events on f or g
    for p in traces(tmp_path / "out"):
        ev = validate(p)
        assert not undefined_hashes(ev), p
        names = {e["args"]["value"]: e["args"]["name"] for e in ev if e.get("name") == "FH"}
        users += any(names.get(e.get("args", {}).get("fhash")) in (str(d / "f"), str(d / "g"))
                     for e in ev)
    assert users >= 4  # bash and its subshell, python and its workers (one may get no task)


@pytest.fixture
def small_fs(tmp_path):
    """A 256 KiB tmpfs (root may mount one); unmounted after the test."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if m.returncode != 0:
        pytest.skip(f"can not mount a small tmpfs here (needs root): {m.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_file_system_leaves_whole_members_and_finalize_says_so(small_fs, tmp_path):
    """Before: the file ended inside a gzip member ("truncated final gzip member") and
    dftrace_finalize returned 0."""
    t = linked(small_fs, [LINKED, "fill", "60000"], env={"DFTRACE_OUTPUT_MEMBER_BYTES": "65536"})
    assert t.returncode == 0, t.stdout + t.stderr
    assert t.stdout == "finalize -3\n", t.stdout + t.stderr  # DFTRACE_ERR_IO
    assert "No space left on device" in t.stderr
    (p,) = traces(small_fs)
    tc.check_members(p)  # every member whole
    ev = validate(p)  # and its end line, written where the cut member was, counts what was lost
    end = ev[-1]["args"]
    assert end["dropped_events"] > 0 and end["num_events"] + end["dropped_events"] == 60000


def test_python_finalize_returns_the_write_error(small_fs, tmp_path):
    py = ("import dftrace, os\n"
          "dftrace.initialize(enable=True)\n"
          "for i in range(60000):\n"
          "    dftrace.instant('step', args={'junk': os.urandom(48).hex()})\n"
          "print(dftrace.finalize())\n")
    e = {"DFTRACE_LOG_FILE": str(small_fs / "t"), "DFTRACE_OUTPUT_MEMBER_BYTES": "65536",
         "PYTHONPATH": os.environ["DFTRACE_TEST_PYTHONPATH"]}
    t = linked(small_fs, [sys.executable, "-c", py], env=e)
    assert t.returncode == 0 and t.stdout == "-3\n", t.stdout + t.stderr


def test_sigxfsz_is_the_programs_own(tmp_path):
    """Under `ulimit -f`, dd writing past the limit dies of SIGXFSZ, traced as untraced (it got
    EFBIG when dftrace ignored SIGXFSZ in every process and exec passed that on)."""
    (tmp_path / "d").mkdir()
    script = (f"ulimit -f 64; dd if=/dev/zero of={tmp_path}/d/big bs=1k count=200 2>/dev/null;"
              f" echo rc=$?")
    u = shell_compare(tmp_path, script, stderr=False)  # (bash's message names the pid)
    assert u.stdout == f"rc={128 + signal.SIGXFSZ}\n"


def test_the_trace_stops_at_the_file_size_limit_without_killing_the_program(tmp_path):
    """The program's own file fits under the limit, the trace would not: the program is not
    killed (SIGXFSZ keeps its default) and the trace ends with whole members."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (300 * 1024, resource.RLIM_INFINITY))

    (tmp_path / "plain").mkdir()
    (tmp_path / "traced").mkdir()
    (tmp_path / "out").mkdir()
    u = untraced([PROG, "reuse", str(tmp_path / "plain")], preexec=limit)
    t = preloaded(tmp_path / "out", [PROG, "reuse", str(tmp_path / "traced")], preexec=limit,
                  env={"DFTRACE_OUTPUT_MEMBER_BYTES": "65536", "DFTRACE_OUTPUT_COMPRESSION": "0"})
    assert u.returncode == 0, u.stderr
    assert (t.returncode, t.stdout) == (u.returncode, u.stdout), t.stderr
    assert files_of(tmp_path / "traced") == files_of(tmp_path / "plain")
    assert "file-size limit" in t.stderr
    for p in traces(tmp_path / "out"):
        assert os.path.getsize(p) <= 300 * 1024
