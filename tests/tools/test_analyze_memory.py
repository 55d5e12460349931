# test_analyze_memory.py: what dftrace analyze keeps in memory grows with what its output needs
# (per step, per collective), not with events it will not use. Peaks are compared between two
# runs of the same command (getrusage of the child), never against an absolute figure.
import gzip
import json
import os
import subprocess

from conftest import CLI

T0 = 1_700_000_000_000_000_000


def write_trace(path, steps, iters_per_step):
    """One ranked process: `steps` step events (compute.step, with a `step` argument), each
    holding `iters_per_step` nested `.iter` events (frames: in no layer)."""
    # Written line by line: this process's own peak would otherwise be inherited as the
    # child's ru_maxrss (Linux keeps the high-water mark across exec).
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('[\n'
                '{"id":1,"name":"PR","cat":"dftracer","pid":9,"tid":9,"ph":"M",'
                '"args":{"name":"time_metric","value":"ns"}}\n'
                '{"id":2,"name":"PR","cat":"dftracer","pid":9,"tid":9,"ph":"M",'
                '"args":{"name":"rank","value":0}}\n'
                f'{{"id":3,"name":"start","cat":"dftracer","pid":9,"tid":9,"ts":{T0},"dur":0,'
                '"ph":"X","args":{"ppid":1}}\n')
        nid, width = 3, 10 * (iters_per_step + 1)
        for k in range(steps):
            t = T0 + k * width
            for i in range(iters_per_step):
                nid += 1
                f.write(f'{{"id":{nid},"name":"fetch.iter","cat":"data","pid":9,"tid":9,'
                        f'"ts":{t + 1 + 10 * i},"dur":5,"ph":"X","args":{{"step":{k}}}}}\n')
            nid += 1
            f.write(f'{{"id":{nid},"name":"step","cat":"compute","pid":9,"tid":9,"ts":{t},'
                    f'"dur":{width - 1},"ph":"X","args":{{"step":{k}}}}}\n')
        nid += 1
        f.write(f'{{"id":{nid},"name":"end","cat":"dftracer","pid":9,"tid":9,'
                f'"ts":{T0 + steps * width},"dur":0,"ph":"X",'
                f'"args":{{"num_events":{steps * (iters_per_step + 1)}}}}}\n]\n')


def analyze_peak_kib(path, out):
    e = dict(os.environ, DFTRACE_NO_PROGRESS="1", DFTRACE_TOOL_THREADS="1")
    with open(out, "w") as f:
        p = subprocess.Popen([CLI, "analyze", "--json", str(path)], stdout=f,
                             stderr=subprocess.PIPE, env=e)
        _, status, usage = os.wait4(p.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, p.stderr.read()
    return usage.ru_maxrss


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
    # both measured before either document is loaded here (the same reason as write_trace's)
    plain = analyze_peak_kib(tmp_path / "plain.pfw.gz", tmp_path / "plain.json")
    with_iters = analyze_peak_kib(tmp_path / "iters.pfw.gz", tmp_path / "iters.json")
    a, b = load(tmp_path / "plain.json"), load(tmp_path / "iters.json")
    assert a["steps"]["source"] == b["steps"]["source"] == "step"
    assert a["steps"]["count"] == b["steps"]["count"] == steps
    assert b["inputs"]["events"] == a["inputs"]["events"] + steps * iters
    candidate_bytes = steps * iters * 40  # one step candidate: 40 bytes
    grown = (with_iters - plain) * 1024
    assert grown < candidate_bytes // 4, (
        f"the peak grew by {grown} bytes with {steps * iters} .iter events "
        f"(plain {plain} KiB, with them {with_iters} KiB)")
