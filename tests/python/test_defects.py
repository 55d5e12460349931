"""test_defects.py: each pydftracer defect of docs/ai-tree.md section 8, shown not to happen here."""


def test_threads_in_one_node(runner):
    runner.run('''
        import threading
        from dftrace import ai

        @ai.compute.forward
        def forward(i):
            return i

        def worker(k):
            with ai.pipeline.train:
                for i in range(300):
                    forward(i)

        ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in ts: t.start()
        for t in ts: t.join()
    ''')
    t = runner.trace()
    ids = t.by_id()
    fw = t.named("forward")
    assert len(fw) == 8 * 300 and len(t.named("train")) == 8
    assert len({e["tid"] for e in t.named("train")}) == 8
    for e in fw:  # nested in the train region of its own thread
        parent = ids[e["args"]["p_idx"]]
        assert parent["name"] == "train" and parent["tid"] == e["tid"]
        assert e["args"]["level"] == 2
    assert len({e["id"] for e in t.events}) == len(t.events)


def test_recursion(runner):
    runner.run('''
        from dftrace import ai

        @ai.compute.forward
        def layer(depth):
            return 0 if depth == 1 else 1 + layer(depth - 1)

        assert layer(6) == 5
    ''')
    t = runner.trace()
    fw = sorted(t.named("forward"), key=lambda e: e["args"]["level"])
    assert [e["args"]["level"] for e in fw] == [1, 2, 3, 4, 5, 6]
    assert fw[0]["args"]["p_idx"] == -1
    for outer, inner in zip(fw, fw[1:]):
        assert inner["args"]["p_idx"] == outer["id"]
        assert outer["ts"] <= inner["ts"] and inner["dur"] <= outer["dur"]


def test_break_return_and_exception_out_of_iter(runner):
    runner.run('''
        from dftrace import ai

        for i in ai.dataloader.fetch.iter(range(10)):
            if i == 2:
                break

        def first():
            for x in ai.data.item.iter(range(10)):
                return x
        first()

        try:
            for i in ai.pipeline.epoch.iter(range(10)):
                raise KeyError(i)
        except KeyError:
            pass

        with ai.compute.forward:   # nothing leaked: this is a top-level event again
            pass
    ''')
    t = runner.trace()
    c = t.counts()
    assert c["fetch.iter"] == 3 and c["fetch.block"] == 3
    assert c["item.iter"] == 1 and c["item.block"] == 1
    assert c["epoch.iter"] == 1 and c["epoch.block"] == 1
    fw = t.named("forward")[0]
    assert fw["args"]["level"] == 1 and fw["args"]["p_idx"] == -1
    assert "count" not in fw["args"]
    for e in t.events:
        assert e["args"]["level"] == 1


def test_exceptions(runner):
    runner.run('''
        from dftrace import ai

        class Boom(Exception):
            pass

        err = Boom("x")

        @ai.compute.forward
        def forward():
            raise err

        try:
            forward()
        except Boom as e:
            assert e is err
        else:
            raise SystemExit("no exception")

        try:
            with ai.compute.backward:
                raise ValueError("y")
        except ValueError as e:
            assert str(e) == "y"

        try:
            ai.checkpoint.capture.start()
            raise RuntimeError("z")
        except RuntimeError:
            ai.checkpoint.capture.stop()

        with ai.compute.step:
            pass
    ''')
    t = runner.trace()
    assert t.counts() == {"forward": 1, "backward": 1, "capture": 1, "step": 1}
    for e in t.events:
        assert e["args"]["level"] == 1 and e["args"]["p_idx"] == -1


def test_decorated_while_disabled_then_enabled(runner):
    runner.run('''
        from dftrace import ai

        ai.compute.disable()

        @ai.compute.forward
        def forward():
            pass

        class Checkpoint:
            @ai.checkpoint.init()          # parentheses: still follows the node's state
            def __init__(self):
                pass

        forward()
        ai.compute.enable()
        forward()
        forward()
        ai.checkpoint.disable()
        Checkpoint()
        ai.checkpoint.enable()
        Checkpoint()
    ''')
    t = runner.trace()
    assert t.counts() == {"forward": 2, "checkpoint.init": 1}


def test_parenthesised_arguments_do_not_leak(runner):
    runner.run('''
        from dftrace import ai

        @ai.compute.forward(args={"layer": 3}, epoch=7)
        def with_args():
            pass

        @ai.compute.forward
        def plain():
            pass

        with_args()
        plain()
        with ai.compute.forward(args={"block": "b"}):
            pass
        with ai.compute.forward:
            pass
        for _ in ai.compute.forward.iter(range(1)):
            pass
        plain()
    ''')
    t = runner.trace()
    fw = sorted(t.named("forward"), key=lambda e: e["ts"])
    assert [e["args"].get("layer") for e in fw] == [3, None, None, None, None]
    assert [e["args"].get("epoch") for e in fw] == [7, None, None, None, None]
    assert [e["args"].get("block") for e in fw] == [None, None, "b", None, None]
    assert all("count" not in e["args"] for e in fw)  # count does not leak out of iter


def test_init_as_context_manager_and_late_nodes(runner):
    runner.run('''
        from dftrace import ai

        with ai.pipeline.train:
            with ai.checkpoint.init:            # pydftracer raises here
                pass
            late = ai.data.preprocess.derive("late")   # created after tracing started
            with late:
                pass
            assert ai.data.preprocess.derive("late") is late
            with ai.data.item.init:
                pass
        with ai.compute.forward:
            pass
    ''')
    t = runner.trace()
    assert t.counts() == {"train": 1, "checkpoint.init": 1, "preprocess.late": 1,
                          "item.init": 1, "forward": 1}
    train = t.named("train")[0]
    for name in ("checkpoint.init", "preprocess.late", "item.init"):
        e = t.named(name)[0]
        assert e["args"]["p_idx"] == train["id"] and e["args"]["level"] == 2
    assert t.named("checkpoint.init")[0]["cat"] == "checkpoint"
    assert t.named("preprocess.late")[0]["cat"] == "data"
    assert t.named("forward")[0]["args"]["level"] == 1
