"""test_torch_auto.py: dftrace.torch on Debian's PyTorch (CPU): a real model trained a few steps,
its step broken down (forward, backward, optimizer, memory) and its layers traced, without
annotating the training code."""
import os
import sys

import pytest

pytest.importorskip("torch", reason="python3-torch is not installed (scripts/setup-debian.sh test)")

TRAIN = """
import torch
import dftrace.torch as dt

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
handle = dt.trace_model(model, exclude=["1"])  # leaf modules "0" and "2" (not the ReLU)
print("paths", handle.paths)
ACCUMULATE = 2
for i in range(6):
    with dt.step(model, opt):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if i % ACCUMULATE == ACCUMULATE - 1:
            opt.step()
            opt.zero_grad()
# per-layer backward hooks on parameters are taken off once they fired: none accumulate
assert all(not p._backward_hooks for p in model.parameters()), "parameter hooks left behind"
handle.remove()
model(x)  # after remove(): no layer events
assert torch.Tensor.backward.__name__ == "backward" and "step" not in opt.__dict__
"""


def test_steps_layers_and_gradient_accumulation(runner):
    p = runner.run(TRAIN)
    assert "paths ['0', '2']" in p.stdout
    (t,) = runner.traces()
    steps = t.named("step")
    assert len(steps) == 6 and all(e["cat"] == "compute" for e in steps)
    for name in ("forward", "backward"):
        assert len(t.named(name)) == 6, name
    opt = t.named("step.optimizer")
    assert len(opt) == 6  # every micro-batch: 3 real steps, 3 skipped
    skipped = [e for e in opt if e["args"].get("skipped") is True]
    assert [opt.index(e) for e in skipped] == [0, 2, 4]
    # forward, backward and the optimizer's step lie inside their step.
    for e in t.named("forward") + t.named("backward") + opt:
        assert any(s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] for s in steps), e
    # Layers: the two Linear modules, 6 steps + the forward after remove() is not traced.
    for path, params in (("0", 8 * 16 + 16), ("2", 16 + 1)):
        layer = t.named("forward." + path)
        assert len(layer) == 6, path
        assert all(e["cat"] == "compute" and e["args"]["params"] == params for e in layer)
    assert t.named("forward.1") == []
    # Per-layer backward: each Linear once per step, inside that step's backward, the last
    # layer's gradient computed before the first's.
    backward = t.named("backward")
    for path, params in (("0", 8 * 16 + 16), ("2", 16 + 1)):
        layer = t.named("backward." + path)
        assert len(layer) == 6, (path, layer)
        assert all(e["args"]["params"] == params for e in layer)
        for e in layer:
            assert any(b["ts"] <= e["ts"] and e["ts"] + e["dur"] <= b["ts"] + b["dur"]
                       for b in backward), e
    for first, last in zip(t.named("backward.0"), t.named("backward.2")):
        assert last["ts"] <= first["ts"]
    assert t.named("backward.1") == []
    # Memory: one counter sample per step, the process's resident set (no CUDA here).
    mem = [r for r in t.records if r.get("ph") == "C" and r.get("name") == "step"]
    assert len(mem) == 6 and all(r["args"]["memory"] > 10 * 2**20 for r in mem)


NESTED = """
import torch
import dftrace.torch as dt

torch.manual_seed(0)
block = lambda: torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
model = torch.nn.Sequential(block(), block(), torch.nn.Linear(4, 1))
handle = dt.trace_model(model, leaf_only=True)
print("paths", handle.paths)
x = torch.randn(8, 4)
for _ in range(3):
    model(x).sum().backward()
"""


def test_nested_module_paths_name_their_events(runner):
    """A module inside another (every real model: `transformer.h.0.attn`) is recorded under
    its whole path, not under its last name shared with its namesakes in other blocks."""
    p = runner.run(NESTED)
    assert "paths ['0.0', '0.1', '1.0', '1.1', '2']" in p.stdout, p.stdout
    (t,) = runner.traces()
    c = t.counts()
    for path in ("0.0", "0.1", "1.0", "1.1", "2"):
        assert c.get("forward." + path) == 3, (path, c)
    for path in ("0.0", "1.0", "2"):  # the ones with parameters
        assert c.get("backward." + path) == 3, (path, c)
    assert not {"0", "1", "2"} & set(c), c


LOADER = """
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset
import dftrace.torch as dt

workers = int(sys.argv[1])
data = TensorDataset(torch.randn(40, 4), torch.randn(40, 1))
undo = dt.instrument_dataloader()
batches = sum(1 for _ in DataLoader(data, batch_size=8, num_workers=workers))
undo.remove()
sum(1 for _ in DataLoader(data, batch_size=8))  # after remove(): not traced
print("batches", batches)
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_fetch_without_annotations(runner, workers):
    p = runner.run("import sys\nsys.argv[1:] = [%r]\n" % str(workers) + LOADER, script="load.py")
    assert "batches 5" in p.stdout
    main = [t for t in runner.traces() if t.named("fetch")]
    assert len(main) == 1
    fetch = main[0].named("fetch")
    # 5 batches and the final StopIteration call, each timed in the main process
    assert len(fetch) == 6 and all(e["cat"] == "dataloader" and e["dur"] >= 0 for e in fetch)


AUTO = """
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_autostart_sitecustomize(runner):
    import os
    import dftrace
    auto = os.path.join(os.path.dirname(dftrace.__file__), "_autostart")
    path = auto + os.pathsep + os.environ.get("PYTHONPATH", "")
    p = runner.run(AUTO, env={"DFTRACE_TORCH_AUTO": "1", "PYTHONPATH": path})
    assert "auto-instrumentation off" not in p.stderr
    (t,) = runner.traces()
    c = t.counts()
    # 4 batches: one outermost forward each (not one per submodule), backward, optimizer step
    for name, n in {"forward": 4, "backward": 4, "step.optimizer": 4, "fetch": 5}.items():
        assert c.get(name) == n, (name, c)


def test_dftrace_run_torch_traces_an_unmodified_script(runner, tmp_path):
    """`dftrace run --torch -- python3 SCRIPT`: nothing set by hand, not even PYTHONPATH."""
    import os
    import subprocess
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    script = tmp_path / "auto.py"
    script.write_text(AUTO)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DFTRACE_", "DFTRACER_")) and k != "PYTHONPATH"}
    p = subprocess.run([cli, "run", "--torch", "--no-io", "--prefix", os.path.join(runner.trace_dir, "t"),
                        "--", "/usr/bin/python3", str(script)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "auto-instrumentation off" not in p.stderr, p.stderr
    (t,) = runner.traces()
    c = t.counts()
    for name, n in {"forward": 4, "backward": 4, "step.optimizer": 4, "fetch": 5}.items():
        assert c.get(name) == n, (name, c)
    # The summary at exit (stderr): 4 steps (forward to optimizer), and the trace's path.
    assert c.get("step") == 4
    assert "dftrace run: summary" in p.stderr and "steps 4 " in p.stderr, p.stderr
    assert "trace: " + t.path in p.stderr and "time per category" in p.stderr
    # The script's exit status is run's.
    script.write_text("import sys; sys.exit(5)")
    p = subprocess.run([cli, "run", "--summary", "--no-io", "--prefix", os.path.join(runner.trace_dir, "x"),
                        "--", "/usr/bin/python3", str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 5, p.stderr
    # Without the package beside it, --torch says so once and runs nothing.
    bad = subprocess.run([cli, "run", "--torch", "--", "true"], capture_output=True, text=True,
                         env=dict(env, DFTRACE_PYTHON_DIR=str(tmp_path)))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--torch" in bad.stderr


SCHEDULED = """
import torch
import dftrace
import dftrace.torch as dt

windows = []
def ready(path, window):
    # the window's steps are in the file when this runs
    import gzip
    text = gzip.open(path, "rt").read()
    windows.append((window, sum('"name":"step"' in l and '"ph":"X"' in l
                                for l in text.splitlines())))

assert dftrace.schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2,
                        on_trace_ready=ready) == 0
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for i in range(12):
    with dt.step(model, opt):  # each step's end advances the schedule
        dftrace.ai.compute.step.update(step=i)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
print("windows", windows)
assert dftrace.schedule(active=0, wait=2) == -1  # no schedule without active steps
"""


def test_schedule_records_active_steps_only(runner):
    # skip 1; cycles of wait 1, warmup 1, active 2; twice: steps 3, 4, 7, 8 recorded, and
    # on_trace_ready runs after steps 4 and 8 with the window's events on disk.
    p = runner.run(SCHEDULED)
    assert "windows [(0, 2), (1, 4)]" in p.stdout, p.stdout + p.stderr
    (t,) = runner.traces()
    steps = t.named("step")
    assert sorted(e["args"]["step"] for e in steps) == [3, 4, 7, 8]
    # inside the recorded steps, the breakdown is there; outside, nothing
    assert len(t.named("forward")) == 4 and len(t.named("step.optimizer")) == 4


WATCHED = """
import sys, time, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
ds = torch.utils.data.TensorDataset(torch.randn(2048, 32), torch.randn(2048, 1))
dl = torch.utils.data.DataLoader(ds, batch_size=32)
t_end = time.time() + float(sys.argv[1])
while time.time() < t_end:
    for x, y in dl:
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
        time.sleep(0.005)
        if time.time() > t_end:
            break
sys.exit(int(sys.argv[2]))
"""


def test_dftrace_watch_in_a_real_terminal(runner, tmp_path):
    # tmux: an 80x24 terminal; the dashboard is read with capture-pane while the script runs
    # (it must change: steps counted up at least once a second) and after it ends (a summary
    # with the script's exit status, which watch passes on).
    import glob
    import shutil
    import subprocess
    import time
    if not shutil.which("tmux"):
        pytest.fail("tmux is not installed (scripts/setup-debian.sh test installs it)")
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    script = tmp_path / "train.py"
    script.write_text(WATCHED)
    rc_file = tmp_path / "rc"
    session = "dftrace-watch-%d" % os.getpid()
    # the form: watch [options] script.py ARGS (the script's own arguments after it)
    cmd = "%s watch --out %s %s 6 3; echo $? > %s" % (cli, tmp_path / "out", script, rc_file)
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", cmd],
                   check=True, env=dict(os.environ, TERM="xterm"))
    subprocess.run(["tmux", "set-option", "-t", session, "remain-on-exit", "on"], check=True)
    frames = []
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not rc_file.exists():
            p = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                               text=True)
            if p.returncode == 0:
                frames.append(p.stdout)
            time.sleep(0.7)
        time.sleep(0.5)
        last = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                              text=True).stdout
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    assert rc_file.exists(), frames[-1:] or "no frame"
    assert rc_file.read_text().strip() == "3"  # the script's exit status
    live = [f for f in frames if "dftrace watch:" in f and "steps " in f]
    counts = []
    for f in live:
        line = [l for l in f.splitlines() if l.startswith("steps ")][0]
        counts.append(int(line.split()[1]))
    # updated while the script ran: at least three different step counts, rising
    assert len(set(counts)) >= 3 and counts == sorted(counts), counts
    assert all(max(len(l) for l in f.splitlines()) <= 80 for f in live)
    assert any("dataloader" in f for f in live) and any("compute" in f for f in live)
    assert "finished: exit status 3" in last, last  # the last frame stays on screen
    assert glob.glob(str(tmp_path / "out" / "trace-train-*-app.pfw.gz"))  # --out DIR


BRIDGED = """
import torch
import dftrace
import dftrace.torch as dt

handle = dt.bridge_record_function()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for i in range(5):
    with dt.step(model, opt):
        with torch.profiler.record_function("loss.compute"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        with torch.autograd.profiler.record_function("grads"):
            loss.backward()
        opt.step()
        opt.zero_grad()
handle.remove()
with torch.profiler.record_function("after_remove"):
    pass
t = dt.summary(show=True)
rows = {n: r for (c, n), r in t.iterrows()}
print("calls", int(rows["step"]["calls"]), int(rows["grads"]["calls"]))
# the step's self time is its total minus its children's (forward, backward, optimizer, ranges)
print("self_ok", bool(rows["step"]["self_ms"] < rows["step"]["total_ms"]),
      bool((t["self_ms"] <= t["total_ms"] + 1e-9).all()))
"""


def test_record_function_bridge_and_summary(runner):
    p = runner.run(BRIDGED)
    assert "calls 5 5" in p.stdout and "self_ok True True" in p.stdout, p.stdout + p.stderr
    assert "total ms" in p.stdout and "loss_compute" in p.stdout  # the printed table
    (t,) = runner.traces()
    c = t.counts()
    assert c.get("loss_compute") == 5 and c.get("grads") == 5 and "after_remove" not in c
    steps = {e["id"]: e for e in t.named("step")}
    for e in t.named("grads") + t.named("loss_compute"):  # nested in their step
        assert e["args"]["p_idx"] in steps or e["args"]["level"] == 2, e
    # summary() totals equal the trace's, to the microsecond
    import dftrace
    df = dftrace.read(t.path)
    total = df[df.name == "grads"].dur.sum() / 1e6
    line = [l for l in p.stdout.splitlines() if " grads " in l][0]
    assert abs(float(line.split()[3]) - total) < 0.001, (line, total)


CHECKPOINTS = """
import os, sys, torch
import dftrace
import dftrace.torch as dt

h = dt.instrument_checkpoints()
model = torch.nn.Linear(16, 16)
path = os.path.join(os.environ["CK_DIR"], "model.pt")
torch.save(model.state_dict(), path)
state = torch.load(path)
h.remove()
torch.save(state, path + ".after")  # no longer traced
print("size", os.path.getsize(path))
"""


def test_checkpoints_with_file_and_bytes(runner, tmp_path):
    p = runner.run(CHECKPOINTS, env={"CK_DIR": str(tmp_path)})
    size = int(p.stdout.split("size ")[1].split()[0])
    (t,) = runner.traces()
    cap, res = t.named("capture"), t.named("restart")
    assert len(cap) == 1 and len(res) == 1 and cap[0]["cat"] == "checkpoint"
    assert cap[0]["args"]["bytes"] == size and res[0]["args"]["bytes"] == size
    fh = {r["args"]["value"]: r["args"]["name"] for r in t.records if r.get("name") == "FH"}
    assert fh[cap[0]["args"]["fhash"]] == str(tmp_path / "model.pt") == fh[res[0]["args"]["fhash"]]
    # dftrace.read resolves the hash to the path
    import dftrace
    df = dftrace.read(t.path, args=["bytes"])
    row = df[df.name == "capture"].iloc[0]
    assert row["file"] == str(tmp_path / "model.pt") and row["bytes"] == size


UNANNOTATED = """
import os, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

class Ramp(Dataset):
    def __len__(self):
        return 48
    def __getitem__(self, i):
        x = torch.full((8,), i / 48.0)
        return x, x.sum(0, keepdim=True)

class Block(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.lin, self.act = nn.Linear(a, b), nn.ReLU()
    def forward(self, x):
        return self.act(self.lin(x))

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(Block(8, 16), Block(16, 16))
        self.head = nn.Linear(16, 1)
    def forward(self, x):
        return self.head(self.body(x))

torch.manual_seed(0)
model = Net().to(torch.float64)           # a copy of each parameter: 6 transfers
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for x, y in DataLoader(Ramp(), batch_size=8, num_workers=2):
    x, y = x.to(torch.float64), y.to(torch.float64)  # copies: transfers with bytes
    x = x.to("cpu")                       # already there: returns x, no event
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
with torch.no_grad():
    model(torch.zeros(2, 8, dtype=torch.float64))  # evaluation: a forward, no step
torch.save(model.state_dict(), os.path.join(os.environ["CK_DIR"], "net.pt"))
print("params", [p.numel() for p in model.parameters()])
"""


def _inside(e, outer):
    return outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"]


def test_unannotated_training_loop(runner, tmp_path):
    """A real loop (nested modules, DataLoader with 2 workers, SGD, torch.save) with no
    annotation, traced by the start-up hook: steps, forward, backward, optimizer, fetch, the
    workers' batches and items, transfers and the checkpoint, each where it belongs."""
    import dftrace
    auto = os.path.join(os.path.dirname(dftrace.__file__), "_autostart")
    path = auto + os.pathsep + os.environ.get("PYTHONPATH", "")
    p = runner.run(UNANNOTATED, env={"DFTRACE_TORCH_AUTO": "1", "PYTHONPATH": path,
                                     "CK_DIR": str(tmp_path)})
    assert "auto-instrumentation off" not in p.stderr, p.stderr
    params = eval(p.stdout.split("params ")[1].splitlines()[0])
    traces = runner.traces()
    (main,) = [t for t in traces if t.named("fetch")]
    workers = [t for t in traces if t is not main and t.named("batch")]
    assert len(workers) == 2, [t.path for t in traces]
    steps = main.named("step")
    assert len(steps) == 6 and all(e["dur"] > 0 for e in steps)
    by_id = main.by_id()
    for name in ("forward", "backward", "step.optimizer"):
        inner = [e for e in main.named(name) if e["args"].get("p_idx") in {s["id"] for s in steps}]
        assert len(inner) == 6, (name, main.counts())
        assert all(_inside(e, by_id[e["args"]["p_idx"]]) for e in inner)
    # the evaluation forward (no gradients) is a forward outside any step
    assert len(main.named("forward")) == 7
    for s in steps:  # the step's parts fit in it
        kids = [e for e in main.events if e["args"].get("p_idx") == s["id"]]
        assert sum(e["dur"] for e in kids) <= s["dur"]
    # fetch: 6 batches and the end, in the main process, between steps
    fetch = main.named("fetch")
    assert len(fetch) == 7 and not any(_inside(f, s) for f in fetch for s in steps)
    # transfers: the 6 parameters converted, then x and y of each batch; x.to("cpu") is none
    tr = main.named("transfer")
    assert all(e["cat"] == "device" and e["args"]["src"] == e["args"]["dst"] == "cpu"
               and e["args"]["dtype"] == "float64" for e in tr)
    assert sorted(e["args"]["bytes"] for e in tr[:6]) == sorted(n * 8 for n in params)
    assert [e["args"]["bytes"] for e in tr[6:]] == [8 * 8 * 8, 8 * 8] * 6
    # the checkpoint, with its bytes
    (cap,) = main.named("capture")
    assert cap["args"]["bytes"] == os.path.getsize(tmp_path / "net.pt")
    # memory sampled at each step's end
    assert len([r for r in main.records if r.get("ph") == "C" and r.get("name") == "step"]) == 6
    # workers: 6 batches of 8 samples, each sample inside its batch, every index once
    batches = [e for t in workers for e in t.named("batch")]
    assert len(batches) == 6 and {e["args"]["worker"] for e in batches} == {0, 1}
    assert all(e["cat"] == "data" and e["args"]["items"] == 8 for e in batches)
    indices = []
    for t in workers:
        ids = t.by_id()
        for e in t.named("item") + t.named("collate"):
            parent = ids[e["args"]["p_idx"]]
            assert parent["name"] == "batch" and _inside(e, parent), e
        indices += [e["args"]["index"] for e in t.named("item")]
        assert len(t.named("collate")) == len(t.named("batch"))
    assert sorted(indices) == list(range(48))


TRANSFERS = """
import torch
import dftrace.torch as dt

h = dt.instrument_transfers()
x = torch.ones(4, 4)
assert x.to("cpu") is x and x.cpu() is x and x.to(torch.float32) is x  # no copy: no event
y = x.to(torch.float16)                                              # 16 x 2 bytes
z = x.to("cpu", copy=True)                                           # 16 x 4 bytes
try:
    x.to("no-such-device")
except RuntimeError:
    pass
h.remove()
x.to(torch.float64)  # after remove(): not traced
print("ok", type(torch.Tensor.__dict__.get("to")).__name__)
"""


def test_transfers_only_copies(runner):
    p = runner.run(TRANSFERS)
    assert "ok NoneType" in p.stdout, p.stdout  # the inherited method is back
    tr = runner.trace().named("transfer")
    assert [(e["args"]["bytes"], e["args"].get("dtype")) for e in tr] == [(32, "float16"), (64, None)]


SCRIPT = """
import sys, torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print("args", sys.argv[1:], sys.executable)
for x, y in DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8,
                       num_workers=1):
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    opt.zero_grad()
if sys.argv[1] == "hang":
    import time
    print("ready", flush=True)
    time.sleep(60)
sys.exit(int(sys.argv[1]))
"""


def _cli_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("DFTRACE_", "DFTRACER_")) and k != "PYTHONPATH"}


def test_dftrace_run_script_deep_out(runner, tmp_path):
    """`dftrace run --deep --out DIR script.py ARGS`: the script runs with Python, its own
    arguments untouched (even ones that look like run's options), traced with its layers and
    their memory into DIR; the summary is printed and the exit status is the script's."""
    import glob
    import subprocess
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "runs" / "a"
    p = subprocess.run([cli, "run", "--deep", "--no-io", "--out", str(out), str(script), "4",
                        "--out", "x"], env=_cli_env(), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 4, p.stderr
    assert "args ['4', '--out', 'x'] /usr/bin/python3" in p.stdout, p.stdout
    assert "dftrace run: summary" in p.stderr and "steps 4 " in p.stderr, p.stderr
    share = float(p.stderr.split("data loader wait: ")[1].split("%")[0])
    assert 0 < share < 100  # the wait lies between steps: a share of waiting + steps
    from conftest import read_traces
    traces = read_traces(str(out))
    (main,) = [t for t in traces if t.named("step")]
    c = main.counts()
    for name in ("forward.0", "forward.2", "backward.0", "backward.2"):  # --deep: layers
        assert c.get(name) == 4, (name, c)
    assert "forward.1" in c  # the ReLU (no parameters) is a leaf too
    assert all("memory" in r["args"] for r in main.records
               if r.get("ph") == "C" and r.get("name") == "forward.0")
    assert len(main.named("step")) == 4
    # the worker's items: 32 samples in 4 batches, in the worker's own file
    items = [e for t in traces for e in t.named("item")]
    assert sorted(e["args"]["index"] for e in items) == list(range(32))
    assert glob.glob(str(out / "trace-train-*-app.pfw.gz"))
    # --out and --prefix together: one line, status 2
    bad = subprocess.run([cli, "run", "--out", str(out), "--prefix", "p", str(script), "0"],
                         env=_cli_env(), capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr


def test_dftrace_run_script_follows_signals(tmp_path):
    """SIGTERM sent to `dftrace run` reaches the script; run then ends by the same signal."""
    import signal
    import subprocess
    import time
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    p = subprocess.Popen([cli, "run", "--no-io", "--out", str(tmp_path / "t"), str(script),
                          "hang"], env=_cli_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        line = ""
        while "ready" not in line and time.time() < deadline:
            line = p.stdout.readline()
            if not line and p.poll() is not None:
                break
        assert "ready" in line, p.stderr.read()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == -signal.SIGTERM, (rc, p.stderr.read())


def test_dftrace_watch_script_without_a_terminal(tmp_path):
    """`dftrace watch script.py ARGS` outside a terminal: frames as plain text, the exit
    status of the script."""
    import subprocess
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    p = subprocess.run([cli, "watch", "--out", str(tmp_path / "w"), str(script), "7"],
                       env=_cli_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 7, p.stderr
    assert "finished: exit status 7" in p.stdout and "steps 4 " in p.stdout, p.stdout


COPIED = """
import copy, io, torch
import dftrace.torch as dt

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
handles = [dt.trace_model(model, backward=False), dt.trace_model(model[2:], memory=True)]
twin = copy.deepcopy(model)              # the traced forward binds to the copy
with torch.no_grad():
    for p in twin.parameters():
        p.add_(1.0)
x = torch.ones(2, 4)
assert not torch.equal(model(x), twin(x)), "the copy computed with the original's weights"
buf = io.BytesIO()
torch.save(model, buf)                   # a whole model pickles
buf.seek(0)
back = torch.load(buf)
assert torch.equal(back(x), model(x))
for h in reversed(handles):
    h.remove()
assert "forward" not in model[0].__dict__ and "forward" not in model[2].__dict__
print("ok")
"""


def test_traced_model_copies_and_pickles(runner):
    p = runner.run(COPIED)
    assert "ok" in p.stdout
    c = runner.trace().counts()
    # model(x) twice and twin(x) once are traced (the copy's layers too); the model loaded
    # back is plain. Layer 2 is traced by both handles: two events per call.
    assert c.get("forward.0") == 3 and c.get("forward.2") == 6, c


def test_dftrace_run_script_without_torch_imports_no_torch(tmp_path):
    """The start-up hook instruments torch when the script imports it: a script that does not
    never pays for importing torch."""
    import subprocess
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    script = tmp_path / "plain.py"
    script.write_text("import sys\nprint('torch loaded', 'torch' in sys.modules)\n")
    p = subprocess.run([cli, "run", "--no-io", "--out", str(tmp_path / "t"), str(script)],
                       env=_cli_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "torch loaded False" in p.stdout, p.stdout + p.stderr
    assert "auto-instrumentation off" not in p.stderr


CUDA_PEAK = """
import torch
import torch.cuda.memory as memory
from dftrace.torch import _common

# No GPU here: the allocator's statistics are given, as torch's C function returns them (nested
# dicts), to both torch's own reading (memory_stats flattens them) and dftrace's.
stats = {kind: {pool: {"current": 7, "peak": 100 + len(kind) + len(pool), "allocated": 9,
                       "freed": 2} for pool in ("all", "large_pool", "small_pool")}
         for kind in ("active", "active_bytes", "allocated_bytes", "allocation", "segment",
                      "reserved_bytes", "requested_bytes")}
stats.update(num_alloc_retries=0, num_ooms=0)
asked = []


def nested(device=None):
    asked.append(device)
    return stats


torch.cuda.is_initialized = memory.is_initialized = lambda: True
torch.cuda.memory_stats_as_nested_dict = memory.memory_stats_as_nested_dict = nested
torch.cuda.current_device = lambda: 3
print("peak", _common._memory_bytes(), torch.cuda.max_memory_allocated())
print("device", asked[0])  # dftrace names the current device (torch's None means the same)
stats.pop("allocated_bytes")  # a layout without it: torch's reading, as before
print("other", _common._memory_bytes(), torch.cuda.max_memory_allocated())
"""


def test_cuda_step_memory_is_torchs_peak(runner):
    p = runner.run(CUDA_PEAK)
    lines = dict((l.split()[0], l.split()[1:]) for l in p.stdout.splitlines())
    assert lines["peak"] == ["118", "118"], p.stdout  # allocated_bytes.all.peak
    assert lines["device"] == ["3"], p.stdout
    assert lines["other"] == ["0", "0"], p.stdout
