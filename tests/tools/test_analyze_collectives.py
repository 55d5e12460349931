# test_analyze_collectives.py: dftrace analyze's `collectives` section on synthetic multi-rank
# traces with stated intervals: collectives matched across ranks by (op, comm_size) and call
# order, each rank's wait for the last arrival checked to the nanosecond (by hand and against a
# brute-force reference on sets of nanoseconds), the late-rank finding, and the Dask path equal
# to the single-machine one.
import json
import random

import pytest

from conftest import need, run
from test_analyze import Proc, analyze

MS = 1_000_000


def op_of(doc, op, size):
    found = [o for o in doc["collectives"]["ops"] if o["op"] == op and o["comm_size"] == size]
    assert len(found) == 1, doc["collectives"]["ops"]
    return found[0]


def by_rank(o):
    return {r["rank"]: r for r in o["ranks"]}


def test_wait_for_the_last_rank_stated(tmp_path):
    # comm.all_reduce on 3 ranks; rank 2 arrives last at both instances.
    #   instance 0: starts 0, 10, 40 (ends 100): waits 40, 30, 0; spread 40
    #   instance 1: [1000,1100), [1000,1050), [1300,1310): the last arrival (1300) is after
    #   ranks 0 and 1 ended: their waits are clamped to their durations, 100 and 50; spread 300
    spans = {0: [(0, 100), (1000, 1100)], 1: [(10, 100), (1000, 1050)], 2: [(40, 100), (1300, 1310)]}
    paths = []
    for r, iv in spans.items():
        p = Proc(100 + r, rank=r)
        for s, e in iv:
            p.ev("all_reduce", "comm", s, e, comm_size=3, bytes=4096, async_op=False)
        p.ev("send", "comm", 2000, 2100, peer=(r + 1) % 3, comm_size=3)  # point-to-point: none
        p.ev("forward", "compute", 2000, 2050)
        paths.append(p.write(tmp_path))
    doc, _ = analyze(*paths)
    c = doc["collectives"]
    assert [o["op"] for o in c["ops"]] == ["comm.all_reduce"]
    o = op_of(doc, "comm.all_reduce", 3)
    assert (o["instances"], o["unmatched_calls"], o["note"]) == (2, 0, None)
    assert {k: v["wait_ns"] for k, v in by_rank(o).items()} == {0: 140, 1: 80, 2: 0}
    assert o["wait_ns"] == 220 and c["wait_ns"] == 220 and c["instances"] == 2
    assert o["blocked_ns"] == 100 + 90 + 60 + 100 + 50 + 10
    assert (o["spread_p50_ns"], o["spread_p99_ns"], o["spread_max_ns"]) == (40, 300, 300)
    assert o["last"] == {"rank": 2, "group": 2, "count": 2}
    assert by_rank(o)[2]["caused_ns"] == 220 and by_rank(o)[0]["caused_ns"] == 0
    g = {x["rank"]: x for x in c["groups"]}
    assert g[0]["wait_ns"] == 140 and g[2]["last"] == 2 and g[2]["caused_ns"] == 220
    # comm overlapped with compute, as overlap_ns gives it: rank 0's send [2000,2100) with its
    # forward [2000,2050): 50 of 300 ns of comm
    assert (g[0]["comm_ns"], g[0]["comm_overlapped_ns"]) == (300, 50)
    assert g[0]["comm_overlapped_ns"] == doc["groups"][0]["overlap_ns"]["compute+comm"]
    assert abs(g[0]["comm_overlap_pct"] - 100 * 50 / 300) < 1e-3
    text = run("analyze", *paths).stdout
    assert "collectives: 2 matched, 0.000 ms waiting for the last rank" in text
    assert "comm.all_reduce (3 ranks): 2 matched" in text and "last most often: rank 2 (2)" in text


def test_async_call_waits_in_its_wait_event(tmp_path):
    # rank 0 issues an asynchronous all_reduce [0,5) (comm_id 7) and blocks in comm.wait
    # [50,200); rank 1 calls it synchronously at 100. Rank 0's wait before the last arrival
    # (100): [0,5) and [50,100), 55 ns; the time between issue and wait is not waiting.
    p0 = Proc(100, rank=0).ev("all_reduce", "comm", 0, 5, comm_size=2, async_op=True, comm_id=7)
    p0.ev("wait", "comm", 50, 200, comm_id=7, op="all_reduce")
    p0.ev("wait", "comm", 300, 310, comm_id=8, op="all_reduce")  # another call's: not this one
    p1 = Proc(200, rank=1).ev("all_reduce", "comm", 100, 210, comm_size=2, async_op=False,
                              comm_id=7)  # the same id in another process: its own, no wait
    doc, _ = analyze(p0.write(tmp_path), p1.write(tmp_path))
    o = op_of(doc, "comm.all_reduce", 2)
    assert {k: v["wait_ns"] for k, v in by_rank(o).items()} == {0: 55, 1: 0}
    assert o["blocked_ns"] == 5 + 150 + 110 and o["spread_max_ns"] == 100


def test_mpi_category_and_unmatched(tmp_path):
    # MPI_Allreduce (category MPI) on 2 ranks, one extra call on rank 1: matched in order, the
    # extra one counted; comm.barrier with comm_size 2 called by 4 ranks (two communicators of
    # size 2 cannot be told apart): not matched.
    procs = [Proc(100 + r, rank=r) for r in range(4)]
    for r in (0, 1):
        procs[r].ev("MPI_Allreduce", "MPI", 0, 100, comm_size=2)
        procs[r].ev("MPI_Allreduce", "MPI", 200 + 30 * r, 300)
    procs[1].ev("MPI_Allreduce", "MPI", 400, 450)
    for r in range(4):
        procs[r].ev("barrier", "comm", 500 + r, 600, comm_size=2)
    doc, _ = analyze(*[p.write(tmp_path) for p in procs])
    ops = {(o["op"], o["comm_size"]): o for o in doc["collectives"]["ops"]}
    # the second call has no comm_size: another key
    a = ops[("MPI_Allreduce", 2)]
    assert (a["instances"], a["wait_ns"], a["last"]) == (1, 0, None)
    b = ops[("MPI_Allreduce", None)]
    assert (b["instances"], b["unmatched_calls"]) == (1, 1) and "first 1" in b["note"]
    assert by_rank(b)[0]["wait_ns"] == 30 and b["last"]["rank"] == 1
    bar = ops[("comm.barrier", 2)]
    assert (bar["instances"], bar["unmatched_calls"], bar["wait_ns"]) == (0, 4, 0)
    assert "cannot be told apart" in bar["note"]


def test_groups_of_one_size_told_apart_by_comm_group(tmp_path):
    # comm.all_reduce of comm_size 2 in groups "0-1" and "2-3" (4 ranks): matched per group.
    #   "0-1": starts 0 and 40 (ends 100): rank 0 waits 40; "2-3": 10 and 30: rank 2 waits 20
    # A DDP bucket's all_reduce (argument `bucket`) in "0-1": rank 1 arrives last (at 330), and
    # rank 0's event [200, 400) runs beside backward: no wait, no blocked time.
    procs = [Proc(100 + r, rank=r) for r in range(4)]
    starts = {0: 0, 1: 40, 2: 10, 3: 30}
    for r, p in enumerate(procs):
        grp = "0-1" if r < 2 else "2-3"
        p.ev("all_reduce", "comm", starts[r], 100, comm_size=2, comm_group=grp)
        if r < 2:
            p.ev("all_reduce", "comm", 200 + 130 * r, 400, comm_size=2, comm_group=grp, bucket=0)
    doc, _ = analyze(*[p.write(tmp_path) for p in procs])
    ops = {(o["op"], o["comm_group"]): o for o in doc["collectives"]["ops"]}
    assert sorted(ops) == [("comm.all_reduce", "0-1"), ("comm.all_reduce", "2-3")]
    low, high = ops[("comm.all_reduce", "0-1")], ops[("comm.all_reduce", "2-3")]
    assert (low["instances"], low["unmatched_calls"], low["note"]) == (2, 0, None)
    assert {k: v["wait_ns"] for k, v in by_rank(low).items()} == {0: 40, 1: 0}
    assert low["blocked_ns"] == 100 + 60 and low["spread_max_ns"] == 130
    assert low["last"] == {"rank": 1, "group": 1, "count": 2}
    assert {k: v["wait_ns"] for k, v in by_rank(high).items()} == {2: 20, 3: 0}
    assert high["comm_size"] == 2 and high["instances"] == 1
    assert "comm.all_reduce (2 ranks) group 2-3: 1 matched" in run("analyze", *[
        str(p) for p in sorted(tmp_path.glob("*.pfw*"))]).stdout


def test_intercommunicator_calls_not_matched(tmp_path):
    # An MPI intercommunicator between {0} and {1,2,3}: each side's comm.barrier carries its own
    # group's comm_size and comm_remote_size, no comm_group. Ranks 1-3 alone (3 calls at a key of
    # comm_size 3) would look like a whole collective and hide their wait for rank 0 (at 500);
    # neither side is matched, and the note says why. A plain barrier of 3 ranks beside them is
    # matched as before.
    procs = [Proc(100 + r, rank=r) for r in range(4)]
    for r, p in enumerate(procs):
        local, remote = (1, 3) if r == 0 else (3, 1)
        p.ev("barrier", "comm", 500 if r == 0 else 10 * r, 600, comm_size=local,
             comm_remote_size=remote)
        if r:
            p.ev("barrier", "comm", 1000 + 10 * r, 1100, comm_size=3)
    paths = [p.write(tmp_path) for p in procs]
    doc, _ = analyze(*paths)
    ops = {(o["op"], o["comm_size"], o["note"]): o["instances"] for o in doc["collectives"]["ops"]}
    assert ops == {
        ("comm.barrier", 1, "an intercommunicator's (local group of 1, remote group of 3): not matched"): 0,
        ("comm.barrier", 3, "an intercommunicator's (local group of 3, remote group of 1): not matched"): 0,
        ("comm.barrier", 3, None): 1}
    assert doc["collectives"]["instances"] == 1


def reference(procs_by_rank):
    """Per op: each rank's wait, from sets of nanoseconds."""
    out = {}
    calls = {}
    for r, evs in procs_by_rank.items():
        for (op, s, e, w) in evs:
            calls.setdefault(op, {}).setdefault(r, []).append((s, e, w))
    for op, per in calls.items():
        n = min(len(v) for v in per.values())
        waits = {r: 0 for r in per}
        spreads = []
        for k in range(n):
            last = max(sorted(v)[k][0] for v in per.values())
            first = min(sorted(v)[k][0] for v in per.values())
            spreads.append(last - first)
            for r, v in per.items():
                s, e, w = sorted(v)[k]
                blocked = set(range(s, e)) | (set(range(*w)) if w else set())
                waits[r] += len(blocked & set(range(s, last)))
        out[op] = (waits, sorted(spreads))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_against_reference(tmp_path, seed):
    rnd = random.Random(seed)
    ranks = 4
    evs = {r: [] for r in range(ranks)}
    procs = [Proc(100 + r, rank=r) for r in range(ranks)]
    for r in range(ranks):
        t = 0
        cid = 0
        for k in range(12):
            t += rnd.randrange(0, 300)
            op = "all_reduce" if k % 3 else "broadcast"
            s, e = t, t + rnd.randrange(1, 200)
            if rnd.random() < 0.3:  # asynchronous, with its wait a little later
                cid += 1
                ws = e + rnd.randrange(0, 50)
                we = ws + rnd.randrange(1, 300)
                procs[r].ev(op, "comm", s, e, comm_size=ranks, async_op=True, comm_id=cid)
                procs[r].ev("wait", "comm", ws, we, comm_id=cid, op=op)
                evs[r].append((op, s, e, (ws, we)))
                t = we
            else:
                procs[r].ev(op, "comm", s, e, comm_size=ranks, async_op=False)
                evs[r].append((op, s, e, None))
                t = e
            procs[r].ev("forward", "compute", t, t + 50)
            t += 50
    paths = [p.write(tmp_path) for p in procs]
    doc, _ = analyze(*paths)
    ref = reference(evs)
    for op, (waits, spreads) in ref.items():
        o = op_of(doc, "comm." + op, ranks)
        assert {k: v["wait_ns"] for k, v in by_rank(o).items()} == waits, op
        assert o["spread_max_ns"] == spreads[-1]
        assert o["spread_p50_ns"] == spreads[(len(spreads) + 1) // 2 - 1]
        for r in o["ranks"]:
            assert r["wait_ns"] <= o["blocked_ns"]
    doc2, _ = analyze(*paths[::-1])
    assert doc2["collectives"] == doc["collectives"]
    # With a budget of one collective call held in memory, every call goes to the temporary
    # file as it is read and again once its rank's are in order: the same document, byte for
    # byte.
    plain = run("analyze", "--json", *paths).stdout
    spilled = run("analyze", "--json", *paths, env={"DFTRACE_ANALYZE_SPILL_EVENTS": "2"}).stdout
    assert spilled == plain


def late_run(d, ranks=4, late=2, n=12, lateness=30 * MS):
    paths = []
    for r in range(ranks):
        p = Proc(1000 + 100 * r, rank=r)
        t = 0
        for k in range(n):
            p.ev("step", "compute", t, t + 100 * MS, step=k)
            work = 40 * MS + (lateness if r == late else 0)
            p.ev("forward", "compute", t, t + work)
            p.ev("all_reduce", "comm", t + work, t + 40 * MS + lateness + MS, comm_size=ranks)
            t += 100 * MS
        paths.append(p.write(d))
    return paths


def test_finding_names_the_late_rank(tmp_path):
    doc, _ = analyze(*late_run(tmp_path))
    f = {x["rule"]: x for x in doc["findings"]}
    x = f["late_rank_at_collectives"]
    # each instance: 3 ranks wait 30 ms of their 31 ms call; rank 2's 1 ms
    wait, blocked = 12 * 3 * 30 * MS, 12 * (3 * 31 * MS + MS)
    assert x["evidence"]["magnitude_ns"] == wait and x["evidence"]["magnitude_count"] == 12
    assert abs(x["value"] - 100 * wait / blocked) < 1e-3
    assert x["severity"] == "critical"
    late = x["evidence"]["details"]["late_rank"]
    assert (late["rank"], late["last"], late["caused_ns"]) == (2, 12, wait)
    # a few short waits: below the rule's magnitude, only "info"
    (tmp_path / "small").mkdir()
    doc, _ = analyze(*late_run(tmp_path / "small", n=3, lateness=2 * MS))
    f = {x["rule"]: x for x in doc["findings"]}
    assert f["late_rank_at_collectives"]["severity"] == "info"


def test_dask_equals_single_machine(tmp_path):
    need("pandas", "distributed")
    import dftrace
    from distributed import Client, LocalCluster
    paths = late_run(tmp_path, ranks=6)
    single = dftrace.analyze(paths)
    assert single["collectives"]["instances"] == 12
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        assert dftrace.analyze(paths, client=client) == single
        assert dftrace.analyze(paths[::-1], client=client) == single


def test_process_in_two_files_with_a_spill_budget(tmp_path):
    """Rank 0's calls in two files of one process, their ops met in opposite orders (so the
    second file's calls have other key numbers): with a budget of one call in memory they are
    spilled in each file and read back when the files are joined; the collectives are those of
    the run with rank 0 in one file, and the document is the unspilled one, byte for byte."""
    ranks, n = 3, 8
    whole = [Proc(100 + r, rank=r) for r in range(ranks)]
    halves = [Proc(100, rank=0), Proc(100, rank=0)]
    for r in range(ranks):
        for k in range(n):
            op = "all_reduce" if (k < n // 2) == (k % 2 == 0) else "broadcast"
            s = 1000 * k + 37 * r
            whole[r].ev(op, "comm", s, s + 100 + r, comm_size=ranks)
            if r == 0:
                halves[k >= n // 2].ev(op, "comm", s, s + 100, comm_size=ranks)
    others = [p.write(tmp_path) for p in whole[1:]]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    split = [halves[0].write(tmp_path / "a"), halves[1].write(tmp_path / "b")] + others
    one, _ = analyze(whole[0].write(tmp_path), *others)
    plain = run("analyze", "--json", "--allow-damaged", *split, check=False)
    spilled = run("analyze", "--json", "--allow-damaged", *split, check=False,
                  env={"DFTRACE_ANALYZE_SPILL_EVENTS": "2"})
    assert spilled.stdout == plain.stdout
    doc = json.loads(plain.stdout)
    assert doc["inputs"]["processes"] == ranks
    assert doc["collectives"] == one["collectives"]
    assert one["collectives"]["instances"] == n


def test_spill_file_that_cannot_be_made_keeps_the_calls(tmp_path):
    """With no temporary file to be had ($TMPDIR missing), the calls past the budget stay in
    memory: the same collectives, and a warning that says why."""
    procs = [Proc(100 + r, rank=r) for r in range(3)]
    for r, p in enumerate(procs):
        for k in range(6):
            p.ev("all_reduce", "comm", 1000 * k + 10 * r, 1000 * k + 300, comm_size=3)
    paths = [p.write(tmp_path) for p in procs]
    doc, _ = analyze(*paths)
    p = run("analyze", "--json", *paths,
            env={"DFTRACE_ANALYZE_SPILL_EVENTS": "2", "TMPDIR": str(tmp_path / "missing")})
    got = json.loads(p.stdout)
    assert got["collectives"] == doc["collectives"]
    assert doc["collectives"]["instances"] == 6
    assert any("temporary file for collective calls failed" in w["what"]
               for w in got["inputs"]["warnings"])
