"""test_processes.py: multiprocessing with fork and spawn (pools and processes) and threads:
one complete, valid file per process, and every event present."""
import os

import pytest

POOL = '''
    import multiprocessing as mp
    import os
    import sys
    from dftrace import ai

    @ai.compute.forward
    def work(i):
        with ai.data.item:
            pass
        return i * i

    @ai.data.preprocess
    def worker_start():  # every worker records something, so every worker writes a file
        pass

    def main(method):
        ctx = mp.get_context(method)
        with ai.pipeline.train:
            pool = ctx.Pool(2, initializer=worker_start)
            assert pool.map(work, range(40), chunksize=5) == [i * i for i in range(40)]
            pool.close()
            pool.join()
            for target in (work,):
                p = ctx.Process(target=target, args=(7,))
                p.start()
                p.join()
                assert p.exitcode == 0

    if __name__ == "__main__":
        main(sys.argv[1])
'''


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pools_and_processes(runner, method):
    runner.run("import sys\nsys.argv[1:] = [%r]\n" % method + POOL.replace("\n    ", "\n"))
    traces = runner.traces()
    pids = {t.records[0]["pid"] for t in traces}
    assert len(traces) == len(pids) == 4  # the parent, two pool workers, one process
    parent = [t for t in traces if t.named("train")]
    assert len(parent) == 1 and parent[0].counts() == {"train": 1}
    children = [t for t in traces if t is not parent[0]]
    # each child is tied to the process that started it (a forkserver's child too, whose
    # parent in the OS is the fork server)
    for t in children:
        start = next(r for r in t.records if r.get("name") == "start")
        assert start["args"]["ppid"] == parent[0].records[0]["pid"], (method, t.path)
    assert sum(len(t.named("forward")) for t in children) == 41
    assert sum(len(t.named("item")) for t in children) == 41
    assert sorted(len(t.named("preprocess")) for t in children) == [0, 1, 1]
    for t in children:
        ids = t.by_id()
        assert t.end["args"]["dropped_events"] == 0
        for e in t.named("item"):
            assert ids[e["args"]["p_idx"]]["name"] == "forward"
        for e in t.named("forward"):  # the parent's open region does not leak into a child
            assert e["args"]["level"] == 1 and e["args"]["p_idx"] == -1
        assert all(e["pid"] == t.records[0]["pid"] for e in t.events)


def test_spawned_children_follow_initialize(runner):
    """initialize(enable=True) without the environment: spawned children trace too."""
    runner.run('''
        import multiprocessing as mp
        import dftrace
        from dftrace import ai

        @ai.compute.forward
        def work(i):
            return i

        @ai.data.preprocess
        def worker_start():
            pass

        if __name__ == "__main__":
            dftrace.initialize("traces/run", enable=True)
            ctx = mp.get_context("spawn")
            with ctx.Pool(2, initializer=worker_start) as pool:
                assert pool.map(work, range(10)) == list(range(10))
                pool.close()
                pool.join()
            work(0)
    ''', enable=False)
    traces = runner.traces()
    assert len(traces) == 3
    assert sum(len(t.named("forward")) for t in traces) == 11
    assert sum(len(t.named("preprocess")) for t in traces) == 2
    # spawned children are named after the script too, not after the interpreter
    assert all(os.path.basename(t.path).startswith("run-prog-") for t in traces)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawned_children_without_the_environment(runner, method):
    """initialize() in code, nothing exported: the children take the parent's tracing with
    the Process object (file prefix, exec name, the parent's pid as ppid)."""
    runner.run('''
        import multiprocessing as mp
        import os
        import sys
        import dftrace
        from dftrace import ai

        @ai.compute.forward
        def work(i):
            assert "DFTRACE_ENABLE" not in os.environ
            return i

        if __name__ == "__main__":
            dftrace.initialize("traces/run", enable=True, export_environment=False)
            with ai.pipeline.train:
                ctx = mp.get_context(sys.argv[1])
                with ctx.Pool(2) as pool:
                    assert pool.map(work, range(10), chunksize=1) == list(range(10))
                p = ctx.Process(target=work, args=(3,))
                p.start()
                p.join()
                assert p.exitcode == 0 and "_dftrace_child" not in vars(p)
    '''.replace("sys.argv[1]", repr(method)), enable=False)
    traces = runner.traces()
    parent = [t for t in traces if t.named("train")]
    assert len(parent) == 1
    children = [t for t in traces if t is not parent[0]]
    assert sum(len(t.named("forward")) for t in children) == 11
    assert all(os.path.basename(t.path).startswith("run-prog-") for t in traces)
    for t in children:
        start = next(r for r in t.records if r.get("name") == "start")
        assert start["args"]["ppid"] == parent[0].records[0]["pid"], t.path


def test_plain_fork_child(runner):
    runner.run('''
        import os
        from dftrace import ai

        with ai.pipeline.train:
            pid = os.fork()
            if pid == 0:
                from dftrace import _dftrace
                assert _dftrace._open_depth() == 0  # the parent's open use is not the child's
                with ai.compute.forward:
                    pass
                os._exit(0)  # skips atexit: the child's file must still be complete
            else:
                os.waitpid(pid, 0)
    ''')
    traces = runner.traces()
    assert len(traces) == 2
    child = [t for t in traces if t.named("forward") and not t.named("train")]
    assert len(child) == 1
    fw = child[0].named("forward")[0]
    assert fw["args"]["level"] == 1 and fw["args"]["p_idx"] == -1


def test_keyboard_interrupt_writes_the_end_line(runner):
    # An uncaught KeyboardInterrupt ends the process with its end line, although Python raises
    # SIGINT again after its own exit handlers (the C exit handler does not run). SIGINT is
    # Python's own (KeyboardInterrupt): the library does not take it, so the end line does not
    # name it.
    code = """
import os, signal
from dftrace import ai
for i in range(5):
    with ai.compute.forward:
        pass
os.kill(os.getpid(), signal.SIGINT)
while True:
    pass
"""
    p = runner.run(code, check=False)
    assert p.returncode in (-2, 130), (p.returncode, p.stderr)
    assert "KeyboardInterrupt" in p.stderr
    t = runner.trace()
    assert len(t.named("forward")) == 5
    assert t.end["args"]["num_events"] == 5 and t.end["args"]["dropped_events"] == 0


def test_terminated_pool_worker_writes_the_end_line_marked_sigterm(runner):
    # Pool.terminate() sends SIGTERM to its workers: each one's trace ends with its end line.
    code = """
import multiprocessing as mp, time
from dftrace import ai

def work(i):
    with ai.compute.forward:
        pass
    time.sleep(60)

if __name__ == "__main__":
    pool = mp.get_context("fork").Pool(2)
    pool.map_async(work, range(2))
    time.sleep(2)
    pool.terminate()
    pool.join()
"""
    runner.run(code)
    workers = [t for t in runner.traces() if t.named("forward")]
    assert len(workers) == 2
    for t in workers:
        assert t.end["args"]["signal"] == "SIGTERM", t.end
        assert t.end["args"]["num_events"] == 1
