"""test_torch_spawn.py: DataLoader workers started with `spawn` or `forkserver` in a script
that only asked for tracing in its code (no `dftrace run`): one file per worker, linked to its
parent (`ppid`, `PR worker_id`), the workers' batches, samples and collates recorded, the user's
worker_init_fn still run, and `dftrace analyze` grouping the workers with the parent."""
import json
import os
import subprocess

import pytest

pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")

LOADER = '''
import os
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset
import dftrace
import dftrace.torch as dt


def init_fn(worker_id):  # the user's own: it must still run, in each worker
    open(os.path.join("marks", "%d-%d" % (worker_id, os.getpid())), "w").close()


if __name__ == "__main__":
    method, how = sys.argv[1], sys.argv[2]
    os.makedirs("marks")
    if how == "initialize":  # enabled in code only: nothing in the environment for the workers
        dftrace.initialize("traces/run", enable=True, export_environment=False)
        assert "DFTRACE_ENABLE" not in os.environ
        handle = dt.instrument_dataloader()
    else:                    # enabled by the environment, PyTorch instrumented by auto()
        handle = dt.auto()
    data = TensorDataset(torch.randn(40, 4), torch.randn(40, 1))
    loader = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context=method,
                        worker_init_fn=init_fn)
    batches = sum(1 for _ in loader)
    handle.remove()
    print("batches", batches, "pid", os.getpid())
'''


def _start(trace):
    return next(r for r in trace.records if r.get("name") == "start" and r.get("cat") == "dftracer")


def _properties(trace) -> dict:
    out = {}
    for r in trace.records:
        if r.get("ph") == "M" and r.get("name") == "PR":
            out[r["args"]["name"]] = r["args"]["value"]
    return out


@pytest.mark.parametrize("method,how", [("spawn", "auto"), ("spawn", "initialize"),
                                        ("forkserver", "auto"), ("forkserver", "initialize")])
def test_spawned_workers_are_traced_without_dftrace_run(runner, method, how):
    p = runner.run("import sys\nsys.argv[1:] = [%r, %r]\n" % (method, how) + LOADER,
                   script="load.py", enable=how == "auto")
    assert "batches 5" in p.stdout, p.stdout + p.stderr
    assert "dftrace:" not in p.stderr, p.stderr  # nothing said in the workers either
    parent_pid = int(p.stdout.split("pid")[1])
    traces = runner.traces()
    parents = [t for t in traces if t.records[0]["pid"] == parent_pid]
    workers = [t for t in traces if t.records[0]["pid"] != parent_pid]
    assert len(parents) == 1 and len(parents[0].named("fetch")) == 6, [t.path for t in traces]
    assert len(workers) == 2, [t.path for t in traces]
    # the user's worker_init_fn ran once in each worker, and each worker wrote one file
    marks = sorted(os.listdir(os.path.join(runner.dir, "marks")))
    assert sorted(m.split("-")[0] for m in marks) == ["0", "1"], marks
    assert {int(m.split("-")[1]) for m in marks} == {t.records[0]["pid"] for t in workers}
    batches = 0
    for t in workers:
        start = _start(t)
        assert start["args"]["ppid"] == parent_pid, (t.path, start)  # not the forkserver
        wid = _properties(t).get("worker_id")
        assert wid in (0, 1), (t.path, _properties(t))
        name = os.path.basename(t.path)
        prefix = "run-load-worker%d-" % wid if how == "initialize" else "trace-load-worker%d-" % wid
        assert name.startswith(prefix), name
        assert all(e["args"]["worker"] == wid for e in t.named("batch"))
        batches += len(t.named("batch"))
        assert len(t.named("item")) == 8 * len(t.named("batch"))
        assert len(t.named("collate")) == len(t.named("batch"))
        assert t.end["args"]["dropped_events"] == 0
    assert batches == 5
    # the analysis puts the workers in the parent's group
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    a = subprocess.run([cli, "analyze", "--json", runner.trace_dir], capture_output=True,
                       text=True, timeout=300)
    assert a.returncode == 0, a.stderr
    groups = json.loads(a.stdout)["groups"]
    assert len(groups) == 1, groups
    assert sorted(int(x) for x in groups[0]["pids"]) == sorted(
        t.records[0]["pid"] for t in traces)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawned_workers_named_and_tied_under_dftrace_run_with_io(runner, method):
    """Under `dftrace run` with I/O tracing libdftrace_io starts tracing in each worker before
    Python runs: the workers still get the script's name with their id, and the script as
    their parent (not the fork server)."""
    script = os.path.join(runner.dir, "load.py")
    with open(script, "w") as f:
        f.write("import sys\nsys.argv[1:] = [%r, 'auto']\n" % method + LOADER)
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(x)
                                            for x in env["PYTHONPATH"].split(os.pathsep))
    p = subprocess.run([cli, "run", "--prefix", os.path.join(runner.trace_dir, "t"), "--",
                        "/usr/bin/python3", script], cwd=runner.dir, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "batches 5" in p.stdout, p.stdout + p.stderr
    parent_pid = int(p.stdout.split("pid")[1])
    traces = runner.traces()
    workers = [t for t in traces if _properties(t).get("worker_id") is not None]
    assert len(workers) == 2, [t.path for t in traces]
    for t in workers:
        wid = _properties(t)["worker_id"]
        name = os.path.basename(t.path)
        assert name.startswith("t-load-worker%d-%d-" % (wid, t.records[0]["pid"])), name
        # the header says it where the file was made after the worker learnt it; a PR line
        # after the start event otherwise
        ppid = _properties(t).get("ppid", _start(t)["args"]["ppid"])
        assert ppid == parent_pid, (t.path, _start(t), _properties(t))
        exec_name = _properties(t)["exec"]
        assert exec_name == "load-worker%d" % wid, exec_name
        assert t.named("batch"), t.path
    # the analysis puts every process in the script's group (a PR ppid counts as the start's)
    a = subprocess.run([cli, "analyze", "--json", runner.trace_dir], capture_output=True,
                       text=True, timeout=300)
    assert a.returncode == 0, a.stderr
    groups = json.loads(a.stdout)["groups"]
    assert len(groups) == 1, groups
