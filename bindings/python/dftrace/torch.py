"""dftrace.torch: a PyTorch training step and model broken down without annotating them.

    import dftrace.torch as dt

    handle = dt.trace_model(model)          # compute.forward.<module path> per leaf module
    for x, y in loader:
        with dt.step(model, optimizer):     # compute.step, with forward, backward and the
            loss = loss_fn(model(x), y)     # optimizer's step inside it, and the step's memory
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    handle.remove()

Events go on the `ai` tree (docs/ai-tree.md), into the same trace as every other event:
`step` (category `compute`), `forward` (the model's forward), `backward` (every tensor
`backward()`), `step.optimizer` (the optimizer's `step()`, derived from `compute.step`), and,
per module, `forward.<module path>` (derived from `compute.forward`, with the module's own
parameter count `params`). Memory: a `memory` counter on `compute.step` at each step's end
(bytes: the peak CUDA allocation of the step when CUDA is in use, the resident set otherwise).

Hooks are PyTorch's own (`register_forward_pre_hook`, `register_forward_hook`); backward and the
optimizer's step are wrapped for the duration of the `with` block only, and restored after it.
"""
from __future__ import annotations

import fnmatch
import os
import sys
import threading
import weakref
from typing import Any, Iterable, List, Optional

import torch

import dftrace

from . import _dftrace, ai
from .frameworks import huggingface_callback, lightning_callback

__all__ = ["step", "trace_model", "ModelHandle", "instrument_dataloader", "bridge_record_function",
           "summary", "instrument_checkpoints", "instrument_transfers", "auto",
           "huggingface_callback", "lightning_callback", "model_graph", "instrument_distributed"]

_PAGE = os.sysconf("SC_PAGE_SIZE")


_statm = [-1, -1]  # descriptor of /proc/<pid>/statm, and that pid (a forked child reopens)


def _rss_bytes() -> int:
    """The resident set in bytes: one pread of /proc/self/statm on a descriptor kept open
    (4 us, against 30 us to open and read the file each time)."""
    pid = os.getpid()
    if _statm[1] != pid:
        if _statm[0] >= 0:
            os.close(_statm[0])  # the parent's, inherited over fork
        _statm[0], _statm[1] = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC), pid
    return int(os.pread(_statm[0], 128, 0).split()[1]) * _PAGE


def _memory_bytes() -> int:
    if torch.cuda.is_initialized():  # CUDA in use (a flag; is_available() costs microseconds)
        return int(torch.cuda.max_memory_allocated())
    return _rss_bytes()


def _timed(node, fn):
    """fn, each call recorded as a region of `node` (the wrappers the instrumentation installs)."""
    def timed(*args, **kwargs):
        r = node._begin()
        try:
            return fn(*args, **kwargs)
        finally:
            node._end(r)
    timed.__name__ = getattr(fn, "__name__", "timed")
    timed.__doc__ = getattr(fn, "__doc__", None)
    return timed


_explicit = [0]  # `with step(...)` blocks open: the automatic wrappers stand aside


class step:
    """`with step(model, optimizer):` records one training step (a micro-batch under gradient
    accumulation) as `compute.step`, with inside it the model's forward (`compute.forward`),
    every tensor `backward()` (`compute.backward`) and the optimizer's `step()`
    (`step.optimizer`); a step in which the optimizer does not step gets an empty
    `step.optimizer` event with `skipped: true` (gradient accumulation; TraceML records a
    zero-length one).
    `model` and `optimizer` may be None (that part is then not timed)."""

    _count = 0

    def __init__(self, model: Optional[torch.nn.Module] = None,
                 optimizer: Optional[torch.optim.Optimizer] = None) -> None:
        self.model = model
        self.optimizer = optimizer
        self._undo: List[Any] = []
        self._stepped = False

    def __enter__(self) -> "step":
        _explicit[0] += 1  # auto() leaves what this block times to it
        if torch.cuda.is_initialized():
            torch.cuda.reset_peak_memory_stats()
        self._region = ai.compute.step._begin()
        if self.model is not None:
            pending: List[int] = []
            self._undo.append(self.model.register_forward_pre_hook(
                lambda m, i: pending.append(ai.compute.forward._begin())))
            self._undo.append(self.model.register_forward_hook(
                lambda m, i, o: ai.compute.forward._end(pending.pop()) if pending else None))
        original_backward = torch.Tensor.backward
        torch.Tensor.backward = _timed(ai.compute.backward, original_backward)
        self._undo.append(lambda: setattr(torch.Tensor, "backward", original_backward))
        if self.optimizer is not None:
            opt = self.optimizer
            original_step = opt.step
            node = _optimizer_node()

            def optimizer_step(*args, **kwargs):
                self._stepped = True
                r = node._begin()
                try:
                    return original_step(*args, **kwargs)
                finally:
                    node._end(r)
            opt.step = optimizer_step
            self._undo.append(lambda: opt.__dict__.pop("step", None))
        return self

    def __exit__(self, *exc: Any) -> bool:
        for undo in reversed(self._undo):
            undo.remove() if hasattr(undo, "remove") else undo()
        self._undo.clear()
        if self.optimizer is not None and not self._stepped:
            with _optimizer_node()(args={"skipped": True}):
                pass  # this micro-batch did not step
        ai.compute.step._counter("memory", float(_memory_bytes()))
        step._count += 1
        ai.compute.step._end(self._region)
        _explicit[0] -= 1
        # The end of a step advances the schedule (dftrace.schedule / schedule.* keys).
        import dftrace
        dftrace.step()
        return False


_optimizer = None


def _optimizer_node():
    global _optimizer
    if _optimizer is None:
        _optimizer = ai.compute.step.derive("optimizer")
    return _optimizer


class ModelHandle:
    """What trace_model returns: `remove()` takes every hook off again."""

    def __init__(self, handles: list, paths: List[str]) -> None:
        self._handles = handles
        self.paths = paths  # the module paths traced

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()


def _matches(path: str, patterns: Optional[Iterable[str]]) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns or ())


def trace_model(model: torch.nn.Module, include: Optional[Iterable[str]] = None,
                exclude: Optional[Iterable[str]] = None, leaf_only: bool = True,
                forward: bool = True, backward: bool = True,
                memory: bool = False) -> ModelHandle:
    """Records each module's forward as `forward.<module path>` (category `compute`, derived
    from `compute.forward`) and its backward as `backward.<module path>` (derived from
    `compute.backward`: from the gradient of its output until the gradients of its inputs and
    parameters are computed), with the module's own parameter count (`params`); `memory`: a
    `memory` counter after each forward. `include` and `exclude` are glob patterns on the module
    path ("encoder.*"); `leaf_only`: only modules without children. The root module's path is
    its class name.

    How: each selected module's `forward` is replaced on the instance (not through torch's
    forward hooks, whose dispatch alone costs about 1 us per call): forward-only tracing binds
    the C decorator to the class's forward (tens of ns), backward or memory a Python wrapper
    that also arms the gradient hooks. A copy.deepcopy of the model binds to the copy; torch's
    scripting (torch.jit.script) does not see through the wrapper: remove() first."""
    handles: list = []
    paths: List[str] = []
    for path, module in model.named_modules():
        name = path or type(model).__name__
        if leaf_only and next(module.children(), None) is not None:
            continue
        if include is not None and not _matches(name, include):
            continue
        if _matches(name, exclude):
            continue
        if not forward and not backward:
            continue
        paths.append(name)
        params = sum(p.numel() for p in module.parameters(recurse=False))
        node = ai.compute.forward.derive(name)
        node.update(params=params)
        arm = None
        if backward:
            arm, undo = _trace_backward(name, params)
            handles.append(undo)
        handles.append(_wrap_forward(module, node if forward else None, arm, memory))
    return ModelHandle(handles, paths)


def _wrap_forward(module: torch.nn.Module, node, arm, memory: bool) -> "_Call":
    """Replaces module.forward on the instance by a traced one, bound to the module (so that a
    deep copy binds it to the copy and pickling stores it as the attribute); returns the undo."""
    import types
    own = module.__dict__.get("forward")  # an instance-level forward already: wrap that
    if own is None:
        fn = type(module).forward
    elif isinstance(own, types.MethodType) and own.__self__ is module:
        fn = own.__func__
    else:
        fn = (lambda f: lambda self, *a, **k: f(*a, **k))(own)
    if node is not None and arm is None and not memory:
        wrapped = types.MethodType(node(fn), module)  # the C decorator: no Python frame added
    else:
        begin = node._begin if node is not None else (lambda: 0)
        end = node._end if node is not None else (lambda r: None)

        def traced(self, *args, **kwargs):
            r = begin()
            try:
                out = fn(self, *args, **kwargs)
            finally:
                if memory and r:
                    node._counter("memory", float(_memory_bytes()))
                end(r)
            if arm is not None and torch.is_grad_enabled():
                arm(self, args, out)
            return out
        traced.__name__, traced.__qualname__ = "forward", getattr(fn, "__qualname__", "forward")
        traced.__wrapped__ = fn
        wrapped = types.MethodType(traced, module)
    module.forward = wrapped

    def undo() -> None:
        if module.__dict__.get("forward") is wrapped:
            if own is not None:
                module.forward = own
            else:
                del module.forward
    return _Call(undo)


def _trace_backward(name: str, params: int):
    """`backward.<name>`: begins when the gradient of the module's output arrives and ends when
    the gradients of all its inputs and parameters that require one are computed (tensor hooks
    armed after each forward; PyTorch 1.13's full backward hook runs before the output's
    gradient hook when no input requires a gradient, so it cannot mark the end). Returns
    (arm(module, inputs, output), undo)."""
    node = ai.compute.backward.derive(name)
    node.update(params=params)
    held: list = []  # hooks on parameters persist: removed when fired or at the next forward

    def arm(m, inputs, o):
        for h in held:
            h.remove()
        held.clear()
        if not (isinstance(o, torch.Tensor) and o.requires_grad):
            return
        ends = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
        ends += [p for p in m.parameters() if p.requires_grad]
        if not ends:
            return
        state = {"left": len(ends), "region": None}

        def begin(grad):
            state["region"] = node._begin()

        def end(grad):
            state["left"] -= 1
            if state["left"] == 0:
                for h in held:
                    h.remove()
                held.clear()
                if state["region"] is not None:
                    node._end(state["region"])
                    state["region"] = None
        o.register_hook(begin)
        for t in ends:
            held.append(t.register_hook(end))

    def undo() -> None:
        for x in held:
            x.remove()
        held.clear()
    return arm, _Call(undo)


class _Patch:
    """Undo of an attribute replaced by instrument_*(): the original is put back, or, when it
    was inherited rather than the owner's own, the replacement is deleted again."""

    def __init__(self, owner: Any, name: str, original: Any, own: bool = True) -> None:
        self.owner, self.name, self.original, self.own = owner, name, original, own

    def remove(self) -> None:
        if self.owner is not None:
            if self.own:
                setattr(self.owner, self.name, self.original)
            else:
                delattr(self.owner, self.name)
            self.owner = None


def _patch(owner: Any, name: str, make) -> _Patch:
    """Replaces owner.name by make(original); returns the undo."""
    own = name in owner.__dict__
    original = owner.__dict__[name] if own else getattr(owner, name)
    setattr(owner, name, make(original))
    return _Patch(owner, name, original if own else None, own)


def instrument_checkpoints() -> _Patches:
    """Records torch.save as `checkpoint.capture` and torch.load as `checkpoint.restart`, with
    the file's hash (`fhash`, resolved by the tools and dftrace.read) and its size (`bytes`)
    when the target is a path. Returns a handle; `remove()` restores both."""
    save, load = torch.save, torch.load

    def _path(f):
        return os.fspath(f) if isinstance(f, (str, os.PathLike)) else None

    def _size(path):
        try:
            return os.path.getsize(path)
        except OSError:
            return -1

    def traced_save(obj, f, *args, **kwargs):
        path = _path(f)
        use = ai.checkpoint.capture(args={"fhash": dftrace.file_hash(path)} if path else None)
        r = use._begin()
        try:
            return save(obj, f, *args, **kwargs)
        finally:
            if path:
                _dftrace.region_arg_int(r, "bytes", _size(path))  # what the save wrote
            use._end(r)

    def traced_load(f, *args, **kwargs):
        path = _path(f)
        use = ai.checkpoint.restart(
            args={"fhash": dftrace.file_hash(path), "bytes": _size(path)} if path else None)
        r = use._begin()
        try:
            return load(f, *args, **kwargs)
        finally:
            use._end(r)

    traced_save.__wrapped__, traced_load.__wrapped__ = save, load
    torch.save, torch.load = traced_save, traced_load
    return _Patches([_Patch(torch, "save", save), _Patch(torch, "load", load)])


def instrument_dataloader(items: bool = True) -> "_Patches":
    """Times every DataLoader's `__next__` (the time the loop waits for a batch, in the main
    process, with or without workers) as `dataloader.fetch`, with no change to the loop; with
    `items`, where batches are made (each worker process, or the main process without
    workers): `data.batch` per batch (args `worker`: the worker's id, -1 in the main process;
    `items`), inside it `data.item` per sample (arg `index`: the dataset index, or the
    running count of an iterable dataset) and `data.collate`. Workers inherit this by fork;
    a `spawn` worker does only under `dftrace run --torch`, whose start-up hook runs in every
    Python process. Returns a handle; `remove()` restores the loader."""
    from torch.utils.data import dataloader as dl
    patches = [_patch(dl._BaseDataLoaderIter, "__next__",
                      lambda original: _timed(ai.dataloader.fetch, original))]
    if items:
        from torch.utils.data._utils import fetch as f
        _items_on[0] = True
        for cls in (f._MapDatasetFetcher, f._IterableDatasetFetcher):
            patches.append(_patch(cls, "fetch", _traced_fetch))
        patches.append(_Call(lambda: _items_on.__setitem__(0, False)))
    return _Patches(patches)


_items_on = [False]
_data_nodes: List[Any] = []


def _data():
    """(batch, item, collate) nodes of category `data`, made on first use."""
    if not _data_nodes:
        _data_nodes.extend(dftrace.Profiler(p) for p in ("data.batch", "data.item", "data.collate"))
    return _data_nodes


class _Items:
    """A map-style dataset seen through a fetcher: each `dataset[i]` is a `data.item` event.
    Everything else (len, attributes, a batched `__getitems__`) is the dataset's own."""

    __slots__ = ("dataset", "node")

    def __init__(self, dataset, node) -> None:
        self.dataset, self.node = dataset, node

    def __getitem__(self, index):
        if not _items_on[0]:
            return self.dataset[index]
        r = self.node._begin()
        if r and type(index) is int:
            _dftrace.region_arg(r, "index", index)
        try:
            return self.dataset[index]
        finally:
            self.node._end(r)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name):
        if name in _Items.__slots__:  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.dataset, name)


class _ItemIter:
    """An iterable dataset's iterator seen through a fetcher: each item is a `data.item`
    event numbered from 0; the call that ends the iteration records nothing."""

    __slots__ = ("it", "node", "count")

    def __init__(self, it, node) -> None:
        self.it, self.node, self.count = it, node, 0

    def __iter__(self):
        return self

    def __next__(self):
        if not _items_on[0]:
            return next(self.it)
        r = self.node._begin()
        if r:
            _dftrace.region_arg(r, "index", self.count)
        try:
            item = next(self.it)
        except BaseException:
            _dftrace.region_cancel(r)
            raise
        self.count += 1
        self.node._end(r)
        return item


def _prepare_fetcher(fetcher) -> None:
    """Wraps a fetcher's dataset (or iterator) and collate function once, where it runs."""
    from torch.utils.data import get_worker_info
    from torch.utils.data._utils import fetch as f
    info = get_worker_info()
    _, item, collate = _data()
    fetcher._dftrace_worker = info.id if info is not None else -1
    if isinstance(fetcher, f._IterableDatasetFetcher):
        fetcher.dataset_iter = _ItemIter(fetcher.dataset_iter, item)
    else:
        fetcher.dataset = _Items(fetcher.dataset, item)
    fetcher.collate_fn = _timed(collate, fetcher.collate_fn)


def _traced_fetch(original):
    def fetch(self, possibly_batched_index):
        if not _items_on[0]:
            return original(self, possibly_batched_index)
        if "_dftrace_worker" not in self.__dict__:
            _prepare_fetcher(self)
        batch = _data()[0]
        r = batch._begin()
        if r:
            _dftrace.region_arg(r, "worker", self._dftrace_worker)
            if self.auto_collation:
                _dftrace.region_arg(r, "items", len(possibly_batched_index))
        try:
            return original(self, possibly_batched_index)
        finally:
            batch._end(r)
    fetch.__wrapped__ = original
    return fetch


def instrument_transfers() -> "_Patches":
    """Records `Tensor.to`, `Tensor.cuda` and `Tensor.cpu` calls that make a new tensor as
    `device.transfer` (category `device`), with `bytes` (the new tensor's size), `src` and
    `dst` (the devices) and, when it changes, `dtype` (the new one). A call that returns the
    tensor itself (already on that device, in that dtype) copies nothing and records nothing;
    a dtype or layout conversion on the same device is a copy and is recorded (that is what
    a CPU-only run moves). A call that raises records nothing. Returns a handle; `remove()`
    restores the three methods."""
    node = ai.device.transfer

    def make(original):
        def transfer(self, *args, **kwargs):
            r = node._begin()
            if not r:
                return original(self, *args, **kwargs)
            try:
                out = original(self, *args, **kwargs)
            except BaseException:
                _dftrace.region_cancel(r)
                raise
            if out is self or not isinstance(out, torch.Tensor):
                _dftrace.region_cancel(r)
                return out
            if out.layout == torch.strided:
                _dftrace.region_arg(r, "bytes", out.numel() * out.element_size())
            _dftrace.region_arg(r, "src", str(self.device))
            _dftrace.region_arg(r, "dst", str(out.device))
            if out.dtype != self.dtype:
                _dftrace.region_arg(r, "dtype", str(out.dtype)[6:])  # "torch.float64"
            node._end(r)
            return out
        transfer.__name__ = getattr(original, "__name__", "to")
        transfer.__doc__ = getattr(original, "__doc__", None)
        transfer.__wrapped__ = original
        return transfer
    return _Patches([_patch(torch.Tensor, n, make) for n in ("to", "cuda", "cpu")])


class _Call:
    """An undo that is a plain function."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def remove(self) -> None:
        if self.fn is not None:
            self.fn()
            self.fn = None


def _all_subclasses(cls) -> list:
    out, todo = [], list(cls.__subclasses__())
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


class _AutoSteps:
    """The steps of a loop nobody annotated (auto()), on the main thread: a step begins at
    the outermost module call made with gradients enabled while no step is open, and ends
    when the optimizer's `step()` returns; a forward that begins after a backward while the
    step is still open starts a new micro-batch (gradient accumulation: the step ends with a
    zero-length `step.optimizer`, `skipped: true`). A step still open at exit ends there.
    Each end advances the schedule (dftrace.step()) and samples the `memory` counter."""

    def __init__(self) -> None:
        self.main = threading.main_thread().ident
        self.open = False
        self.region = 0
        self.backward = False

    def forward(self) -> None:
        if threading.get_ident() != self.main or not torch.is_grad_enabled():
            return
        if self.open and self.backward:
            self.close(skipped=True)
        if not self.open:
            if torch.cuda.is_initialized():
                torch.cuda.reset_peak_memory_stats()
            self.open, self.backward = True, False
            self.region = ai.compute.step._begin()

    def close(self, skipped: bool = False) -> None:
        if not self.open or threading.get_ident() != self.main:
            return
        if skipped:
            with _optimizer_node()(args={"skipped": True}):
                pass
        ai.compute.step._counter("memory", float(_memory_bytes()))
        ai.compute.step._end(self.region)
        self.open, self.region = False, 0
        dftrace.step()

    def at_exit(self) -> None:
        if self.open:
            self.close(skipped=self.backward)


def auto(deep: bool = False) -> "_Patches":
    """PyTorch traced with no change to the script (what `dftrace run` and `dftrace watch` do
    through the start-up hook): steps (see _AutoSteps), the outermost module call as
    `forward`, every `Tensor.backward` as `backward`, every optimizer class's `step` as
    `step.optimizer`, data loading (instrument_dataloader: fetch, batch, item, collate),
    device copies (instrument_transfers), checkpoints (instrument_checkpoints) and
    torch.distributed (instrument_distributed: collectives, DDP's buckets, ranks). `deep`:
    also every model's layers with their memory (trace_model(..., memory=True) on each
    outermost module when it is first called). Inside `with step(...)` blocks the automatic
    step, forward, backward and optimizer events stand aside. Returns a handle; `remove()`
    undoes it all."""
    import atexit
    if _auto_on[0]:  # dftrace run installed it already: a second one would double every event
        print("dftrace: dftrace.torch.auto() is on already (dftrace run?); this call does "
              "nothing", file=sys.stderr)
        return _Patches([])
    _auto_on[0] = True
    steps = _AutoSteps()
    depth = [0]
    traced: "weakref.WeakSet" = weakref.WeakSet()
    layers: List[ModelHandle] = []
    forward, backward, optimizer = ai.compute.forward, ai.compute.backward, _optimizer_node()

    def make_call(call):
        def module_call(self, *args, **kwargs):
            if depth[0] or _explicit[0]:
                return call(self, *args, **kwargs)
            depth[0] += 1
            try:
                steps.forward()
                if deep and self not in traced:
                    traced.add(self)
                    layers.append(trace_model(self, memory=True))
                r = forward._begin()
                try:
                    return call(self, *args, **kwargs)
                finally:
                    forward._end(r)
            finally:
                depth[0] -= 1
        module_call.__wrapped__ = call
        return module_call

    def timed(node, name, before=None, after=None):
        """A wrapper maker for the methods auto() times (backward, each optimizer's step)."""
        def make(original):
            def method(self, *args, **kwargs):
                if _explicit[0]:
                    return original(self, *args, **kwargs)
                if before is not None:
                    before()
                r = node._begin()
                try:
                    return original(self, *args, **kwargs)
                finally:
                    node._end(r)
                    if after is not None:
                        after()
            method.__name__, method.__doc__, method.__wrapped__ = name, original.__doc__, original
            if getattr(original, "hooked", None):  # torch's profiler hook is inside: keep it once
                method.hooked = True
            return method
        return make

    make_backward = timed(backward, "backward", before=lambda: setattr(steps, "backward", True))
    make_step = timed(optimizer, "step", after=steps.close)

    patches = [instrument_dataloader(), instrument_checkpoints(), instrument_transfers(),
               _patch(torch.nn.Module, "__call__", make_call),
               _patch(torch.Tensor, "backward", make_backward)]
    try:
        patches.append(instrument_distributed())
    except Exception as e:  # noqa: BLE001  (the rest of auto() still works)
        print("dftrace: torch.distributed not instrumented: %s" % e, file=sys.stderr)
    for cls in _all_subclasses(torch.optim.Optimizer):
        if "step" in cls.__dict__:
            patches.append(_patch(cls, "step", make_step))
    patches.append(_Call(lambda: [h.remove() for h in layers]))
    atexit.register(steps.at_exit)
    patches.append(_Call(lambda: atexit.unregister(steps.at_exit)))
    patches.append(_Call(lambda: _auto_on.__setitem__(0, False)))
    return _Patches(patches)


_auto_on = [False]


def instrument_distributed(ddp: bool = True) -> "_Patches":
    """torch.distributed traced: each collective and point-to-point call as `comm.<function>`
    (bytes, dtype, count, reduce op, group size and rank, root or peer, async_op; the wait of
    an asynchronous one as `comm.wait`, linked by `comm_id`), DDP's gradient buckets (`ddp`),
    and the rank and clock offset at init_process_group (dftrace.torch_distributed). Returns a
    handle; `remove()` undoes it."""
    if not torch.distributed.is_available():  # a torch built without it: nothing to trace
        return _Patches([])
    from .torch_distributed import instrument_distributed as instrument
    return instrument(ddp=ddp)


class _Patches:
    """Undo of several patches at once."""

    def __init__(self, patches: List[_Patch]) -> None:
        self.patches = patches

    def remove(self) -> None:
        for p in reversed(self.patches):
            p.remove()


_ranges: dict = {}


def _range_node(name: str):
    node = _ranges.get(name)
    if node is None:
        # a range name as an event name in category compute; dots would make a path
        node = dftrace.region(str(name).replace(".", "_"), "compute")
        _ranges[name] = node
    return node


def bridge_record_function() -> _Patches:
    """Ranges opened with torch.profiler.record_function (torch.autograd.profiler's) are also
    recorded as dftrace events of that name (category compute), nested under whatever dftrace
    region is open, whether or not torch.profiler runs. Returns a handle; `remove()` restores
    record_function."""
    rf = torch.autograd.profiler.record_function
    enter, leave = rf.__enter__, rf.__exit__

    def bridged_enter(self):
        out = enter(self)
        node = _range_node(self.name)
        self._dftrace = (node, node._begin())
        return out

    def bridged_exit(self, *exc):
        held = self.__dict__.pop("_dftrace", None)
        if held is not None:
            held[0]._end(held[1])
        return leave(self, *exc)

    rf.__enter__ = bridged_enter
    rf.__exit__ = bridged_exit
    return _Patches([_Patch(rf, "__enter__", enter), _Patch(rf, "__exit__", leave)])


def summary(paths=None, top: int = 30, show: bool = True):
    """A key_averages()-like table of a trace, from dftrace.read: per (category, name) the
    calls, total, self (total minus the direct children's, through level and p_idx), mean, p50
    and p99 times in ms. paths: trace files (default: this process's, flushed first). Prints
    the `top` rows by total when `show`; returns the pandas DataFrame (all rows)."""
    import numpy as np
    if paths is None:
        dftrace.flush()
        paths = dftrace.output_path()
        if not paths:
            raise RuntimeError("dftrace.torch.summary: this process has no trace (tracing off?)")
    df = dftrace.read(paths, resolve=False)
    x = df[(df.ph == "X") & (df.cat != "dftracer")]
    # Self time: an event's duration minus its direct children's (same pid, p_idx = its id).
    kids = x[x.p_idx >= 0].groupby(["pid", "p_idx"]).dur.sum()
    key = list(zip(x.pid.to_numpy(), x.id.to_numpy()))
    child_ns = np.array([kids.get(k, 0) for k in key], dtype=np.int64) if len(kids) else 0
    x = x.assign(self_ns=x.dur.to_numpy() - child_ns)
    g = x.groupby(["cat", "name"], observed=True)
    t = g.dur.agg(["count", "sum", "mean", "median", lambda s: s.quantile(0.99)])
    t.columns = ["calls", "total", "mean", "p50", "p99"]
    t["self"] = g.self_ns.sum()
    for c in ("total", "self", "mean", "p50", "p99"):
        t[c] = t[c] / 1e6
    t = t.rename(columns={c: c + "_ms" for c in ("total", "self", "mean", "p50", "p99")})
    t = t.sort_values("total_ms", ascending=False)
    if show:
        lines = ["%-12s %-28s %8s %11s %11s %10s %10s %10s" % (
            "cat", "name", "calls", "total ms", "self ms", "mean ms", "p50 ms", "p99 ms")]
        for (cat, name), r in t.head(top).iterrows():
            lines.append("%-12s %-28s %8d %11.3f %11.3f %10.4f %10.4f %10.4f" % (
                str(cat)[:12], str(name)[:28], r["calls"], r["total_ms"], r["self_ms"],
                r["mean_ms"], r["p50_ms"], r["p99_ms"]))
        print("\n".join(lines))
    return t


def _fx_target(node, prefix: str) -> str:
    t = node.target
    if node.op == "call_module":
        return ".".join(p for p in (prefix, str(t)) if p)
    if node.op == "call_function":
        mod = getattr(t, "__module__", None) or ""
        name = getattr(t, "__name__", None) or str(t)
        return name if mod in ("", "_operator", "builtins") else "%s.%s" % (
            mod.replace("torch._C._nn", "torch.nn.functional"), name)
    return str(t)


def _fx_nodes(graph, prefix: str) -> List[dict]:
    out = []
    for n in graph.nodes:
        entry = {"name": n.name, "op": n.op, "target": _fx_target(n, prefix),
                 "args": [a.name for a in n.all_input_nodes]}
        meta = n.meta.get("tensor_meta")
        if meta is not None and hasattr(meta, "shape"):
            entry["shape"] = [int(d) for d in meta.shape]
            entry["dtype"] = str(meta.dtype).replace("torch.", "")
        out.append(entry)
    return out


def model_graph(model: torch.nn.Module, example_inputs: Any = None,
                record: bool = True) -> dict:
    """The model's module graph by torch.fx, robustly: a module fx cannot trace (data-dependent
    control flow, an untraceable call) becomes a leaf of its parent's graph and its own
    submodules are traced separately (recursively), so the result is a collection of graphs,
    with each failure's message. `example_inputs` (a tensor or a tuple of them): the model is
    run once on them (without gradients) and each graph gets its nodes' shapes and dtypes.
    With `record` (and tracing on), the collection is written into the trace as metadata
    (a `CM` line, key `model_graph`, value its JSON), which `dftrace cat --graph` prints.

    Returns {"model": class name, "graphs": [{"path": module path ("" is the model), "module":
    class name, "ok": bool, "error": message (failed ones), "leaves": paths that failed inside
    it, "nodes": [{"name", "op", "target", "args", "shape", "dtype"}]}], "failures": count}."""
    import json
    import torch.fx as fx
    from torch.fx.passes.shape_prop import ShapeProp

    inputs: dict = {}
    if example_inputs is not None:
        args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
        hooks = [m.register_forward_pre_hook(
            lambda m, a: inputs.setdefault(id(m), a)) for m in model.modules()]
        try:
            with torch.no_grad():
                model(*args)
        finally:
            for h in hooks:
                h.remove()

    class Tracer(fx.Tracer):
        """fx's tracer that keeps the chain of modules it is inside, to name the one that
        failed, and treats the ones that failed before as leaves."""

        def __init__(self, leaves) -> None:
            super().__init__()
            self.leaves, self.inside = leaves, []

        def is_leaf_module(self, m, qualname) -> bool:
            return qualname in self.leaves or super().is_leaf_module(m, qualname)

        def call_module(self, m, forward, args, kwargs):
            self.inside.append(self.path_of_module(m))
            out = super().call_module(m, forward, args, kwargs)
            self.inside.pop()
            return out

    graphs: List[dict] = []
    join = lambda *parts: ".".join(p for p in parts if p)  # noqa: E731

    def failed(module, path, message) -> None:
        graphs.append({"path": path, "module": type(module).__name__, "ok": False,
                       "error": message, "leaves": [], "nodes": []})
        for name, child in module.named_children():
            trace(child, join(path, name))

    def trace(module, path) -> None:
        leaves: dict = {}
        for _ in range(sum(1 for _ in module.modules()) + 1):
            tracer = Tracer(set(leaves))
            try:
                graph = tracer.trace(module)
                break
            except Exception as e:  # noqa: BLE001  (fx's failures are of many kinds)
                message = ("%s: %s" % (type(e).__name__, e)).strip().splitlines()[0][:400]
                culprit = tracer.inside[-1] if tracer.inside else ""
                if not culprit or culprit in leaves:
                    failed(module, path, message)
                    return
                leaves[culprit] = message
        else:
            failed(module, path, "gave up after one failure per submodule")
            return
        entry = {"path": path, "module": type(module).__name__, "ok": True, "error": None,
                 "leaves": [join(path, p) for p in leaves], "nodes": []}
        given = inputs.get(id(module))
        if given is not None:
            try:
                ShapeProp(fx.GraphModule(module, graph)).propagate(*given)
            except Exception as e:  # noqa: BLE001
                entry["shape_error"] = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:200]
        entry["nodes"] = _fx_nodes(graph, path)
        graphs.append(entry)
        for p, message in leaves.items():
            failed(module.get_submodule(p), join(path, p), message)

    trace(model, "")
    doc = {"model": type(model).__name__, "graphs": graphs,
           "failures": sum(1 for g in graphs if not g["ok"])}
    if record:
        dftrace.metadata("model_graph", json.dumps(doc, separators=(",", ":")))
    return doc
