"""test_torch_frameworks.py: the Hugging Face and Lightning callbacks of dftrace.torch. Neither
framework is installable here: what is tested is what runs without them (the frameworks are
never imported by dftrace.torch; a factory called without its framework says so in one line).
Where a framework imports, its callback is built and checked against the framework's own
callback base class."""
import importlib.util

import pytest

pytest.importorskip("torch", reason="python3-torch is not installed (scripts/setup-debian.sh test)")

LAZY = """
import sys
import dftrace.torch as dt
print("imported", sorted(m for m in ("transformers", "lightning", "pytorch_lightning")
                         if m in sys.modules))
for factory in (dt.huggingface_callback, dt.lightning_callback):
    try:
        cb = factory()
        print("built", type(cb).__mro__[1].__module__)
    except ImportError as e:
        print("error", factory.__name__, "|", e)
"""


def test_frameworks_are_imported_lazily(runner):
    p = runner.run(LAZY)
    assert "imported []" in p.stdout, p.stdout
    for name, module in (("huggingface_callback", "transformers"),
                         ("lightning_callback", "lightning")):
        if importlib.util.find_spec(module) is None:
            line = [l for l in p.stdout.splitlines() if l.startswith("error " + name)]
            assert len(line) == 1, p.stdout
            assert "needs" in line[0] and "not installed" in line[0] and "pip install" in line[0]
            assert "\n" not in line[0]
        else:  # pragma: no cover - not on this machine
            assert "built" in p.stdout


PHASES = """
import torch
from dftrace.torch.frameworks import _Phases

# The sequence of Lightning's documented hooks, called by a hand-written loop (Lightning itself
# is not installed): batch start, before/after backward, before optimizer step (every second
# batch: gradient accumulation), batch end.
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ph = _Phases()
ph.trace_layers(model, {})
for i in range(4):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    ph.begin_step()                                   # on_train_batch_start
    loss = torch.nn.functional.mse_loss(model(x), y)
    ph.end("forward"); ph.begin("backward")           # on_before_backward
    loss.backward()
    ph.end("backward")                                # on_after_backward
    if i % 2 == 1:
        ph.stepped = True; ph.begin("optimizer")      # on_before_optimizer_step
        opt.step(); opt.zero_grad()
    ph.end_step()                                     # on_train_batch_end
ph.untrace_layers()
"""


def test_callback_phases_in_lightning_hook_order(runner):
    runner.run(PHASES)
    t = runner.trace()
    steps = t.named("step")
    assert len(steps) == 4
    ids = {s["id"] for s in steps}
    for name in ("forward", "backward", "step.optimizer"):
        inner = t.named(name)
        assert len(inner) == 4 and all(e["args"]["p_idx"] in ids for e in inner), name
    skipped = [e["args"].get("skipped", False) for e in t.named("step.optimizer")]
    assert skipped == [True, False, True, False]
    assert len(t.named("forward.0")) == 4 and len(t.named("backward.2")) == 4  # layers
