"""test_api.py: the pydftracer surface of `from dftrace import ai` and the `dftrace` functions."""
import collections
import os
import subprocess

import pytest


def test_decorator_and_context_manager_forms(runner):
    runner.run('''
        from dftrace import ai

        @ai.compute.forward
        def bare(x):
            return x + 1

        @ai.compute.forward()
        def called(x):
            return x + 2

        @ai.compute.forward(args={"arg1": "value1", "arg2": 2})
        def with_args(x):
            return x + 3

        class Model:
            @ai.compute.backward
            def backward(self, x):
                return self, x

        assert bare(1) == 2 and called(1) == 3 and with_args(1) == 4
        m = Model()
        assert m.backward(5) == (m, 5)
        assert bare.__name__ == "bare" and bare.__wrapped__(1) == 2
        with ai.compute.step:
            pass
        with ai.compute.step():
            pass
        with ai.compute.step(args={"lr": 0.5}) as p:
            assert p.use_args == {"lr": 0.5}
    ''')
    t = runner.trace()
    assert t.counts() == {"forward": 3, "backward": 1, "step": 3}
    fw = sorted(t.named("forward"), key=lambda e: e["ts"])
    assert fw[2]["args"]["arg1"] == "value1" and fw[2]["args"]["arg2"] == 2
    st = sorted(t.named("step"), key=lambda e: e["ts"])
    assert "lr" not in st[0]["args"] and st[2]["args"]["lr"] == 0.5


def test_iter_options(runner):
    runner.run('''
        from dftrace import ai

        items = list(ai.dataloader.fetch.iter(range(3)))
        assert items == [0, 1, 2]
        for _ in ai.data.item.iter(range(2), include_iter=False):
            pass
        for _ in ai.data.preprocess.iter(range(2), include_block=False):
            pass
        for _ in ai.pipeline.test.iter(range(2), iter_name="next_batch", block_name="body"):
            pass
        for _ in ai.pipeline.evaluate.iter([]):
            pass
    ''')
    t = runner.trace()
    assert t.counts() == {"fetch.iter": 3, "fetch.block": 3, "item.block": 2,
                          "preprocess.iter": 2, "next_batch": 2, "body": 2}
    assert t.named("body")[0]["cat"] == "pipeline"
    assert sorted(e["args"]["count"] for e in t.named("fetch.block")) == [1, 2, 3]


def test_start_stop_and_metadata(runner):
    runner.run('''
        from dftrace import ai

        ai.compute.step.start()
        ai.compute.forward.start()
        ai.compute.forward.stop()
        ai.compute.step.stop()
        ai.pipeline.epoch.start(metadata=True)
        ai.pipeline.epoch.stop(metadata=True)
        ai.compute.stop()          # without start: nothing, no error
    ''')
    t = runner.trace()
    assert t.counts() == {"step": 1, "forward": 1}
    step, fw = t.named("step")[0], t.named("forward")[0]
    assert fw["args"]["p_idx"] == step["id"]
    assert [m["args"]["name"] for m in t.metadata] == ["epoch.start", "epoch.end"]
    assert all(m["cat"] == "dftracer" for m in t.metadata)


def test_update_levels_and_values(runner):
    runner.run('''
        import numpy as np
        from dftrace import ai

        class Thing:
            def __str__(self):
                return "thing!"

        ai.update(epoch=np.int64(3), step=np.int32(4))
        ai.data.update(image_idx=5, image_size=np.float32(1.5),
                       args={"flag": np.bool_(True), "obj": Thing(), "name": "n"})
        with ai.data.item:
            pass
        with ai.compute.forward:
            pass
        ai.data.update(image_idx=None)            # None removes
        ai.update(step=9)                         # epoch stays
        with ai.data.item:
            pass
        derived = ai.data.item.derive("x")
        derived.update(step=10)
        with derived:
            pass
        with ai.data.item:
            pass
    ''')
    t = runner.trace()
    items = sorted(t.named("item"), key=lambda e: e["ts"])
    a = items[0]["args"]
    assert (a["epoch"], a["step"], a["image_idx"], a["image_size"]) == (3, 4, 5, 1.5)
    assert a["flag"] is True and a["obj"] == "thing!" and a["name"] == "n"
    fw = t.named("forward")[0]["args"]
    assert fw["epoch"] == 3 and "image_idx" not in fw and "flag" not in fw
    b = items[1]["args"]
    assert b["epoch"] == 3 and b["step"] == 9 and "image_idx" not in b
    assert t.named("item.x")[0]["args"]["step"] == 10
    assert items[2]["args"]["step"] == 9  # the parent is not touched by a child's update


def test_enable_disable_every_level(runner):
    runner.run('''
        from dftrace import ai

        def all_once():
            for node in (ai.compute.forward, ai.compute.backward, ai.comm.all_reduce):
                with node:
                    pass

        ai.disable(); all_once()                        # nothing
        ai.enable(); ai.compute.disable(); all_once()   # all_reduce
        ai.compute.enable(); ai.compute.backward.disable(); all_once()  # forward, all_reduce
        with ai.compute.backward(enable=True):          # forced on for one use
            pass
        ai.compute.backward.enable()
        with ai.compute.backward(enable=False):         # forced off for one use
            pass
        assert ai.compute.backward.enabled
    ''')
    t = runner.trace()
    assert t.counts() == {"all_reduce": 2, "forward": 1, "backward": 1}


def test_generators_and_async(runner):
    runner.run('''
        import asyncio
        from dftrace import ai

        @ai.dataloader.fetch
        def read_batch(n):
            for i in range(n):
                yield i

        @ai.compute.forward
        async def forward(x):
            await asyncio.sleep(0.05)
            return x * 2

        for step, data in ai.dataloader.fetch.iter(enumerate(read_batch(3))):
            pass
        assert asyncio.run(forward(4)) == 8
    ''')
    t = runner.trace()
    assert t.counts() == {"fetch": 1, "fetch.iter": 3, "fetch.block": 3, "forward": 1}
    assert t.named("forward")[0]["dur"] >= 40000  # the awaited time, in microseconds


def test_enumerations_and_custom_tracer(runner):
    runner.run('''
        from dftrace import ai, ProfileCategory, ComputeEvent, CommunicationEvent, \\
            PipelineEvent, DataEvent, DataLoaderEvent, DeviceEvent, CheckpointEvent, DFTracerAI

        assert ProfileCategory.COMPUTE == "compute" and str(ComputeEvent.FORWARD) == "forward"
        assert CommunicationEvent.ALL_TO_ALL == "all_to_all"
        assert [e.value for e in PipelineEvent] == ["epoch", "train", "evaluate", "test"]
        assert DataLoaderEvent.FETCH == "fetch" and DeviceEvent.TRANSFER == "transfer"
        assert [e.value for e in CheckpointEvent] == ["capture", "restart"]
        assert [e.value for e in DataEvent] == ["preprocess", "item"]
        for cat in ProfileCategory:
            node = getattr(ai, cat)
            assert node.name == cat and node.cat == cat
        assert ai.comm.all_to_all.name == "all_to_all" and ai.comm.all_to_all.cat == "comm"
        assert ai.name == "ai_root" and ai.cat == "ai_root"

        custom = DFTracerAI(cat="custom_category", name="my_operation", epoch=1, step=100)
        with custom:
            pass
        off = DFTracerAI(cat="custom_category", name="off", enable=False)
        with off:
            pass
    ''')
    t = runner.trace()
    e = t.named("my_operation")[0]
    assert e["cat"] == "custom_category" and e["args"]["epoch"] == 1 and e["args"]["step"] == 100
    assert t.counts() == {"my_operation": 1}


def test_general_api(runner):
    runner.run('''
        import dftrace

        s = dftrace.initialize(exec_name="myapp")
        assert dftrace.is_enabled() and s.enabled

        @dftrace.trace
        def bare():
            pass

        @dftrace.trace(name="io_read", cat="posix", args={"fd": 3})
        def read():
            pass

        bare(); read()
        with dftrace.region("load", cat="app", args={"n": 1}):
            dftrace.instant("marker", cat="app", args={"why": "test"})
        dftrace.counter("loss", 0.25, cat="app")
        dftrace.metadata("git", "abc123")
        dftrace.process_property("world", 4)
        dftrace.thread_name("main-thread")
        print(dftrace.output_path())
        assert dftrace.finalize() == 0
    ''')
    t = runner.trace()
    assert "myapp" in os.path.basename(t.path)
    assert t.counts() == {"bare": 1, "io_read": 1, "load": 1}
    assert t.named("bare")[0]["cat"] == "python"
    r = t.named("io_read")[0]
    assert r["cat"] == "posix" and r["args"]["fd"] == 3
    inst = [x for x in t.records if x.get("ph") == "i"]
    assert inst and inst[0]["name"] == "marker" and inst[0]["args"]["why"] == "test"
    ctr = [x for x in t.records if x.get("ph") == "C"]
    assert ctr and ctr[0]["name"] == "loss" and ctr[0]["args"]["loss"] == 0.25
    assert any(m["args"]["name"] == "git" and m["args"]["value"] == "abc123" for m in t.metadata)


def test_bad_input_is_reported_not_raised(runner):
    p = runner.run('''
        from dftrace import ai

        @ai.compute.forward(args=[1, 2])        # not a dict
        def f():
            return 1

        class Bad:
            def __str__(self):
                raise RuntimeError("no str")

        @ai.compute.forward(args={"x": Bad()})  # unconvertible value
        def g():
            return 2

        assert f() == 1 and g() == 2
        ai.compute.update(args="nope")
        with ai.compute.backward(bogus=1):
            pass
    ''')
    lines = [x for x in p.stderr.splitlines() if x]
    assert lines and all(x.startswith("dftrace: ") for x in lines), p.stderr
    assert len(lines) == 4
    t = runner.trace()
    assert t.counts() == {"forward": 2, "backward": 1}


def test_guide_examples_run_with_the_import_changed(runner):
    """The guide's examples, with `from dftracer.python import ...` changed to dftrace."""
    runner.run('''
        from dftrace import dftracer, ai
        import numpy as np
        import os

        df_logger = dftracer.initialize_log("traces/ai_trace.pfw", "data", -1)
        os.makedirs("data", exist_ok=True)
        np.save("data/0.npy", np.arange(4))

        class IOHandler:
            @ai.data.item
            def read(self, filename: str):
                return np.load(filename)

        io = IOHandler()
        data = io.read("data/0.npy")

        @ai.dataloader.fetch
        def read_batch(data_dir: str, num_files: int):
            for i in range(num_files):
                yield io.read(f"{data_dir}/0.npy")

        for step, data in ai.dataloader.fetch.iter(enumerate(read_batch("data", 3))):
            pass

        @ai.data.preprocess.derive(name="collate")
        def collate(data):
            return data

        @ai.data.preprocess.derive(name="augment")
        def augment(data):
            return data

        processed_data = collate(data)
        augmented_data = augment(processed_data)

        @ai.device.transfer
        def transfer_to_gpu(data):
            return data

        gpu_data = transfer_to_gpu(data)

        @ai.compute.backward
        def backward_with_sync():
            with ai.comm.all_reduce():
                pass

        backward_with_sync()
        with ai.comm.all_reduce(enable=False):
            pass

        class Checkpoint:
            @ai.checkpoint.init
            def __init__(self, folder="."):
                self.folder = folder

            @ai.checkpoint.capture
            def save(self, state):
                return state

            @ai.checkpoint.restart
            def load(self, checkpoint_path):
                return {}

        checkpoint = Checkpoint()
        checkpoint.load("checkpoint.pt")
        checkpoint.save({"model": 1})

        profiler_collate = ai.data.preprocess.derive(name="collate")
        with profiler_collate:
            pass
        profiler_collate.update(epoch=1)
        ai.data.preprocess.update(epoch=1)

        for epoch in range(2):
            ai.pipeline.epoch.start(metadata=True)
            for step in range(2):
                ai.update(step=step, epoch=epoch)
            ai.pipeline.epoch.stop(metadata=True)

        ai.compute.disable()
        @ai.compute.forward(enable=True)
        def forward(model, x):
            return x
        forward(None, 1)
        with ai.compute.backward(enable=True):
            pass
        ai.compute.enable()

        df_logger.finalize()
    ''')
    t = runner.trace()
    assert os.path.basename(t.path).startswith("ai_trace-")
    ai_counts = collections.Counter(e["name"] for e in t.events if e["cat"] not in ("POSIX", "STDIO"))
    assert ai_counts == {"item": 4, "fetch": 1, "fetch.iter": 3, "fetch.block": 3,
                         "preprocess.collate": 2, "preprocess.augment": 1, "transfer": 1,
                         "backward": 2, "all_reduce": 1, "checkpoint.init": 1, "restart": 1,
                         "capture": 1, "forward": 1}
    # initialize_log's data_dir ("data") traces that directory's I/O, as pydftracer's does:
    # np.save opens data/0.npy once, then each of the 4 np.load calls inside its data.item.
    files = {e["args"]["value"]: e["args"]["name"] for e in t.records if e.get("name") == "FH"}
    items = {e["id"] for e in t.named("item")}
    opens = [e for e in t.events if e["name"] == "open64"]
    assert [files[e["args"]["fhash"]].endswith("/data/0.npy") for e in opens] == [True] * 5
    assert opens[0]["args"]["flags"] & os.O_CREAT and opens[0]["args"]["level"] == 1
    assert [e["args"]["p_idx"] for e in opens[1:]] == sorted(items)
    assert len(t.metadata) == 4


def test_import_has_types():
    import dftrace

    pkg = os.path.dirname(dftrace.__file__)
    assert os.path.exists(os.path.join(pkg, "py.typed"))
    assert os.path.exists(os.path.join(pkg, "_dftrace.pyi"))


def test_context_manager_protocol_details(runner):
    """`with` on temporary uses, ExitStack (class-level __enter__/__exit__), nesting of one
    node with itself, and uses kept in variables."""
    runner.run('''
        import contextlib
        from dftrace import ai, _dftrace

        with contextlib.ExitStack() as stack:
            stack.enter_context(ai.compute.step)
            stack.enter_context(ai.compute.step(args={"inner": 1}))
        prof = ai.compute.forward(args={"kept": True})
        with prof:
            with prof:
                pass
        for i in range(1000):                 # temporaries: nothing kept, nothing leaked
            with ai.comm.barrier(args={"i": i}):
                pass
        assert _dftrace._open_depth() == 0
    ''')
    t = runner.trace()
    assert t.counts() == {"step": 2, "forward": 2, "barrier": 1000}
    outer, inner = sorted(t.named("step"), key=lambda e: e["args"]["level"])
    assert inner["args"]["p_idx"] == outer["id"] and inner["args"]["inner"] == 1
    assert "inner" not in outer["args"]
    f_outer, f_inner = sorted(t.named("forward"), key=lambda e: e["args"]["level"])
    assert f_inner["args"]["p_idx"] == f_outer["id"] and f_inner["args"]["kept"] is True
    assert sorted(e["args"]["i"] for e in t.named("barrier")) == list(range(1000))


def test_extension_uses_only_the_c_abi():
    """The compiled module links libdftrace and calls nothing but functions of dftrace.h."""
    import re
    import shutil

    from dftrace import _dftrace

    if not shutil.which("nm"):
        pytest.skip("nm (binutils) is not installed")
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "dftrace", "dftrace.h")
    declared = set(re.findall(r"\b(dftrace_[a-z_0-9]+)\s*\(", open(header).read()))
    out = subprocess.run(["nm", "-D", "--undefined-only", _dftrace.__file__], check=True,
                         capture_output=True, text=True).stdout
    used = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    ours = {s for s in used if "dftrace" in s}
    assert ours and ours <= declared, ours - declared
    assert not [s for s in used if s.startswith("_Z")]  # no C++ symbol of the core


CATEGORY_NODES = """
from dftrace import ai
for node in (ai.comm.barrier, ai.comm.all_reduce, ai.compute.step, ai.compute.forward):
    with node:
        pass
"""


@pytest.mark.parametrize("first", ["", "import dftrace\ndftrace.initialize()\n"],
                         ids=["at_first_use", "after_initialize"])
def test_categories_switched_by_the_environment(runner, first):
    runner.run(first + CATEGORY_NODES,
               env={"DFTRACE_CATEGORIES": "-comm,+comm.all_reduce,-compute.step"})
    assert runner.trace().counts() == {"all_reduce": 1, "forward": 1}


def test_64_bit_integer_arguments_stay_exact(runner):
    # A Python int beyond int64 (a hash) is passed as an unsigned 64-bit argument, exact; one
    # beyond 64 bits or below int64 becomes a double.
    runner.run("""
import dftrace
with dftrace.region("big", args={"h": 2**64 - 1, "i": -2**63, "huge": 2**70, "low": -2**64}):
    pass
""")
    (t,) = runner.traces()
    (e,) = t.named("big")
    assert e["args"]["h"] == 2**64 - 1 and e["args"]["i"] == -2**63
    assert e["args"]["huge"] == float(2**70) and e["args"]["low"] == float(-2**64)


def test_with_and_start_stop_share_the_cores_stack(runner):
    """`with node:` and start()/stop() end the innermost open region of the node on the calling
    thread (the core's stack, dftrace_node_stop): a use forced off inside ends nothing, and a
    stop on another thread finds nothing."""
    runner.run('''
        import threading
        from dftrace import ai, _dftrace

        with ai.compute.forward:
            with ai.compute.forward(enable=False):   # begins nothing, so ends nothing
                pass
            with ai.compute.backward:
                pass
        ai.compute.step.start()
        t = threading.Thread(target=ai.compute.step.stop)   # not open there: nothing
        t.start()
        t.join()
        assert _dftrace._open_depth() == 1
        with ai.compute.forward:
            pass
        ai.compute.step.stop()
        ai.compute.step.stop()                # nothing open: nothing, no error
        assert _dftrace._open_depth() == 0
    ''')
    t = runner.trace()
    assert t.counts() == {"forward": 2, "backward": 1, "step": 1}
    f_outer = [e for e in t.named("forward") if e["args"]["level"] == 1]
    f_inner = [e for e in t.named("forward") if e["args"]["level"] == 2]
    backward, step = t.named("backward")[0], t.named("step")[0]
    assert len(f_outer) == 1 and backward["args"]["p_idx"] == f_outer[0]["id"]
    assert len(f_inner) == 1 and f_inner[0]["args"]["p_idx"] == step["id"]
