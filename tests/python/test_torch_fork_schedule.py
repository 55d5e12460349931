"""test_torch_fork_schedule.py: DataLoader workers forked while the script's step schedule is
in its skip phase follow the script's schedule: they record during its active steps only.

The dataset hands out item i only when the script allows it in its step i (an Event the
forked workers share), so item i is made during step i. Before making it, the worker waits (up
to 20 s) until its recording is in the state the script's schedule gives step i: the follow
is asynchronous (a thread in the worker), this wait is what the test observes of it."""
import pytest

pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")

SCRIPT = r'''
import multiprocessing
import time
import torch
from torch.utils.data import DataLoader, Dataset
import dftrace

ACTIVE = (2, 3)  # skip_first 2, active 2, repeat 1: steps 2 and 3 are recorded
allowed = [multiprocessing.get_context("fork").Event() for _ in range(6)]  # item i: in step i


class Items(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        allowed[i].wait()
        deadline = time.monotonic() + 20
        while dftrace.is_enabled() != (i in ACTIVE) and time.monotonic() < deadline:
            time.sleep(0.001)
        with dftrace.region("made", "user", args={"i": i}):
            return torch.tensor([i])


if __name__ == "__main__":
    dftrace.schedule(skip_first=2, active=2, repeat=1)
    loader = DataLoader(Items(), batch_size=1, num_workers=2, multiprocessing_context="fork")
    it = iter(loader)  # the workers are forked now, in step 0: skipped
    for step in range(6):
        with dftrace.region("step", "user", args={"i": step}):
            allowed[step].set()
            assert int(next(it)) == step
        dftrace.step()
    assert next(it, None) is None  # the workers leave (and finalize their files) now
    print("steps done")
'''


def test_forked_dataloader_workers_follow_the_schedule(runner):
    p = runner.run(SCRIPT, script="fork_schedule.py")
    assert "steps done" in p.stdout, p.stdout + p.stderr
    traces = runner.traces()
    script = [t for t in traces if t.named("step")]
    assert len(script) == 1, [t.path for t in traces]
    assert sorted(e["args"]["i"] for e in script[0].named("step")) == [2, 3]
    parent_pid = script[0].records[0]["pid"]
    workers = [t for t in traces if t.records[0]["pid"] != parent_pid]
    assert len(workers) == 2, [t.path for t in traces]
    assert all(next(r for r in t.records if r.get("name") == "start")["args"]["ppid"] ==
               parent_pid for t in workers)
    made = sorted(e["args"]["i"] for t in workers for e in t.named("made"))
    assert made == [2, 3], made  # nothing of the skipped steps, nothing after the last window
