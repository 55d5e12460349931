"""test_attach_torch.py: a PyTorch loop under `dftrace run --attach` (dftrace.torch.auto), whose
instrumentation is switched with the windows (docs/attach.md, "The PyTorch instrumentation"):
before a window only the optimizer's step is wrapped (Module.__call__, Tensor.backward, the
DataLoader and Tensor.to are torch's own), during a window of level torch or full they are
wrapped and the steps, forwards and batch fetches are written, after it they are torch's own
again and nothing more is written; a second window works as the first. Nothing is timed: the
loop says at each step what it sees, and the test waits for what it says."""
import json


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
