"""conftest.py: helpers of the Python-face tests: run a program in a fresh interpreter with
tracing set up by the environment, and read back the trace files it wrote."""
from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import subprocess
import sys
import textwrap

import pytest

# The build tree's package, as CTest passes it (PYTHONPATH); the children inherit it.
PYTHON = sys.executable


class Trace:
    """One trace file, parsed and checked for the shape docs/format.md gives it."""

    def __init__(self, path: str) -> None:
        self.path = path
        raw = gzip.open(path, "rt").read() if path.endswith(".gz") else open(path).read()
        lines = raw.splitlines()
        assert lines and lines[0] == "[", f"{path}: does not start with '['"
        assert lines[-1] == "]", f"{path}: not closed with ']' (not finalized?)"
        self.records = [json.loads(line) for line in lines[1:-1] if line.strip()]
        ends = [r for r in self.records if r.get("name") == "end" and r.get("cat") == "dftracer"]
        assert len(ends) == 1, f"{path}: expected one end event, found {len(ends)}"
        self.end = ends[0]

    @property
    def events(self) -> list:
        """The application's complete events (without the tracer's start/end)."""
        return [r for r in self.records if r.get("ph") == "X" and r.get("cat") != "dftracer"]

    @property
    def metadata(self) -> list:
        return [r for r in self.records if r.get("ph") == "M" and r.get("name") == "CM"]

    def named(self, name: str) -> list:
        return [e for e in self.events if e["name"] == name]

    def counts(self) -> dict:
        return dict(collections.Counter(e["name"] for e in self.events))

    def by_id(self) -> dict:
        return {e["id"]: e for e in self.events}


def read_traces(directory: str) -> list:
    return [Trace(p) for p in sorted(glob.glob(os.path.join(directory, "*.pfw*")))]


class Runner:
    def __init__(self, tmp_path) -> None:
        self.dir = str(tmp_path)
        self.trace_dir = os.path.join(self.dir, "traces")
        os.makedirs(self.trace_dir, exist_ok=True)

    def run(self, code: str, *, enable: bool = True, env: dict | None = None,
            script: str = "prog.py", check: bool = True, timeout: int = 300):
        """Runs `code` as a script in a fresh interpreter; returns the CompletedProcess."""
        path = os.path.join(self.dir, script)
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
        if enable:
            e["DFTRACE_ENABLE"] = "1"
            e["DFTRACE_LOG_FILE"] = os.path.join(self.trace_dir, "trace")
        if e.get("PYTHONPATH"):  # the child runs elsewhere: make the build tree's path absolute
            e["PYTHONPATH"] = os.pathsep.join(
                os.path.abspath(x) for x in e["PYTHONPATH"].split(os.pathsep))
        e.update(env or {})
        p = subprocess.run([PYTHON, path], cwd=self.dir, env=e, capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"program failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def traces(self) -> list:
        return read_traces(self.trace_dir)

    def trace(self) -> Trace:
        t = self.traces()
        assert len(t) == 1, f"expected one trace file, found {[x.path for x in t]}"
        return t[0]


@pytest.fixture
def runner(tmp_path):
    return Runner(tmp_path)
