"""test_config.py: `dftrace config` prints the effective configuration and its sources."""
import os

from conftest import run


def test_defaults_environment_and_file(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("output:\n  member_bytes: 2MiB\ncategories:\n  comm: false\n")
    env = {k: "" for k in ("DFTRACE_ENABLE", "DFTRACER_ENABLE", "DFTRACE_LOG_FILE", "DFTRACER_LOG_FILE")}
    env.update({"DFTRACE_CONFIG": str(cfg), "DFTRACER_LOG_FILE": "/from/dftracer"})
    p = run("config", env=env)
    lines = dict(l.split(" = ", 1) for l in p.stdout.splitlines())
    assert lines["enable"] == "false  (default)"
    assert lines["output.member_bytes"] == "2097152  (yaml %s)" % cfg
    assert lines["output.prefix"] == "/from/dftracer  (env DFTRACER_LOG_FILE)"
    assert lines["categories"] == "-comm  (yaml %s)" % cfg
    assert p.stderr == ""


def test_bad_file_is_reported_in_one_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("output:\n  prefx: /x\n")
    p = run("config", env={"DFTRACE_CONFIG": str(cfg)})
    assert p.stderr.count("\n") == 1 and "did you mean 'output.prefix'" in p.stderr
    assert "output.prefix = ./trace  (default)" in p.stdout


def test_keys_lists_every_key_with_its_variables():
    p = run("config", "--keys")
    assert "output.prefix" in p.stdout and "DFTRACE_LOG_FILE" in p.stdout and "DFTRACER_LOG_FILE" in p.stdout
    assert "gpu.cupti" in p.stdout and "output.compress_threads" in p.stdout


def test_flight_recorder_keys():
    # ring.after: a bare number is steps, a unit makes it a time; trigger.signal: a name with or
    # without SIG, a number, or none; the faults, KILL and STOP are refused (the key keeps its
    # default).
    def effective(**env):
        p = run("config", env=env)
        return dict(l.split(" = ", 1) for l in p.stdout.splitlines()), p.stderr

    lines, err = effective(DFTRACE_RING_AFTER="5", DFTRACE_TRIGGER_SIGNAL="usr1",
                           DFTRACE_OUTPUT_MODE="RING", DFTRACE_TRIGGER_STEP_FACTOR="2.5")
    assert err == ""
    assert lines["ring.after"] == "5  (env DFTRACE_RING_AFTER)"
    assert lines["trigger.signal"] == "SIGUSR1  (env DFTRACE_TRIGGER_SIGNAL)"
    assert lines["output.mode"] == "ring  (env DFTRACE_OUTPUT_MODE)"
    assert lines["trigger.step_factor"] == "2.5  (env DFTRACE_TRIGGER_STEP_FACTOR)"
    lines, err = effective(DFTRACE_RING_AFTER="500ms", DFTRACE_TRIGGER_SIGNAL="none")
    assert lines["ring.after"] == "0.5s  (env DFTRACE_RING_AFTER)" and err == ""
    assert lines["trigger.signal"] == "none  (env DFTRACE_TRIGGER_SIGNAL)"
    for bad in ("SEGV", "9", "0.5s"):
        lines, err = effective(DFTRACE_TRIGGER_SIGNAL=bad)
        assert lines["trigger.signal"] == "SIGUSR2  (default)" and err.count("\n") == 1, err
    lines, err = effective(DFTRACE_TRIGGER_STEP_FACTOR="1", DFTRACE_RING_AFTER="0")
    assert lines["trigger.step_factor"] == "3  (default)" and lines["ring.after"] == "2s  (default)"
    assert err.count("\n") == 2, err


def test_ring_mode_shows_the_sizes_the_writer_uses():
    # In ring mode the writer's queue is 4 MiB unless output.queue_bytes was set, its members
    # are closed at least every ring.seconds / 4 and are at most ring.bytes / 4: `dftrace
    # config` prints those values, with why they differ from the keys' own.
    keys = ("DFTRACE_CONFIG", "DFTRACER_CONFIGURATION", "DFTRACE_OUTPUT_QUEUE_BYTES",
            "DFTRACE_OUTPUT_MEMBER_BYTES", "DFTRACE_OUTPUT_FLUSH_INTERVAL", "DFTRACE_RING_SECONDS",
            "DFTRACE_RING_BYTES", "DFTRACE_OUTPUT_MODE")

    def effective(**env):
        e = {k: "" for k in keys}
        e.update(env)
        p = run("config", env=e)
        assert p.stderr == ""
        return dict(l.split(" = ", 1) for l in p.stdout.splitlines())

    lines = effective(DFTRACE_OUTPUT_MODE="ring")
    assert lines["output.queue_bytes"] == "%d  (default in ring mode)" % (4 << 20)
    assert lines["output.member_bytes"] == "%d  (default)" % (1 << 20)
    assert lines["output.flush_interval"] == "2s  (default)"
    lines = effective(DFTRACE_OUTPUT_MODE="ring", DFTRACE_OUTPUT_QUEUE_BYTES="16MiB",
                      DFTRACE_RING_SECONDS="4", DFTRACE_RING_BYTES="1MiB")
    assert lines["output.queue_bytes"] == "%d  (env DFTRACE_OUTPUT_QUEUE_BYTES)" % (16 << 20)
    assert lines["output.flush_interval"] == "1s  (default, at most ring.seconds / 4 in ring mode)"
    assert lines["output.member_bytes"] == (
        "%d  (default, at most ring.bytes / 4 in ring mode)" % (256 << 10))
    # In file mode the keys' own values, and a queue smaller than four members raised to four.
    lines = effective(DFTRACE_RING_SECONDS="4", DFTRACE_RING_BYTES="1MiB")
    assert lines["output.queue_bytes"] == "%d  (default)" % (16 << 20)
    assert lines["output.flush_interval"] == "2s  (default)"
    # conf/dftrace.yaml, copied as a user's configuration, keeps ring mode's queue.
    template = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conf",
                            "dftrace.yaml")
    lines = effective(DFTRACE_CONFIG=template, DFTRACE_OUTPUT_MODE="ring")
    assert lines["output.queue_bytes"] == "%d  (default in ring mode)" % (4 << 20)
    lines = effective(DFTRACE_CONFIG=template)
    assert lines["output.queue_bytes"] == "%d  (default)" % (16 << 20)
    lines = effective(DFTRACE_OUTPUT_QUEUE_BYTES="64KiB")
    assert lines["output.queue_bytes"] == (
        "%d  (env DFTRACE_OUTPUT_QUEUE_BYTES, at least 4 x output.member_bytes)" % (4 << 20))
