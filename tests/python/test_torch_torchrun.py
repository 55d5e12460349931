"""test_torch_torchrun.py: `dftrace run --torch -- python3 -m torch.distributed.run
--nproc_per_node 2 script.py` with nothing set by hand: one trace per rank, named with the
rank, with its collectives and the launcher's local rank. Debian's torch 1.13 torchrun fails by
itself on Python 3.11 (an AttributeError in torch.distributed.elastic's to_map), so this runs
where torch is 2.x (the device machine's)."""
import os
import socket
import subprocess

import pytest

from conftest import PYTHON, read_traces

torch = pytest.importorskip("torch", reason="python3-torch is not installed (scripts/setup-debian.sh test)")
OLD_TORCHRUN = int(torch.__version__.split(".")[0]) < 2


SCRIPT = """
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
for _ in range(3):
    dist.all_reduce(torch.ones(1000))
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.skipif(OLD_TORCHRUN, reason="torch %s's torchrun fails by itself on this Python "
                    "(elastic's to_map AttributeError); run where torch is 2.x" % torch.__version__)
@pytest.mark.skipif(not torch.distributed.is_gloo_available(), reason="this torch has no gloo backend")
def test_torchrun_under_dftrace_run(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DFTRACE_", "DFTRACER_")) and k != "PYTHONPATH"}
    p = subprocess.run([cli, "run", "--torch", "--no-io", "--prefix", str(tmp_path / "t"), "--",
                        PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                        "--master_addr", "127.0.0.1", "--master_port", str(port), str(script)],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    ranks = {}
    for t in read_traces(str(tmp_path)):
        pr = {r["args"]["name"]: r["args"]["value"] for r in t.records
              if r.get("name") == "PR" and r.get("ph") == "M"}
        if "rank" in pr:
            ranks[pr["rank"]] = (t, pr)
    assert sorted(ranks) == [0, 1], [t.path for t in read_traces(str(tmp_path))]
    for rank, (t, pr) in ranks.items():
        assert "-job-%d-" % rank in os.path.basename(t.path)
        assert pr["size"] == 2 and pr["local_rank"] == rank and pr["local_size"] == 2
        assert "clock_offset_ns" in pr
        reduces = t.named("all_reduce")
        assert len(reduces) == 3 and all(e["args"]["bytes"] == 4000 for e in reduces)
        assert len(t.named("barrier")) == 1
