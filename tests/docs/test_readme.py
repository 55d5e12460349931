"""test_readme.py: the README's C++, C and Python examples and the shell commands that build and
run them, taken from README.md itself,
compiled and run exactly as written; the traces they write are checked line by line with an
independent reader (tests/integration/tracecheck.py) and with `dftrace validate`.

When the README changes, this test reads the new text: an example that no longer compiles,
runs or writes what is expected here fails it."""
import collections
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
import tracecheck as tc  # noqa: E402

CLI = os.environ.get("DFTRACE_CLI", "")
CC = os.environ.get("DFTRACE_TEST_CC", "cc")
CXX = os.environ.get("DFTRACE_TEST_CXX", "c++")
LIB_DIR = os.environ.get("DFTRACE_LIB_DIR", "")
PYTHONPATH = os.environ.get("DFTRACE_TEST_PYTHONPATH", "")
PYTHON = os.environ.get("DFTRACE_TEST_INTERPRETER") or sys.executable
BUILD = os.environ.get("DFTRACE_BUILD_DIR", "")




def code_blocks(language):
    """The fenced code blocks of README.md in this language, in order."""
    text = open(os.path.join(SOURCE, "README.md"), encoding="utf-8").read()
    return re.findall(r"^```" + re.escape(language) + r"\n(.*?)^```", text, re.M | re.S)


def only_block(language):
    blocks = code_blocks(language)
    assert len(blocks) == 1, f"README.md has {len(blocks)} ```{language} blocks; this test expects one"
    return blocks[0]


def clean_env(tmp_path, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DFTRACE", "DFTRACER", "PYTHONPATH"))}
    env.update({"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": str(tmp_path / "out" / "trace")})
    env.update(extra or {})
    return env


def build(compiler, std, source, tmp_path, name):
    exe = tmp_path / name
    cmd = [compiler, std, "-Wall", "-Wextra", "-Werror", str(source), "-o", str(exe),
           "-I" + os.path.join(SOURCE, "include"), "-L" + LIB_DIR, "-ldftrace",
           "-Wl,-rpath," + LIB_DIR]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"the README's example does not compile:\n{' '.join(cmd)}\n{p.stderr}"
    return exe


def run_and_load(cmd, tmp_path, env_extra=None):
    p = subprocess.run(cmd, env=clean_env(tmp_path, env_extra), cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"the README's example exited {p.returncode}: {p.stderr}"
    assert p.stderr == "", f"the README's example printed on stderr: {p.stderr}"
    path = tc.only_file(str(tmp_path / "out"))
    tc.check_members(path)
    events = tc.load(path)
    start, end = tc.check_format(events)
    tc.check_footer(events)
    tc.check_nesting(events)
    assert start and end
    # dftrace validate checks the rest, including that every event lies inside the process's
    # start .. end interval.
    v = subprocess.run([CLI, "validate", path], capture_output=True, text=True, timeout=120)
    assert v.returncode == 0, f"dftrace validate: {v.stdout}{v.stderr}"
    return events


def own(e):
    return {k: v for k, v in e["args"].items() if k not in ("hhash", "level", "p_idx")}


def names(events):
    return collections.Counter(e["name"] for e in tc.user_events(events))


def test_cpp_example(tmp_path):
    src = tmp_path / "train.cpp"
    src.write_text(only_block("cpp"))
    exe = build(CXX, "-std=c++17", src, tmp_path, "train")
    events = run_and_load([str(exe)], tmp_path)
    assert names(events) == {"epoch.iter": 2, "epoch.block": 2, "fetch.iter": 8,
                             "fetch.block": 8, "forward": 8, "all_reduce": 8}
    forward = [own(e) for e in tc.user_events(events) if e["name"] == "forward"]
    assert forward == [{"epoch": s // 4, "step": s} for s in range(8)]
    reduce = [own(e) for e in tc.user_events(events) if e["name"] == "all_reduce"]
    assert reduce == [{"epoch": s // 4, "step": s, "bytes": 1024} for s in range(8)]
    for e in tc.user_events(events):
        assert e["cat"] == {"epoch": "pipeline", "fetch": "dataloader", "forward": "compute",
                            "all_reduce": "comm"}[e["name"].split(".")[0]]
    epochs = sorted(own(e)["count"] for e in tc.user_events(events) if e["name"] == "epoch.block")
    assert epochs == [1, 2]


def test_c_example(tmp_path):
    src = tmp_path / "regions.c"
    src.write_text(only_block("c"))
    exe = build(CC, "-std=c99", src, tmp_path, "regions")
    events = run_and_load([str(exe)], tmp_path)
    got = [(e["name"], e["cat"], own(e)) for e in tc.user_events(events)]
    assert got == [("forward", "compute", {"step": s}) for s in range(3)]


def test_python_example(tmp_path):
    src = tmp_path / "train.py"
    src.write_text(only_block("python"))
    events = run_and_load([PYTHON, str(src)], tmp_path, {"PYTHONPATH": PYTHONPATH})
    assert names(events) == {"epoch.iter": 2, "epoch.block": 2, "fetch.iter": 8,
                             "fetch.block": 8, "forward": 8, "backward": 8}
    forward = [own(e) for e in tc.user_events(events) if e["name"] == "forward"]
    assert forward == [{"epoch": s // 4, "step": s % 4} for s in range(8)]
    backward = [own(e) for e in tc.user_events(events) if e["name"] == "backward"]
    assert backward == forward


def test_build_and_run_commands_as_written(tmp_path):
    """The README's shell block that builds and runs the three examples, run as it is, against
    this build installed into a private prefix (standing for /usr/local: pkg-config, PATH and
    the Python package found there; LD_LIBRARY_PATH stands for ldconfig)."""
    block = [b for b in code_blocks("sh") if "pkg-config --cflags --libs dftrace" in b]
    assert len(block) == 1, "README.md: no (or more than one) sh block that builds the examples"
    prefix, work = tmp_path / "prefix", tmp_path / "work"
    p = subprocess.run(["cmake", f"-DBUILD_DIR={BUILD}", f"-DPREFIX={prefix}",
                        f"-DWORK={tmp_path / 'install'}", "-P",
                        os.path.join(SOURCE, "tests", "cmake", "install_tree.cmake")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    work.mkdir()
    (work / "train.cpp").write_text(only_block("cpp"))
    (work / "regions.c").write_text(only_block("c"))
    (work / "train.py").write_text(only_block("python"))
    shims = tmp_path / "shims"  # `python3` is the interpreter the Python face was built for
    shims.mkdir()
    os.symlink(PYTHON, shims / "python3")
    site = [str(d) for d in (prefix / "lib").glob("python3*/dist-packages")]
    assert len(site) == 1, site
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DFTRACE", "DFTRACER", "PYTHONPATH", "PKG_CONFIG", "LD_LIBRARY"))}
    env.update(PATH=f"{shims}:{prefix / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
               PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"),
               LD_LIBRARY_PATH=str(prefix / "lib"), PYTHONPATH=site[0])
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", block[0]], cwd=str(work), env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"README's commands failed:\n{block[0]}\n{p.stdout}\n{p.stderr}"
    traces = sorted(f.name for f in work.glob("trace-*-app.pfw.gz"))
    assert len(traces) == 3 and sum(t.startswith("trace-train-") for t in traces) == 2, traces
    assert sum(t.startswith("trace-regions-") for t in traces) == 1, traces
    # dftrace stat (from PATH) on the two train traces: C++ (all_reduce) and Python (backward).
    assert "all_reduce" in p.stdout and "backward" in p.stdout, p.stdout


def test_readme_names_the_commands_a_new_user_needs():
    text = open(os.path.join(SOURCE, "README.md"), encoding="utf-8").read()
    for needle in ("PYTHONPATH=$PWD/build/bindings/python", "export PATH=$PWD/build/tools:$PATH",
                   "sudo ldconfig", "import dftrace"):
        assert needle in text, needle
