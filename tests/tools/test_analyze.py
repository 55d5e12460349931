# test_analyze.py: dftrace analyze on synthetic traces with stated intervals, checked to the
# nanosecond against a brute-force reference computed here (sets of nanoseconds), and on the
# DFTracer traces, whose counts must equal dftrace stat's.
import gzip
import json
import os
import random
import stat as stat_mod

import pytest

from conftest import gen, run

T0 = 1_700_000_000_000_000_000  # epoch ns; every trace here is in nanoseconds


class Proc:
    """One process's trace file, written as dftrace writes it (JSON lines, gzip'd)."""

    def __init__(self, pid, rank=None, ppid=1, host="node1"):
        self.pid, self.rank, self.ppid, self.host = pid, rank, ppid, host
        self.events = []  # (name, cat, tid, start, end, args)
        self.files = {}  # path -> hash: FH lines

    def ev(self, name, cat, start, end, tid=None, **args):
        self.events.append((name, cat, self.pid if tid is None else tid, start, end, args))
        return self

    def lines(self, drop_last_event=False):
        p, out, nid = self.pid, ["["], [0]

        def line(d):
            nid[0] += 1
            out.append(json.dumps(dict(id=nid[0], **d), separators=(",", ":")))

        meta = dict(cat="dftracer", pid=p, tid=p, ph="M")
        line(dict(name="PR", **meta, args=dict(name="time_metric", value="ns")))
        line(dict(name="HH", **meta, args=dict(name=self.host, value=12345)))
        if self.rank is not None:
            line(dict(name="PR", **meta, args=dict(name="rank", value=self.rank)))
        for path, h in self.files.items():
            line(dict(name="FH", **meta, args=dict(name=path, value=h)))
        starts = [e[3] for e in self.events] or [0]
        ends = [e[4] for e in self.events] or [0]
        line(dict(name="start", cat="dftracer", pid=p, tid=p, ts=T0 + min(starts), dur=0, ph="X",
                  args=dict(ppid=self.ppid)))
        evs = self.events[:-1] if drop_last_event else self.events
        # written when they end: an enclosing event after what it encloses
        for name, cat, tid, s, e, args in sorted(evs, key=lambda x: (x[4], -x[3])):
            line(dict(name=name, cat=cat, pid=p, tid=tid, ts=T0 + s, dur=e - s, ph="X", args=args))
        line(dict(name="end", cat="dftracer", pid=p, tid=p, ts=T0 + max(ends), dur=0, ph="X",
                  args=dict(num_events=len(self.events))))
        out.append("]")
        return "\n".join(out) + "\n"

    def write(self, d, **kw):
        path = os.path.join(str(d), f"t-{self.pid}.pfw.gz")
        with gzip.open(path, "wt") as f:
            f.write(self.lines(**kw))
        return path


def analyze(*paths, check=True, extra=()):
    p = run("analyze", "--json", *extra, *paths, check=check)
    return json.loads(p.stdout), p


# ---- the reference: the same definitions on sets of nanoseconds

LAYERS = {"compute": {"compute", "device"}, "io": {"POSIX", "STDIO", "H5", "MPIIO", "checkpoint"},
          "comm": {"comm", "MPI"}, "data": {"data", "dataloader"}, "app": {"C_APP", "CPP_APP"}}


def layer_of(cat, name):
    if name == "step" or name.endswith(".iter") or name.endswith(".block") or cat == "pipeline":
        return None
    return next((l for l, cats in LAYERS.items() if cat in cats), None)


def reference(procs):
    """Per group (list of Proc): union, overlap, unoverlapped and self as sets of ns."""
    u = {l: set() for l in LAYERS}
    selfs = {l: set() for l in LAYERS}
    threads = {}
    for pr in procs:
        for name, cat, tid, s, e, _ in pr.events:
            l = layer_of(cat, name)
            if l:
                u[l] |= set(range(s, e))
                threads.setdefault((pr.pid, tid), []).append((s, e, l))
    for evs in threads.values():
        # innermost: of the layered events holding the instant, the last to start (at equal
        # starts the first to end; at equal both the first written)
        for t in set().union(*[set(range(s, e)) for s, e, _ in evs]):
            holding = [(-s, e, i, l) for i, (s, e, l) in enumerate(evs) if s <= t < e]
            selfs[min(holding)[3]].add(t)
    names = list(LAYERS)
    return {
        "union_ns": {l: len(u[l]) for l in names},
        "overlap_ns": {f"{a}+{b}": len(u[a] & u[b]) for i, a in enumerate(names) for b in names[i + 1:]},
        "unoverlapped_ns": {l: len(u[l] - u["compute"]) for l in names if l != "compute"},
        "self_ns": {l: len(selfs[l]) for l in names},
    }, u


def split_ref(u, s, e):
    w = set(range(s, e))
    c = w & u["compute"]
    m = (w & u["comm"]) - c
    i = (w & u["io"]) - c - m
    d = (w & u["data"]) - c - m - i
    return [len(c), len(m), len(i), len(d), len(w) - len(c) - len(m) - len(i) - len(d)]


def check_group(g, procs):
    ref, u = reference(procs)
    for k in ("union_ns", "overlap_ns", "unoverlapped_ns", "self_ns"):
        assert g[k] == ref[k], k
    for k in ("union_ns", "overlap_ns", "unoverlapped_ns", "self_ns"):
        assert all(v <= g["span_ns"] for v in g[k].values())
    return u


def test_nested_abutting_identical(tmp_path):
    p = Proc(100, rank=0)
    p.ev("outer", "compute", 0, 100).ev("inner", "compute", 10, 20)      # nested
    p.ev("read", "POSIX", 30, 40)                                          # io inside compute
    p.ev("next", "compute", 100, 150).ev("same", "compute", 100, 150)     # abutting, identical
    p.ev("write", "POSIX", 140, 200, tid=7).ev("write", "POSIX", 140, 200, tid=8)
    p.ev("allreduce", "comm", 190, 260, tid=7)
    d, _ = analyze(p.write(tmp_path))
    g, = d["groups"]
    assert g["rank"] == 0 and g["pids"] == [100] and g["span_ns"] == 260
    # stated answers, besides the reference
    assert g["union_ns"]["compute"] == 150 and g["union_ns"]["io"] == 70
    assert g["overlap_ns"]["compute+io"] == 20 and g["unoverlapped_ns"]["io"] == 50
    assert g["self_ns"]["compute"] == 140 and g["self_ns"]["io"] == 70
    assert g["overlap_ns"]["io+comm"] == 10
    check_group(g, [p])
    assert d["inputs"]["complete"] and d["inputs"]["processes"] == 1


def test_dataloader_worker_joins_its_parent(tmp_path):
    main = Proc(100, rank=0).ev("forward", "compute", 0, 1000).ev("step", "compute", 0, 2000)
    worker = Proc(101, ppid=100).ev("read", "POSIX", 500, 1500).ev("item", "data", 1500, 1700)
    grandchild = Proc(102, ppid=101).ev("read", "POSIX", 1900, 1950)
    other = Proc(200, ppid=1).ev("read", "POSIX", 0, 10)
    # a worker that inherited its parent's rank (torch's RANK) joins it; another rank does not
    same_rank = Proc(103, rank=0, ppid=100).ev("read", "POSIX", 2100, 2200)
    rank1 = Proc(300, rank=1, ppid=100).ev("read", "POSIX", 0, 10)
    paths = [x.write(tmp_path) for x in (main, worker, grandchild, other, same_rank, rank1)]
    d, _ = analyze(*paths)
    assert [g["pids"] for g in d["groups"]] == [[100, 101, 102, 103], [300], [200]]
    assert [g["rank"] for g in d["groups"]] == [0, 1, None]
    assert d["inputs"]["ranks"] == 2 and d["inputs"]["processes"] == 6
    g = d["groups"][0]
    assert g["overlap_ns"]["compute+io"] == 500 and g["unoverlapped_ns"]["io"] == 650
    check_group(g, [main, worker, grandchild, same_rank])
    s = d["steps"]
    assert s["source"] == "step" and s["count"] == 1
    item, = s["items"]
    # the step is a frame: compute is forward only; io not hidden 500 + 50; data 200
    assert [item[k] for k in ("compute_ns", "comm_ns", "io_ns", "data_ns", "other_ns")] == \
        [1000, 0, 550, 200, 250]


def straggler_run(tmp_path, slow_rank=2, factor=3):
    procs = []
    for r in range(4):
        p = Proc(1000 + r, rank=r)
        t = 0
        for k in range(3):
            dur = int(4_000_000 * (factor if (r == slow_rank and k == 1) else 1)) + r * 1000
            p.ev("step", "compute", t, t + dur, step=k, epoch=0)
            p.ev("forward", "compute", t, t + dur // 2)
            t += dur + 100
        procs.append(p)
    return procs, [p.write(tmp_path) for p in procs]


def test_straggler_rank(tmp_path):
    procs, paths = straggler_run(tmp_path)
    d, _ = analyze(*paths)
    durs = {(it["rank"], it["step"]): it["dur_ns"] for it in d["steps"]["items"]}
    med = sorted(durs[(r, 1)] for r in range(4))
    median = med[1] + (med[2] - med[1]) // 2
    assert d["stragglers"] == [{"rank": 2, "group": 2, "step": "0:1", "dur_ns": durs[(2, 1)],
                                "median_ns": median}]
    imb = d["imbalance"]
    assert imb["steps_compared"] == 3 and imb["worst"]["rank"] == 2 and imb["worst"]["step"] == "0:1"
    assert imb["max_over_median_max"] == pytest.approx(durs[(2, 1)] / median, rel=1e-5)
    # 1.2 x the median is under the factor: no straggler
    mild = tmp_path / "mild"
    mild.mkdir()
    _, paths = straggler_run(mild, factor=1.2)
    d, _ = analyze(*paths)
    assert d["stragglers"] == []


def compare_ref(items):
    """Stragglers and imbalance as docs/analysis.md defines them, from the step items (in
    group order): keyed by `epoch:step` when every step has a `step` argument and no group
    repeats a key, else by `#index`."""
    def text(it, keyed):
        if not keyed:
            return "#%d" % it["index"]
        return ("%d:%d" % (it["epoch"], it["step"]) if it["epoch"] is not None
                else "%d" % it["step"])

    keyed = all(it["step"] is not None for it in items)
    seen = {(it["group"], text(it, keyed)) for it in items}
    keyed = keyed and len(seen) == len(items)
    by_key = {}
    for it in items:
        by_key.setdefault(text(it, keyed), []).append(it)
    stragglers, ratios = [], []
    for k in sorted(by_key):
        same = by_key[k]
        if len(same) < 2:
            continue
        d = sorted(it["dur_ns"] for it in same)
        n = len(d)
        med = d[n // 2] if n % 2 else d[n // 2 - 1] + (d[n // 2] - d[n // 2 - 1]) // 2
        for it in same:
            x = it["dur_ns"]
            if x > med and x - med > 1_000_000 and x * 4 > med * 5:
                stragglers.append({"rank": it["rank"], "group": it["group"], "step": k,
                                   "dur_ns": x, "median_ns": med})
        if med:
            worst = next(it for it in same if it["dur_ns"] == d[-1])
            ratios.append((d[-1] / med, k, worst))
    stragglers.sort(key=lambda s: (s["median_ns"] - s["dur_ns"], s["group"], s["step"]))
    g = lambda x: float("%.6g" % x)  # the document's precision
    imb = {"steps_compared": len(ratios), "worst": None}
    if ratios:
        top = max(r[0] for r in ratios)
        _, k, w = next(r for r in ratios if r[0] == top)
        vals = [r[0] for r in ratios]
        imb.update(max_over_median_max=g(top), max_over_median_mean=g(sum(vals) / len(vals)),
                   max_over_median_p50=g(sorted(vals)[(len(vals) + 1) // 2 - 1]),
                   worst={"step": k, "rank": w["rank"], "group": w["group"]})
    return stragglers, imb


def step_order_run(d, order, ranks=4, steps=300, seed=7):
    """Ranks whose steps' `step` (and `epoch`) arguments come in the given order: "shuffled"
    (a permutation per rank, with epochs), "restarting" (from 0 in each epoch, no `epoch`
    argument: every rank repeats its keys), "sparse" (each rank a random half of the keys,
    shuffled). Durations of 2 ms, some far longer (stragglers)."""
    rnd = random.Random(seed)
    paths = []
    for r in range(ranks):
        p = Proc(3000 + r, rank=r)
        if order == "shuffled":
            keys = [(k // 25, k % 25) for k in range(steps)]
            rnd.shuffle(keys)
        elif order == "restarting":
            keys = [(None, k % 25) for k in range(steps)]
        else:
            keys = [(None, k) for k in range(2 * steps) if rnd.random() < 0.5]
            rnd.shuffle(keys)
        t = 0
        for epoch, step in keys:
            dur = rnd.choice([2_000_000] * 6 + [2_900_000, 9_000_000, rnd.randrange(1, 10**7)])
            args = {"step": step} if epoch is None else {"step": step, "epoch": epoch}
            p.ev("step", "compute", t, t + dur, **args)
            t += dur + 10
        paths.append(p.write(d))
    return paths


@pytest.mark.parametrize("order", ["shuffled", "restarting", "sparse"])
def test_steps_matched_whatever_the_order_of_their_arguments(tmp_path, order):
    """Steps whose `step` arguments do not increase in start order are matched across ranks
    as the definition says, whether their keys are sorted in memory or through a temporary
    file (1,200 steps; budgets of 2 rows, runs of 2 merged into runs of 128, and of 16 rows,
    runs of 16 merged into runs of 1024, read back in pieces of 512; a missing $TMPDIR keeps
    the runs in memory): the same document each time, equal to the reference."""
    paths = step_order_run(tmp_path, order)
    d, p = analyze(*paths)
    stragglers, imb = compare_ref(d["steps"]["items"])
    assert d["stragglers"] == stragglers and len(stragglers) > 10
    assert {k: d["imbalance"][k] for k in imb} == imb
    assert imb["worst"]["step"].startswith("#") == (order == "restarting")
    for env in ({"DFTRACE_ANALYZE_SPILL_EVENTS": "2"}, {"DFTRACE_ANALYZE_SPILL_EVENTS": "128"},
                {"DFTRACE_ANALYZE_SPILL_EVENTS": "2", "TMPDIR": str(tmp_path / "missing")}):
        q = run("analyze", "--json", *paths, env=env)
        got = json.loads(q.stdout)
        got["inputs"]["warnings"] = d["inputs"]["warnings"]  # a missing $TMPDIR is warned of
        assert got == d


def random_procs(seed, n=3):
    rnd = random.Random(seed)
    procs = []
    cats = ["compute", "POSIX", "comm", "data", "device", "sys", "pipeline"]
    for i in range(n):
        p = Proc(500 + i, rank=i if i < 2 else None, ppid=500 if i == 2 else 1)
        for tid in (500 + i, 900 + i):
            t = 0
            for _ in range(12):  # a top-level event with a nested child, sometimes
                s = t + rnd.randrange(0, 30)
                e = s + rnd.randrange(0, 80)
                p.ev("x", rnd.choice(cats), s, e, tid=tid)
                if e - s > 4 and rnd.random() < 0.6:
                    cs = rnd.randrange(s, e)
                    p.ev("y", rnd.choice(cats), cs, rnd.randrange(cs, e + 1), tid=tid)
                t = e
        t = 0
        for k in range(4):
            p.ev("step", "compute", t, t + 150, step=k)
            t += 150 + rnd.randrange(0, 10)
        procs.append(p)
    return procs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_against_reference_and_order(tmp_path, seed):
    procs = random_procs(seed)
    paths = [p.write(tmp_path) for p in procs]
    d, p1 = analyze(*paths)
    assert [g["pids"] for g in d["groups"]] == [[500, 502], [501]]
    us = [check_group(d["groups"][0], [procs[0], procs[2]]), check_group(d["groups"][1], [procs[1]])]
    for it in d["steps"]["items"]:
        parts = [it[k] for k in ("compute_ns", "comm_ns", "io_ns", "data_ns", "other_ns")]
        assert sum(parts) == it["dur_ns"]
        assert parts == split_ref(us[it["group"]], it["ts_ns"] - T0, it["ts_ns"] - T0 + it["dur_ns"])
    b = d["steps"]["bound_by"]
    assert sum(b.values()) == d["steps"]["total_ns"]
    _, p2 = analyze(*reversed(paths))
    assert p1.stdout == p2.stdout  # independent of the order of the files


@pytest.mark.parametrize("seed", [4, 5])
def test_spilled_events_against_reference(tmp_path, seed):
    # every block's events go to the temporary file at once: the same figures, to the ns
    procs = random_procs(seed)
    paths = [p.write(tmp_path) for p in procs]
    p = run("analyze", "--json", *paths, env={"DFTRACE_ANALYZE_SPILL_EVENTS": "1"})
    d = json.loads(p.stdout)
    check_group(d["groups"][0], [procs[0], procs[2]])
    check_group(d["groups"][1], [procs[1]])
    assert p.stdout == run("analyze", "--json", *paths, env={"DFTRACE_ANALYZE_SPILL_EVENTS": "0"}).stdout


def test_spill_file_that_cannot_be_made_keeps_events_in_memory(tmp_path):
    procs = random_procs(6)
    paths = [p.write(tmp_path) for p in procs]
    p = run("analyze", "--json", *paths, env={"DFTRACE_ANALYZE_SPILL_EVENTS": "1",
                                              "TMPDIR": str(tmp_path / "no-such-dir")})
    d = json.loads(p.stdout)
    assert any("temporary file" in w["what"] for w in d["inputs"]["warnings"])
    check_group(d["groups"][0], [procs[0], procs[2]])
    check_group(d["groups"][1], [procs[1]])


def test_spilled_many_blocks_equal_in_memory(tmp_path):
    # two threads whose events span many blocks and two files, spilled every few blocks
    a, b = tmp_path / "a.pfw.gz", tmp_path / "b.pfw.gz"
    gen(a, 120000, pid=41, rank=0, seed=3, threads=2)
    gen(b, 80000, pid=42, rank=1, seed=4, threads=2)
    outs = [run("analyze", "--json", a, b, env={"DFTRACE_ANALYZE_SPILL_EVENTS": n,
                                                   "DFTRACE_TOOL_THREADS": "2"}).stdout
            for n in ("0", "1", "30000")]
    d = json.loads(outs[0])
    assert len(d["inputs"]["per_file"]) == 2
    assert min(f["members"] for f in d["inputs"]["per_file"]) > 3  # several blocks each
    assert d["steps"]["count"] > 1000
    assert outs[1] == outs[0] and outs[2] == outs[0]


def test_damaged_file_exit_2(tmp_path):
    good = Proc(100, rank=0).ev("forward", "compute", 0, 100).write(tmp_path)
    # a multi-member file whose last member is cut short
    p = Proc(101, rank=1)
    for k in range(200):
        p.ev("forward", "compute", k * 10, k * 10 + 5)
    text = p.lines().encode()
    half = len(text) // 2
    cut = text.rfind(b"\n", 0, half) + 1
    damaged = tmp_path / "damaged.pfw.gz"
    data = gzip.compress(text[:cut]) + gzip.compress(text[cut:])
    damaged.write_bytes(data[:-40])
    d, p2 = analyze(good, damaged, check=False)
    assert p2.returncode == 2
    assert not d["inputs"]["complete"]
    assert any(x["file"] == str(damaged) for x in d["inputs"]["damaged"])
    d, p3 = analyze(good, damaged, check=False, extra=["--allow-damaged"])
    assert p3.returncode == 0 and d["inputs"]["damaged"]
    # a process whose end event says more events than the file holds
    short = Proc(102, rank=2).ev("a", "compute", 0, 5).ev("b", "compute", 5, 9)
    path = short.write(tmp_path, drop_last_event=True)
    d, p4 = analyze(path, check=False)
    assert p4.returncode == 2
    assert d["inputs"]["damaged"] == [{"file": None, "what": "process 102 on node1: its end event "
                                       "says 2 events, 1 were read"}]
    # a missing file
    d, p5 = analyze(good, tmp_path / "nope.pfw.gz", check=False)
    assert p5.returncode == 2 and "cannot be read" in d["inputs"]["damaged"][0]["what"]


def test_layers_file(tmp_path):
    p = Proc(100, rank=0).ev("read", "POSIX", 0, 100).ev("forward", "compute", 50, 80)
    path = p.write(tmp_path)
    y = tmp_path / "layers.yaml"
    y.write_text("layers:\n  compute: [compute]\n  storage: [POSIX]\n")
    d, _ = analyze(path, extra=["--layers", str(y)])
    g, = d["groups"]
    assert d["layers"] == ["compute", "storage"]
    assert g["union_ns"] == {"compute": 30, "storage": 100}
    assert g["unoverlapped_ns"] == {"storage": 70} and g["overlap_ns"] == {"compute+storage": 30}
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert stat_mod.S_ISFIFO(os.stat(fifo).st_mode)
    r = run("analyze", "--layers", fifo, path, check=False)
    assert r.returncode == 2 and "FIFO" in r.stderr
    y.write_text("layers:\n  a: [POSIX]\n  b: [POSIX]\n")
    r = run("analyze", "--layers", y, path, check=False)
    assert r.returncode == 2 and "two layers" in r.stderr


def test_steps_option_and_iter(tmp_path):
    p = Proc(100, rank=0)
    for k in range(3):
        p.ev("train.iter", "pipeline", k * 100, k * 100 + 90)
        p.ev("inner.iter", "pipeline", k * 100 + 10, k * 100 + 20)
        p.ev("fwd", "compute", k * 100, k * 100 + 50)
    d, _ = analyze(p.write(tmp_path))
    assert d["steps"]["source"] == ".iter" and d["steps"]["count"] == 3
    assert [i["dur_ns"] for i in d["steps"]["items"]] == [90, 90, 90]
    assert d["steps"]["p50_ns"] == 90 and d["steps"]["bound_by"]["compute_ns"] == 150
    d, _ = analyze(p.write(tmp_path), extra=["--steps", "compute.fwd"])
    assert d["steps"]["count"] == 3 and d["groups"][0]["union_ns"]["compute"] == 0


def stat_counts(paths):
    s = json.loads(run("stat", "--json", *paths).stdout)
    return {"events": s["events"], "lines": s["lines"], "complete_events": s["complete_events"],
            "metadata": s["metadata"], "invalid_lines": s["invalid_lines"],
            "aggregated_records": s["aggregated_records"]}


def test_dftracer_traces_counts_equal_stat(ref_files):
    d, p = analyze(*ref_files)
    assert p.returncode == 0 and d["inputs"]["complete"], d["inputs"]["damaged"]
    assert {k: d["inputs"][k] for k in stat_counts(ref_files)} == stat_counts(ref_files)
    ref_files = [f for f in ref_files if os.path.basename(f).startswith("cm1-")]
    d, p = analyze(*ref_files)
    assert p.returncode == 0 and d["inputs"]["complete"], d["inputs"]["damaged"]
    assert {k: d["inputs"][k] for k in stat_counts(ref_files)} == stat_counts(ref_files)
    assert d["inputs"]["files"] == len(ref_files) == d["inputs"]["processes"]
    assert d["inputs"]["ranks"] == 8 and [g["rank"] for g in d["groups"]] == list(range(8))
    for g in d["groups"]:
        assert g["union_ns"]["io"] <= g["span_ns"]


def test_dftracer_v2_and_merged(ref_files, tmp_path):
    v2 = os.path.join(os.path.dirname(ref_files[0]), "..", "dftracer-v2", "v2-sample.pfw")
    d, p = analyze(v2)
    assert p.returncode == 0 and d["inputs"]["complete"]
    assert {k: d["inputs"][k] for k in stat_counts([v2])} == stat_counts([v2])
    assert d["steps"]["count"] == 3 and d["groups"][0]["rank"] == 3
    cm1 = [f for f in ref_files if os.path.basename(f).startswith("cm1-")]
    merged = tmp_path / "merged.pfw.gz"
    run("merge", *cm1, "-o", merged)
    dm, _ = analyze(merged)
    ds, _ = analyze(*cm1)
    assert dm["groups"] == ds["groups"] and dm["inputs"]["processes"] == 8
    # merge keeps DFTracer's metadata once, so its per-process line counts cannot be checked
    w = dm["inputs"]["warnings"]
    assert dm["inputs"]["complete"] and w and all("not checked" in x["what"] for x in w)


def test_real_dftrace_trace(real_trace):
    d, p = analyze(real_trace)
    assert p.returncode == 0 and d["inputs"]["complete"], d["inputs"]["damaged"]
    assert {k: d["inputs"][k] for k in stat_counts([real_trace])} == stat_counts([real_trace])
    assert d["steps"]["count"] > 0
    for it in d["steps"]["items"]:
        assert sum(it[k] for k in ("compute_ns", "comm_ns", "io_ns", "data_ns", "other_ns")) == \
            it["dur_ns"]


def test_text_summary(tmp_path):
    procs, paths = straggler_run(tmp_path)
    out = run("analyze", *paths).stdout
    assert out.startswith("4 file(s), 4 process(es), 4 rank(s)")
    assert "rank 2 (1 process(es))" in out and "steps (step): 12" in out
    assert "stragglers (over 1.25 x the step's median and 1 ms more): 1" in out
    assert "  rank 2 step 0:1: " in out
    short = Proc(102, rank=9).ev("a", "compute", 0, 5).ev("b", "compute", 5, 9)
    r = run("analyze", short.write(tmp_path, drop_last_event=True), check=False)
    assert r.returncode == 2 and "NOT READ: process 102 on node1" in r.stdout
    assert "--allow-damaged" in r.stderr


# ---- the io section: an independent reference of Darshan's figures

BUCKETS = [("0-100", 100), ("100-1K", 1024), ("1K-10K", 10240), ("10K-100K", 102400),
           ("100K-1M", 1 << 20), ("1M-4M", 4 << 20), ("4M-10M", 10 << 20),
           ("10M-100M", 100 << 20), ("100M-1G", 1 << 30), ("1G+", None)]
READS = {"read", "pread", "pread64", "readv", "preadv"}
WRITES = {"write", "pwrite", "pwrite64", "writev", "pwritev"}


def bucket(n):
    return next(name for name, up in BUCKETS if up is None or n <= up)


def io_reference(procs):
    """Per file (by hash): bytes, ops, seq/consec; job-wide: histograms, meta/data time."""
    files = {}
    hist = {d: dict.fromkeys([b for b, _ in BUCKETS], 0) for d in ("read", "write")}
    meta_ns = data_ns = 0
    sizes = {}
    for pr in procs:
        fds = {}  # fd -> [offset or None, last end per direction]
        for name, cat, tid, s, e, a in sorted(pr.events, key=lambda x: (x[4], -x[3])):
            if cat not in ("POSIX", "STDIO"):
                continue
            f = files.setdefault(a.get("fhash"), dict(read_bytes=0, write_bytes=0, reads=0,
                                                      writes=0, sequential_reads=0,
                                                      consecutive_reads=0, sequential_writes=0,
                                                      consecutive_writes=0, metadata_ops=0,
                                                      pids=set()))
            f["pids"].add(pr.pid)
            d = "read" if name in READS or name == "fread" else "write" if (
                name in WRITES or name in ("fwrite", "fputs")) else None
            if d is None:
                meta_ns += e - s
                f["metadata_ops"] += 1
                if name == "open":
                    fds[a["ret"]] = [None if a["flags"] & 0o2000 else 0, {}]
                elif name == "lseek":
                    fds[a["fd"]][0] = a["ret"]
                elif name == "close":
                    fds.pop(a["fd"], None)
                continue
            if name == "fputs":  # folded: calls and bytes, no size per call, no time
                f[d + "s"] += a["calls"]
                f[d + "_bytes"] += a["bytes"]
                continue
            data_ns += e - s
            n = a["ret"] * (a["size"] if cat == "STDIO" else 1)
            f[d + "s"] += 1
            f[d + "_bytes"] += n
            hist[d][bucket(n)] += 1
            sizes[n] = sizes.get(n, 0) + 1
            if cat != "POSIX":
                continue
            st = fds.setdefault(a["fd"], [None, {}])
            if name.startswith("p"):
                at = a["offset"]
            elif st[0] is None:
                continue
            else:
                at = st[0]
                st[0] += n
            last = st[1].get(d)
            if last is not None and n:
                f["sequential_" + d + "s"] += at >= last
                f["consecutive_" + d + "s"] += at == last
            if n:
                st[1][d] = at + n
    return files, hist, meta_ns, data_ns, sizes


def io_procs():
    h1, h2 = 1111, 2222
    a = Proc(300, rank=0)
    a.files = {"/d/one.bin": h1, "/d/two.log": h2}
    t = 0

    def ev(p, name, cat, dur, **args):
        nonlocal t
        p.ev(name, cat, t, t + dur, **args)
        t += dur + 3

    ev(a, "open", "POSIX", 7, fhash=h1, flags=0, mode=0, ret=3)
    ev(a, "read", "POSIX", 11, fhash=h1, fd=3, count=100, ret=100)      # first: neither
    ev(a, "read", "POSIX", 13, fhash=h1, fd=3, count=4096, ret=4096)    # consecutive
    ev(a, "lseek", "POSIX", 2, fhash=h1, fd=3, offset=10000, whence=0, ret=10000)
    ev(a, "read", "POSIX", 17, fhash=h1, fd=3, count=1000, ret=1000)    # sequential, a gap
    ev(a, "lseek", "POSIX", 2, fhash=h1, fd=3, offset=0, whence=0, ret=0)
    ev(a, "read", "POSIX", 5, fhash=h1, fd=3, count=50, ret=50)         # backwards: random
    ev(a, "pread64", "POSIX", 19, fhash=h1, fd=3, count=2048, offset=50, ret=2048)  # consecutive
    ev(a, "pread64", "POSIX", 19, fhash=h1, fd=3, count=1 << 20, offset=0, ret=(1 << 20) + 1)
    ev(a, "read", "POSIX", 3, fhash=h1, fd=3, count=10, ret=0)          # end of file: 0 bytes
    ev(a, "close", "POSIX", 4, fhash=h1, fd=3, ret=0)
    ev(a, "open", "POSIX", 7, fhash=h2, flags=0o2001, mode=0, ret=4)    # O_APPEND: offset unknown
    ev(a, "write", "POSIX", 23, fhash=h2, fd=4, count=100000, ret=100000)
    ev(a, "pwrite", "POSIX", 29, fhash=h2, fd=4, count=102400, offset=0, ret=102400)
    ev(a, "pwrite", "POSIX", 29, fhash=h2, fd=4, count=102401, offset=102400, ret=102401)
    ev(a, "fwrite", "STDIO", 31, fhash=h2, size=512, ret=2)            # 1024 bytes: 100-1K
    ev(a, "fputs", "STDIO", 40, fhash=h2, calls=5, bytes=50)           # folded: not binned
    ev(a, "compute", "compute", 50)
    b = Proc(301, rank=1)
    b.files = {"/d/one.bin": h1}
    t = 5
    ev(b, "open", "POSIX", 8, fhash=h1, flags=0, mode=0, ret=5)
    for k in range(3):
        ev(b, "read", "POSIX", 9, fhash=h1, fd=5, count=4096, ret=4096)  # 2 consecutive
    ev(b, "stat", "POSIX", 6, fhash=h1, ret=0)
    return [a, b]


def test_io_section_against_reference(tmp_path):
    procs = io_procs()
    d, _ = analyze(*[p.write(tmp_path) for p in procs])
    io = d["io"]
    files, hist, meta_ns, data_ns, sizes = io_reference(procs)
    assert io["access_sizes"]["read"] == hist["read"]
    assert io["access_sizes"]["write"] == hist["write"]
    assert io["access_sizes"]["not_binned"] == {"read": 0, "write": 5}
    # stated: 1024 bytes is in 100-1K, 1 MiB + 1 in 1M-4M, a 0-byte read in 0-100
    assert hist["write"]["100-1K"] == 1 and hist["read"]["1M-4M"] == 1
    assert io["metadata_ns"] == meta_ns and io["data_ns"] == data_ns
    assert io["offset_unknown"] == {"read": 0, "write": 1}
    common = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
    assert io["common_access_sizes"] == [{"size": s, "count": c} for s, c in common]
    assert io["common_access_sizes"][0] == {"size": 4096, "count": 4}
    by_name = {f["file"]: f for f in io["files"]}
    for path, h in (("/d/one.bin", 1111), ("/d/two.log", 2222)):
        f, ref = by_name[path], files[h]
        for k in ("read_bytes", "write_bytes", "reads", "writes", "sequential_reads",
                  "consecutive_reads", "sequential_writes", "consecutive_writes", "metadata_ops"):
            assert f[k] == ref[k], (path, k)
    one, two = by_name["/d/one.bin"], by_name["/d/two.log"]
    # stated: rank 0 reads sequentially 3 times (2 consecutive), rank 1 twice (both)
    assert (one["sequential_reads"], one["consecutive_reads"]) == (5, 4)
    assert one["ranks"] == [0, 1] and one["shared"] and not two["shared"] and two["ranks"] == [0]
    assert (two["sequential_writes"], two["consecutive_writes"]) == (1, 1)
    assert io["read_bytes"] == one["read_bytes"] and io["write_bytes"] == two["write_bytes"]
    # bytes over time: per rank, bins of bin_ns from start_ns, summing to its bytes
    bw = io["bandwidth"]
    for g in bw["groups"]:
        pr = procs[g["rank"]]
        ref = {}
        for name, cat, tid, s, e, a in pr.events:
            if name in READS | WRITES | {"fwrite", "fputs"}:
                n = a.get("bytes", a.get("ret", 0) * a.get("size", 1))
                k = (T0 + s - bw["start_ns"]) // bw["bin_ns"]
                dr = "read" if name in READS else "write"
                ref[(dr, k)] = ref.get((dr, k), 0) + n
        for dr in ("read", "write"):
            got = {(dr, i): v for i, v in enumerate(g[dr + "_bytes"]) if v}
            assert got == {k: v for k, v in ref.items() if k[0] == dr and v}
    assert bw["start_ns"] % bw["bin_ns"] == 0
    paths = [os.path.join(str(tmp_path), f"t-{p.pid}.pfw.gz") for p in procs]
    rev, _ = analyze(*reversed(paths))
    assert rev["io"] == io and rev["findings"] == d["findings"]  # independent of the order
    text = run("analyze", *paths).stdout
    assert f"I/O: read {io['read_bytes'] / 1e6:.3f} MB in {io['reads']} calls" in text
    assert " 2 shared /d/one.bin" in text


def test_io_matches_stat_on_dftracer(ref_files):
    # per file bytes and calls equal dftrace stat's (same classification), summed over layers
    paths = ref_files  # every DFTracer trace: 1.x (cm1) and 2.x (aggregated records)
    d, _ = analyze(*paths)
    st = json.loads(run("stat", "--json", *paths).stdout)
    for k, sk in (("read_bytes", "read_bytes"), ("reads", "read_calls"),
                  ("write_bytes", "write_bytes"), ("writes", "write_calls")):
        assert sum(f[k] for f in d["io"]["files"]) == sum(f[sk] for f in st["io_files"]), k
