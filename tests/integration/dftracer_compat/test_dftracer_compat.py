"""test_dftracer_compat.py: programs written against DFTracer's macros build unchanged and
write a dftrace trace with DFTracer's categories and names."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]


def run(tmp_path, prog, arg, env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE", "DFTRACER"))}
    e.update(env)
    p = subprocess.run([os.path.join(BIN, prog), arg], env=e, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p


@pytest.mark.parametrize("init", ["0", "1"])
def test_c_macros(tmp_path, init):
    run(tmp_path, "dftracer_app_c", init, {"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": str(tmp_path / "t")})
    path = tc.only_file(tmp_path)
    ev = tc.load(path)
    tc.check_format(ev)
    tc.check_footer(ev)
    tc.check_nesting(ev)
    x = tc.user_events(ev)
    assert [(e["name"], e["cat"], e["args"]["level"]) for e in x] == [
        ("bar", "C_APP", 3), ("CUSTOM_BLOCK", "C_APP", 3), ("CUSTOM", "C_APP", 2), ("foo", "C_APP", 1)]
    foo = x[3]["args"]
    assert foo["key"] == 0 and foo["key2"] == "0"
    assert x[2]["args"]["size"] == 1024 and x[2]["args"]["op"] == "read"
    cm = [e for e in ev if e["name"] == "CM"]
    assert [(c["args"]["name"], c["args"]["value"]) for c in cm] == [("key", "value")]


def test_cpp_macros(tmp_path):
    run(tmp_path, "dftracer_app_cpp", "1", {"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": str(tmp_path / "t")})
    ev = tc.load(tc.only_file(tmp_path))
    tc.check_format(ev)
    tc.check_nesting(ev)
    x = tc.user_events(ev)
    assert [(e["name"], e["cat"], e["args"]["level"]) for e in x] == [
        ("bar", "CPP_APP", 3), ("CUSTOM_BLOCK", "CPP_APP", 3), ("CUSTOM", "CPP_APP", 2), ("foo", "CPP_APP", 1)]
    assert x[0]["args"]["depth"] == 2
    assert x[1]["args"]["op"] == "write"
    assert x[2]["args"]["size"] == 4096
    assert x[3]["args"]["key"] == 7 and x[3]["args"]["name"] == "value"


def test_nothing_written_without_dftracer_enable(tmp_path):
    run(tmp_path, "dftracer_app_c", "1", {"DFTRACER_LOG_FILE": str(tmp_path / "t")})
    run(tmp_path, "dftracer_app_cpp", "1", {"DFTRACER_LOG_FILE": str(tmp_path / "t")})
    assert os.listdir(tmp_path) == []
