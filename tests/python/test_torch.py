"""test_torch.py: a real PyTorch training loop (tiny model, torch.utils.data.DataLoader)
annotated with ai.*, with the loader in the main process and with two worker processes."""
import pytest

torch_available = True
try:
    import torch  # noqa: F401
except Exception:  # pragma: no cover - python3-torch is in the test dependencies
    torch_available = False

TRAIN = '''
import sys
import torch
from torch.utils.data import DataLoader, Dataset
from dftrace import ai

WORKERS = int(sys.argv[1])
PERSISTENT = len(sys.argv) > 2 and sys.argv[2] == "persistent"
SAMPLES, BATCH, EPOCHS = 64, 8, 2


class Points(Dataset):
    @ai.data.init
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(SAMPLES, 4, generator=g)
        self.y = self.x.sum(dim=1, keepdim=True)

    def __len__(self):
        return SAMPLES

    @ai.data.item
    def __getitem__(self, i):
        return self.x[i], self.y[i]


@ai.data.preprocess.derive(name="collate")
def collate(batch):
    return torch.utils.data.default_collate(batch)


@ai.pipeline.train
def train():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Points(), batch_size=BATCH, num_workers=WORKERS, collate_fn=collate,
                        persistent_workers=PERSISTENT)
    losses = []
    for epoch in ai.pipeline.epoch.iter(range(EPOCHS)):
        for step, (x, y) in ai.dataloader.fetch.iter(enumerate(loader)):
            ai.update(epoch=epoch, step=step)
            with ai.device.transfer:
                x, y = x.to("cpu"), y.to("cpu")
            with ai.compute.forward:
                loss = torch.nn.functional.mse_loss(model(x), y)
            with ai.compute.backward:
                opt.zero_grad()
                loss.backward()
            ai.compute.step.start()
            opt.step()
            ai.compute.step.stop()
            losses.append(loss.item())
    assert losses[-1] < losses[0], losses


train()
'''

STEPS = 64 // 8 * 2  # batches per epoch x epochs


@pytest.mark.skipif(not torch_available, reason="python3-torch is not installed")
@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_torch_training_loop(runner, workers, persistent):
    argv = [str(workers)] + (["persistent"] if persistent else [])
    runner.run("import sys\nsys.argv[1:] = %r\n" % argv + TRAIN, script="train.py", timeout=600)
    traces = runner.traces()
    main = [t for t in traces if t.named("train")]
    assert len(main) == 1
    m = main[0]
    c = m.counts()
    for name, n in {"train": 1, "data.init": 1, "epoch.iter": 2, "epoch.block": 2,
                    "fetch.iter": STEPS, "fetch.block": STEPS, "transfer": STEPS,
                    "forward": STEPS, "backward": STEPS, "step": STEPS}.items():
        assert c.get(name) == n, (name, c)
    ids = m.by_id()
    for e in m.named("forward"):
        block = ids[e["args"]["p_idx"]]
        assert block["name"] == "fetch.block"
        assert block["args"]["step"] == e["args"]["step"]
    workers_files = [t for t in traces if t is not m]
    all_items = sum(len(t.named("item")) for t in traces)
    all_collates = sum(len(t.named("preprocess.collate")) for t in traces)
    assert all_items == 64 * 2 and all_collates == STEPS
    if workers == 0:
        assert workers_files == []
        for e in m.named("item"):  # fetched in the main process: under fetch.iter
            assert ids[e["args"]["p_idx"]]["name"] == "fetch.iter"
    else:
        # one worker set per epoch (or one for the run when persistent), each worker its own
        # complete file with its own pid
        assert len(workers_files) == (1 if persistent else 2) * workers
        assert len({t.records[0]["pid"] for t in traces}) == len(traces)
        assert m.named("item") == []
        for t in workers_files:
            assert t.named("item") and t.end["args"]["dropped_events"] == 0
