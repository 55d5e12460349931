# test_analyze_dask.py: dftrace.analyze, the Python face of `dftrace analyze`: on one machine
# the whole JSON document equals the command's, and on a real distributed LocalCluster of 2
# worker processes it equals the single-machine one (groups partitioned, partials merged).
# Synthetic multi-rank runs with DataLoader-worker processes (tied to their rank by ppid),
# DFTracer's traces, damaged input, and a partition that splits a group.
import gzip
import json
import os
import shutil
import warnings

import pytest

from conftest import need, run
from test_analyze import Proc, step_order_run

need("pandas", "distributed")
import dftrace  # noqa: E402
from dftrace import _analysis  # noqa: E402
from dftrace import _analyze  # noqa: E402

MS = 1_000_000


def rank_run(d, ranks=6, workers=2, steps=8, slow_rank=3, iters_only=()):
    """Each rank: a main process with steps of compute, comm and I/O, and `workers` DataLoader
    worker processes (no rank; ppid = the main pid) reading files while the parent computes.
    Rank slow_rank's step 5 is slow (a straggler). Ranks in iters_only have `.iter` events and
    no step events."""
    paths = []
    for r in range(ranks):
        main = Proc(1000 + 100 * r, rank=r, ppid=1)
        main.files = {"/data/shard%d.bin" % r: "h%d" % r, "/ckpt/model.pt": "hc"}
        t = 0
        for s in range(steps):
            dur = 40 * MS + (30 * MS if (r == slow_rank and s == 5) else 0) + r * 1000 + s
            name = "loop.iter" if r in iters_only else "step"
            main.ev(name, "compute" if name == "step" else "train", t, t + dur, step=s, epoch=0)
            main.ev("forward", "compute", t + 1 * MS, t + 20 * MS)
            main.ev("allreduce", "comm", t + 15 * MS, t + 30 * MS)
            main.ev("write", "POSIX", t + 31 * MS, t + 33 * MS, fhash="hc", fd=5, ret=1 << 20)
            main.ev("fetch", "dataloader", t + 33 * MS, t + 36 * MS + s * 1000)
            t += dur + 2 * MS
        paths.append(main.write(d))
        for w in range(workers):
            wp = Proc(main.pid + 1 + w, rank=None, ppid=main.pid)
            wp.files = {"/data/shard%d.bin" % r: "h%d" % r}
            for s in range(steps):
                base = s * 45 * MS + w * 3 * MS
                off = (s * workers + w) * 65536
                wp.ev("pread", "POSIX", base, base + 5 * MS + w, fhash="h%d" % r, fd=7,
                      ret=65536, offset=off)
                wp.ev("collate", "data", base + 5 * MS, base + 8 * MS)
            paths.append(wp.write(d))
    return sorted(paths)


@pytest.fixture(scope="module")
def run6(tmp_path_factory):
    return rank_run(tmp_path_factory.mktemp("run6"))


def cli_json(paths, *extra, check=True):
    p = run("analyze", "--json", *extra, *paths, check=check)
    return json.loads(p.stdout)


def test_single_machine_equals_the_command(run6):
    r = dftrace.analyze(run6)
    assert dict(r) == cli_json(run6)
    assert len(r["groups"]) == 6 and all(len(g["pids"]) == 3 for g in r["groups"])
    assert r["stragglers"] and r["stragglers"][0]["rank"] == 3
    assert r["io"]["files"] and r["findings"] is not None
    # the pandas views: one row per group and per step, the split summing to each step
    g = r.groups_frame()
    assert list(g["rank"]) == list(range(6)) and (g["union_ns.io"] > 0).all()
    s = r.steps_frame()
    assert len(s) == 48
    parts = s[["compute_ns", "comm_ns", "io_ns", "data_ns", "other_ns"]].sum(axis=1)
    assert (parts == s["dur_ns"]).all()


def test_step_items_built_as_objects_equal_the_text(run6, ref_files, tmp_path):
    # merge_doc gives the document without its step items and the steps held, step_items the
    # items as dicts: together, key order and value types included, they are the text merge
    # writes. Steps with `step` and `epoch` arguments, without, and groups without a rank
    # (DFTracer's traces).
    p = Proc(4242, rank=None)
    for k in range(5):
        p.ev("step", "compute", 100 * k, 100 * k + 90, step=k, epoch=-k)
    p.write(tmp_path)
    for paths in (run6, ref_files, [str(tmp_path / "t-4242.pfw.gz")]):
        parts = [_analysis.partial(paths, None, None, 1)]
        text = _analysis.merge(parts, None, None, None)
        rest, held = _analysis.merge_doc(parts, None, None, None)
        items = _analysis.step_items(held, 0, _analysis.step_count(held))
        doc = json.loads(rest)
        assert doc["steps"]["items"] == []
        doc["steps"]["items"] = items
        assert json.dumps(doc) == json.dumps(json.loads(text))
        assert json.dumps(dftrace.analyze(paths, allow_damaged=True)) == json.dumps(doc)
    assert items[3]["step"] == 3 and items[3]["epoch"] == -3 and items[3]["rank"] is None
    # the items share their table of keys (split dicts), never their values: each one is a
    # dict of its own
    before = json.dumps(items)
    items[0]["step"] = "changed"
    items[1]["note"] = 1
    del items[2]["epoch"]
    after = json.loads(before)
    after[0]["step"], after[1]["note"] = "changed", 1
    del after[2]["epoch"]
    assert items == after and list(items[1])[-1] == "note" and list(items[4])[-1] == "other_ns"


def test_command_text_is_the_document_and_its_completeness(run6, tmp_path):
    # merge_text (the command's --scheduler) gives merge's text as UTF-8 bytes and the
    # document's inputs.complete, for whole input and for a damaged file
    bad = tmp_path / os.path.basename(run6[0])
    shutil.copy(run6[0], bad)
    with open(bad, "r+b") as f:
        f.truncate(os.path.getsize(bad) - 20)
    for paths, complete in ((run6, True), ([str(bad)] + run6[1:], False)):
        parts = [_analysis.partial(paths, None, None, 1)]
        text = _analysis.merge(parts, None, None, None)
        data, flag = _analysis.merge_text(parts, None, None, None)
        assert isinstance(data, bytes) and data == text.encode()
        assert flag is complete and json.loads(text)["inputs"]["complete"] is complete


def test_partial_is_compact_and_exact(tmp_path):
    # The partial is what a cluster ships to its client: its steps and collective calls take
    # a few bytes each (differences from the previous one), not 8 per integer, and decode
    # exactly: negative and decreasing step and epoch arguments, steps that start before the
    # one before them ends, times of 2023 in nanoseconds.
    nsteps = 2000
    main = Proc(4242, rank=0, ppid=1)
    t = 0
    for s in range(nsteps):
        dur = 3 * MS + (s * 7919) % 1000
        main.ev("step", "compute", t, t + dur, step=-s if s % 3 else s, epoch=(s % 5) - 2)
        main.ev("forward", "compute", t + 100, t + MS)
        main.ev("allreduce", "comm", t + MS, t + 2 * MS, tid=main.pid + 1)
        t += dur - (MS if s % 4 == 1 else -MS)  # every 4th step overlaps the next
    paths = [main.write(tmp_path)]
    r = dftrace.analyze(paths)
    assert dict(r) == cli_json(paths)
    assert r["steps"]["count"] == nsteps
    size = len(_analysis.partial(paths, None, None, 1))
    assert size < 40 * nsteps, "%d bytes for %d steps and calls" % (size, nsteps)


def test_batches_keep_groups_whole(run6):
    batches = _analyze.batches_for(run6, 2)
    assert len(batches) == 2 and sorted(sum(batches, [])) == run6
    for b in batches:  # each rank's three files in one batch
        ranks = {os.path.basename(p)[2:-7] for p in b}
        mains = {p for p in ranks if int(p) % 100 == 0}
        assert len(ranks) == 3 * len(mains)


def test_head_processes_lines(tmp_path):
    # the lines that tie processes, found by their name wherever it lies in the line: spaced
    # JSON, a name twice in one line, the head's last line without its newline, string pids
    lines = [
        '[',
        '{"id":1,"name":"PR","cat":"dftracer","pid":7,"tid":7,"ph":"M","args":{"name":"rank",'
        '"value":3}},',
        '{"id": 2, "name": "start", "cat": "dftracer", "pid": 8, "tid": 8, "ts": 1, "dur": 0, '
        '"ph": "X", "args": {"ppid": 7, "name": "PR"}},',
        '{"id":3,"name":"read","cat":"POSIX","pid":"w-9","tid":1,"ts":2,"dur":1,"ph":"X"},',
        '{"id":4,"name":"start","cat":"dftracer","pid":"w-9","tid":1,"ts":3,"dur":0,"ph":"X",'
        '"args":{"ppid":8}}',
    ]
    path = tmp_path / "t.pfw.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines))
    assert _analyze._head_processes(str(path)) == {"7": [None, 3], "8": ["7", None],
                                                  "w-9": ["8", None]}


def test_placed_on_workers_as_here(client, run6):
    # the files' heads read by the workers place the files as reading them here does, and the
    # partials of a LocalCluster (workers on the scheduler's host) come from the workers directly
    assert _analyze._place(client, run6) == _analyze.batches_for(run6, 2)
    assert _analyze._direct(client, _analyze._workers(client))


def test_dask_equals_single_machine(client, run6):
    single = dftrace.analyze(run6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback: the batches held every group whole
        distributed = dftrace.analyze(run6, client=client)
    assert distributed == single
    # the same with --steps and the order of the files reversed
    assert (dftrace.analyze(run6[::-1], client=client, steps="forward") ==
            cli_json(run6, "--steps", "forward"))


def test_dask_when_only_some_ranks_have_step_events(client, tmp_path, monkeypatch):
    # A batch without step events takes its `.iter` events; the run has step events, so
    # those ranks have no steps in the merge, as on one machine.
    paths = rank_run(tmp_path, ranks=4, workers=1, iters_only=(1, 3))
    single = dftrace.analyze(paths)
    assert single["steps"]["source"] == "step" and single["steps"]["count"] == 16
    assert dict(single) == cli_json(paths)
    with_steps = [p for p in paths if "t-10" in p or "t-12" in p]  # ranks 0 and 2
    iters = [p for p in paths if p not in with_steps]
    monkeypatch.setattr(_analyze, "batches_for", lambda files, n, heads=None: [with_steps, iters])
    assert dftrace.analyze(paths, client=client) == single


@pytest.mark.parametrize("order", ["shuffled", "restarting"])
def test_dask_steps_whose_arguments_do_not_increase(client, tmp_path, monkeypatch, order):
    # The client's merge compares the steps as the command does: keys that do not increase
    # are sorted through its temporary file past the budget (2 rows, read where the merge
    # runs), and the document equals the single-machine one (keys sorted in memory).
    paths = step_order_run(tmp_path, order)
    single = cli_json(paths)
    monkeypatch.setenv("DFTRACE_ANALYZE_SPILL_EVENTS", "2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback: one batch per worker, groups whole
        distributed = dftrace.analyze(paths, client=client)
    assert dict(distributed) == single
    assert single["imbalance"]["steps_compared"] > 200 and single["stragglers"]


def test_split_group_is_refused_then_redone(client, run6, monkeypatch):
    # A rank's worker process analysed apart from its parent would be a group of its own:
    # the merge refuses, and the cluster run is redone whole, with a warning.
    main, worker = run6[0], run6[1]
    with pytest.raises(_analysis.SplitGroups, match="split"):
        _analysis.merge([_analysis.partial([main], None, None, 1),
                         _analysis.partial([worker], None, None, 1)], None, None, None)
    monkeypatch.setattr(_analyze, "batches_for", lambda files, n, heads=None: [[f] for f in files])
    with pytest.warns(RuntimeWarning, match="split"):
        r = dftrace.analyze(run6, client=client)
    assert r == dftrace.analyze(run6)


def test_dftracer_traces(client, ref_files):
    cm1 = [f for f in ref_files if os.path.basename(f).startswith("cm1-")]
    for paths in (cm1, ref_files):
        single = dftrace.analyze(paths)
        assert dict(single) == cli_json(paths)
        # DFTracer's processes hash different paths alike: one name for the hash whatever
        # the order of the files (and of the partials)
        assert dftrace.analyze(paths[::-1]) == single
        assert dftrace.analyze(paths, client=client) == single
    assert len(_analyze.batches_for(cm1, 2)) == 2


def test_dftracer_202_traces(client):
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "dftracer-2.0.2")
    paths = sorted(os.path.join(d, f) for f in os.listdir(d) if ".pfw" in f)
    single = dftrace.analyze(paths, allow_damaged=True)
    assert dict(single) == cli_json(paths, "--allow-damaged")
    assert dftrace.analyze(paths, client=client, allow_damaged=True) == single


def test_damaged_file_raises(client, run6, tmp_path):
    paths = [str(tmp_path / os.path.basename(p)) for p in run6]
    for a, b in zip(run6, paths):
        shutil.copy(a, b)
    with open(paths[4], "rb") as f:
        data = f.read()
    with open(paths[4], "wb") as f:
        f.write(data[: len(data) // 2])  # a truncated member
    for c in (None, client):
        with pytest.raises(dftrace._analyze.DamagedTraceError, match="could not be read") as e:
            dftrace.analyze(paths, client=c)
        lost = e.value.result["inputs"]["damaged"]
        assert lost and any(d["file"] == paths[4] for d in lost)
        r = dftrace.analyze(paths, client=c, allow_damaged=True)
        assert r["inputs"]["complete"] is False
        assert dict(r) == cli_json(paths, "--allow-damaged")


def test_missing_input_and_bad_options(tmp_path, run6):
    with pytest.raises(FileNotFoundError):
        dftrace.analyze(str(tmp_path / "nothing-*.pfw.gz"))
    with pytest.raises(ValueError, match="steps"):
        dftrace.analyze(run6, steps="")
    with pytest.raises(ValueError, match="not a partial"):
        _analysis.merge([b"nonsense"], None, None, None)
    whole = _analysis.partial(run6[:3], None, None, 1)
    with pytest.raises(ValueError, match="cut short"):
        _analysis.merge([whole[:-5]], None, None, None)
