"""test_disabled.py: switched off (variable unset or 0, DFTRACE_ or DFTRACER_ names), every
decorator is a passthrough and nothing is written; the DFTracer variable names switch it on."""
import pytest

PROGRAM = '''
    import asyncio
    import dftrace
    from dftrace import ai

    @ai.compute.forward
    def forward(x):
        return x * 2

    @ai.dataloader.fetch
    def gen(n):
        yield from range(n)

    @ai.compute.backward
    async def backward(x):
        return x + 1

    class M:
        @ai.checkpoint.init
        def __init__(self):
            self.v = 1

    assert forward(2) == 4
    assert list(ai.dataloader.fetch.iter(gen(3))) == [0, 1, 2]
    assert asyncio.run(backward(1)) == 2
    assert M().v == 1
    with ai.compute.step:
        pass
    ai.compute.step.start(); ai.compute.step.stop()
    ai.update(step=1)
    print("enabled" if dftrace.is_enabled() else "disabled")
'''


@pytest.mark.parametrize("env", [{}, {"DFTRACE_ENABLE": "0"}, {"DFTRACER_ENABLE": "0"}])
def test_switched_off(runner, env):
    p = runner.run(PROGRAM, enable=False, env=dict(env, DFTRACE_LOG_FILE=runner.trace_dir + "/t"))
    assert p.stdout.strip() == "disabled"
    assert p.stderr == ""
    assert runner.traces() == []


def test_dftracer_names_switch_it_on(runner):
    p = runner.run(PROGRAM, enable=False,
                   env={"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": runner.trace_dir + "/t"})
    assert p.stdout.strip() == "enabled"
    t = runner.trace()
    assert t.counts() == {"forward": 1, "fetch": 1, "fetch.iter": 3, "fetch.block": 3,
                          "backward": 1, "checkpoint.init": 1, "step": 2}


def test_passthrough_is_the_function(runner):
    """Disabled, a traced call runs the function itself: same result, same exceptions,
    same frames (the wrapper adds no Python frame)."""
    runner.run('''
        import traceback
        from dftrace import ai

        @ai.compute.forward
        def boom():
            raise ValueError("v")

        try:
            boom()
        except ValueError as e:
            frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
            assert frames == ["<module>", "boom"], frames
    ''', enable=False)


def test_unwritable_trace_path_does_not_harm_the_program(runner):
    p = runner.run('''
        import dftrace
        from dftrace import ai

        @ai.compute.forward
        def f(x):
            return x + 1

        assert sum(f(i) for i in range(1000)) == 500500
        with ai.compute.backward(args={"a": 1}):
            pass
        print("done")
    ''', enable=True, env={"DFTRACE_LOG_FILE": "/nonexistent-dftrace-dir/sub/trace"})
    assert p.returncode == 0 and p.stdout.strip() == "done"
    assert all(line.startswith("dftrace: ") for line in p.stderr.splitlines() if line)


def test_initialize_with_data_dir_alone_says_it_records_nothing(runner):
    """initialize(data_dir=...) without enable records nothing: the session says so and why,
    and at log_level info one line on stderr does too."""
    code = '''
        import dftrace
        s = dftrace.initialize(data_dir=".")
        print(s.enabled)
        print(s.state)
        print(repr(s))
        open("data.txt", "w").write("x")
    '''
    for env, lines in (({}, 0), ({"DFTRACE_LOG_LEVEL": "info"}, 1)):
        p = runner.run(code, enable=False, env=dict(env, DFTRACE_LOG_FILE=runner.trace_dir + "/t"))
        enabled, state, rep = p.stdout.splitlines()
        assert enabled == "False"
        assert state.startswith("not recording: disabled by configuration")
        assert "DFTRACE_ENABLE=1" in state
        assert rep == "<dftrace session: %s>" % state
        assert p.stderr.count("\n") == lines, p.stderr
        if lines:
            assert p.stderr.startswith("dftrace: info: not recording: disabled by configuration")
        assert runner.traces() == []
    p = runner.run(code.replace('data_dir="."', 'data_dir=".", enable=True'), enable=False,
                   env={"DFTRACE_LOG_FILE": runner.trace_dir + "/t"})
    enabled, state, _ = p.stdout.splitlines()
    assert enabled == "True" and state.startswith("recording"), p.stdout
