"""test_emission.py: pydftracer's emission rules (docs/ai-tree.md section 2) for a training loop
like the guide's complete example, per style, per disabled category and in metadata mode."""
import pytest

# The loop of pydftracer's own AI logging test: every style of the guide in one program.
TRAIN = '''
import sys
from time import sleep
import numpy as np
from dftrace import dftracer, ai

DISABLE = sys.argv[1] if len(sys.argv) > 1 else ""
METADATA = len(sys.argv) > 2 and sys.argv[2] == "metadata"
NUM_FILES, NITER = 2, 3

class IOHandler:
    @ai.data.item
    def read(self, i):
        return np.ones((4,)) * i

@ai.dataloader.fetch
def read_data(io, epoch):
    for i in range(NUM_FILES):
        yield io.read(i)

@ai.data.preprocess.derive(name="collate")
def collate(data):
    return data

@ai.device.transfer
def transfer(data):
    return data

@ai.compute.forward
def forward(data):
    return 0.0

@ai.compute.backward
def backward():
    with ai.comm.all_reduce(enable=False):
        pass

@ai.compute
def compute(data):
    _ = forward(data)
    backward()
    return _

class Checkpoint:
    @ai.checkpoint.init
    def __init__(self):
        pass

    @ai.checkpoint.capture
    def capture(self, _):
        return _

    @ai.checkpoint.restart
    def restart(self, _):
        return _

class Hook:
    def before_step(self):
        ai.compute.step.start()

    def after_step(self):
        ai.compute.step.stop()

@ai.pipeline.train
def train(hook):
    io = IOHandler()
    checkpoint = Checkpoint()
    checkpoint.restart({})
    def steps(epoch):
        for step, data in ai.dataloader.fetch.iter(enumerate(read_data(io, epoch))):
            hook.before_step()
            data = collate(data)
            _ = transfer(data)
            _ = compute(data)
            hook.after_step()
            ai.update(step=step, epoch=epoch)
    if METADATA:
        for epoch in range(NITER):
            ai.pipeline.epoch.start(metadata=True)
            steps(epoch)
            ai.pipeline.epoch.stop(metadata=True)
    else:
        for epoch in ai.pipeline.epoch.iter(range(NITER)):
            steps(epoch)
    checkpoint.capture({})

if DISABLE == "all":
    ai.disable()
elif DISABLE == "ckpt":
    ai.checkpoint.disable()
elif DISABLE:
    getattr(ai, DISABLE).disable()

df_logger = dftracer.initialize_log("traces/training.pfw", "data", -1)
train(Hook())
df_logger.finalize()
'''

# 2 files x 3 epochs = 6 items; per item: fetch.iter, fetch.block, item, step, collate,
# transfer, compute, forward, backward (all_reduce is force-disabled).
FULL = {
    "train": 1, "checkpoint.init": 1, "restart": 1, "capture": 1,
    "epoch.iter": 3, "epoch.block": 3, "fetch": 3,
    "fetch.iter": 6, "fetch.block": 6, "item": 6, "step": 6, "preprocess.collate": 6,
    "transfer": 6, "compute": 6, "forward": 6, "backward": 6,
}
DROPPED = {
    "": [],
    "dataloader": ["fetch", "fetch.iter", "fetch.block"],
    "device": ["transfer"],
    "compute": ["compute", "forward", "backward", "step"],
    "ckpt": ["checkpoint.init", "restart", "capture"],
    "pipeline": ["train", "epoch.iter", "epoch.block"],
}


@pytest.mark.parametrize("disable", list(DROPPED))
def test_training_loop_counts(runner, disable):
    _run_with_args(runner, disable)
    t = runner.trace()
    expected = {k: v for k, v in FULL.items() if k not in DROPPED[disable]}
    assert t.counts() == expected
    if not disable:
        assert sum(expected.values()) == 67
    assert not [e for e in t.events if e["name"] == "all_reduce"]
    # names and categories as docs/ai-tree.md section 1 gives them
    cats = {e["name"]: e["cat"] for e in t.events}
    want_cats = {"train": "pipeline", "epoch.block": "pipeline", "fetch.iter": "dataloader",
                 "item": "data", "preprocess.collate": "data", "transfer": "device",
                 "forward": "compute", "step": "compute", "checkpoint.init": "checkpoint"}
    for name, cat in want_cats.items():
        if name in cats:
            assert cats[name] == cat
    assert t.end["args"]["num_events"] >= sum(expected.values())
    assert t.end["args"]["dropped_events"] == 0


def _run_with_args(runner, *args):
    code = "import sys\nsys.argv[1:] = %r\n" % (list(args),) + TRAIN
    runner.run(code, script="train.py")


def test_training_loop_structure(runner):
    _run_with_args(runner, "")
    t = runner.trace()
    ids = t.by_id()
    train = t.named("train")[0]
    assert train["args"]["level"] == 1 and train["args"]["p_idx"] == -1
    # iter counts restart at each iter() call and run 1..n
    fetch_iter = t.named("fetch.iter")
    assert sorted(e["args"]["count"] for e in fetch_iter) == [1, 1, 1, 2, 2, 2]
    assert sorted(e["args"]["count"] for e in t.named("epoch.block")) == [1, 2, 3]
    # items are read while fetching: they nest under fetch.iter
    for item in t.named("item"):
        assert ids[item["args"]["p_idx"]]["name"] == "fetch.iter"
    # the body's events nest under fetch.block; forward and backward under compute
    for e in t.named("step"):  # start()/stop() around the body's work
        assert ids[e["args"]["p_idx"]]["name"] == "fetch.block"
    for name in ("preprocess.collate", "transfer", "compute"):
        for e in t.named(name):
            assert ids[e["args"]["p_idx"]]["name"] == "step", name
    for name in ("forward", "backward"):
        for e in t.named(name):
            parent = ids[e["args"]["p_idx"]]
            assert parent["name"] == "compute"
            assert e["args"]["level"] == parent["args"]["level"] + 1
    # ai.update(step=, epoch=) at the end of a body labels that body's .block event
    blocks = sorted(t.named("fetch.block"), key=lambda e: e["ts"])
    assert [(b["args"]["epoch"], b["args"]["step"]) for b in blocks] == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    # count belongs to iter events only
    assert all("count" not in e["args"] for e in t.events
               if not e["name"].endswith((".iter", ".block")))


def test_disable_all_leaves_header_and_footer(runner):
    _run_with_args(runner, "all")
    t = runner.trace()  # the file exists, complete: header, then the footer
    assert t.events == []
    assert t.metadata == []
    assert t.end["args"]["num_events"] == 0
    assert [r["name"] for r in t.records if r.get("ph") == "X"] == ["start", "end"]


def test_metadata_mode_replaces_epoch_events(runner):
    _run_with_args(runner, "", "metadata")
    t = runner.trace()
    expected = {k: v for k, v in FULL.items() if k not in ("epoch.iter", "epoch.block")}
    assert t.counts() == expected
    marks = [m["args"] for m in t.metadata]
    names = [m["name"] for m in marks]
    assert names == ["epoch.start", "epoch.end"] * 3
    values = [int(m["value"]) for m in marks]
    assert values == sorted(values)  # epoch microseconds, in order
    assert all(isinstance(m["value"], str) for m in marks)
    train = t.named("train")[0]
    assert train["ts"] <= values[0] and values[-1] <= train["ts"] + train["dur"] + 1
