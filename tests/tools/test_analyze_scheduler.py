# test_analyze_scheduler.py: `dftrace analyze --scheduler ADDR --json` runs the analysis on a
# real Dask cluster (a distributed.LocalCluster of 2 worker processes started here, reached by
# its scheduler's address) through dftrace.analyze, and prints the document the command prints
# without it, whole; damaged input exits 2 as it does there; a Python without `distributed`
# gives one line and exit status 2.
import json
import os
import shutil

import pytest

from conftest import need, run

need("pandas", "distributed")
from test_analyze_dask import rank_run  # noqa: E402


@pytest.fixture(scope="module")
def address(dask_cluster):
    return dask_cluster.scheduler_address


@pytest.fixture(scope="module")
def run6(tmp_path_factory):
    return rank_run(tmp_path_factory.mktemp("run6"))


def test_the_document_equals_the_local_one(address, run6):
    local = run("analyze", "--json", *run6)
    remote = run("analyze", "--scheduler", address, "--json", *run6)
    assert json.loads(remote.stdout) == json.loads(local.stdout)
    assert remote.stdout == local.stdout  # the same text, too
    doc = json.loads(remote.stdout)
    assert doc["inputs"]["processes"] == 18 and len(doc["groups"]) == 6
    assert [s["rank"] for s in doc["stragglers"]] == [3]


def test_options_and_a_directory(address, run6, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {name: compute_heavy, metric: bound_by.compute, warning: 10,\n"
                     "     critical: 90, min_ns: 1000, suggestion: look at the model}\n")
    d = os.path.dirname(run6[0])
    args = ("--json", "--steps", "step", "--rules", str(rules), d)
    local = run("analyze", *args, check=False)
    remote = run("analyze", "--scheduler", address, *args, check=False)
    assert remote.returncode == local.returncode
    assert remote.returncode == 0, remote.stderr
    doc = json.loads(remote.stdout)
    assert doc == json.loads(local.stdout)
    assert "compute_heavy" in [f["rule"] for f in doc["findings"]]


def test_damaged_input_exits_2_with_the_same_document(address, run6, tmp_path):
    files = []
    for p in run6[:3]:
        files.append(str(tmp_path / os.path.basename(p)))
        shutil.copy(p, files[-1])
    with open(files[0], "r+b") as f:
        f.truncate(os.path.getsize(files[0]) - 20)
    local = run("analyze", "--json", *files, check=False)
    remote = run("analyze", "--scheduler", address, "--json", *files, check=False)
    assert local.returncode == remote.returncode == 2
    assert json.loads(remote.stdout) == json.loads(local.stdout)
    assert not json.loads(remote.stdout)["inputs"]["complete"]
    assert "--allow-damaged" in remote.stderr
    ok = run("analyze", "--scheduler", address, "--json", "--allow-damaged", *files, check=False)
    assert ok.returncode == 0 and json.loads(ok.stdout) == json.loads(local.stdout)


def test_without_json_one_line(address, run6):
    p = run("analyze", "--scheduler", address, *run6, check=False)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "dftrace: analyze: --scheduler prints the JSON document only: add --json\n"


def test_a_python_without_distributed_one_line(run6, tmp_path):
    # Debian's Python without its site packages (-S): dftrace imports, `distributed` does not.
    py = tmp_path / "python-without-site"
    py.write_text("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n")
    py.chmod(0o755)
    p = run("analyze", "--scheduler", "tcp://127.0.0.1:8786", "--json", *run6, check=False,
            env={"DFTRACE_PYTHON": str(py)})
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert p.stderr.startswith("dftrace: analyze: --scheduler needs Python's `distributed`")
