"""test_ring.py: the flight recorder (output.mode: ring; docs/flight-recorder.md) from Python:
dftrace.trigger, a slow step of dftrace.step(), the trigger.min_gap, and an unhandled exception
that writes the window before the interpreter ends."""

RING = {"DFTRACE_OUTPUT_MODE": "ring", "DFTRACE_RING_SECONDS": "1", "DFTRACE_CORE_AFFINITY": "0"}


def triggers(t):
    return [r for r in t.records if r.get("ph") == "M" and r.get("name") == "trigger"]


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
