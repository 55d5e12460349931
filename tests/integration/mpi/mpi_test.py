#!/usr/bin/python3
"""mpi_test.py: runs real MPI programs under mpirun with libdftrace_mpi and checks their traces.

Scenarios (first argument):
  train    4 ranks of mpi_train: one file per rank, rank/size/process_name, every MPI call's
           event with the bytes, peers, roots and tags the program used (recomputed here from
           the program's pattern), sends matching receives across ranks, nesting in the tree.
  skew     the same with rank 1's trace clock skewed by a known amount
           (DFTRACE_TEST_CLOCK_SKEW_NS): the estimated offset recovers the skew within the
           measured uncertainty, barriers line up after alignment and do not before.
  switch   DFTRACE_CATEGORIES=-comm.barrier,-comm.all_reduce.post: those events vanish, the
           others stay.
  comm_off DFTRACE_CATEGORIES=-comm: no comm event at all (not even MPI_Init's), the compute
           events and the rank/clock PR lines stay.
  disabled no DFTRACE_ENABLE: the program runs as without dftrace and no file is written.
  python   2 ranks of Debian's mpi4py, libdftrace_mpi preloaded.
  late     3 ranks of mpi4py, the last one late at each MPI_Allreduce: dftrace analyze's waits.
  subcomm  4 ranks of mpi_subcomm: collectives on two sub-communicators of size 2, their
           duplicates, the world and its duplicate carry each communicator's comm_group, and
           dftrace analyze matches every instance within its communicator, waits to the ns.
  comms    4 ranks of mpi_comms: communicators from MPI_Comm_idup, MPI_Comm_dup_with_info (ids
           "P+k" as MPI_Comm_dup's), intercommunicators of equal and unequal sides (no
           comm_group but comm_remote_size; analyze leaves their calls unmatched and says so), MPI_Intercomm_merge, MPI_Comm_create(_group), and one
           made on a second thread after a free: every id is its communicator's, and analyze
           matches every call that has one.
  idup_info 4 ranks of mpi_idup_info under MPICH (--mpiexec; MPI_Comm_idup_with_info is MPI
           4.0's, which OpenMPI 4.1 lacks): its duplicates carry "P+1" and "P+1+1", and analyze
           matches their calls within each half, the late rank's partner waiting on the first
           duplicate only.
  fortran  2 ranks of mpi_fortran: the Fortran bindings' calls.
With --cli PATH, also runs `dftrace merge` and `dftrace stat` over the per-rank files.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tracecheck import check, fail, pr_values as props, read_objects as read_trace  # noqa: E402


def run(cmd, env_extra, cwd):
    env = dict(os.environ)
    env.update(env_extra)
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    if p.returncode != 0:
        print(p.stdout)
        fail("command failed (%d): %s" % (p.returncode, " ".join(cmd)))
    return p.stdout


def load_ranks(outdir, exe, np_):
    files = sorted(glob.glob(os.path.join(outdir, "t-%s-*-app.pfw.gz" % exe)))
    check(len(files) == np_, "expected %d trace files, found %s" % (np_, files))
    ranks = {}
    for f in files:
        m = re.search(r"-%s-(\d+)-(\d+)-app\.pfw\.gz$" % re.escape(exe), f)
        check(m is not None, "file name has no rank: " + f)
        ev = read_trace(f)
        pr, _ = props(ev)
        r = int(m.group(1))
        check(pr.get("rank") == r, "%s: PR rank %r, file name says %d" % (f, pr.get("rank"), r))
        check(pr.get("size") == np_, "%s: PR size %r, expected %d" % (f, pr.get("size"), np_))
        names = [e["args"]["name"] for e in ev if e.get("name") == "process_name"]
        check(("rank %d" % r) in names, "%s: no process_name 'rank %d' (%s)" % (f, r, names))
        check(r not in ranks, "two files for rank %d" % r)
        ranks[r] = {"file": f, "events": ev, "pr": pr}
    check(sorted(ranks) == list(range(np_)), "ranks %s" % sorted(ranks))
    return ranks


def comm_events(ev, name):
    return [e for e in ev if e.get("ph") == "X" and e.get("cat") == "comm" and e["name"] == name]


def expect_calls(r, rank, name, n, **want):
    got = comm_events(r["events"], name)
    check(len(got) == n, "rank %d: %d '%s' events, expected %d" % (rank, len(got), name, n))
    for e in got:
        for k, v in want.items():
            check(e["args"].get(k) == v, "rank %d: '%s' has %s=%r, expected %r" % (rank, name, k, e["args"].get(k), v))
    return got


def check_train(ranks, np_, epochs, steps, switched_off=()):
    """Recomputes from mpi_train.cpp's pattern what each rank must have recorded."""
    es = epochs * steps
    sent = {}  # (src, dst, tag) -> bytes, from send events; matched against receives
    for rank, r in ranks.items():
        ev = r["events"]
        partner = rank ^ 1
        calls = {
            "mpi_init": (1, {}),
            "mpi_finalize": (1, {}),
            "bcast": (epochs, dict(bytes=16, root=0, comm_size=np_)),
            "all_reduce": (es, dict(bytes=4096, comm_size=np_)),
            "send": (es, dict(bytes=8 * (64 + rank), peer=partner, comm_size=np_)),
            "receive": (es, dict(bytes=8 * (64 + partner), peer=partner, comm_size=np_)),
            "receive.post": (es, dict(bytes=4 * (100 + np_), peer=(rank + np_ - 1) % np_, tag=20)),
            "send.post": (es, dict(bytes=4 * (100 + rank), peer=(rank + 1) % np_, tag=20)),
            "all_reduce.post": (es, dict(bytes=1024, comm_size=np_)),
            "wait": (2 * es, {}),
            "gather": (epochs, dict(bytes=16, root=0, comm_size=np_)),
            "all_gather": (epochs, dict(bytes=16, comm_size=np_)),
            "scatter": (epochs, dict(bytes=40, root=np_ - 1, comm_size=np_)),
            "reduce": (epochs, dict(bytes=8, root=1 % np_, comm_size=np_)),
            "reduce_scatter": (epochs, dict(bytes=28 * np_, comm_size=np_)),
            "all_to_all": (epochs, dict(bytes=12 * np_, comm_size=np_)),
            "barrier": (epochs, dict(comm_size=np_)),
            "barrier.post": (epochs, dict(comm_size=np_)),
            "sendrecv": (epochs, dict(bytes=24, peer=(rank + 1) % np_, tag=30, comm_size=np_, recv_bytes=24,
                                      source=(rank + np_ - 1) % np_, recv_tag=30)),
        }
        for name, (n, want) in calls.items():
            expect_calls(r, rank, name, 0 if name in switched_off else n, **want)
        # the polled barrier: one test per MPI_Test call, the last of each epoch completed
        tests = comm_events(ev, "test")
        if "test" not in switched_off:
            check(len(tests) >= epochs and all(e["args"]["requests"] == 1 for e in tests),
                  "rank %d: %d test events (%s)" % (rank, len(tests), tests[:2]))
            check(sum(e["args"]["completed"] for e in tests) == epochs,
                  "rank %d: completed tests %s" % (rank, [e["args"]["completed"] for e in tests]))
        else:
            check(not tests, "rank %d: comm.test is off but %d test events were written" % (rank, len(tests)))
        waits = sorted(e["args"]["requests"] for e in comm_events(ev, "wait"))
        check(waits == sorted([1] * es + [2] * es), "rank %d: wait request counts %s" % (rank, waits))
        # tags of the blocking exchange: 1000 + step, once per epoch
        tags = sorted(e["args"]["tag"] for e in comm_events(ev, "send"))
        check(tags == sorted([1000 + s for s in range(steps)] * epochs), "rank %d: send tags %s" % (rank, tags))
        for e in comm_events(ev, "send"):
            key = (rank, e["args"]["peer"], e["args"]["tag"])
            sent[key] = sent.get(key, 0) + e["args"]["bytes"]
        # The tree: compute events and the epoch scope around the MPI calls.
        for name, n in (("forward", es), ("backward", es), ("step", es)):
            got = [e for e in ev if e.get("cat") == "compute" and e["name"] == name]
            check(len(got) == n, "rank %d: %d '%s' events, expected %d" % (rank, len(got), name, n))
        epochs_ev = [e for e in ev if e.get("cat") == "pipeline" and e["name"] == "epoch"]
        check(len(epochs_ev) == epochs, "rank %d: %d epoch events" % (rank, len(epochs_ev)))
        epoch_ids = {e["id"] for e in epochs_ev}
        for e in comm_events(ev, "all_reduce"):
            check(e["args"]["p_idx"] in epoch_ids and e["args"]["level"] == 2,
                  "rank %d: all_reduce not nested in an epoch: %s" % (rank, e))
            check("step" in e["args"] and "epoch" in e["args"], "rank %d: all_reduce lacks step/epoch" % rank)
    # Every byte sent shows up as received by the peer, under the same tag.
    for rank, r in ranks.items():
        for e in comm_events(r["events"], "receive"):
            key = (e["args"]["peer"], rank, e["args"]["tag"])
            sent[key] = sent.get(key, 0) - e["args"]["bytes"]
    bad = {k: v for k, v in sent.items() if v != 0}
    check(not bad, "sent and received bytes differ: %s" % bad)


def barrier_spread_us(ranks, offsets):
    """For each barrier (in order), max(start) - min(end) over the ranks after adding offsets;
    a barrier's intervals must overlap, so this is <= 0 up to clock error."""
    per_rank = {r: sorted(comm_events(v["events"], "barrier"), key=lambda e: e["ts"]) for r, v in ranks.items()}
    n = min(len(v) for v in per_rank.values())
    spreads = []
    for k in range(n):
        starts = [per_rank[r][k]["ts"] + offsets[r] / 1000.0 for r in ranks]
        ends = [per_rank[r][k]["ts"] + per_rank[r][k]["dur"] + offsets[r] / 1000.0 for r in ranks]
        spreads.append(max(starts) - min(ends))
    return spreads


def check_clock(ranks, skew_rank, skew_ns):
    tol_ns = 50000  # reading the two clocks that make the epoch offset, per process
    offsets, unc = {}, {}
    for rank, r in ranks.items():
        pr = r["pr"]
        check("clock_offset_ns" in pr and "clock_offset_uncertainty_ns" in pr, "rank %d: no clock PR lines" % rank)
        offsets[rank], unc[rank] = pr["clock_offset_ns"], pr["clock_offset_uncertainty_ns"]
        check(unc[rank] >= 0, "rank %d: negative uncertainty" % rank)
    check(offsets[0] == 0 and unc[0] == 0, "rank 0's offset must be 0 (%d, %d)" % (offsets[0], unc[0]))
    for rank in ranks:
        true = -skew_ns if rank == skew_rank else 0
        err = abs(offsets[rank] - true)
        print("rank %d: offset %d ns (skew %d), uncertainty %d ns, error %d ns" %
              (rank, offsets[rank], -true, unc[rank], err))
        check(err <= unc[rank] + tol_ns, "rank %d: offset %d is %d ns away from %d, uncertainty %d" %
              (rank, offsets[rank], err, true, unc[rank]))
    worst = sorted(unc.values())[-2:]
    slack_us = sum(worst) / 1000.0 + tol_ns / 1000.0 + 2  # two clocks' errors plus us rounding
    aligned = barrier_spread_us(ranks, offsets)
    check(aligned, "no barrier events")
    check(max(aligned) <= slack_us, "barriers do not overlap after alignment: spreads %s us (slack %.1f)" %
          (aligned, slack_us))
    if skew_ns:
        raw = barrier_spread_us(ranks, {r: 0 for r in ranks})
        check(max(raw) > slack_us, "barriers overlap even without alignment: the skew did not apply (%s)" % raw)
    return offsets


def check_cli(cli, ranks, outdir, offsets):
    merged = os.path.join(outdir, "merged.pfw.gz")
    files = [ranks[r]["file"] for r in sorted(ranks)]
    run([cli, "merge", "-o", merged] + files, {}, outdir)
    ev = [e for e in read_trace(merged) if e.get("ph") == "X"]
    ts = [e["ts"] for e in ev]
    check(ts == sorted(ts), "dftrace merge: events not ordered by ts")
    pids = {e["pid"] for e in ev}
    check(len(pids) == len(ranks), "dftrace merge: events of %d pids, expected %d" % (len(pids), len(ranks)))
    # merge applies clock_offset_ns: barriers of the merged trace line up
    by_pid = {}
    for e in ev:
        if e.get("cat") == "comm" and e["name"] == "barrier":
            by_pid.setdefault(e["pid"], []).append(e)
    pid_rank = {ranks[r]["events"][0]["pid"]: r for r in ranks}
    fake = {pid_rank[p]: {"events": v} for p, v in by_pid.items()}
    spreads = barrier_spread_us(fake, {r: 0 for r in fake})
    unc = sorted(ranks[r]["pr"]["clock_offset_uncertainty_ns"] for r in ranks)[-2:]
    check(max(spreads) <= sum(unc) / 1000.0 + 52, "dftrace merge did not align clocks: %s" % spreads)
    out = run([cli, "stat", "--json"] + files, {}, outdir)
    per_rank = {p["rank"]: p["events"] for p in json.loads(out)["by_pid"]}
    check(sorted(per_rank) == sorted(ranks), "dftrace stat ranks %s, expected %s" % (sorted(per_rank), sorted(ranks)))
    for r in ranks:  # counted independently: the complete events of that rank's own file
        want = sum(1 for e in read_trace(ranks[r]["file"]) if e.get("ph") == "X")
        check(per_rank.get(r) == want, "dftrace stat: rank %d has %s events, its file %d" % (r, per_rank.get(r), want))


def check_late(cli, outdir, np_, rounds, sleep_ns):
    """dftrace analyze on the per-rank files: every rank's wait at MPI_Allreduce equals what
    its events say (the last start of each call minus its own, at most its duration), and the
    sleeping rank is the late one."""
    ranks = load_ranks(outdir, "mpi4py_late", np_)
    calls = {}
    for rank, r in ranks.items():
        check(r["pr"].get("time_metric") == "ns", "rank %d: trace not in ns" % rank)
        calls[rank] = sorted((e["ts"], e["dur"]) for e in comm_events(r["events"], "all_reduce"))
        check(len(calls[rank]) == rounds, "rank %d: %d all_reduce events" % (rank, len(calls[rank])))
    want = {rank: 0 for rank in ranks}
    for k in range(rounds):
        last = max(calls[rank][k][0] for rank in ranks)
        for rank in ranks:
            ts, dur = calls[rank][k]
            want[rank] += min(max(last - ts, 0), dur)
    doc = json.loads(run([cli, "analyze", "--json"] + [ranks[r]["file"] for r in sorted(ranks)],
                         {}, outdir))
    ops = [o for o in doc["collectives"]["ops"] if o["op"] == "comm.all_reduce"]
    check(len(ops) == 1, "analyze: all_reduce ops %s" % doc["collectives"]["ops"])
    o = ops[0]
    got = {x["rank"]: x["wait_ns"] for x in o["ranks"]}
    print("late: waits %s (from the events: %s), last %s" % (got, want, o["last"]))
    check(o["comm_size"] == np_ and o["instances"] == rounds and o["unmatched_calls"] == 0,
          "analyze: %s" % o)
    check(got == want, "analyze: waits %s, the events say %s" % (got, want))
    late = np_ - 1
    check(o["last"] == {"rank": late, "group": late, "count": rounds}, "last: %s" % o["last"])
    for rank in ranks:  # each waited most of the sleep at every call (half of it, at least)
        if rank != late:
            check(got[rank] >= rounds * sleep_ns // 2, "rank %d waited only %d ns" % (rank, got[rank]))
    f = [x for x in doc["findings"] if x["rule"] == "late_rank_at_collectives"]
    check(len(f) == 1 and f[0]["evidence"]["details"]["late_rank"]["rank"] == late,
          "no finding naming rank %d: %s" % (late, doc["findings"]))


def ranks_id(ranks):
    """A communicator's comm_group as documented (src/plugins/mpi/README.md, the same text as
    torch.distributed's events): runs of consecutive world ranks "first-last", joined by ","."""
    runs, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        runs.append(str(ranks[i]) if i == j else "%d-%d" % (ranks[i], ranks[j]))
        i = j + 1
    return short_id(",".join(runs))


def short_id(text):
    """An id over 64 characters as "h" and 16 hex digits of its SHA-1 (as torch's events)."""
    return text if len(text) <= 64 else "h" + hashlib.sha1(text.encode()).hexdigest()[:16]


def check_subcomm(cli, outdir, np_, rounds):
    """Every collective names its communicator; dftrace analyze matches every instance within
    it (no unmatched call), and each rank's wait is what the events say: per (op, comm_size,
    comm_group), the k-th call of each rank is instance k, a rank waits from its start to the
    last start, at most its duration."""
    ranks = load_ranks(outdir, "mpi_subcomm", np_)
    world = ranks_id(list(range(np_)))
    calls = {}  # (op, comm_size, comm_group) -> rank -> [(ts, dur)]
    for rank, r in ranks.items():
        check(r["pr"].get("time_metric") == "ns", "rank %d: trace not in ns" % rank)
        half = ranks_id([rank - rank % 2, rank - rank % 2 + 1])
        chain = half + "+3"  # the third duplicate of its half, then 39 duplicates of duplicates
        for _ in range(39):
            chain = short_id(chain + "+1")
        check(chain.startswith("h"), "the chain's id was never hashed: %s" % chain)
        want = {("all_reduce", half): rounds, ("all_reduce", world): rounds,
                ("all_reduce", half + "+1"): rounds, ("all_reduce", half + "+2"): rounds,
                ("barrier", world + "+1"): rounds, ("barrier", chain): 1,
                ("barrier", ranks_id([rank % 2, rank % 2 + 2])): 1}
        got = {}
        for name in ("all_reduce", "barrier"):
            for e in comm_events(r["events"], name):
                check("comm_group" in e["args"], "rank %d: %s without comm_group: %s" % (rank, name, e["args"]))
                key = (name, e["args"]["comm_group"])
                got[key] = got.get(key, 0) + 1
                calls.setdefault(("comm." + name, e["args"]["comm_size"], e["args"]["comm_group"]), {}) \
                    .setdefault(rank, []).append((e["ts"], e["dur"]))
        check(got == want, "rank %d: collectives per comm_group %s, expected %s" % (rank, got, want))
    doc = json.loads(run([cli, "analyze", "--json"] + [ranks[r]["file"] for r in sorted(ranks)],
                         {}, outdir))
    ops = {(o["op"], o["comm_size"], o["comm_group"]): o for o in doc["collectives"]["ops"]}
    check(sorted(ops) == sorted(calls), "analyze: ops %s, the events have %s" % (sorted(ops), sorted(calls)))
    for key, per_rank in calls.items():
        o = ops[key]
        want = {rank: 0 for rank in per_rank}
        for k in range(len(next(iter(per_rank.values())))):
            last = max(sorted(v)[k][0] for v in per_rank.values())
            for rank, v in per_rank.items():
                ts, dur = sorted(v)[k]
                want[rank] += min(max(last - ts, 0), dur)
        got = {x["rank"]: x["wait_ns"] for x in o["ranks"]}
        print("subcomm %s: waits %s, last %s" % (key, got, o["last"]))
        n = len(next(iter(per_rank.values())))
        check(o["instances"] == n and o["unmatched_calls"] == 0 and len(per_rank) == key[1],
              "analyze: %s not matched whole: %s" % (key, o))
        check(got == want, "analyze: %s waits %s, the events say %s" % (key, got, want))
    # the late ranks are late where they slept only: rank 3 in {2,3}, rank 1 in the second dup of {0,1}
    for key, late in ((("comm.all_reduce", 2, ranks_id([2, 3])), 3),
                      (("comm.all_reduce", 2, ranks_id([0, 1]) + "+2"), 1)):
        check(ops[key]["last"] == {"rank": late, "group": late, "count": rounds},
              "analyze: %s last %s, expected rank %d" % (key, ops[key]["last"], late))


def check_comms(cli, outdir, np_, rounds, out):
    """Each collective's comm_group is its communicator's (none on an intercommunicator, which
    says its remote group's size instead); analyze matches every call that has one, and leaves
    the intercommunicators' calls unmatched with a note (matching one side of {0}|{1,2,3}
    alone would hide the wait for rank 0)."""
    ranks = load_ranks(outdir, "mpi_comms", np_)
    done = [l for l in out.splitlines() if " done (" in l]
    threads = all("threads 1" in l for l in done)
    if not threads:  # the program then skips the part on two threads
        print("note: MPI_THREAD_SERIALIZED not provided: the free on a second thread is not checked")
    elif not any("handle reused 1" in l for l in done):
        print("note: no rank got the freed communicator's handle back: the per-thread check of "
              "the free count was not exercised")
    multiple = all("multiple 1" in l for l in done)
    if not multiple:
        print("note: MPI_THREAD_MULTIPLE not provided: collectives on two threads at once not checked")
    calls = {}  # (op, comm_size, comm_group) -> rank -> [(ts, dur)]
    for rank, r in ranks.items():
        half = ranks_id([rank - rank % 2, rank - rank % 2 + 1])
        odd_even = ranks_id([rank % 2, rank % 2 + 2])
        want = {("all_reduce", half): rounds, ("all_reduce", half + "+1"): rounds,  # idup
                ("all_reduce", half + "+1+1"): rounds,  # the idup's dup
                ("all_reduce", odd_even): rounds, ("all_reduce", odd_even + "+1"): rounds,  # with_info
                ("barrier", None): 3 * rounds, ("all_reduce", None): rounds,  # intercommunicators
                ("barrier", ranks_id([2, 3, 0, 1])): rounds,  # merged, the upper half first
                ("barrier", half): 1,  # freed on the other thread
                ("barrier", odd_even): 1}  # made there, at the same handle
        if not threads:
            del want[("barrier", half)], want[("barrier", odd_even)]
        if multiple:  # two threads at once, on a new half and a new odd/even communicator
            want[("all_reduce", half)] += rounds
            want[("all_reduce", odd_even)] += rounds
        if rank in (0, 3):
            want[("all_reduce", ranks_id([3, 0]))] = rounds
        else:
            want[("all_reduce", ranks_id([2, 1]))] = rounds
        got = {}
        for name in ("all_reduce", "barrier"):
            for e in comm_events(r["events"], name):
                key = (name, e["args"].get("comm_group"))
                got[key] = got.get(key, 0) + 1
                inter = e["args"].get("comm_remote_size")
                check((key[1] is None) == (inter is not None),
                      "rank %d: %s: comm_remote_size exactly where comm_group is not: %s" % (rank, name, e["args"]))
                calls.setdefault(("comm." + name, e["args"]["comm_size"], key[1]), {}) \
                    .setdefault(rank, []).append(e["ts"])
                if inter is not None:  # {0,1}|{2,3}, or {0}|{1,2,3}
                    sides = (2, 2) if e["args"]["comm_size"] == 2 else (1, 3) if rank == 0 else (3, 1)
                    check((e["args"]["comm_size"], inter) == sides,
                          "rank %d: %s on an intercommunicator: sizes %s" % (rank, name, e["args"]))
        check(got == want, "rank %d: collectives per comm_group %s, expected %s" % (rank, got, want))
    doc = json.loads(run([cli, "analyze", "--json"] + [ranks[r]["file"] for r in sorted(ranks)],
                         {}, outdir))
    ops = {(o["op"], o["comm_size"], o["comm_group"]): o for o in doc["collectives"]["ops"]}
    check(sorted(ops, key=str) == sorted(calls, key=str),
          "analyze: ops %s, the events have %s" % (sorted(ops, key=str), sorted(calls, key=str)))
    for key, per_rank in calls.items():
        o = ops[key]
        n = len(next(iter(per_rank.values())))
        if key[2] is None:  # an intercommunicator's: never matched (one side alone would be)
            check(o["instances"] == 0 and "intercommunicator" in (o["note"] or ""),
                  "analyze: the intercommunicator's %s should be left unmatched with a note: %s" % (key, o))
            continue
        check(o["instances"] == n and o["unmatched_calls"] == 0 and len(per_rank) == key[1],
              "analyze: %s not matched whole: %s" % (key, o))
    print("comms: %d keys; %s" % (len(calls), " ".join(sorted(set(l.split("(", 1)[1] for l in done)))))


def check_idup_info(cli, outdir, np_, rounds):
    """Each half's communicator, its MPI_Comm_idup_with_info duplicate and that one's duplicate
    carry their own ids; analyze matches every call within its communicator, and the odd rank
    of each half, late on the first duplicate only, is last there and its partner waits."""
    ranks = load_ranks(outdir, "mpi_idup_info", np_)
    calls = {}  # (op, comm_size, comm_group) -> rank -> [ts]
    for rank, r in ranks.items():
        half = ranks_id([rank - rank % 2, rank - rank % 2 + 1])
        want = {half: rounds, half + "+1": rounds, half + "+1+1": rounds}
        got = {}
        for e in comm_events(r["events"], "all_reduce"):
            g = e["args"].get("comm_group")
            got[g] = got.get(g, 0) + 1
            check(e["args"].get("comm_size") == 2, "rank %d: %s" % (rank, e["args"]))
            calls.setdefault(("comm.all_reduce", 2, g), {}).setdefault(rank, []).append(e["ts"])
        check(got == want, "rank %d: all_reduce per comm_group %s, expected %s" % (rank, got, want))
    doc = json.loads(run([cli, "analyze", "--json"] + [ranks[r]["file"] for r in sorted(ranks)],
                         {}, outdir))
    ops = {(o["op"], o["comm_size"], o["comm_group"]): o for o in doc["collectives"]["ops"]}
    check(sorted(ops) == sorted(calls), "analyze: ops %s, the events have %s" % (sorted(ops), sorted(calls)))
    for key, per_rank in calls.items():
        o = ops[key]
        check(o["instances"] == rounds and o["unmatched_calls"] == 0 and sorted(per_rank) ==
              sorted(x["rank"] for x in o["ranks"]) and len(per_rank) == 2,
              "analyze: %s not matched whole within its half: %s" % (key, o))
        first = min(per_rank)
        if key[2] == ranks_id([first, first + 1]) + "+1":  # the odd rank sleeps before each call
            check(o["last"] == {"rank": first + 1, "group": first + 1, "count": rounds},
                  "analyze: %s last %s, expected rank %d" % (key, o["last"], first + 1))
            waits = {x["rank"]: x["wait_ns"] for x in o["ranks"]}
            check(waits[first] > 0, "analyze: %s: rank %d never waited: %s" % (key, first, waits))
    print("idup_info: %d communicators matched" % len(calls))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=["train", "skew", "switch", "comm_off", "disabled", "python", "fortran",
                                             "late", "subcomm", "comms", "idup_info"])
    ap.add_argument("--mpiexec", help="the launcher of the MPI the program was built with (idup_info)")
    ap.add_argument("--exe", help="mpi_train")
    ap.add_argument("--lib", help="libdftrace_mpi.so (python scenario)")
    ap.add_argument("--script", help="mpi4py program (python scenario)")
    ap.add_argument("--cli", help="the dftrace command, when built")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--skip", help="report SKIPPED with this reason (exit code 77)")
    a = ap.parse_args()
    if a.skip:
        print("SKIPPED: " + a.skip)
        sys.exit(77)
    outdir = tempfile.mkdtemp(prefix="dftrace-mpi-")
    env = {"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": os.path.join(outdir, "t")}
    epochs, steps = 2, 3
    if a.scenario in ("train", "switch", "comm_off"):
        np_ = 4
        off = ()
        if a.scenario == "switch":
            env["DFTRACE_CATEGORIES"] = "-comm.barrier,-comm.all_reduce.post,-comm.test"
            off = ("barrier", "barrier.post", "all_reduce.post", "test")
        elif a.scenario == "comm_off":
            env["DFTRACE_CATEGORIES"] = "-comm"
        run(MPIRUN + ["-np", str(np_), a.exe, str(epochs), str(steps)], env, outdir)
        ranks = load_ranks(outdir, "mpi_train", np_)
        if a.scenario == "comm_off":
            for rank, r in ranks.items():
                comm = [e for e in r["events"] if e.get("cat") == "comm"]
                check(not comm, "rank %d: comm is off but %d comm events were written" % (rank, len(comm)))
                fwd = [e for e in r["events"] if e.get("cat") == "compute" and e["name"] == "forward"]
                check(len(fwd) == epochs * steps, "rank %d: %d forward events" % (rank, len(fwd)))
                check("clock_offset_ns" in r["pr"], "rank %d: no clock_offset_ns with comm off" % rank)
        else:
            check_train(ranks, np_, epochs, steps, off)
        if a.scenario == "train":
            offsets = check_clock(ranks, -1, 0)
            if a.cli:
                check_cli(a.cli, ranks, outdir, offsets)
    elif a.scenario == "disabled":
        env["DFTRACE_ENABLE"] = "0"  # also overrides an enabling environment around ctest
        out = run(MPIRUN + ["-np", "4", a.exe, str(epochs), str(steps)], env, outdir)
        check(out.count(" done (checksum ") == 4, "the program's output changed:\n" + out)
        check("dftrace" not in out, "dftrace printed something while disabled:\n" + out)
        left = os.listdir(outdir)
        check(not left, "tracing is off but files were written: %s" % left)
    elif a.scenario == "skew":
        np_, skew = 4, 5 * 10**9  # rank 1's clock runs 5 s ahead
        cmd = MPIRUN + ["-np", "1", a.exe, str(epochs), str(steps), ":",
                        "-np", "1", "env", "DFTRACE_TEST_CLOCK_SKEW_NS=%d" % skew, a.exe, str(epochs), str(steps), ":",
                        "-np", str(np_ - 2), a.exe, str(epochs), str(steps)]
        run(cmd, env, outdir)
        ranks = load_ranks(outdir, "mpi_train", np_)
        check_train(ranks, np_, epochs, steps)
        offsets = check_clock(ranks, 1, skew)
        if a.cli:
            check_cli(a.cli, ranks, outdir, offsets)
    elif a.scenario == "python":
        np_ = 2
        cmd = MPIRUN + ["-np", str(np_), "-x", "LD_PRELOAD=" + a.lib, "/usr/bin/python3", a.script]
        run(cmd, env, outdir)
        exe = os.path.splitext(os.path.basename(a.script))[0]
        ranks = load_ranks(outdir, exe, np_)
        steps = 5
        for rank, r in ranks.items():
            expect_calls(r, rank, "all_reduce", steps, bytes=8 * 1000, comm_size=2)
            expect_calls(r, rank, "bcast", 1, bytes=4 * 16, root=0, comm_size=2)
            expect_calls(r, rank, "barrier", 1, comm_size=2)
            expect_calls(r, rank, "send", steps, bytes=8 * (10 + rank), peer=1 - rank, tag=7)
            expect_calls(r, rank, "receive", steps, bytes=8 * (11 - rank), peer=1 - rank, tag=7)
            mi = comm_events(r["events"], "mpi_init")
            check(len(mi) == 1 and "provided" in mi[0]["args"], "rank %d: mpi4py's MPI_Init_thread not traced" % rank)
        check_clock(ranks, -1, 0)
    elif a.scenario == "late":
        if not a.cli:
            print("SKIPPED: the dftrace command is not built")
            sys.exit(77)
        np_, rounds, sleep_s = 3, 4, 0.3
        env["DFTRACE_TIMER_PRECISION"] = "ns"
        cmd = MPIRUN + ["-np", str(np_), "-x", "LD_PRELOAD=" + a.lib, "/usr/bin/python3", a.script,
                        str(rounds), str(sleep_s)]
        run(cmd, env, outdir)
        check_late(a.cli, outdir, np_, rounds, int(sleep_s * 1e9))
    elif a.scenario == "subcomm":
        if not a.cli:
            print("SKIPPED: the dftrace command is not built")
            sys.exit(77)
        np_, rounds = 4, 3
        env["DFTRACE_TIMER_PRECISION"] = "ns"
        out = run(MPIRUN + ["-np", str(np_), a.exe, str(rounds), "50"], env, outdir)
        check(out.count(" done (") == np_, "the program's output:\n" + out)
        check_subcomm(a.cli, outdir, np_, rounds)
    elif a.scenario == "comms":
        if not a.cli:
            print("SKIPPED: the dftrace command is not built")
            sys.exit(77)
        np_, rounds = 4, 3
        out = run(MPIRUN + ["-np", str(np_), a.exe, str(rounds)], env, outdir)
        check(out.count(" done (") == np_, "the program's output:\n" + out)
        check_comms(a.cli, outdir, np_, rounds, out)
    elif a.scenario == "idup_info":
        if not a.cli:
            print("SKIPPED: the dftrace command is not built")
            sys.exit(77)
        np_, rounds = 4, 3
        out = run([a.mpiexec, "-n", str(np_), a.exe, str(rounds), "20000"], env, outdir)
        check(out.count(" done") == np_, "the program's output:\n" + out)
        check_idup_info(a.cli, outdir, np_, rounds)
    elif a.scenario == "fortran":
        # mpi_fortran.f90: every MPI call goes through the Fortran bindings (mpi_*_).
        np_, steps = 2, 5
        run(MPIRUN + ["-np", str(np_), a.exe], env, outdir)
        ranks = load_ranks(outdir, "mpi_fortran", np_)  # rank and size from Fortran's MPI_Init
        for rank, r in ranks.items():
            partner = rank ^ 1
            expect_calls(r, rank, "mpi_init", 1)
            mi = comm_events(r["events"], "mpi_init")
            check("provided" in mi[0]["args"] and "required" in mi[0]["args"],
                  "rank %d: MPI_Init_thread's levels missing: %s" % (rank, mi[0]["args"]))
            expect_calls(r, rank, "mpi_finalize", 1)
            world = ranks_id(list(range(np_)))
            expect_calls(r, rank, "bcast", 1, bytes=16, root=0, comm_size=np_, comm_group=world)
            expect_calls(r, rank, "all_reduce", steps + 1, bytes=800, comm_size=np_,  # one in place
                         comm_group=world)
            sends = expect_calls(r, rank, "send", steps, bytes=4 * (10 + rank), peer=partner, comm_size=np_)
            recvs = expect_calls(r, rank, "receive", steps, bytes=4 * (10 + partner), peer=partner, comm_size=np_)
            for evs in (sends, recvs):
                check(sorted(e["args"]["tag"] for e in evs) == [100 + s for s in range(1, steps + 1)],
                      "rank %d: tags %s" % (rank, [e["args"]["tag"] for e in evs]))
            expect_calls(r, rank, "sendrecv", 1, bytes=12, peer=(rank + 1) % np_, tag=7, comm_size=np_,
                         recv_bytes=12, source=(rank + np_ - 1) % np_, recv_tag=7)
            bars = expect_calls(r, rank, "barrier", 5)
            # the world, its duplicate, then duplicates of communicators that had no collective
            # (the wrappers of MPI_Comm_dup, _idup and _dup_with_info give the parent its id):
            # of this rank alone, of the world's ranks in reverse order, of a split of all ranks
            check([(e["args"].get("comm_size"), e["args"].get("comm_group")) for e in bars]
                  == [(np_, world), (np_, world + "+1"), (1, "%d+1" % rank),
                      (np_, ranks_id(list(range(np_))[::-1]) + "+1"), (np_, world + "+1")],
                  "rank %d: barriers on the world, its duplicate, the duplicates (dup, idup, "
                  "dup_with_info) of fresh communicators: %s" % (rank, [e["args"] for e in bars]))
            fwd = [e for e in r["events"] if e.get("cat") == "compute" and e["name"] == "forward"]
            check(len(fwd) == steps, "rank %d: %d forward regions from Fortran" % (rank, len(fwd)))
        check_clock(ranks, -1, 0)
    print("ok: %s (%s)" % (a.scenario, outdir if a.keep else "cleaned"))
    if not a.keep:
        subprocess.run(["rm", "-rf", outdir])


if __name__ == "__main__":
    main()
