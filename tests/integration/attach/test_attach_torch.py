"""test_attach_torch.py: a PyTorch loop under `dftrace run --attach` (dftrace.torch.auto), whose
instrumentation is switched with the windows (docs/attach.md, "The PyTorch instrumentation"):
before a window only the optimizer's step is wrapped (Module.__call__, Tensor.backward, the
DataLoader and Tensor.to are torch's own), during a window of level torch or full they are
wrapped and the steps, forwards and batch fetches are written, after it they are torch's own
again and nothing more is written; a second window works as the first; DataLoader workers,
forked before the window or in it, follow the parent's. Nothing is timed: the loop says at each
step what it sees, and the test waits for what it says."""
import json
import os

from test_attach import attach, torch_loop, trace_of

TORCH_LOOP = """
import json, os
import torch
import dftrace
dl = torch.utils.data.dataloader._BaseDataLoaderIter
calls = (torch.nn.Module, "__call__"), (torch.Tensor, "backward"), (dl, "__next__"), \\
    (torch.Tensor, "to")


def ours(f):  # a wrapper of dftrace's (torch's own are torch's or built in)
    return (getattr(f, "__module__", None) or "").startswith("dftrace")


model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 2))
loader = torch.utils.data.DataLoader(data, batch_size=8)
seen, windows = [], 0
i = 0
while True:
    for x, y in loader:
        # What this step starts with: tracing on, and which functions are wrapped.
        on = dftrace.is_enabled()
        wrapped = [ours(getattr(o, n)) for o, n in calls]
        hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
        seen.append([i, on, wrapped, hooks])
        if on and (len(seen) == 1 or not seen[-2][1]):
            windows += 1
            print("on", windows, i, flush=True)
        if not on and len(seen) > 1 and seen[-2][1]:
            print("off", windows, i, flush=True)
        loss = torch.nn.functional.mse_loss(model(x.to(torch.float64).float()), y)
        loss.backward()
        opt.step()  # the automatic step ends here
        opt.zero_grad()
        if i == 0:
            print("ready", os.getpid(), flush=True)
        i += 1
        if windows == 2 and not on and i > 3 + max(s[0] for s in seen if s[1]):
            print("seen", json.dumps(seen), flush=True)
            raise SystemExit(0)
"""


def test_pytorch_instrumentation_is_installed_for_each_window_only(tmp_path):
    prog = torch_loop(tmp_path, TORCH_LOOP)
    try:
        pid = int(prog.expect("ready")[0])
        r = attach(tmp_path, pid, "--steps", 3, "--level", "torch")
        assert r.returncode == 0, r.stdout + r.stderr
        prog.expect("off")
        r = attach(tmp_path, pid, "--steps", 2)  # level full
        assert r.returncode == 0, r.stdout + r.stderr
        seen = json.loads(" ".join(prog.expect("seen")))
        prog.finish()
    finally:
        prog.kill()
    # Each step sees the functions wrapped exactly while tracing is on, and no forward hook
    # (auto() wraps, it hooks nothing).
    steps_on = [s[0] for s in seen if s[1]]
    assert len(steps_on) == 5, seen
    for i, on, wrapped, hooks in seen:
        assert wrapped == [on, on, on, on] and hooks == 0, (i, on, wrapped, hooks)
    events, lines, _ = trace_of(tmp_path, pid)
    assert len(lines) == 2 and [ln["args"]["after"] for ln in lines] == ["3 steps", "2 steps"]
    x = [e for e in events if e["ph"] == "X" and e["cat"] != "dftracer"]
    windows = [(ln["args"]["from"], ln["args"]["to"]) for ln in lines]
    # Nothing outside the windows; in each, every step with its forward and its batch's fetch.
    assert all(any(a <= e["ts"] and e["ts"] + e["dur"] <= b for a, b in windows) for e in x), \
        (windows, [e for e in x if not any(a <= e["ts"] <= b for a, b in windows)][:3])
    for (a, b), n in zip(windows, (3, 2)):
        inside = [e["name"] for e in x if a <= e["ts"] <= b]
        for name in ("step", "forward", "backward", "step.optimizer", "dataloader.fetch",
                     "device.transfer"):
            assert inside.count(name.split(".")[-1] if name.startswith("dataloader") or
                                name.startswith("device") else name) >= n, (name, inside)


# A loop of known shape: a model of three layers (Linear, ReLU, Linear), batches of 8 samples
# from a map-style dataset of 200 batches (no epoch ends in the windows), one step a batch.
# It says at each step's start what it sees: tracing on, which functions are dftrace's, and
# whether each layer's forward is wrapped on its instance (--deep). After step 0 it says "ready"
# and waits until the file GO exists, so that the window's first steps are known (the request
# is in before step 1); it ends three steps after it last saw tracing or a wrapper. MODE: "train" (an optimizer step a batch) or "infer"
# (no step at all: forward under torch.no_grad()). WORKERS: the loader's worker processes, forked
# at each epoch's start, or once with PERSISTENT; each is sent PREFETCH batches ahead; SAMPLES
# (batches of 8) an epoch; PAUSE seconds at each step's end.
EXACT_LOOP = """
import json, os, sys, time
import torch
import dftrace
go, mode, workers, samples, persistent, prefetch, pause = sys.argv[1:]
workers, samples, prefetch, pause = int(workers), int(samples), int(prefetch), float(pause)
dl = torch.utils.data.dataloader._BaseDataLoaderIter
calls = (torch.nn.Module, "__call__"), (torch.Tensor, "backward"), (dl, "__next__"), \\
    (torch.Tensor, "to")


def ours(f):  # a wrapper of dftrace's (torch's own are torch's or built in)
    return (getattr(f, "__module__", None) or "").startswith("dftrace")


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(samples, 4), torch.randn(samples, 2))
ahead = {"prefetch_factor": prefetch, "persistent_workers": persistent == "1"} if workers else {}
loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=workers, **ahead)
seen = []
i = 0
while True:
    for x, y in loader:
        on = dftrace.is_enabled()
        wrapped = [ours(getattr(o, n)) for o, n in calls]
        layers = ["forward" in m.__dict__ for m in model]
        seen.append([i, on, wrapped, layers])
        print("step", i, int(on), flush=True)
        if mode == "train":
            loss = torch.nn.functional.mse_loss(model(x.to(torch.float64).float()), y)
            loss.backward()
            opt.step()  # the automatic step ends here
            opt.zero_grad()
        else:
            with torch.no_grad():
                model(x.to(torch.float64).float())
        time.sleep(pause)  # (0.01: no more than 100 steps in a window of 1 s: one epoch)
        if i == 0:
            print("ready", os.getpid(), flush=True)
            while not os.path.exists(go):
                time.sleep(0.01)
        i += 1
        ons = [s[0] for s in seen if s[1] or any(s[2]) or any(s[3])]
        done = ons and not (on or any(wrapped) or any(layers)) and i > ons[-1] + 3
        if done:
            print("seen", json.dumps(seen), flush=True)
            raise SystemExit(0)
    if mode == "train" and i > 190:
        raise SystemExit("the window was not over within an epoch")
"""


def exact_window(tmp_path, args, mode="train", deep=False, loader=(0, 1600, 1, 2, 0.01)):
    """EXACT_LOOP under `dftrace run --attach` (with --deep: the layers too), one window asked
    by `dftrace attach PID *args` once the loop is ready; the steps it saw, the trace's events
    (complete, not dftrace's own start and end) and its trigger lines. `loader`: WORKERS,
    SAMPLES, PERSISTENT, PREFETCH and PAUSE."""
    go = tmp_path / "go"
    prog = torch_loop(tmp_path, EXACT_LOOP, [str(go), mode, *map(str, loader)], deep=deep)
    try:
        pid = int(prog.expect("ready")[0])
        r = attach(tmp_path, pid, *args)
        assert r.returncode == 0, r.stdout + r.stderr
        go.write_text("")
        seen = json.loads(" ".join(prog.expect("seen")))
        prog.finish()
    finally:
        prog.kill()
    events, lines, _ = trace_of(tmp_path, pid)
    x = [e for e in events if e["ph"] == "X" and e["cat"] != "dftracer"]
    return pid, seen, x, lines


def count(events):
    out = {}
    for e in events:
        key = e["cat"] + ":" + e["name"]
        out[key] = out.get(key, 0) + 1
    return out


def per_step(n, layers=False):
    """What n whole steps of EXACT_LOOP write at level torch: each its fetch of a batch of 8
    (made in the main process), the transfer, forward, backward, optimizer step and step; with
    layers, the forward and backward of each of the three layers."""
    one = {"dataloader:fetch": 1, "data:batch": 1, "data:item": 8, "data:collate": 1,
           "device:transfer": 1, "compute:forward": 1, "compute:backward": 1,
           "compute:step.optimizer": 1, "compute:step": 1}
    if layers:
        for path in ("0", "1", "2"):  # the paths under the root, Sequential
            one["compute:forward." + path] = one["compute:backward." + path] = 1
    return {k: v * n for k, v in one.items()}


def inside(events, a, b):
    return [e for e in events if a <= e["ts"] and e["ts"] + e["dur"] <= b]


def begun_outside(events, line):
    """The events that did not begin within the trigger line's [from, to] (docs/attach.md,
    "Limits"): a window closed from another thread (a worker's, as its parent's closes) may
    write an event that ends after `to`, one in flight at the close, but never one begun after
    it."""
    return [e for e in events if not line["from"] <= e["ts"] <= line["to"]]


def test_steps_window_holds_exactly_its_steps(tmp_path):
    _, seen, x, lines = exact_window(tmp_path, ["--steps", 4, "--level", "torch"])
    # The request is in before step 1: step 1's end opens the window, steps 2 to 5 are traced
    # whole, step 5's end closes it; the loop sees the functions wrapped exactly then.
    on = [s[0] for s in seen if s[1]]
    assert on == [2, 3, 4, 5], seen
    for i, o, wrapped, layers in seen:
        assert wrapped == [o] * 4 and layers == [False] * 3, (i, o, wrapped, layers)
    assert len(lines) == 1 and lines[0]["args"]["after"] == "4 steps", lines
    a, b = lines[0]["args"]["from"], lines[0]["args"]["to"]
    # Exactly the events of those four steps, and all of them between the window's lines.
    assert count(x) == per_step(4), count(x)
    assert inside(x, a, b) == x, (a, b)
    # Each step holds its own forward, backward and optimizer step.
    for s in [e for e in x if e["name"] == "step"]:
        mine = count(inside(x, s["ts"], s["ts"] + s["dur"]))
        assert {k: v for k, v in mine.items() if k != "compute:step"} == {
            "compute:forward": 1, "compute:backward": 1, "compute:step.optimizer": 1}, mine


def test_deep_layers_are_wrapped_for_the_window_only(tmp_path):
    # dftrace run --attach --deep: each layer's forward is wrapped on its instance while the
    # window is open (from the window's first forward, which wraps them), and is the class's
    # own before and after.
    _, seen, x, lines = exact_window(tmp_path, ["--steps", 3, "--level", "torch"], deep=True)
    assert [s[0] for s in seen if s[1]] == [2, 3, 4], seen
    for i, o, wrapped, layers in seen:
        assert wrapped == [o] * 4 and layers == [i in (3, 4)] * 3, (i, o, wrapped, layers)
    a, b = lines[0]["args"]["from"], lines[0]["args"]["to"]
    assert count(x) == per_step(3, layers=True), count(x)
    assert inside(x, a, b) == x, (a, b)


def test_time_window_of_level_torch(tmp_path):
    # --for 1s: the window opens as the request is read (before step 1); the wrappers come at
    # the end of step 1 and go at the end of the step in which the second ends.
    _, seen, x, lines = exact_window(tmp_path, ["--for", "1s", "--level", "torch"])
    assert len(lines) == 1 and lines[0]["args"]["after"] == "1s", lines
    assert "its time ran out" in lines[0]["args"]["value"], lines
    a, b = lines[0]["args"]["from"], lines[0]["args"]["to"]
    wrapped = [s[0] for s in seen if any(s[2])]
    assert wrapped == list(range(2, wrapped[-1] + 1)), seen
    for i, o, w, layers in seen:
        assert w in ([False] * 4, [True] * 4), (i, w)
    # The time runs out on the listener's thread: every event begins within the window, and
    # those that end after `to` were in flight then (the loop's stack at `to`: each holds it and
    # holds the next).
    assert not begun_outside(x, lines[0]["args"]), (a, b)
    late = sorted((e for e in x if e["ts"] + e["dur"] > b), key=lambda e: e["ts"])
    assert all(e["ts"] <= b for e in late), late
    assert all(o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"]
               for o, i in zip(late, late[1:])), late
    # Every step that began wrapped, whole, but the last (the window ended in it): its events
    # from its start to the window's end only.
    steps = sorted(e["ts"] for e in x if e["name"] == "step")
    assert len(wrapped) - 1 <= len(steps) <= len(wrapped), (len(steps), wrapped)
    whole = per_step(len(wrapped) - 1)
    c = count(x)
    assert all(whole[k] <= c.get(k, 0) <= whole[k] + per_step(1)[k] for k in whole), (c, whole)
    assert set(c) == set(whole), c


def test_stepless_time_window_ends_by_its_time(tmp_path):
    # No optimizer step (inference): the wrappers come at once when the window opens (on the
    # main thread) and go when its time is out; nothing is written after.
    _, seen, x, lines = exact_window(tmp_path, ["--for", "1s", "--level", "torch"], mode="infer")
    assert len(lines) == 1 and "its time ran out" in lines[0]["args"]["value"], lines
    a, b = lines[0]["args"]["from"], lines[0]["args"]["to"]
    wrapped = [s[0] for s in seen if any(s[2])]
    assert wrapped and wrapped == list(range(wrapped[0], wrapped[-1] + 1)), seen
    assert seen[-1][2] == [False] * 4, seen[-1]
    # The time runs out on dftrace's thread, not the loop's: what was in flight then (one
    # nest of fetch, batch and item at most) is written whole and ends after `to`; nothing
    # begins after it.
    assert begun_outside(x, lines[0]["args"]) == [], (a, b)
    late = [(e["cat"], e["name"]) for e in x if e["ts"] + e["dur"] > b]
    assert len(late) == len(set(late)), late
    c = count(x)
    # No step; a forward, a transfer and a batch of 8 fetched a loop pass, whole passes only
    # but the two at the window's edges.
    assert "compute:step" not in c and "compute:backward" not in c, c
    n = c.get("compute:forward", 0)
    assert len(wrapped) - 2 <= n <= len(wrapped) + 1, (n, wrapped)
    assert c["data:item"] == 8 * c["data:batch"] and abs(c["dataloader:fetch"] - n) <= 1, c


def worker_traces(tmp_path, parent):
    """{pid: (complete events, trigger lines)} of the traces in tmp_path/traces other than the
    parent's (its DataLoader workers'), each checked as trace() checks it."""
    out = {}
    for name in sorted(os.listdir(tmp_path / "traces")):
        pid = int(name.rsplit("-", 2)[-2]) if name.endswith(".pfw.gz") else None
        if pid is None or pid == parent:
            continue
        events, lines, _ = trace_of(tmp_path, pid)
        out[pid] = ([e for e in events if e["ph"] == "X" and e["cat"] != "dftracer"], lines)
    return out


def test_workers_forked_before_the_window_follow_it(tmp_path):
    # persistent_workers: the two workers are forked at the first epoch's start, long before the
    # window. They follow the parent's window: each wraps its batch fetching when it opens and
    # unwraps it when it closes, so that what they write (the batches fetched in the window's
    # steps) begins in the parent's window, and their window ends with the parent's. PAUSE
    # 0.1 s: a worker is sent its next batch 0.1 s after the parent's step (and window) ended.
    # PREFETCH 2: the loader asks batches 0 to 3 at the epoch's start and batch i + 4 at step
    # i's start; those asked after the window (from step 6: batch 10, samples 80 on) are not
    # written.
    pid, seen, x, lines = exact_window(tmp_path, ["--steps", 4, "--level", "torch"],
                                       loader=(2, 1600, 1, 2, 0.1))
    assert [s[0] for s in seen if s[1]] == [2, 3, 4, 5], seen
    assert len(lines) == 1 and lines[0]["args"]["after"] == "4 steps", lines
    a, b = lines[0]["args"]["from"], lines[0]["args"]["to"]
    assert inside(x, a, b) == x, (a, b)
    # The parent waits for the batches (dataloader.fetch); the workers make them.
    assert count(x)["dataloader:fetch"] == 4 and "data:batch" not in count(x), count(x)
    workers = worker_traces(tmp_path, pid)
    assert len(workers) == 2, (os.listdir(tmp_path / "traces"), workers.keys())
    batches = 0
    for wpid, (events, wlines) in workers.items():
        assert all(a <= e["ts"] for e in events), (wpid, a, [e["ts"] - a for e in events])
        assert all(e["args"]["index"] < 80 for e in events if e["name"] == "item"), \
            (wpid, b, [(e["args"]["index"], e["ts"] - b) for e in events if e["name"] == "item"])
        assert {e["cat"] for e in events} <= {"data"}, count(events)
        c = count(events)
        assert c.get("data:item", 0) == 8 * c.get("data:batch", 0), c
        batches += c.get("data:batch", 0)
        # Its window: the parent's, closed as the parent's closed.
        assert len(wlines) == 1 and "ended as the parent's window ended" in \
            wlines[0]["args"]["value"], wlines
        assert wlines[0]["args"]["to"] >= b and not begun_outside(events, wlines[0]["args"]), \
            (wlines, b, begun_outside(events, wlines[0]["args"]))
    # The four steps of the window asked four batches of the workers.
    assert batches >= 1, workers


def test_workers_forked_in_a_steps_window_end_it_with_the_parent(tmp_path):
    # Epochs of 5 batches, workers forked at each epoch's start: those of the second epoch are
    # forked at step 5, the window's last, and are asked batches 0 and 1 then, batch i - 3 at
    # step i's start (PREFETCH 1). They end the window they were forked in when the parent's
    # ends: nothing of theirs after it, no batch asked after it (3 and 4: samples 24 on).
    pid, seen, x, lines = exact_window(tmp_path, ["--steps", 4, "--level", "torch"],
                                       loader=(2, 40, 0, 1, 0.1))
    assert [s[0] for s in seen if s[1]] == [2, 3, 4, 5], seen
    assert len(lines) == 1, lines
    a, b = lines[0]["args"]["from"], lines[0]["args"]["to"]
    assert inside(x, a, b) == x, (a, b)
    # The first epoch's workers, forked before the window, follow it until they end (in it, at
    # the second epoch's start); the second's are forked in it and end it with the parent.
    workers = worker_traces(tmp_path, pid)
    assert len(workers) == 4, workers.keys()
    forked_in = 0
    for wpid, (events, wlines) in workers.items():
        assert all(a <= e["ts"] for e in events), (wpid, a, [e["ts"] - a for e in events])
        assert len(wlines) == 1, wlines
        line = wlines[0]["args"]
        if "ended as the parent's window ended" in line["value"]:
            forked_in += 1
            assert line["to"] >= b, (line, b)
            assert all(e["args"]["index"] < 24 for e in events if e["name"] == "item"), \
                (wpid, [(e["args"]["index"], e["ts"] - b) for e in events if e["name"] == "item"])
        else:
            assert "ended as the trace was finalized" in line["value"] and line["to"] <= b, line
        assert not begun_outside(events, line), (line, begun_outside(events, line))
    assert forked_in == 2, workers
