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


def write_trace(path, steps, iters_per_step, rank=0, pid=9, repeat=1):
    """One ranked process: `steps` step events (compute.step, with a `step` argument: k //
    repeat for the k-th, so repeat > 1 repeats it), each holding `iters_per_step` nested
    `.iter` events (frames: in no layer)."""
    # Written line by line: the whole text would be hundreds of MB of Python strings.
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('[\n'
                f'{{"id":1,"name":"PR","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                '"args":{"name":"time_metric","value":"ns"}}\n'
                f'{{"id":2,"name":"PR","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                f'"args":{{"name":"rank","value":{rank}}}}}\n'
                f'{{"id":3,"name":"start","cat":"dftracer","pid":{pid},"tid":{pid},"ts":{T0},'
                '"dur":0,"ph":"X","args":{"ppid":1}}\n')
        nid, width = 3, 10 * (iters_per_step + 1)
        for k in range(steps):
            t = T0 + k * width
            for i in range(iters_per_step):
                nid += 1
                f.write(f'{{"id":{nid},"name":"fetch.iter","cat":"data","pid":{pid},"tid":{pid},'
                        f'"ts":{t + 1 + 10 * i},"dur":5,"ph":"X","args":{{"step":{k}}}}}\n')
            nid += 1
            f.write(f'{{"id":{nid},"name":"step","cat":"compute","pid":{pid},"tid":{pid},"ts":{t},'
                    f'"dur":{width - 1},"ph":"X","args":{{"step":{k // repeat}}}}}\n')
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


@pytest.mark.parametrize("repeat", [1, 2])
def test_peak_does_not_grow_with_the_number_of_steps(tmp_path, repeat):
    """The same 200,000 events on 8 ranks, as 800 steps (each with 249 `.iter` events, which
    are frames) or as 200,000 steps: the step candidates and rows go to temporary files past a
    fixed budget and are read back in order (the JSON items, the totals, the matching across
    ranks), so the peak may differ by what is held per step key compared (25,000 keys), one
    group's candidates and the budgets, not by every step's 88-byte row, 40-byte candidate and
    their sort (18.6 MiB more before). With each `step` argument repeated (repeat=2) the steps
    are matched by index, streamed too: every row was read into memory and sorted before."""
    ranks, events = 8, 25_000
    for sub, steps in (("few", 100), ("many", events)):
        (tmp_path / sub).mkdir()
        for r in range(ranks):
            write_trace(tmp_path / sub / f"r{r}.pfw.gz", steps, events // steps - 1, rank=r,
                        pid=100 + r, repeat=repeat)
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
    worst = many["imbalance"]["worst"]["step"]
    assert worst.startswith("#") if repeat > 1 else not worst.startswith("#")  # by index
    grown = (peak - base) / 1024
    assert grown < 6, (f"the peak grew by {grown:.1f} MiB from {ranks * 100} to "
                        f"{ranks * events} steps (base {base} KiB, then {peak} KiB)")


def write_comm_trace(path, events, collectives, rank, pid, ranks):
    """One ranked process of `events` comm events one after the other: the first `collectives`
    are all_reduce calls of a group of `ranks` (matched across ranks), the rest point-to-point
    sends (in the comm layer too, never matched)."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('[\n'
                f'{{"id":1,"name":"PR","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                '"args":{"name":"time_metric","value":"ns"}}\n'
                f'{{"id":2,"name":"PR","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                f'"args":{{"name":"rank","value":{rank}}}}}\n'
                f'{{"id":3,"name":"start","cat":"dftracer","pid":{pid},"tid":{pid},"ts":{T0},'
                '"dur":0,"ph":"X","args":{"ppid":1}}\n')
        for k in range(events):
            name = "all_reduce" if k < collectives else "send"
            f.write(f'{{"id":{k + 4},"name":"{name}","cat":"comm","pid":{pid},"tid":{pid},'
                    f'"ts":{T0 + 10 * k + rank},"dur":5,"ph":"X",'
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
