"""test_config.py: `dftrace config` prints the effective configuration and its sources."""
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
