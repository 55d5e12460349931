"""test_capture.py: node(capture=[...], result=True, first=N) as a decorator: the chosen
arguments and the return value, summarised, as event args of the first N recorded calls;
bad names reported once when decorating; dftrace.read_calls reads them back by stage."""
import pytest

CAPTURE = """
import sys
import dftrace
from dftrace import ai

class Box:
    def __repr__(self):
        return "Box(" + "x" * 500 + ")"

@ai.dataloader.fetch(capture=["index", "opts", "box", "missing", "mode"], result=True, first=3)
def fetch(index, opts, box=None, mode="train"):
    return [index] * 3

print("decorated", file=sys.stderr)
for i in range(5):
    fetch(i, {"a": 1, "b": 2}, box=Box())

class Loader:
    @ai.data.item(capture=["i"])   # first: 10 by default; a method: self is bound
    def get(self, i):
        return i

l = Loader()
for i in range(12):
    l.get(i)

@ai.compute.forward(result=True, first=2)
def nothing():
    return None

nothing(); nothing()

@ai.compute.step(capture=["x"], first=0)   # first=0: traced, nothing captured
def zero(x):
    return x

zero(1)

@ai.compute.backward(capture="nope")       # a bad name alone: traced, nothing captured
def plain(x):
    return x * 2

print("plain", plain(21), plain.__name__)
try:
    fetch()                                 # the call's own TypeError, as without dftrace
except TypeError as e:
    print("typeerror", "index" in str(e))
"""


def test_capture_values_first_and_bad_names(runner):
    p = runner.run(CAPTURE)
    err = p.stderr.splitlines()
    # one line per bad decoration, at decoration time (before "decorated"), none after
    bad = [l for l in err if "capture on" in l]
    assert len(bad) == 2, p.stderr
    assert err.index(bad[0]) < err.index("decorated")
    assert "'missing'" in bad[0] and "index, opts, box, mode" in bad[0]
    assert "'nope'" in bad[1] and "plain" in bad[1]
    assert "plain 42 plain" in p.stdout and "typeerror True" in p.stdout
    t = runner.trace()
    fetch = t.named("fetch")
    assert len(fetch) == 6  # every call traced (the failing one too)...
    cap = [e["args"] for e in fetch if "arg.index" in e["args"]]
    assert [a["arg.index"] for a in cap] == [0, 1, 2]  # ...the first 3 captured
    for a in cap:
        assert a["arg.opts"] == "dict(len=2)" and a["arg.mode"] == "train"  # the default
        assert a["arg.box"].startswith("Box(xxx") and len(a["arg.box"]) == 120
        assert a["arg.return"] == "list(len=3)" and "arg.missing" not in a
    items = t.named("item")
    assert len(items) == 12
    assert [e["args"].get("arg.i") for e in items] == list(range(10)) + [None, None]
    assert [e["args"].get("arg.return", "-") for e in t.named("forward")] == ["None", "None"]
    assert all(not any(k.startswith("arg.") for k in e["args"])
               for e in t.named("step") + t.named("backward"))
    # read back by stage
    import dftrace
    calls = dftrace.read_calls(t.path)
    assert sorted(calls) == ["compute.forward", "data.item", "dataloader.fetch"]
    stage = calls["dataloader.fetch"]
    assert [c["index"] for c in stage] == [0, 1, 2] and stage[0]["return"] == "list(len=3)"
    assert calls["item"] is calls["data.item"]  # the bare event name, when unambiguous
    text = repr(stage)
    assert text.startswith("dataloader.fetch: 3 calls captured") and "dict(len=2)" in text
    df = stage.to_frame()
    assert list(df["index"]) == [0, 1, 2] and "return" in df.columns
    with pytest.raises(KeyError, match="stages with captured calls"):
        calls["nothing.here"]


TENSORS = """
import torch
import dftrace
from dftrace import ai

@ai.dataloader.fetch(capture=["batch"], result=True, first=2)
def move(batch, dtype=torch.float64):
    x, y = batch
    return x.to(dtype)

for _ in range(3):
    move((torch.ones(4, 3), torch.zeros(4, dtype=torch.int64)))
"""


def test_capture_tensors(runner):
    pytest.importorskip("torch", reason="python3-torch is not installed")
    runner.run(TENSORS)
    calls = [e["args"] for e in runner.trace().named("fetch")]
    assert len(calls) == 3 and "arg.batch" not in calls[2]
    assert calls[0]["arg.batch"] == (
        "tuple(len=2: Tensor(shape=[4, 3], dtype=float32, device=cpu), "
        "Tensor(shape=[4], dtype=int64, device=cpu))")
    assert calls[0]["arg.return"] == "Tensor(shape=[4, 3], dtype=float64, device=cpu)"


def test_capture_off_costs_nothing_visible(runner):
    """Tracing off: a capturing decorator still returns the function's results unchanged and
    writes nothing."""
    p = runner.run(CAPTURE, enable=False)
    assert "plain 42 plain" in p.stdout
    assert runner.traces() == []


VARIADIC = """
from dftrace import ai

@ai.compute.step(capture=["a", "rest", "k", "opts"], first=5)
def f(a, /, *rest, k=3, **opts):
    return a

f(1, 2, 3, z=4)
f(5, k=6)
"""


def test_capture_positional_only_varargs_and_keywords(runner):
    runner.run(VARIADIC)
    calls = [e["args"] for e in runner.trace().named("step")]
    assert [(c["arg.a"], c["arg.rest"], c["arg.k"], c["arg.opts"]) for c in calls] == [
        (1, "tuple(len=2)", 3, "dict(len=1)"), (5, "tuple(len=0)", 6, "dict(len=0)")]
