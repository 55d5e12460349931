"""test_torch_collectives_analysis.py: `dftrace analyze` matching real torch.distributed
collectives (gloo, 4 processes launched by hand) across sub-groups of one size: two groups of 2
ranks and the world, plain calls, an asynchronous call with its wait, and DDP's bucket
all-reduces on each sub-group; one rank sleeps before some calls. Every instance is matched
by (comm_group, op) and each rank's wait equals the one the trace events give, to the ns.
"""
import json
import subprocess
from collections import defaultdict

import pytest

from conftest import read_traces
from test_torch_distributed import cli, pr_lines, run_ranks

torch = pytest.importorskip("torch", reason="python3-torch is not installed (scripts/setup-debian.sh test)")
pytestmark = pytest.mark.skipif(
    not (torch.distributed.is_available() and torch.distributed.is_gloo_available()),
    reason="this torch has no gloo backend")

GROUPS = r"""
import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from dftrace import ai
import dftrace.torch as dt

dt.instrument_distributed()
dist.init_process_group("gloo")
rank = dist.get_rank()
low, high = dist.new_group([0, 1]), dist.new_group([2, 3])  # every rank makes both, in order
mine = low if rank < 2 else high

def late(who, s=0.03):  # `who` arrives late at the next call
    if rank == who:
        time.sleep(s)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
ddp = DDP(model, process_group=mine, bucket_cap_mb=0.05)
x, y = torch.randn(4, 64) + rank, torch.randn(4, 4)
with ai.pipeline.train:
    for i in range(3):
        late(1 if i == 1 else 3 if i == 0 else -1)
        dist.all_reduce(torch.ones(8), group=mine)
        late(2 if i == 2 else -1)
        dist.barrier()
    late(0)
    dist.all_reduce(torch.ones(16), group=mine, async_op=True).wait()
    late(3)
    dist.all_reduce(torch.ones(4))  # the world's
    for i in range(2):
        late(0 if i == 0 else 2, 0.02)
        torch.nn.functional.mse_loss(ddp(x), y).backward()
dist.destroy_process_group()
"""


def interval_len(ivs):
    n, end = 0, None
    for s, e in sorted(ivs):
        if end is None or s > end:
            n += e - s
            end = e
        elif e > end:
            n += e - end
            end = e
    return n


def expected(traces, scale):
    """From the events: the calls per (op, comm_group) and rank in start order, and per rank the
    time each is blocked before the last arrival (its event, or for a DDP bucket none, with
    its comm.wait), in ns."""
    calls = defaultdict(lambda: defaultdict(list))
    for rank, t in traces.items():
        waits = {e["args"]["comm_id"]: e for e in t.named("wait") if e["cat"] == "comm"}
        for e in t.events:
            if e["cat"] != "comm" or e["name"] not in ("all_reduce", "barrier"):
                continue
            a = e["args"]
            s = e["ts"] * scale
            ivs = [] if "bucket" in a else [(s, s + e["dur"] * scale)]
            w = waits.get(a.get("comm_id")) if a.get("async_op") else None
            if w is not None:
                ivs.append((w["ts"] * scale, (w["ts"] + w["dur"]) * scale))
            calls[("comm." + e["name"], a["comm_group"])][rank].append((s, ivs))
    out = {}
    for key, per in calls.items():
        for v in per.values():
            v.sort()
        n = {len(v) for v in per.values()}
        assert len(n) == 1, (key, n)
        waits = {r: 0 for r in per}
        for k in range(n.pop()):
            last = max(v[k][0] for v in per.values())
            for r, v in per.items():
                s, ivs = v[k]
                waits[r] += interval_len([(max(a, s), min(b, last)) for a, b in ivs
                                          if min(b, last) > max(a, s)])
        out[key] = (len(next(iter(per.values()))), waits)
    return out


@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    d = tmp_path_factory.mktemp("groups")
    run_ranks(d, "groups.py", GROUPS, 4, lambda rank: {"DFTRACE_TIMER_PRECISION": "ns"})
    traces = {pr_lines(t)["rank"]: t for t in read_traces(str(d))}
    p = subprocess.run([cli(), "analyze", "--json"] + [traces[r].path for r in range(4)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return {"traces": traces, "doc": json.loads(p.stdout)}


def test_events_carry_the_group_id(groups):
    for rank, t in groups["traces"].items():
        sub = "0-1" if rank < 2 else "2-3"
        got = defaultdict(set)
        for e in t.events:
            if e["cat"] == "comm" and "comm_group" in e["args"]:
                got[e["args"]["comm_group"]].add(e["name"])
        assert got == {sub: {"all_reduce"}, "0-3": {"all_reduce", "barrier"}}
        buckets = [e for e in t.named("all_reduce") if "bucket" in e["args"]]
        assert len(buckets) >= 2 and all(e["args"]["comm_group"] == sub for e in buckets)


def test_every_instance_matched_with_the_events_waits(groups):
    doc, traces = groups["doc"], groups["traces"]
    metrics = {pr_lines(t).get("time_metric") for t in traces.values()}
    assert metrics == {"ns"}, metrics  # DFTRACE_TIMER_PRECISION=ns: the events' times exact
    want = expected(traces, 1)
    ops = {(o["op"], o["comm_group"]): o for o in doc["collectives"]["ops"]}
    assert sorted(ops) == sorted(want)
    assert set(want) == {("comm.all_reduce", "0-1"), ("comm.all_reduce", "2-3"),
                         ("comm.all_reduce", "0-3"), ("comm.barrier", "0-3")}
    for key, (n, waits) in want.items():
        o = ops[key]
        assert (o["instances"], o["unmatched_calls"], o["note"]) == (n, 0, None), o
        assert {r["rank"]: r["wait_ns"] for r in o["ranks"]} == waits, key
        assert o["wait_ns"] == sum(waits.values())
    # the sleeps show: each late rank arrived last where it slept
    assert ops[("comm.barrier", "0-3")]["ranks"][2]["last"] >= 1
    assert ops[("comm.all_reduce", "2-3")]["ranks"][1]["last"] >= 1
    assert {r["rank"]: r["wait_ns"] > 10**7 for r in ops[("comm.all_reduce", "0-1")]["ranks"]} \
        == {0: True, 1: True}
