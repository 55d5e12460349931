"""test_io_sqlite.py: SQLite's own I/O in a Python program traced in the application mode
(dftrace.initialize with data_dir, no preloading). SQLite calls pread64, pwrite64 and fcntl
through its table of function pointers (aSyscall[], filled by the loader's absolute
relocations), not through its global offset table."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import read_traces

SCRIPT = """
import os, sqlite3, sys
data, mode = sys.argv[1], sys.argv[2]
if mode == "app":
    import dftrace
    dftrace.initialize(log_file=os.path.join(os.path.dirname(data), "traces", "t"),
                       data_dir=data, enable=True)
db = sqlite3.connect(os.path.join(data, "db.sqlite"))
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
for i in range(20):
    with db:
        db.executemany("INSERT INTO t (v) VALUES (?)", [("x" * 300,)] * 50)
assert db.execute("SELECT count(*), sum(length(v)) FROM t").fetchone() == (1000, 300000)
db.close()
print("sqlite ok")
"""

WANTED = ({"pwrite", "pwrite64"}, {"pread", "pread64"}, {"fcntl", "fcntl64"})


def db_call_names(trace_dir, data):
    names = set()
    for t in read_traces(trace_dir):
        files = {r["args"]["value"]: r["args"]["name"] for r in t.records
                 if r.get("name") == "FH"}
        for e in t.events:
            if e.get("cat") == "POSIX" and \
                    files.get(e["args"].get("fhash"), "").startswith(str(data) + "/db.sqlite"):
                names.add(e["name"])
    return names


def test_sqlite_in_the_application_mode_records_what_preloading_records(tmp_path):
    cli = os.path.join(os.environ.get("DFTRACE_BUILD_DIR", ""), "tools", "dftrace")
    if not os.path.exists(cli):
        pytest.skip("the dftrace command is not built (%s)" % cli)
    script = tmp_path / "db.py"
    script.write_text(SCRIPT)
    found = {}
    for mode in ("app", "preload"):
        data = tmp_path / mode / "data"
        data.mkdir(parents=True)
        traces = tmp_path / mode / "traces"
        traces.mkdir()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DFTRACE_", "DFTRACER_")) and k != "LD_PRELOAD"}
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(x) for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x)
        cmd = [sys.executable, str(script), str(data), mode]
        if mode == "preload":
            cmd = [cli, "run", "--prefix", str(traces / "t"), "--data-dirs", str(data), "--"] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0 and "sqlite ok" in p.stdout, p.stdout + p.stderr
        found[mode] = db_call_names(str(traces), data)
    for kinds in WANTED:
        assert kinds & found["preload"], (kinds, found["preload"])
        assert kinds & found["app"], (kinds, found["app"])
    assert found["preload"] <= found["app"], found
