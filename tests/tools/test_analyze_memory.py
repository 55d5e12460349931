# test_analyze_memory.py: what dftrace analyze keeps in memory grows with what its output needs
# (per step, per collective), not with events it will not use. Peaks are compared between two
# runs of the same command (getrusage of the child), never against an absolute figure.
import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import CLI

T0 = 1_700_000_000_000_000_000


def trace_head(rank, pid):
    """A process's first lines: the array's opening, its time unit, its rank and its start."""
    return ('[\n'
            f'{{"id":1,"name":"PR","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
            '"args":{"name":"time_metric","value":"ns"}}\n'
            f'{{"id":2,"name":"PR","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
            f'"args":{{"name":"rank","value":{rank}}}}}\n'
            f'{{"id":3,"name":"start","cat":"dftracer","pid":{pid},"tid":{pid},"ts":{T0},'
            '"dur":0,"ph":"X","args":{"ppid":1}}\n')


def write_trace(path, steps, iters_per_step, rank=0, pid=9, step_arg=None):
    """One ranked process: `steps` step events (compute.step, with a `step` argument: k for the
    k-th, or step_arg(k)), each holding `iters_per_step` nested `.iter` events (frames: in no
    layer)."""
    step_arg = step_arg or (lambda k: k)
    # Written line by line: the whole text would be hundreds of MB of Python strings.
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write(trace_head(rank, pid))
        nid, width = 3, 10 * (iters_per_step + 1)
        for k in range(steps):
            t = T0 + k * width
            for i in range(iters_per_step):
                nid += 1
                f.write(f'{{"id":{nid},"name":"fetch.iter","cat":"data","pid":{pid},"tid":{pid},'
                        f'"ts":{t + 1 + 10 * i},"dur":5,"ph":"X","args":{{"step":{k}}}}}\n')
            nid += 1
            f.write(f'{{"id":{nid},"name":"step","cat":"compute","pid":{pid},"tid":{pid},"ts":{t},'
                    f'"dur":{width - 1},"ph":"X","args":{{"step":{step_arg(k)}}}}}\n')
        nid += 1
        f.write(f'{{"id":{nid},"name":"end","cat":"dftracer","pid":{pid},"tid":{pid},'
                f'"ts":{T0 + steps * width},"dur":0,"ph":"X",'
                f'"args":{{"num_events":{steps * (iters_per_step + 1)}}}}}\n]\n')


# Forks the command from a small process and reports its ru_maxrss: Linux carries the
# high-water mark of the memory a process had when it called exec (with vfork, its parent's),
# so the command must not start from this (large) interpreter.
_PEAK = """import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def analyze_peak_kib(*paths, out, env=None):
    e = dict(os.environ, DFTRACE_NO_PROGRESS="1", DFTRACE_TOOL_THREADS="1", **(env or {}))
    p = subprocess.run([sys.executable, "-S", "-c", _PEAK, str(out), CLI, "analyze", "--json",
                        *map(str, paths)], capture_output=True, text=True, env=e, timeout=600)
    status, kib = map(int, p.stdout.split())
    assert status == 0, p.stderr
    return kib


def load(path):
    with open(path) as f:
        return json.load(f)


def test_iter_events_are_not_kept_when_the_steps_are_step_events(tmp_path):
    """With step events in the run, `.iter` events are never steps: 600,000 of them (24 MB as
    step candidates) must add less than a quarter of that to the peak of the same run without
    them."""
    steps, iters = 20_000, 30
    write_trace(tmp_path / "plain.pfw.gz", steps, 0)
    write_trace(tmp_path / "iters.pfw.gz", steps, iters)
    plain = analyze_peak_kib(tmp_path / "plain.pfw.gz", out=tmp_path / "plain.json")
    with_iters = analyze_peak_kib(tmp_path / "iters.pfw.gz", out=tmp_path / "iters.json")
    a, b = load(tmp_path / "plain.json"), load(tmp_path / "iters.json")
    assert a["steps"]["source"] == b["steps"]["source"] == "step"
    assert a["steps"]["count"] == b["steps"]["count"] == steps
    assert b["inputs"]["events"] == a["inputs"]["events"] + steps * iters
    candidate_bytes = steps * iters * 40  # one step candidate: 40 bytes
    grown = (with_iters - plain) * 1024
    assert grown < candidate_bytes // 4, (
        f"the peak grew by {grown} bytes with {steps * iters} .iter events "
        f"(plain {plain} KiB, with them {with_iters} KiB)")


def test_step_candidates_are_given_back_as_the_steps_array_fills(tmp_path):
    """48 ranks of 20,000 steps: the step candidates (40 bytes, freed when their group is
    analysed) must not stay resident beside the step rows. Bound: 112 bytes per step over the
    peak of the same ranks with 10 steps each (written when every row was held in memory: 80
    bytes, 12 while steps were compared, and slack; rows now leave memory past a budget)."""
    ranks, few, many = 48, 10, 20_000
    for sub, steps in (("few", few), ("many", many)):
        (tmp_path / sub).mkdir()
        for r in range(ranks):
            write_trace(tmp_path / sub / f"r{r}.pfw.gz", steps, 0, rank=r, pid=100 + r)
    paths = {sub: sorted((tmp_path / sub).iterdir()) for sub in ("few", "many")}
    base = analyze_peak_kib(*paths["few"], out=tmp_path / "few.json")
    peak = analyze_peak_kib(*paths["many"], out=tmp_path / "many.json")
    doc = load(tmp_path / "many.json")
    assert doc["steps"]["count"] == ranks * many
    per_step = (peak - base) * 1024 / (ranks * (many - few))
    assert per_step < 112, (f"{per_step:.1f} bytes of peak per step (base {base} KiB, "
                           f"{ranks * many} steps {peak} KiB)")


def step_args(order, steps, rank):
    """The `step` arguments of a rank's steps in start order: 0, 1, ... ("increasing"); a
    permutation of them, another for each rank ("shuffled"); or counted from 0 again in each
    of 10 epochs, without an `epoch` argument ("restarting": every rank repeats its keys, so
    steps are matched by index)."""
    if order == "shuffled":  # 7919 is prime, so k -> a * k + b (mod steps) is a permutation
        return lambda k: (7919 * k + 131 * rank) % steps
    if order == "restarting":
        return lambda k: k % (steps // 10)
    return None


@pytest.mark.parametrize("order", ["increasing", "shuffled", "restarting"])
def test_peak_does_not_grow_with_the_number_of_steps(tmp_path, order):
    """The same 200,000 events on 8 ranks, as 800 steps (each with 249 `.iter` events, which
    are frames) or as 200,000 steps: the step candidates and rows go to temporary files past a
    fixed budget and are read back in order (the JSON items, the totals, the matching across
    ranks), so the peak may differ by what is held per step key compared (25,000 keys), one
    group's candidates and the budgets, not by every step's 88-byte row, 40-byte candidate and
    their sort (18.6 MiB more before). When the `step` arguments do not increase in start
    order, the keys are put in order through a temporary file too (sorted runs merged), not
    by reading every row back into memory (19.6 MiB more before)."""
    ranks, events = 8, 25_000
    for sub, steps in (("few", 100), ("many", events)):
        (tmp_path / sub).mkdir()
        for r in range(ranks):
            write_trace(tmp_path / sub / f"r{r}.pfw.gz", steps, events // steps - 1, rank=r,
                        pid=100 + r, step_arg=step_args(order, steps, r))
    paths = {sub: sorted((tmp_path / sub).iterdir()) for sub in ("few", "many")}
    # A spill budget of 16 Ki events (and so 16 Ki step candidates, 2 Ki step rows) in both runs:
    # the default's (256 Ki) would hold every one of these steps, a constant a test cannot pass.
    env = {"DFTRACE_ANALYZE_SPILL_EVENTS": str(16384)}
    base = analyze_peak_kib(*paths["few"], out=tmp_path / "few.json", env=env)
    peak = analyze_peak_kib(*paths["many"], out=tmp_path / "many.json", env=env)
    few, many = load(tmp_path / "few.json"), load(tmp_path / "many.json")
    assert few["inputs"]["events"] == many["inputs"]["events"]
    assert many["steps"]["count"] == ranks * events
    assert len(many["steps"]["items"]) == ranks * events
    assert many["imbalance"]["steps_compared"] == events
    worst = many["imbalance"]["worst"]
    assert worst is None or worst["step"].startswith("#") == (order == "restarting")
    grown = (peak - base) / 1024
    assert grown < 6, (f"the peak grew by {grown:.1f} MiB from {ranks * 100} to "
                        f"{ranks * events} steps (base {base} KiB, then {peak} KiB)")


def write_comm_trace(path, events, collectives, rank, pid, ranks, skew=None):
    """One ranked process of `events` comm events one after the other: the first `collectives`
    are all_reduce calls of a group of `ranks` (matched across ranks), the rest point-to-point
    sends (in the comm layer too, never matched). Event k starts skew(k) ns into its 10 ns
    slot (rank by default)."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write(trace_head(rank, pid))
        for k in range(events):
            name = "all_reduce" if k < collectives else "send"
            f.write(f'{{"id":{k + 4},"name":"{name}","cat":"comm","pid":{pid},"tid":{pid},'
                    f'"ts":{T0 + 10 * k + (skew(k) if skew else rank)},"dur":5,"ph":"X",'
                    f'"args":{{"comm_size":{ranks},"comm_group":"world"}}}}\n')
        f.write(f'{{"id":{events + 4},"name":"end","cat":"dftracer","pid":{pid},"tid":{pid},'
                f'"ts":{T0 + 10 * events},"dur":0,"ph":"X","args":{{"num_events":{events}}}}}\n'
                ']\n')


def test_peak_does_not_grow_with_the_number_of_collective_calls(tmp_path):
    """The same 600,000 comm events on 24 ranks, with 100 or 25,000 all_reduce calls per rank:
    the collective calls go to a temporary file past a fixed budget, and are matched by a walk
    over the ranks' sequences side by side, so the peak may differ by the budget, one rank's
    calls (put in order when its group is analysed) and what is kept per instance (8 bytes),
    not by every call's 48 bytes (27 MiB more before)."""
    ranks, events = 24, 25_000
    for sub, colls in (("few", 100), ("many", events)):
        (tmp_path / sub).mkdir()
        for r in range(ranks):
            write_comm_trace(tmp_path / sub / f"r{r}.pfw.gz", events, colls, rank=r, pid=100 + r,
                             ranks=ranks)
    paths = {sub: sorted((tmp_path / sub).iterdir()) for sub in ("few", "many")}
    # A spill budget of 16 Ki events (8 Ki collective calls) in both runs: the default's (128 Ki
    # calls) would hold most of these calls, a constant a test cannot pass.
    env = {"DFTRACE_ANALYZE_SPILL_EVENTS": str(16384)}
    base = analyze_peak_kib(*paths["few"], out=tmp_path / "few.json", env=env)
    peak = analyze_peak_kib(*paths["many"], out=tmp_path / "many.json", env=env)
    few, many = load(tmp_path / "few.json"), load(tmp_path / "many.json")
    assert few["inputs"]["events"] == many["inputs"]["events"]
    assert few["collectives"]["instances"] == 100
    assert many["collectives"]["instances"] == events
    grown = (peak - base) / 1024
    assert grown < 6, (f"the peak grew by {grown:.1f} MiB from {ranks * 100} to "
                        f"{ranks * events} collective calls (base {base} KiB, then {peak} KiB)")


def write_wait_trace(path, events, waits, rank, pid, ranks, calls=100):
    """One ranked process of `events` comm events: `calls` asynchronous all_reduce calls (each
    with a comm_id) and their comm.wait events, then `waits` more comm.wait events with ids no
    call has (kept until the process's group is analysed, then dropped), the rest sends."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write(trace_head(rank, pid))
        for k in range(events):
            if k < 2 * calls:
                name, cid = ("all_reduce", k // 2) if k % 2 == 0 else ("wait", k // 2)
            elif k < 2 * calls + waits:
                name, cid = "wait", 1_000_000 + k
            else:
                name, cid = "send", None
            args = f'"comm_size":{ranks},"comm_group":"world"'
            if cid is not None:
                args += f',"comm_id":{cid}'
            f.write(f'{{"id":{k + 4},"name":"{name}","cat":"comm","pid":{pid},"tid":{pid},'
                    f'"ts":{T0 + 10 * k + rank * (k % 3)},"dur":5,"ph":"X","args":{{{args}}}}}\n')
        f.write(f'{{"id":{events + 4},"name":"end","cat":"dftracer","pid":{pid},"tid":{pid},'
                f'"ts":{T0 + 10 * events},"dur":0,"ph":"X","args":{{"num_events":{events}}}}}\n'
                ']\n')


def test_peak_does_not_grow_with_the_number_of_comm_waits(tmp_path):
    """The same 600,000 comm events on 24 ranks, with 100 or 24,800 comm.wait events per rank
    beyond those of the 100 asynchronous calls: the waits go to the collective calls' temporary
    file past the same budget and come back one group at a time, so the peak may differ by the
    budget and one rank's waits, not by every wait's 24 bytes (14 MiB more before). The waits
    no call has change nothing: the collectives' figures are the same."""
    ranks, events = 24, 25_000
    for sub, waits in (("few", 0), ("many", events - 200)):
        (tmp_path / sub).mkdir()
        for r in range(ranks):
            write_wait_trace(tmp_path / sub / f"r{r}.pfw.gz", events, waits, rank=r, pid=100 + r,
                             ranks=ranks)
    paths = {sub: sorted((tmp_path / sub).iterdir()) for sub in ("few", "many")}
    env = {"DFTRACE_ANALYZE_SPILL_EVENTS": str(16384)}
    base = analyze_peak_kib(*paths["few"], out=tmp_path / "few.json", env=env)
    peak = analyze_peak_kib(*paths["many"], out=tmp_path / "many.json", env=env)
    few, many = load(tmp_path / "few.json"), load(tmp_path / "many.json")
    assert few["inputs"]["events"] == many["inputs"]["events"]
    assert few["collectives"]["instances"] == 100
    assert few["collectives"] == many["collectives"]
    assert few["collectives"]["wait_ns"] > 0  # the calls' waits were tied to them
    grown = (peak - base) / 1024
    assert grown < 6, (f"the peak grew by {grown:.1f} MiB from {ranks * 100} to "
                        f"{ranks * (events - 100)} comm.wait events (base {base} KiB, "
                        f"then {peak} KiB)")


# Computes one partial per trace (as a Dask worker does, one rank each) into files, in a
# process of its own.
_PARTIALS = """import sys
from dftrace import _analysis
for src, dst in zip(sys.argv[1::2], sys.argv[2::2]):
    with open(dst, "wb") as f:
        f.write(_analysis.partial([src], None, None, 1))
"""

# Merges the partials as the Dask client does and prints the high-water mark of its memory
# before and after the merge (the partials' bytes already read).
_MERGE = """import resource, sys
from dftrace import _analysis
parts = [open(p, "rb").read() for p in sys.argv[2:]]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
text, items = _analysis.merge_doc(parts, None, None, None)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with open(sys.argv[1], "w") as f:
    f.write(text)
print(before, after)
"""


def client_merge_growth_kib(traces, tmp, env):
    e = dict(os.environ, DFTRACE_NO_PROGRESS="1", **env)
    parts = [tmp / (t.name + ".part") for t in traces]
    args = [str(x) for pair in zip(traces, parts) for x in pair]
    p = subprocess.run([sys.executable, "-c", _PARTIALS, *args], capture_output=True, text=True,
                       env=e, timeout=600)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([sys.executable, "-c", _MERGE, str(tmp / "doc.json"), *map(str, parts)],
                       capture_output=True, text=True, env=e, timeout=600)
    assert p.returncode == 0, p.stderr
    before, after = map(int, p.stdout.split())
    return after - before


def test_client_merge_does_not_grow_with_the_number_of_collective_calls(tmp_path):
    """The client of a distributed run (dftrace.analyze with a Dask client) merges the workers'
    partials: 2 ranks of 1,000,000 comm events, with 100 or 1,000,000 all_reduce calls each.
    The decoded calls go to a temporary file past the budget and each instance's spread (8
    bytes) too, so what the merge adds to the client's peak may differ by the budgets, not by
    every call's 48 bytes (92 MiB more before) nor every instance's spread (7.6 MiB)."""
    ranks, events = 2, 1_000_000
    env = {"DFTRACE_ANALYZE_SPILL_EVENTS": str(16384)}
    grown, docs = {}, {}
    for sub, colls in (("few", 100), ("many", events)):
        d = tmp_path / sub
        d.mkdir()
        for r in range(ranks):
            # rank 1 arrives (k * k) % 5 ns after rank 0 at instance k: spreads of 0 to 4 ns
            write_comm_trace(d / f"r{r}.pfw.gz", events, colls, rank=r, pid=100 + r, ranks=ranks,
                             skew=lambda k, r=r: r * (k * k % 5))
        grown[sub] = client_merge_growth_kib(sorted(d.glob("*.pfw.gz")), d, env)
        docs[sub] = load(d / "doc.json")
    assert docs["few"]["collectives"]["instances"] == 100
    assert docs["many"]["collectives"]["instances"] == events
    assert docs["many"]["inputs"]["complete"], docs["many"]["inputs"]["damaged"]
    op = docs["many"]["collectives"]["ops"][0]
    spreads = sorted(k * k % 5 for k in range(events))  # nearest ranks, computed here
    want = (spreads[(50 * events + 99) // 100 - 1], spreads[(99 * events + 99) // 100 - 1],
            spreads[-1])
    assert (op["spread_p50_ns"], op["spread_p99_ns"], op["spread_max_ns"]) == want, op
    # the same figures as one machine's (its calls spilled in phase 1, not decoded)
    analyze_peak_kib(*sorted((tmp_path / "many").glob("*.pfw.gz")), out=tmp_path / "one.json",
                     env=env)
    assert load(tmp_path / "one.json")["collectives"] == docs["many"]["collectives"]
    more = (grown["many"] - grown["few"]) / 1024
    assert more < 4, (f"the merge added {more:.1f} MiB more with {ranks * events} collective "
                      f"calls than with {ranks * 100} (few {grown['few']} KiB, "
                      f"many {grown['many']} KiB)")


def write_straggler_trace(path, steps, rank, pid, ranks, slow):
    """One ranked process of `steps` step events (with increasing `step` arguments), one every
    3 ms: 1 ms long, or 2.5 ms when slow(k, rank) (more than 1.25 x the median of step k and
    1 ms more when fewer than half the ranks are slow at k: a straggler)."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write(trace_head(rank, pid))
        for k in range(steps):
            dur = 2_500_000 if slow(k, rank) else 1_000_000
            f.write(f'{{"id":{k + 4},"name":"step","cat":"compute","pid":{pid},"tid":{pid},'
                    f'"ts":{T0 + 3_000_000 * k},"dur":{dur},"ph":"X","args":{{"step":{k}}}}}\n')
        f.write(f'{{"id":{steps + 4},"name":"end","cat":"dftracer","pid":{pid},"tid":{pid},'
                f'"ts":{T0 + 3_000_000 * steps},"dur":0,"ph":"X",'
                f'"args":{{"num_events":{steps}}}}}\n]\n')


def test_peak_does_not_grow_with_the_number_of_stragglers(tmp_path):
    """The same 400,000 steps on 16 ranks, all as long as each other (no straggler) or with 7
    of the 16 ranks slow at every step (175,000 stragglers, the ranks taking turns): the
    stragglers go through an external sort and a temporary file past the step rows' budget and
    are read back in order as the document is written, so the peak may differ by the budgets,
    not by every straggler's 56 bytes and its key's text (13.3 MiB more before)."""
    ranks, steps, slow_ranks = 16, 25_000, 7
    shapes = {"none": lambda k, r: False,
              "every": lambda k, r: (r - k) % ranks < slow_ranks}
    for sub, slow in shapes.items():
        (tmp_path / sub).mkdir()
        for r in range(ranks):
            write_straggler_trace(tmp_path / sub / f"r{r}.pfw.gz", steps, rank=r, pid=100 + r,
                                  ranks=ranks, slow=slow)
    paths = {sub: sorted((tmp_path / sub).iterdir()) for sub in shapes}
    env = {"DFTRACE_ANALYZE_SPILL_EVENTS": str(16384)}
    base = analyze_peak_kib(*paths["none"], out=tmp_path / "none.json", env=env)
    peak = analyze_peak_kib(*paths["every"], out=tmp_path / "every.json", env=env)
    none, every = load(tmp_path / "none.json"), load(tmp_path / "every.json")
    assert none["inputs"]["events"] == every["inputs"]["events"]
    assert none["stragglers"] == []
    assert every["imbalance"]["steps_compared"] == steps
    # every straggler, in the documented order: the greatest excess first, then group, then step
    want = sorted(({"rank": r, "group": r, "step": str(k), "dur_ns": 2_500_000,
                    "median_ns": 1_000_000}
                   for k in range(steps) for r in range(ranks) if shapes["every"](k, r)),
                  key=lambda s: (s["median_ns"] - s["dur_ns"], s["group"], s["step"]))
    assert every["stragglers"] == want
    grown = (peak - base) / 1024
    assert grown < 5, (f"the peak grew by {grown:.1f} MiB with {len(want)} stragglers "
                       f"(none {base} KiB, then {peak} KiB)")


# One partial per batch of files (argv: the number of batches, then the files), into files.
_BATCHES = """import sys
from dftrace import _analysis
n, files = int(sys.argv[1]), sys.argv[2:]
per = len(files) // n
for b in range(n):
    with open(f"{files[0]}.{b}.part", "wb") as f:
        f.write(_analysis.partial(files[b * per:(b + 1) * per], None, None, 1))
"""


def test_client_merge_holds_one_step_rows_budget_for_all_partials(tmp_path):
    """The client merges the same 131,072 steps (64 ranks of 2,048, the step rows' budget at
    this spill budget) as 4 partials of 16 ranks or as 64 partials of one: each decoded
    partial's steps held in memory up to a budget of its own kept every row of the 64
    (64 x 2,048 x 88 bytes: 10 MiB more than the 4, before); the partials share one budget
    (512 rows each at least), so the merge's peak may differ by that, not by the number of
    partials times the budget."""
    ranks, steps = 64, 2048
    env = dict(os.environ, DFTRACE_NO_PROGRESS="1",
               DFTRACE_ANALYZE_SPILL_EVENTS=str(16384))  # step rows' budget: 2,048
    for r in range(ranks):
        write_trace(tmp_path / f"r{r:02d}.pfw.gz", steps, 0, rank=r, pid=100 + r)
    traces = sorted(map(str, tmp_path.glob("*.pfw.gz")))
    grown, docs = {}, {}
    for n in (4, 64):
        p = subprocess.run([sys.executable, "-c", _BATCHES, str(n), *traces],
                           capture_output=True, text=True, env=env, timeout=600)
        assert p.returncode == 0, p.stderr
        parts = [f"{traces[0]}.{b}.part" for b in range(n)]
        out = tmp_path / f"doc{n}.json"
        p = subprocess.run([sys.executable, "-c", _MERGE, str(out), *parts], capture_output=True,
                           text=True, env=env, timeout=600)
        assert p.returncode == 0, p.stderr
        before, after = map(int, p.stdout.split())
        grown[n], docs[n] = after - before, load(out)
    assert docs[4] == docs[64]
    assert docs[64]["steps"]["count"] == ranks * steps
    assert docs[64]["inputs"]["complete"], docs[64]["inputs"]["damaged"]
    more = (grown[64] - grown[4]) / 1024
    assert more < 5, (f"the merge of 64 partials added {more:.1f} MiB more than that of 4 "
                      f"({grown[4]} KiB, then {grown[64]} KiB)")


# Merges partials read from files as an iterable of bytes: "iter", a generator that reads
# each file only when the merge asks for it; and prints the high-water mark of the process's
# memory before and after the merge.
_MERGE_ITER = """import resource, sys
from dftrace import _analysis
paths = sys.argv[2:]
class Parts:
    def __length_hint__(self):
        return len(paths)
    def __iter__(self):
        for p in paths:
            with open(p, "rb") as f:
                yield f.read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
text = _analysis.merge(Parts(), None, None, None)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with open(sys.argv[1], "w") as f:
    f.write(text)
print(before, after)
"""


def test_client_merge_takes_the_partials_one_at_a_time(tmp_path):
    """dftrace.analyze on a cluster fetches the workers' partials as the merge decodes them
    (dftrace._analyze._Arrivals): the merge takes an iterable and lets each partial's bytes go
    once decoded (its calls into the shared budget and file), so from a generator it never
    holds them all: 8 ranks of 250,000 collective calls (46 MB of partials) must add less
    than half the partials' bytes to the peak (the merge made a list of them all before)."""
    ranks, events = 8, 250_000
    env = {"DFTRACE_ANALYZE_SPILL_EVENTS": str(16384)}
    for r in range(ranks):
        write_comm_trace(tmp_path / f"r{r}.pfw.gz", events, events, rank=r, pid=100 + r,
                         ranks=ranks, skew=lambda k, r=r: r * (k % 3))
    traces = sorted(tmp_path.glob("*.pfw.gz"))
    e = dict(os.environ, DFTRACE_NO_PROGRESS="1", **env)
    parts = [tmp_path / (t.name + ".part") for t in traces]
    args = [str(x) for pair in zip(traces, parts) for x in pair]
    p = subprocess.run([sys.executable, "-c", _PARTIALS, *args], capture_output=True, text=True,
                       env=e, timeout=600)
    assert p.returncode == 0, p.stderr
    total = sum(x.stat().st_size for x in parts)
    p = subprocess.run([sys.executable, "-c", _MERGE_ITER, str(tmp_path / "doc.json"),
                        *map(str, parts)], capture_output=True, text=True, env=e, timeout=600)
    assert p.returncode == 0, p.stderr
    before, after = map(int, p.stdout.split())
    doc = load(tmp_path / "doc.json")
    assert doc["collectives"]["instances"] == events
    assert doc["inputs"]["complete"], doc["inputs"]["damaged"]
    analyze_peak_kib(*traces, out=tmp_path / "one.json", env=env)
    assert load(tmp_path / "one.json")["collectives"] == doc["collectives"]
    grown = (after - before) * 1024
    assert grown < total // 2, (f"the merge added {grown} bytes to the peak for {total} bytes "
                                f"of partials taken one at a time (before {before} KiB, "
                                f"after {after} KiB)")
