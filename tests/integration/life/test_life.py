"""test_life.py: a traced process lives as it does untraced (src/runtime, src/plugins/io, src/topology,
src/writer): its exit status when its first interposed call comes during exit, hwloc's plugins
and X servers left alone, SIGINT in Python (KeyboardInterrupt, signal.getsignal, a forkserver
Pool), SIGTERM in C (the trace's end line), a default action put back (SIGINT as Python
finalizes, `signal`/`sigaction` and the older `sysv_signal`/`bsd_signal`/`ssignal`/`sigset` in
C: the signal still ends the process, the trace gets its end line), and an address-space limit
(no abort)."""
import glob
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]


def clean_env(**extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("DFTRACE_", "DFTRACER_")) or k == "LD_PRELOAD":
            del env[k]
    env.update(extra)
    return env


def traced(tmp_path, *cmd):
    return [CLI, "run", "--prefix", str(tmp_path / "traces" / "t"), "--", *cmd]


# ------------------------------------------------------------------ exit

@pytest.mark.parametrize("cmd", [["/bin/true"], ["/bin/false"], ["env", "true"],
                                 ["/bin/kill", "-0", "PID"]])
def test_first_interposed_call_during_exit_keeps_the_exit_status(tmp_path, cmd):
    # Standard output to a file: the program's first interposed call is the C++ streams' final
    # flush, made by a library's finaliser after libdftrace's own static data was destroyed.
    cmd = [str(os.getpid()) if a == "PID" else a for a in cmd]
    if shutil.which(cmd[0]) is None:
        pytest.skip("%s is not installed" % cmd[0])
    (tmp_path / "traces").mkdir()
    with open(tmp_path / "untraced.log", "w") as out:
        want = subprocess.run(cmd, stdout=out, env=clean_env(), timeout=60).returncode
    assert want in (0, 1)
    for i in range(20):
        with open(tmp_path / "traced.log", "w") as out:
            p = subprocess.run(traced(tmp_path, *cmd), stdout=out, stderr=subprocess.PIPE,
                               env=clean_env(), timeout=60)
        assert p.returncode == want, (i, p.returncode, p.stderr)
        assert p.stderr == b"", p.stderr


# ------------------------------------------------------------------ hwloc

def strace_traced_echo(tmp_path):
    """The system calls connect, open and openat of a traced /usr/bin/echo and its children,
    and the echo's trace."""
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace is not installed (scripts/setup-debian.sh installs it)")
    (tmp_path / "traces").mkdir()
    log = tmp_path / "strace.log"
    # Its output to a file: its writes are traced, so dftrace initialises (and reads where the
    # process runs) in it.
    with open(tmp_path / "echo.out", "w") as out:
        p = subprocess.run([strace, "-f", "-qq", "-o", str(log), "-e",
                            "trace=connect,openat,open", *traced(tmp_path, "/usr/bin/echo", "hello")],
                           stdout=out, stderr=subprocess.PIPE, text=True,
                           env=clean_env(DISPLAY=""), timeout=120)
    if p.returncode != 0 and "ptrace" in p.stderr:
        pytest.skip("strace can not trace here: " + p.stderr.strip())
    assert p.returncode == 0 and (tmp_path / "echo.out").read_text() == "hello\n", p.stderr
    return log.read_text().splitlines(), tc.load(tc.only_file(str(tmp_path / "traces")))


def test_a_traced_echo_reaches_no_x_server_and_says_where_it_ran(tmp_path):
    calls, ev = strace_traced_echo(tmp_path)
    x11 = [c for c in calls if "connect(" in c and (".X11-unix" in c or "htons(60" in c)]
    assert not x11, x11
    # The header still says where the process runs.
    pr, _ = tc.pr_values(ev)
    for key in ("core_affinity", "numa_node", "package", "host_cores", "host_pus",
                "host_numa_nodes", "host_packages"):
        assert key in pr, (key, sorted(pr))
    assert pr["host_pus"] == os.cpu_count()
    assert pr["core_affinity"] == sorted(os.sched_getaffinity(0))


def test_a_traced_echo_loads_no_hwloc_plugin(tmp_path):
    if os.path.exists("/dev/kfd") or glob.glob("/proc/driver/nvidia/gpus/*"):
        pytest.skip("a GPU driver is loaded: hwloc is used to place the GPUs, and loads its plugins")
    calls, _ = strace_traced_echo(tmp_path)
    plugins = [c for c in calls if "/hwloc/hwloc_" in c or "libX11" in c or "libOpenCL" in c]
    assert not plugins, plugins


# ------------------------------------------------------------------ what a traced process loads

# Libraries only some processes need: yaml-cpp (a YAML file to read), hwloc and libudev (GPUs,
# or a described machine), the shared C++ runtime (dftrace has its own inside), and the
# components that bring them.
ON_DEMAND = ("libdftrace_yaml.so", "libyaml-cpp.so", "libdftrace_hwloc.so", "libhwloc.so",
             "libudev.so", "libstdc++.so")


def loaded_libraries(tmp_path, cmd=("/usr/bin/echo", "hello"), **extra):
    """The shared objects the dynamic loader opened in a traced (preloaded) process, its output
    to a file so that dftrace initialises and writes its trace; and that trace's events."""
    traces = tmp_path / "traces"
    traces.mkdir(exist_ok=True)
    env = clean_env(LD_PRELOAD=os.environ["DFTRACE_IO_LIB"], DFTRACE_ENABLE="1",
                    LD_DEBUG="files", LD_DEBUG_OUTPUT=str(tmp_path / "ld"), **extra)
    env.setdefault("DFTRACE_LOG_FILE", str(traces / "t"))
    with open(tmp_path / "out.txt", "w") as out:
        p = subprocess.run(list(cmd), stdout=out, stderr=subprocess.PIPE, text=True, env=env,
                           timeout=60)
    assert p.returncode == 0, p.stderr
    assert "dftrace" not in p.stderr, p.stderr
    assert (tmp_path / "out.txt").read_text() == "hello\n"
    logs = glob.glob(str(tmp_path / "ld.*"))
    assert logs, "LD_DEBUG_OUTPUT wrote nothing"
    opened = set()
    for log in logs:
        for line in open(log):
            # "     12345:	file=libz.so.1 [0];  needed by ..." / "...;  dynamically loaded by ..."
            if "file=" in line and ("needed by" in line or "dynamically loaded by" in line):
                opened.add(os.path.basename(line.split("file=", 1)[1].split()[0]))
    return opened, tc.load(tc.only_file(str(traces)))


def on_demand(opened):
    return sorted(o for o in opened if o.startswith(ON_DEMAND))


def test_a_traced_echo_loads_no_library_it_does_not_need(tmp_path):
    if os.path.exists("/dev/kfd") or glob.glob("/proc/driver/nvidia/gpus/*"):
        pytest.skip("a GPU driver is loaded: hwloc is needed here to place the GPUs")
    opened, ev = loaded_libraries(tmp_path)
    assert "libdftrace.so.0" in opened, sorted(opened)  # the log is what we think it is
    assert on_demand(opened) == [], sorted(opened)
    # and the trace is whole: it says where the process ran, and has the echo's write
    pr, _ = tc.pr_values(ev)
    assert pr["host_pus"] == os.cpu_count() and "numa_node" in pr, pr
    assert any(e.get("cat") == "STDIO" for e in ev), ev


def test_a_yaml_configuration_loads_the_parser_and_is_read(tmp_path):
    conf = tmp_path / "conf.yaml"
    conf.write_text("output:\n  prefix: %s\n  cmdline: exec\ncategories: [\"-POSIX\"]\n"
                    % (tmp_path / "traces" / "from_yaml"))
    opened, ev = loaded_libraries(tmp_path, DFTRACE_CONFIG=str(conf), DFTRACE_LOG_FILE="")
    assert "libdftrace_yaml.so" in opened, sorted(opened)
    assert any(o.startswith("libyaml-cpp.so") for o in opened), sorted(opened)
    names = os.listdir(tmp_path / "traces")
    assert len(names) == 1 and names[0].startswith("from_yaml-echo-"), names
    sh = [e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "SH"]
    assert "/usr/bin/echo" in sh and not any("hello" in n for n in sh), sh  # cmdline: exec


def test_a_described_machine_loads_hwloc_and_is_read(tmp_path):
    if os.environ.get("DFTRACE_TEST_HWLOC") != "1":
        pytest.skip("this build has no hwloc (its pkg-config file was not found)")
    opened, ev = loaded_libraries(tmp_path, HWLOC_SYNTHETIC="pack:3 core:2 pu:1")
    assert "libdftrace_hwloc.so" in opened, sorted(opened)
    assert any(o.startswith("libhwloc.so") for o in opened), sorted(opened)
    pr, _ = tc.pr_values(ev)
    assert (pr["host_packages"], pr["host_cores"], pr["host_pus"]) == (3, 6, 6), pr


def test_the_descriptor_table_grows_before_the_writer_thread_shares_it(tmp_path):
    # Growing the table of a process whose threads share it waits for an RCU grace period
    # (10 to 20 ms): the trace file's high descriptor is made room for while there is one thread.
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace is not installed (scripts/setup-debian.sh installs it)")
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= 1000:
        pytest.skip("the descriptor limit is below dftrace's floor: the file goes below it")
    (tmp_path / "traces").mkdir()
    log = tmp_path / "strace.log"
    # Only the echo is traced: `env` sets its environment after strace started.
    with open(tmp_path / "out.txt", "w") as out:
        p = subprocess.run([strace, "-f", "-qq", "-o", str(log), "-e",
                            "trace=clone,clone3,fcntl", "env",
                            "LD_PRELOAD=" + os.environ["DFTRACE_IO_LIB"], "DFTRACE_ENABLE=1",
                            "DFTRACE_LOG_FILE=" + str(tmp_path / "traces" / "t"),
                            "/usr/bin/echo", "hello"],
                           stdout=out, stderr=subprocess.PIPE, text=True, env=clean_env(),
                           timeout=120)
    if p.returncode != 0 and "ptrace" in p.stderr:
        pytest.skip("strace can not trace here: " + p.stderr.strip())
    assert p.returncode == 0, p.stderr
    calls = log.read_text().splitlines()
    high = [i for i, c in enumerate(calls) if "F_DUPFD_CLOEXEC, 1000)" in c]
    threads = [i for i, c in enumerate(calls) if "clone" in c]
    assert high and threads, calls
    assert high[0] < threads[0], calls
    assert len(tc.load(tc.only_file(str(tmp_path / "traces")))) > 0


# ------------------------------------------------------------------ signals

LOOP = textwrap.dedent("""
    import signal, sys, time
    checkpoint = sys.argv[1]
    print("handlers", signal.getsignal(signal.SIGINT) is signal.default_int_handler,
          signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)
    step = 0
    try:
        with open(checkpoint + ".log", "w") as log:
            while True:
                log.write("step %d\\n" % step)
                log.flush()
                step += 1
                if step == 20:
                    print("ready", flush=True)
                time.sleep(0.002)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(3)
    finally:
        with open(checkpoint, "w") as f:
            f.write("saved")
""")


def interrupt_loop(tmp_path, name, wrap):
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    ck = tmp_path / name
    p = subprocess.Popen(wrap(sys.executable, str(script), str(ck)), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=clean_env())
    lines = [p.stdout.readline().strip()]
    lines.append(p.stdout.readline().strip())
    assert lines[-1] == "ready", (lines, p.stderr.read() if p.poll() is not None else "")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return p.returncode, lines + out.split(), ck.read_text() if ck.exists() else None


def test_ctrl_c_on_a_traced_python_loop_raises_keyboard_interrupt(tmp_path):
    (tmp_path / "traces").mkdir()
    want = interrupt_loop(tmp_path, "untraced.ck", lambda *c: list(c))
    assert want == (3, ["handlers True True", "ready", "interrupted"], "saved")
    got = interrupt_loop(tmp_path, "traced.ck", lambda *c: traced(tmp_path, *c))
    assert got == want
    # Traced all the same: the loop's writes, and the end of the process.
    ev = tc.load(tc.only_file(str(tmp_path / "traces")))
    assert any(e.get("name") == "write" and e.get("cat") == "POSIX" for e in ev)
    assert ev[-1]["name"] == "end"


# Python's own exit after an uncaught KeyboardInterrupt puts SIGINT's default action back as it
# finalizes and then kills itself with SIGINT; `timeout` sends a second SIGINT (to the process
# group) that may land in between. The default action put back, the second SIGINT from outside.
DEFAULT_BACK = textwrap.dedent("""
    import signal, sys, time
    with open(sys.argv[1], "w") as f:
        for i in range(100):
            f.write("step %d\\n" % i)
            f.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    print("ready", flush=True)
    time.sleep(120)
""")


def interrupt_after_default_back(tmp_path, name, wrap):
    script = tmp_path / "back.py"
    script.write_text(DEFAULT_BACK)
    p = subprocess.Popen(wrap(sys.executable, str(script), str(tmp_path / name)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=clean_env(DFTRACE_OUTPUT_FLUSH_INTERVAL="600s"))
    line = p.stdout.readline().strip()
    assert line == "ready", (line, p.stderr.read() if p.poll() is not None else "")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err, (tmp_path / name).read_text()


def test_sigint_after_python_puts_its_default_action_back_still_ends_the_trace(tmp_path):
    (tmp_path / "traces").mkdir()
    want = interrupt_after_default_back(tmp_path, "untraced.log", lambda *c: list(c))
    assert want[0] == -signal.SIGINT, want
    got = interrupt_after_default_back(tmp_path, "traced.log", lambda *c: traced(tmp_path, *c))
    assert got[0] == want[0], got
    assert got[1:] == want[1:], got
    # The process died of SIGINT, as untraced, with its trace whole: the buffered writes and
    # the end line naming the signal.
    ev = tc.load(tc.only_file(str(tmp_path / "traces")))
    assert sum(e.get("name") == "write" and e.get("cat") == "POSIX" for e in ev) >= 100
    assert ev[-1]["name"] == "end" and ev[-1]["args"].get("signal") == "SIGINT", ev[-3:]


# The same window in Python's own finalization: a low-level exit function (Py_AtExit, run
# after the interpreter put SIGINT's default action back, before its kill) that reads standard
# input holds the process there; the second SIGINT (`timeout`'s to the process group) lands
# while it reads.
FINALIZING = textwrap.dedent("""
    import ctypes, os, sys
    with open(sys.argv[1], "w") as f:
        for i in range(100):
            f.write("step %d\\n" % i)
            f.flush()
    ctypes.pythonapi.Py_AtExit.argtypes = [ctypes.c_void_p]
    ctypes.pythonapi.Py_AtExit(ctypes.cast(ctypes.CDLL(None).getchar, ctypes.c_void_p).value)
    print(os.getpid(), flush=True)
    raise KeyboardInterrupt
""")
READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}  # (/proc/PID/syscall: number, then arguments)


def reading_stdin(pid):
    try:
        with open("/proc/%d/syscall" % pid) as f:
            call = f.read().split()
    except OSError:
        return False
    return call[:2] == [READ_SYSCALL[os.uname().machine], "0x0"]


def interrupt_while_finalizing(tmp_path, name, wrap):
    script = tmp_path / "finalizing.py"
    script.write_text(FINALIZING)
    p = subprocess.Popen(wrap(sys.executable, str(script), str(tmp_path / name)),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=clean_env(DFTRACE_OUTPUT_FLUSH_INTERVAL="600s"))
    pid = int(p.stdout.readline())
    for _ in range(6000):  # until it reads in its exit function (a minute at most)
        if reading_stdin(pid) or p.poll() is not None:
            break
        time.sleep(0.01)
    assert reading_stdin(pid), p.poll()
    os.kill(pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err.count("KeyboardInterrupt"), (tmp_path / name).read_text()


def test_sigint_while_python_finalizes_after_keyboard_interrupt_still_ends_the_trace(tmp_path):
    if os.uname().machine not in READ_SYSCALL:
        pytest.skip("no read syscall number known for " + os.uname().machine)
    if not os.access("/proc/self/syscall", os.R_OK):
        pytest.skip("/proc/PID/syscall can not be read here")
    (tmp_path / "traces").mkdir()
    want = interrupt_while_finalizing(tmp_path, "untraced.log", lambda *c: list(c))
    assert want[0] == -signal.SIGINT and want[2] > 0, want
    got = interrupt_while_finalizing(tmp_path, "traced.log", lambda *c: traced(tmp_path, *c))
    assert got == want, got
    ev = tc.load(tc.only_file(str(tmp_path / "traces")))
    assert sum(e.get("name") == "write" and e.get("cat") == "POSIX" for e in ev) >= 100
    assert ev[-1]["name"] == "end" and ev[-1]["args"].get("signal") == "SIGINT", ev[-3:]


# What `timeout -s INT` does (SIGINT to the process, SIGINT to its group, SIGCONT to both), with
# the second SIGINT a little later each time: from about half a millisecond to two and a half
# after the first it landed, untraced-equivalent but trace-losing, while the interpreter
# finalized with SIGINT's default action back. Every run dies of SIGINT with its end line,
# whenever the second signal lands.
SIGLOOP = textwrap.dedent("""
    import os, sys, time
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
    print(os.getpid(), flush=True)
    while True:
        os.pwrite(fd, b"step", 0)
        time.sleep(0.001)
""")


def test_timeouts_two_sigints_at_any_spacing_leave_the_trace_its_end(tmp_path):
    script = tmp_path / "sigloop.py"
    script.write_text(SIGLOOP)
    for n, delay in enumerate(x / 4 for x in range(2, 14)):
        traces = tmp_path / ("traces%d" % n)
        traces.mkdir()
        p = subprocess.Popen([CLI, "run", "--prefix", str(traces / "t"), "--", sys.executable,
                              str(script), str(tmp_path / "progress")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=clean_env(DFTRACE_OUTPUT_FLUSH_INTERVAL="200ms"))
        pid = int(p.stdout.readline())
        os.kill(pid, signal.SIGINT)
        time.sleep(delay / 1000)
        for sig in (signal.SIGINT, signal.SIGCONT):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        out, err = p.communicate(timeout=60)
        assert p.returncode == -signal.SIGINT and "KeyboardInterrupt" in err, (delay, err)
        ev = tc.load(tc.only_file(str(traces)))
        end = ev[-1]
        assert end["name"] == "end" and end["args"].get("signal") == "SIGINT", (delay, ev[-3:])


FORKSERVER = textwrap.dedent("""
    import multiprocessing as mp
    def square(x):
        return x * x
    if __name__ == "__main__":
        with mp.get_context("forkserver").Pool(2) as pool:
            print(sum(pool.map(square, range(200))))
""")


def test_a_traced_forkserver_pool_maps_and_exits(tmp_path):
    (tmp_path / "traces").mkdir()
    script = tmp_path / "pool.py"
    script.write_text(FORKSERVER)
    # A hang (workers dying and respawned for ever) fails here instead of hanging the suite.
    p = subprocess.run(traced(tmp_path, sys.executable, str(script)), capture_output=True,
                       text=True, env=clean_env(), timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout == "%d\n" % sum(x * x for x in range(200))
    assert "Traceback" not in p.stderr, p.stderr[-2000:]


TERMINATED = textwrap.dedent("""
    import multiprocessing as mp, signal, time
    def work(i):
        with open(%r + "/w%%d" %% i, "w") as f:
            f.write(str(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL))
        time.sleep(60)
    if __name__ == "__main__":
        mp.set_start_method("fork")
        pool = mp.Pool(2)
        pool.map_async(work, range(2))
        time.sleep(2)
        pool.terminate()
        pool.join()
""")


def test_preloaded_python_fork_workers_terminated_end_their_traces(tmp_path):
    # The interpreter was starting when dftrace initialised (preloaded): SIGTERM was left to it;
    # its forked workers, where it has started, take it (Python reports SIG_DFL as untraced).
    (tmp_path / "traces").mkdir()
    script = tmp_path / "terminate.py"
    script.write_text(TERMINATED % str(tmp_path))
    p = subprocess.run(traced(tmp_path, sys.executable, str(script)), capture_output=True,
                       text=True, env=clean_env(), timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert [(tmp_path / ("w%d" % i)).read_text() for i in range(2)] == ["True", "True"]
    ends = [tc.load(f)[-1]["args"].get("signal")
            for f in glob.glob(str(tmp_path / "traces" / "*.pfw.gz"))]
    assert ends.count("SIGTERM") == 2, ends


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_c_program_killed_by_a_request_to_end_still_gets_its_end_line(tmp_path, sig):
    env = clean_env(DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "trace"))
    p = subprocess.Popen([os.path.join(BIN, "term_prog")], stdout=subprocess.PIPE, env=env,
                         text=True)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(sig)
    p.wait(timeout=60)
    assert p.returncode == -sig
    ev = tc.load(tc.only_file(str(tmp_path)))
    assert ev[-1]["name"] == "end" and ev[-1]["args"]["signal"] == signal.Signals(sig).name


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_default_action_put_back_after_initialisation_still_gets_the_end_line(tmp_path, sig):
    # term_prog's own handlers replace dftrace's; it then puts the default actions back
    # (SIGINT's with signal(), SIGTERM's with sigaction()), which the preloaded library sees.
    (tmp_path / "traces").mkdir()
    p = subprocess.Popen(traced(tmp_path, os.path.join(BIN, "term_prog"), "back"),
                         stdout=subprocess.PIPE, env=clean_env(), text=True)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(sig)
    p.wait(timeout=60)
    assert p.returncode == -sig
    ev = tc.load(tc.only_file(str(tmp_path / "traces")))
    assert ev[-1]["name"] == "end" and ev[-1]["args"]["signal"] == signal.Signals(sig).name


def interrupt_twice(args, env):
    """legacy_signal_prog's lines, a SIGINT after each "ready", and its exit status."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, text=True)
    lines = []
    for _ in range(2):
        for line in p.stdout:
            lines.append(line.strip())
            if lines[-1] == "ready":
                break
        assert lines[-1] == "ready", lines
        p.send_signal(signal.SIGINT)
    lines += p.stdout.read().splitlines()
    return p.wait(timeout=60), lines


SETTERS = ["signal", "sigaction", "sysv_signal", "__sysv_signal", "bsd_signal", "ssignal",
           "sigset", "sigset hold", "sigset pending", "__sigaction"]


@pytest.mark.parametrize("call", SETTERS)
def test_a_default_action_put_back_by_an_older_call_still_gets_the_end_line(tmp_path, call):
    # The program handles a first SIGINT, puts its default action back with the same call
    # (the C library's older ones, and sigaction's other symbol, set it past the sigaction and
    # signal symbols) and dies of the
    # second (with sigset's "pending", the second comes while SIGINT is held, and sigset's
    # SIG_DFL releases it): as untraced, what each call returned (sigset's SIG_HOLD of a held
    # signal included) and its errno are the same, and the trace ends with its end line.
    prog = [os.path.join(BIN, "legacy_signal_prog"), *call.split()]
    want = interrupt_twice(prog, clean_env())
    assert want[0] == -signal.SIGINT, want
    (tmp_path / "traces").mkdir()
    got = interrupt_twice(traced(tmp_path, *prog), clean_env())
    assert got == want
    ev = tc.load(tc.only_file(str(tmp_path / "traces")))
    assert sum(e.get("name") == "tick" for e in ev) >= 1
    assert ev[-1]["name"] == "end" and ev[-1]["args"].get("signal") == "SIGINT", ev[-3:]


@pytest.mark.parametrize("call", SETTERS)
def test_the_same_in_the_application_mode(tmp_path, call):
    # libdftrace_io loaded by the program's dftrace (data directories set), not preloaded: the
    # calls are bound in the loaded objects.
    prog = [os.path.join(BIN, "legacy_signal_prog"), *call.split()]
    want = interrupt_twice(prog, clean_env())
    got = interrupt_twice(prog, clean_env(DFTRACE_ENABLE="1", DFTRACER_DATA_DIR=str(tmp_path),
                                          DFTRACE_LOG_FILE=str(tmp_path / "trace")))
    assert got == want and got[0] == -signal.SIGINT, (got, want)
    ev = tc.load(tc.only_file(str(tmp_path)))
    assert ev[-1]["name"] == "end" and ev[-1]["args"].get("signal") == "SIGINT", ev[-3:]


def test_a_request_to_end_the_application_handles_stays_its_own(tmp_path):
    env = clean_env(DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "trace"))
    p = subprocess.run([os.path.join(BIN, "term_prog"), "handled"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n") == ["own SIGTERM", "own SIGINT", ""]
    assert tc.load(tc.only_file(str(tmp_path)))[-1]["name"] == "end"


# ------------------------------------------------------------------ address space

def run_limited(limit_mb, env):
    def set_limit():
        b = limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (b, b))
    return subprocess.run([os.path.join(BIN, "limit_prog"), "60000"], env=env,
                          preexec_fn=set_limit, capture_output=True, text=True, timeout=60)


def test_no_address_space_limit_aborts_a_traced_program(tmp_path):
    untraced = clean_env(DFTRACE_ENABLE="0")
    smallest = next((mb for mb in range(8, 121, 4) if run_limited(mb, untraced).returncode == 0),
                    None)
    assert smallest is not None, "limit_prog does not run untraced under 120 MB"
    tried = []
    for mb in range(smallest, 121, 4):
        if run_limited(mb, untraced).returncode != 0:
            continue
        d = tmp_path / str(mb)
        d.mkdir()
        p = run_limited(mb, clean_env(DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(d / "trace")))
        tried.append(mb)
        assert p.returncode == 0, (mb, p.returncode, p.stderr[-2000:])
        assert "limit_prog: 60000 events each" in p.stdout
        # Out of memory is said, never once per lost event.
        assert len(p.stderr.splitlines()) <= 3, (mb, p.stderr[-2000:])
    assert len(tried) >= 5, tried


# ------------------------------------------------------------------ no fsync of its own on leaving

FORKS_AND_EXEC = textwrap.dedent("""
    import os, sys
    for _ in range(3):  # as a DataLoader's or a fork Pool's workers leave: os._exit
        pid = os.fork()
        if pid == 0:
            with open(sys.argv[1], "rb") as f:
                f.read()
            os._exit(0)
        os.waitpid(pid, 0)
    os.execv("/bin/true", ["true"])  # the image replaced: its trace finished first
""")


@pytest.mark.parametrize("traced_dir", ["data", "empty"])
def test_leaving_by_exit_or_exec_makes_no_fsync(tmp_path, traced_dir):
    """A process that leaves with _exit or replaces its image writes its trace's end first, but
    does not fsync it: its writes are the kernel's already, and a sync of a new file waits for
    the file system's journal (milliseconds, at every worker's exit). Nor does the program's
    own fsync go missing: the data file's fsync is the program's, and is still made."""
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace is not installed (scripts/setup-debian.sh installs it)")
    for d in ("traces", "data", "empty"):
        (tmp_path / d).mkdir()
    sample = tmp_path / "data" / "sample"
    sample.write_bytes(b"x" * 4096)
    script = tmp_path / "forks.py"
    script.write_text(FORKS_AND_EXEC)
    log = tmp_path / "strace.log"
    cmd = [CLI, "run", "--prefix", str(tmp_path / "traces" / "t"), "--data-dirs",
           str(tmp_path / traced_dir), "--", strace, "-f", "-qq", "-o", str(log), "-e",
           "trace=fsync,fdatasync,sync_file_range", sys.executable, str(script), str(sample)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=120)
    if p.returncode != 0 and "ptrace" in p.stderr:
        pytest.skip("strace can not trace here: " + p.stderr.strip())
    assert p.returncode == 0, p.stderr[-2000:]
    syncs = [c for c in log.read_text().splitlines() if "sync" in c and "resumed" not in c]
    assert syncs == [], syncs
    # Every process's trace is whole (its end line written at _exit and before the exec).
    files = glob.glob(str(tmp_path / "traces" / "*.pfw.gz"))
    ends = [tc.load(f)[-1]["name"] for f in files if "-python" in f or "-forks" in f]
    assert len(ends) == 4 and set(ends) == {"end"}, (files, ends)
