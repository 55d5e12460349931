"""test_torch_distributed.py: torch.distributed traced without annotations, on real gloo process
groups of 2 ranks (Debian's CPU PyTorch): every collective and point-to-point call with its
exact bytes, dtype and count, asynchronous calls linked to their wait, DDP's gradient buckets
through a user's hook and through DDP's own reduction, the ranks in the files and the clocks
aligned by `dftrace merge`.

Two jobs, each run once for the module:
- `calls`: 2 processes launched by hand (as a launcher would: RANK, WORLD_SIZE, MASTER_*),
  instrumented in code by dftrace.torch.instrument_distributed(); rank 1's trace clock is
  skewed by 5 s (DFTRACE_TEST_CLOCK_SKEW_NS) so that the alignment has something to find.
- `spawn`: a DDP training loop started by torch.multiprocessing.spawn under `dftrace run`,
  with nothing in the script about dftrace.
"""
import gzip
import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import PYTHON, read_traces

torch = pytest.importorskip("torch", reason="python3-torch is not installed (scripts/setup-debian.sh test)")
pytestmark = pytest.mark.skipif(
    not (torch.distributed.is_available() and torch.distributed.is_gloo_available()),
    reason="this torch has no gloo backend")

SKEW_NS = 5 * 10**9  # rank 1's trace clock runs 5 s ahead

CALLS = r"""
import json, os, sys
import torch
import torch.distributed as dist
import dftrace
from dftrace import ai
import dftrace.torch as dt
from torch.nn.parallel import DistributedDataParallel as DDP

import torch.distributed.distributed_c10d as c10d
WRAPPED = ("all_reduce", "init_process_group", "batch_isend_irecv")
# torch's own decorators (functools.wraps) give some of these a __wrapped__ of their own:
# remove() must give back these very objects.
originals = {f: getattr(dist, f) for f in WRAPPED}
original_wait, original_ddp_init = dist.Work.wait, DDP.__init__
handle = dt.instrument_distributed()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo")
report = {"errors": {}}

def maybe(name, fn):  # gloo lacks some collectives in some torch versions: torch says so
    try:
        fn()
    except RuntimeError as e:
        report["errors"][name] = str(e)

with ai.pipeline.train:
    dist.all_reduce(torch.arange(6, dtype=torch.float32))
    dist.all_reduce(torch.ones(3, dtype=torch.int64), op=dist.ReduceOp.MAX)
    dist.all_gather([torch.zeros(6) for _ in range(world)], torch.ones(6))
    dist.broadcast(torch.zeros(5, dtype=torch.float64), src=1)
    dist.reduce(torch.ones(7, dtype=torch.int32), dst=0, op=dist.ReduceOp.MIN)
    dist.all_to_all_single(torch.zeros(4 * world), torch.ones(4 * world))
    dist.gather(torch.ones(2), [torch.zeros(2) for _ in range(world)] if rank == 0 else None, dst=0)
    dist.scatter(torch.zeros(3), [torch.ones(3) for _ in range(world)] if rank == 0 else None, src=0)
    dist.barrier()
    maybe("all_gather_into_tensor", lambda: dist.all_gather_into_tensor(torch.zeros(4 * world), torch.ones(4)))
    maybe("reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(torch.zeros(4), torch.ones(4 * world)))
    maybe("reduce_scatter", lambda: dist.reduce_scatter(torch.zeros(4), [torch.ones(4)] * world))
    maybe("all_to_all", lambda: dist.all_to_all([torch.zeros(2)] * world, [torch.ones(2)] * world))
    # the coalesced forms: one event for the whole list, however torch carries it out
    dist.all_reduce_coalesced([torch.ones(3), torch.ones(5)], op=dist.ReduceOp.MAX)
    dist.all_gather_coalesced([[torch.zeros(2, dtype=torch.int64), torch.zeros(7, dtype=torch.int64)]
                               for _ in range(world)],
                              [torch.ones(2, dtype=torch.int64), torch.ones(7, dtype=torch.int64)])
    dist.all_reduce(torch.ones(16), async_op=True).wait()
    dist.broadcast(torch.ones(8, dtype=torch.float16), src=0, async_op=True).wait()
    if rank == 0:
        dist.send(torch.ones(10), dst=1, tag=3)
        dist.isend(torch.ones(12, dtype=torch.float64), dst=1).wait()
        ops = [dist.P2POp(dist.isend, torch.ones(5), 1), dist.P2POp(dist.irecv, torch.zeros(6), 1)]
    else:
        report["recv_from"] = dist.recv(torch.zeros(10), tag=3)
        dist.irecv(torch.zeros(12, dtype=torch.float64), src=0).wait()
        ops = [dist.P2POp(dist.irecv, torch.zeros(5), 0), dist.P2POp(dist.isend, torch.ones(6), 0)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for _ in range(5):
        dist.barrier()

# DDP with the script's own hook, registered after the model is built
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512),
                            torch.nn.ReLU(), torch.nn.Linear(512, 8))
ddp = DDP(model, bucket_cap_mb=1)
hook_calls = []

def my_hook(state, bucket):  # (bucket, bytes of its parameters) per call
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    hook_calls.append((bucket.index(), sum(p.numel() * p.element_size() for p in bucket.parameters())))
    return default_hooks.allreduce_hook(state, bucket)

ddp.register_comm_hook(None, my_hook)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
x, y = torch.randn(8, 256) + rank, torch.randn(8, 8)
steps = []
for i in range(3):
    with ai.compute.step:
        n = len(hook_calls)
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        opt.zero_grad()
        steps.append(hook_calls[n:])
report["steps"] = steps
report["grad_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
try:
    ddp.register_comm_hook(None, my_hook)
except RuntimeError as e:
    report["second_hook"] = str(e)

report["wrapped"] = all(getattr(dist, f) is not originals[f] for f in WRAPPED) and \
    dist.Work.wait is not original_wait and DDP.__init__ is not original_ddp_init
handle.remove()
report["undone"] = all(getattr(dist, f) is originals[f] and getattr(c10d, f) is originals[f]
                       for f in WRAPPED) and \
    dist.Work.wait is original_wait and DDP.__init__ is original_ddp_init
dist.all_reduce(torch.ones(2))  # after remove(): not recorded
dist.destroy_process_group()
print("REPORT " + json.dumps(report))
"""

# Each call of the `calls` job: (event, bytes, dtype, count, extra args), in order, per rank.
def expected_calls(rank):
    common = [
        ("all_reduce", 24, "float32", 6, {"op": "SUM"}),
        ("all_reduce", 24, "int64", 3, {"op": "MAX"}),
        ("all_gather", 24, "float32", 6, {}),
        ("broadcast", 40, "float64", 5, {"root": 1}),
        ("reduce", 28, "int32", 7, {"op": "MIN", "root": 0}),
        ("all_to_all_single", 32, "float32", 8, {}),
        ("gather", 8, "float32", 2, {"root": 0}),
        ("scatter", 12, "float32", 3, {"root": 0}),
        ("barrier", None, None, None, {}),
        ("all_gather_into_tensor", 16, "float32", 4, {}),
        ("reduce_scatter_tensor", 32, "float32", 8, {"op": "SUM"}),
        ("reduce_scatter", 32, "float32", 8, {"op": "SUM"}),
        ("all_to_all", 16, "float32", 4, {}),
        ("all_reduce_coalesced", 32, "float32", 8, {"op": "MAX", "tensors": 2}),
        ("all_gather_coalesced", 72, "int64", 9, {"tensors": 2}),
        ("all_reduce", 64, "float32", 16, {"op": "SUM", "async_op": True}),
        ("broadcast", 16, "float16", 8, {"root": 0, "async_op": True}),
    ]
    if rank == 0:
        p2p = [("send", 40, "float32", 10, {"peer": 1, "tag": 3}),
               ("isend", 96, "float64", 12, {"peer": 1, "tag": 0, "async_op": True})]
    else:
        p2p = [("recv", 40, "float32", 10, {"peer": 0, "tag": 3}),  # the peer it came from
               ("irecv", 96, "float64", 12, {"peer": 0, "tag": 0, "async_op": True})]
    return common + p2p


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env():
    e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    if e.get("PYTHONPATH"):
        e["PYTHONPATH"] = os.pathsep.join(os.path.abspath(x) for x in e["PYTHONPATH"].split(os.pathsep))
    return e


def pr_lines(trace):
    return {r["args"]["name"]: r["args"]["value"] for r in trace.records
            if r.get("name") == "PR" and r.get("ph") == "M"}


def cli():
    return os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")


def run_ranks(d, name, code, world, env_of_rank):
    """Runs `code` as `world` ranks launched by hand in folder d, each with the environment
    env_of_rank(rank) adds; every rank must succeed. Returns their standard outputs."""
    script = d / name
    script.write_text(code)
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(clean_env(), RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(d / "t"),
                   **env_of_rank(rank))
        procs.append(subprocess.Popen([PYTHON, str(script)], cwd=str(d), env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, out + err
        outs.append(out)
    return outs


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    d = tmp_path_factory.mktemp("calls")
    outs = run_ranks(d, "calls.py", CALLS, 2, lambda rank: {
        "DFTRACE_TEST_CLOCK_SKEW_NS": str(SKEW_NS if rank == 1 else 0)})
    reports = [json.loads(out.split("REPORT ", 1)[1]) for out in outs]
    traces = {pr_lines(t)["rank"]: t for t in read_traces(str(d))}
    return {"dir": d, "reports": reports, "traces": traces}


def test_each_call_recorded_with_exact_bytes_dtype_count(calls):
    for rank in (0, 1):
        t, report = calls["traces"][rank], calls["reports"][rank]
        train = t.named("train")[0]
        comm = [e for e in t.events if e["cat"] == "comm" and e["name"] != "wait"
                and e["ts"] < train["ts"] + train["dur"] and e["name"] != "batch_isend_irecv"]
        want = expected_calls(rank)
        names = [e["name"] for e in comm]
        assert names == [w[0] for w in want] + ["barrier"] * 5, (rank, names)
        for e, (name, nbytes, dtype, count, extra) in zip(comm, want):
            a = e["args"]
            assert (a.get("bytes"), a.get("dtype"), a.get("count")) == (nbytes, dtype, count), e
            assert a["comm_size"] == 2 and a["comm_rank"] == rank, e
            assert a["async_op"] is extra.get("async_op", False), e
            for k, v in extra.items():
                assert a[k] == v, (k, e)
            # an event nests under the ai node open around it
            assert a["p_idx"] == train["id"] and a["level"] == train["args"]["level"] + 1, e
            # a call torch refused is recorded with the error; one it accepted without
            assert ("error" in a) == (name in report["errors"]), (e, report["errors"])
        assert len(t.named("barrier")) == 6
    assert calls["reports"][1]["recv_from"] == 0


def test_batch_isend_irecv(calls):
    for rank in (0, 1):
        (b,) = calls["traces"][rank].named("batch_isend_irecv")
        sent, got = (20, 24) if rank == 0 else (24, 20)  # rank 0 sends 5 floats, receives 6
        assert (b["args"]["bytes"], b["args"]["recv_bytes"], b["args"]["ops"]) == (sent, got, 2)
        assert b["args"]["async_op"] is True


def test_async_calls_linked_to_their_wait(calls):
    for rank in (0, 1):
        t = calls["traces"][rank]
        issued = [e for e in t.events if e["cat"] == "comm" and e["name"] != "wait"
                  and e["args"].get("async_op") is True and "bucket" not in e["args"]]
        waits = t.named("wait")
        ids = [e["args"]["comm_id"] for e in issued]
        assert len(ids) == len(set(ids)) == 4, issued  # all_reduce, broadcast, isend/irecv, batch
        # one wait per Work: batch_isend_irecv returned two
        by_id = {}
        for w in waits:
            by_id.setdefault(w["args"]["comm_id"], []).append(w)
        assert sorted(by_id) == sorted(ids)
        for e in issued:
            ws = by_id[e["args"]["comm_id"]]
            assert len(ws) == (2 if e["name"] == "batch_isend_irecv" else 1)
            for w in ws:
                assert w["args"]["op"] == e["name"] and w["ts"] >= e["ts"] + e["dur"]


def test_ddp_user_hook_kept_and_each_bucket_recorded_once(calls):
    for rank in (0, 1):
        t, report = calls["traces"][rank], calls["reports"][rank]
        assert report["second_hook"].startswith("register_comm_hook or register_builtin_comm_hook")
        steps = t.named("step")
        # DDP rebuilds its buckets after the first step: several from then on
        assert len(steps) == 3 and all(len(s) >= 2 for s in report["steps"][1:]), report["steps"]
        buckets = [e for e in t.named("all_reduce") if "bucket" in e["args"]]
        for s, called in zip(steps, report["steps"]):
            mine = [e for e in buckets if s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1]
            # one event per hook call (the all_reduce the hook calls is not recorded again),
            # with the bytes of the bucket's parameters
            assert sorted((e["args"]["bucket"], e["args"]["bytes"]) for e in mine) == sorted(map(tuple, called))
            assert sum(e["args"]["bytes"] for e in mine) == report["grad_bytes"]
            for e in mine:
                a = e["args"]
                assert a["count"] * 4 == a["bytes"] and a["dtype"] == "float32"
                assert a["hook"] == "my_hook" and a["comm_size"] == 2 and a["comm_rank"] == rank
                assert a["params"] >= 1
        assert len(buckets) == sum(len(s) for s in report["steps"])
        # no other comm event during the training steps
        inside = [e for e in t.events if e["cat"] == "comm" and "bucket" not in e["args"]
                  and e["ts"] >= steps[0]["ts"]]
        assert inside == [], inside


def test_remove_undoes_everything(calls):
    for rank in (0, 1):
        assert calls["reports"][rank]["wrapped"] and calls["reports"][rank]["undone"]
        t = calls["traces"][rank]
        last = max(e["ts"] + e["dur"] for e in t.named("step"))
        assert [e for e in t.events if e["cat"] == "comm" and e["ts"] > last] == []


def test_ranks_in_files_and_clock_offset_recovers_skew(calls):
    offsets = {}
    for rank in (0, 1):
        t = calls["traces"][rank]
        assert "-calls-%d-" % rank in os.path.basename(t.path)
        pr = pr_lines(t)
        assert (pr["rank"], pr["size"], pr["backend"]) == (rank, 2, "gloo")
        assert pr["clock_sync_rounds"] == (0 if rank == 0 else 10)
        offsets[rank] = (pr["clock_offset_ns"], pr["clock_offset_uncertainty_ns"])
    assert offsets[0] == (0, 0)
    off, unc = offsets[1]
    # the two processes share the host's clock: the true offset is -SKEW_NS (to the few us
    # with which each process reads the real-time clock at start)
    assert abs(off + SKEW_NS) <= unc + 200_000, offsets


def barriers(path):
    """{pid: [(start, end) of each barrier in ts order]} of a trace file (us)."""
    out = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line.startswith("{"):
                e = json.loads(line)
                if e.get("name") == "barrier" and e.get("ph") == "X":
                    out.setdefault(e["pid"], []).append((e["ts"], e["ts"] + e["dur"]))
    return {k: sorted(v) for k, v in out.items()}


def test_merge_lines_the_ranks_up(calls):
    """A barrier ends on no rank before it began on the other (causality), within the two
    offsets' uncertainties and 300 us; without the alignment the 5 s skew breaks it."""
    files = [calls["traces"][r].path for r in (0, 1)]
    pids = [calls["traces"][r].records[1]["pid"] for r in (0, 1)]
    unc_us = sum(pr_lines(calls["traces"][r])["clock_offset_uncertainty_ns"] for r in (0, 1)) / 1000
    for flag, aligned in (([], True), (["--no-clock-align"], False)):
        merged = str(calls["dir"] / ("merged%d.pfw.gz" % aligned))
        p = subprocess.run([cli(), "merge", "-o", merged] + flag + files, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        b = barriers(merged)
        assert sorted(b) == sorted(pids) and len(b[pids[0]]) == len(b[pids[1]]) == 6
        causal = all(max(s0, s1) <= min(e0, e1) + unc_us + 300
                     for (s0, e0), (s1, e1) in zip(b[pids[0]], b[pids[1]]))
        assert causal == aligned, (aligned, b)


SPAWN = r"""
import sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def say(line):  # one write: the ranks share the pipe
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

def main(rank, world, port):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 8))
    ddp = DDP(model, bucket_cap_mb=1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = torch.randn(8, 256) + rank, torch.randn(8, 8)
    F = torch.nn.functional
    for step in range(3):
        F.mse_loss(ddp(x), y).backward()
        if step == 2:  # DDP's gradient is the ranks' average, as without the instrumentation
            # (the same model by functions: no module call, no Tensor.backward, so no step)
            ref = [p.detach().clone().requires_grad_() for p in model.parameters()]
            h = F.relu(F.linear(F.relu(F.linear(x, ref[0], ref[1])), ref[2], ref[3]))
            torch.autograd.backward(F.mse_loss(F.linear(h, ref[4], ref[5]), y))
            flat = torch.cat([p.grad.flatten() for p in ref])
            dist.all_reduce(flat)
            got = torch.cat([p.grad.flatten() for p in model.parameters()])
            say("rank %d average %s" % (rank, bool(torch.allclose(got, flat / world, atol=1e-6))))
        opt.step()
        opt.zero_grad()
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    say("rank %d grad_bytes %d" % (rank, grad_bytes))
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(main, args=(2, int(sys.argv[1])), nprocs=2)
"""


@pytest.fixture(scope="module")
def spawn(tmp_path_factory):
    d = tmp_path_factory.mktemp("spawn")
    script = d / "train.py"
    script.write_text(SPAWN)
    env = {k: v for k, v in clean_env().items() if k != "PYTHONPATH"}  # run finds the package
    env["DFTRACE_PYTHON"] = sys.executable  # the interpreter that has torch (a venv's, say)
    # `dftrace run train.py`: a script is run as with --torch
    p = subprocess.run([cli(), "run", "--no-io", "--prefix", str(d / "t"), str(script), str(free_port())],
                       cwd=str(d), env=env, capture_output=True, text=True, timeout=300)
    own = [line for line in p.stderr.splitlines() if line.startswith("dftrace: ")]
    assert p.returncode == 0 and not own, p.stdout + p.stderr
    traces = [t for t in read_traces(str(d)) if "rank" in pr_lines(t)]
    return {"out": p.stdout, "traces": {pr_lines(t)["rank"]: t for t in traces}}


def test_spawned_ddp_under_dftrace_run(spawn):
    """No annotation: each rank's trace has its steps (forward, backward, optimizer), its
    bucket all-reduces adding up to the model's gradient bytes at every step, inside the
    step's backward, and the rank in its name and PR lines."""
    assert sorted(spawn["traces"]) == [0, 1]
    for rank, t in spawn["traces"].items():
        assert "rank %d average True" % rank in spawn["out"], spawn["out"]
        grad_bytes = int(spawn["out"].split("rank %d grad_bytes " % rank)[1].split()[0])
        assert "-train-%d-" % rank in os.path.basename(t.path)
        pr = pr_lines(t)
        assert (pr["rank"], pr["size"]) == (rank, 2) and "clock_offset_ns" in pr
        steps = t.named("step")
        assert len(steps) == 3
        for name in ("forward", "backward", "step.optimizer"):
            assert len(t.named(name)) == 3, name
        buckets = [e for e in t.named("all_reduce") if "bucket" in e["args"]]
        for s, bw in zip(steps, t.named("backward")):
            mine = [e for e in buckets if bw["ts"] <= e["ts"] and e["ts"] + e["dur"] <= bw["ts"] + bw["dur"] + 1]
            assert len(mine) >= 1 and len({e["args"]["bucket"] for e in mine}) == len(mine)
            assert sum(e["args"]["bytes"] for e in mine) == grad_bytes
            assert all(e["args"]["hook"] == "allreduce" for e in mine)
        # the reference's one all_reduce (step 3) is a call of its own, not a bucket
        others = [e for e in t.named("all_reduce") if "bucket" not in e["args"]]
        assert len(others) == 1 and len(buckets) == sum(
            len([e for e in buckets if s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]) for s in steps)


FOUR = r"""
import os
import torch
import torch.distributed as dist
from dftrace import ai
import dftrace.torch as dt

dt.instrument_distributed()
dist.init_process_group("gloo")
rank = dist.get_rank()
odd = dist.new_group([1, 3])
with ai.pipeline.train:
    if rank in (1, 3):
        dist.all_reduce(torch.ones(4, dtype=torch.float64), group=odd)
    dist.all_gather([torch.zeros(3) for _ in range(4)], torch.ones(3), async_op=True).wait()
    for _ in range(5):
        dist.barrier()
dist.destroy_process_group()
"""
SKEWS = {0: 0, 1: -3 * 10**9, 2: 2 * 10**9, 3: 7 * 10**9}


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    """4 ranks launched by hand, three of them with skewed clocks, one subgroup."""
    d = tmp_path_factory.mktemp("four")
    run_ranks(d, "four.py", FOUR, 4, lambda rank: {
        "DFTRACE_TEST_CLOCK_SKEW_NS": str(SKEWS[rank]), "DFTRACE_TORCH_CLOCK_ROUNDS": "4"})
    return {"dir": d, "traces": {pr_lines(t)["rank"]: t for t in read_traces(str(d))}}


def test_four_ranks_subgroup_and_clocks(four):
    assert sorted(four["traces"]) == [0, 1, 2, 3]
    for rank, t in four["traces"].items():
        (train,) = t.named("train")
        sub = t.named("all_reduce")
        if rank in (1, 3):  # the subgroup's size and this rank's rank in it
            assert [(e["args"]["comm_size"], e["args"]["comm_rank"], e["args"]["bytes"]) for e in sub] == \
                [(2, (rank - 1) // 2, 32)]
        else:
            assert sub == []
        (g,) = t.named("all_gather")
        assert (g["args"]["comm_size"], g["args"]["comm_rank"], g["args"]["bytes"]) == (4, rank, 12)
        (w,) = t.named("wait")
        assert w["args"]["comm_id"] == g["args"]["comm_id"] and w["args"]["op"] == "all_gather"
        bars = [e for e in t.named("barrier") if e["args"]["p_idx"] == train["id"]]
        assert len(bars) == 5
        pr = pr_lines(t)
        assert pr["clock_sync_rounds"] == (0 if rank == 0 else 4)
        assert abs(pr["clock_offset_ns"] + SKEWS[rank]) <= pr["clock_offset_uncertainty_ns"] + 200_000, (rank, pr)
    # merged: each barrier begins on every rank before it ends on any (within the uncertainties)
    files = [four["traces"][r].path for r in range(4)]
    merged = str(four["dir"] / "merged.pfw.gz")
    p = subprocess.run([cli(), "merge", "-o", merged] + files, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    b = barriers(merged)
    unc_us = sum(pr_lines(four["traces"][r])["clock_offset_uncertainty_ns"] for r in range(4)) / 1000
    assert len(b) == 4 and all(len(v) == 5 for v in b.values()), b
    for i in range(5):
        assert max(v[i][0] for v in b.values()) <= min(v[i][1] for v in b.values()) + unc_us + 300, (i, b)


HELPERS = r"""
import threading, time
import dftrace
from dftrace import _dftrace
node = dftrace.region("op", "comm")
r = node._begin()
_dftrace.region_args(r, (("bytes", 24), ("dtype", "float32"), ("async_op", True), ("none", None),
                         ("ratio", 0.5)))
_dftrace.region_args(r, "not a tuple")      # warned, ignored
_dftrace.region_args(r, (("bad",), ("tag", 3)))  # the bad item warned, the rest kept
node._end(r)
start = _dftrace.now_ns()
done = []
t = threading.Thread(target=lambda: node._complete(start, start + 5000, 4242, {"bucket": 1}))
t.start(); t.join()
node._complete("x", 1, 2)                   # warned, ignored
print("skew", abs(_dftrace.trace_time_ns() - time.time_ns()) < 10**9)
"""


def test_extension_helpers(runner):
    """region_args (all of a call's arguments in one call), Node._complete (an event with
    explicit times written from another thread) and trace_time_ns."""
    p = runner.run(HELPERS)
    assert "skew True" in p.stdout
    assert p.stderr.count("dftrace: ") == 3, p.stderr
    (t,) = runner.traces()
    (a,) = [e for e in t.named("op") if e["tid"] != 4242]
    (b,) = [e for e in t.named("op") if e["tid"] == 4242]
    assert {k: a["args"][k] for k in ("bytes", "dtype", "async_op", "ratio", "tag")} == \
        {"bytes": 24, "dtype": "float32", "async_op": True, "ratio": 0.5, "tag": 3}
    assert "none" not in a["args"] and "bad" not in a["args"]
    assert b["tid"] == 4242 and b["dur"] == 5 and b["args"]["bucket"] == 1
