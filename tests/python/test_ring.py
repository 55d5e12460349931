"""test_ring.py: the flight recorder (output.mode: ring; docs/flight-recorder.md) from Python:
dftrace.trigger, a slow step of dftrace.step(), the trigger.min_gap, several windows, and an
unhandled exception and a SIGSEGV that write the window before the process ends. Every trace
passes `dftrace validate` and `dftrace.read` reads what it holds."""
import os
import signal
import subprocess

import pytest

RING = {"DFTRACE_OUTPUT_MODE": "ring", "DFTRACE_RING_SECONDS": "1", "DFTRACE_CORE_AFFINITY": "0"}


def triggers(t):
    check_read(t)
    return [r for r in t.records if r.get("ph") == "M" and r.get("name") == "trigger"]


def check_read(t):
    """The trace passes `dftrace validate`; `dftrace.read` reads its complete events and
    aggregated records, at the same times (ns; the file's unit is us)."""
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    v = subprocess.run([cli, "validate", t.path], capture_output=True, text=True, timeout=120)
    assert v.returncode == 0, v.stdout + v.stderr
    pytest.importorskip("pandas", reason="Debian's python3-pandas is not installed: "
                        "dftrace.read not checked")
    import dftrace
    df = dftrace.read(t.path)
    want = [r for r in t.records if r.get("ph") in ("X", "A")]
    assert sorted(zip(df["ph"], df["ts"])) == sorted((r["ph"], r["ts"] * 1000) for r in want)


def test_slow_step_and_the_min_gap(runner):
    p = runner.run('''
        import time
        import dftrace
        from dftrace import ai
        for i in range(12):
            with ai.compute.step(args={"n": i}):
                for k in range(25):
                    with ai.compute.forward(args={"n": i}):
                        time.sleep(0.06 if i == 5 else 0.002)
            dftrace.step()
        # within trigger.min_gap (10 s) of the slow step's trigger: not taken
        print("api", dftrace.trigger("by hand"))
    ''', env=dict(RING, DFTRACE_RING_AFTER="2"))
    assert p.stdout.split() == ["api", "False"], p.stdout
    t = runner.trace()
    (line,) = triggers(t)
    assert line["args"]["name"] == "slow_step" and line["args"]["value"].startswith("step 5 ")
    steps = sorted({e["args"]["n"] for e in t.named("forward")})
    assert steps[:3] == [5, 6, 7] and steps[-1] <= 8, steps
    assert t.end["args"]["num_events"] == len(t.events)


def test_trigger_outside_ring_mode_is_not_taken(runner):
    p = runner.run('''
        import dftrace
        from dftrace import ai
        with ai.compute.forward:
            pass
        print(dftrace.trigger("x"))
    ''')
    assert p.stdout.split() == ["False"]
    assert triggers(runner.trace()) == []


def test_unhandled_exception_writes_the_window(runner):
    p = runner.run('''
        import time
        from dftrace import ai
        for i in range(600):
            with ai.compute.forward(args={"n": i}):
                time.sleep(0.005)
        raise ValueError("the loss is nan")
    ''', env=RING, check=False)
    assert p.returncode == 1 and "ValueError: the loss is nan" in p.stderr, p.stderr
    t = runner.trace()
    (line,) = triggers(t)
    assert line["args"]["value"] == "unhandled exception ValueError: the loss is nan", line
    n = sorted(e["args"]["n"] for e in t.named("forward"))
    assert n[-1] == 599 and n[0] > 100, n  # the last second, not the whole run


def test_the_interpreters_end_hooks_run_no_bytecode(runner):
    """sys.excepthook and the atexit function the package adds are C functions: a second SIGINT
    (timeout's to the process group) can not raise a KeyboardInterrupt inside them and change
    the report Python prints. The hook calls the one set before the import."""
    p = runner.run('''
        import inspect, sys
        seen = []
        sys.excepthook = lambda *a: (seen.append(a[0].__name__), sys.__excepthook__(*a))
        import dftrace
        print(inspect.isfunction(sys.excepthook), type(sys.excepthook).__name__)
        try:
            raise KeyError("k")
        except KeyError:
            sys.excepthook(*sys.exc_info())
        print(seen)
    ''', check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[:2] == ["False builtin_function_or_method", "['KeyError']"], \
        p.stdout
    assert "KeyError: 'k'" in p.stderr, p.stderr


def test_an_exception_whose_str_fails_is_still_reported_and_named(runner):
    p = runner.run('''
        import time
        from dftrace import ai
        class Bad(Exception):
            def __str__(self):
                raise RuntimeError("no text")
        for i in range(300):
            with ai.compute.forward(args={"n": i}):
                time.sleep(0.005)
        raise Bad()
    ''', env=RING, check=False)
    assert p.returncode == 1 and "Bad" in p.stderr, p.stderr
    (line,) = triggers(runner.trace())
    assert line["args"]["value"] == "unhandled exception Bad", line


def test_several_windows(runner):
    runner.run('''
        import time
        import dftrace
        from dftrace import ai
        for i in range(450):
            with ai.compute.forward(args={"n": i}):
                time.sleep(0.005)
            if i in (100, 350):
                assert dftrace.trigger("at %d" % i)
    ''', env=dict(RING, DFTRACE_RING_SECONDS="0.3", DFTRACE_RING_AFTER="0.2s",
                DFTRACE_TRIGGER_MIN_GAP="0.5"))
    t = runner.trace()
    lines = triggers(t)
    assert [x["args"]["value"] for x in lines] == ["at 100", "at 350"]
    first, second = (x["args"] for x in lines)
    n = sorted(e["args"]["n"] for e in t.named("forward"))
    assert n[0] > 20 and 100 in n and 350 in n and n[-1] < 449, n
    # Between the first window's full detail (0.2 s, a quarter of the ring and 0.1 s later) and
    # the second window's start: nothing.
    lo, hi = first["time"] + 375000, second["from"] - 175000
    assert lo < hi and not [e for e in t.named("forward") if lo < e["ts"] < hi]


def test_sigsegv_writes_the_window(runner):
    p = runner.run('''
        import os, signal, time
        from dftrace import ai
        for i in range(400):
            with ai.compute.forward(args={"n": i}):
                time.sleep(0.005)
        os.kill(os.getpid(), signal.SIGSEGV)
    ''', env=RING, check=False)
    assert p.returncode == -signal.SIGSEGV, (p.returncode, p.stderr)
    t = runner.trace()
    (line,) = triggers(t)
    assert (line["args"]["name"], line["args"]["value"]) == ("crash", "SIGSEGV"), line
    n = sorted(e["args"]["n"] for e in t.named("forward"))
    assert n[-1] == 399 and n[0] > 50, n
