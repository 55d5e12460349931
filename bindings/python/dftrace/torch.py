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
from typing import Any, Iterable, List, Optional

import torch

import dftrace

from . import _dftrace, ai

__all__ = ["step", "trace_model", "ModelHandle", "instrument_dataloader", "bridge_record_function",
           "summary", "instrument_checkpoints"]

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def _memory_bytes() -> int:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
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
        if torch.cuda.is_available() and torch.cuda.is_initialized():
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
    `compute.backward`: from the gradient of its output to the module's backward hook), with the
    module's own parameter count (`params`); `memory`: a `memory` counter after each forward. `include` and
    `exclude` are glob patterns on the module path ("encoder.*"); `leaf_only`: only modules
    without children. The root module's path is its class name."""
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
        paths.append(name)
        params = sum(p.numel() for p in module.parameters(recurse=False))
        if backward:
            handles.extend(_trace_backward(module, name, params))
        if not forward:
            continue
        node = ai.compute.forward.derive(name)
        node.update(params=params)
        pending: List[int] = []

        def pre(m, i, node=node, pending=pending):
            pending.append(node._begin())

        def post(m, i, o, node=node, pending=pending):
            if pending:
                if memory:
                    node._counter("memory", float(_memory_bytes()))
                node._end(pending.pop())
        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
    return ModelHandle(handles, paths)


def _trace_backward(module: torch.nn.Module, name: str, params: int) -> list:
    """`backward.<name>`: begins when the gradient of the module's output arrives and ends when
    the gradients of all its inputs and parameters that require one are computed (tensor hooks
    set by a forward hook; PyTorch 1.13's full backward hook runs before the output's gradient
    hook when no input requires a gradient, so it cannot mark the end)."""
    node = ai.compute.backward.derive(name)
    node.update(params=params)
    held: list = []  # hooks on parameters persist: removed when fired or at the next forward

    def post(m, inputs, o):
        for h in held:
            h.remove()
        held.clear()
        if not (torch.is_grad_enabled() and isinstance(o, torch.Tensor) and o.requires_grad):
            return None
        ends = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
        ends += [p for p in m.parameters() if p.requires_grad]
        if not ends:
            return None
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
        return None
    class _Handle:
        def __init__(self, h):
            self.h = h

        def remove(self):
            self.h.remove()
            for x in held:
                x.remove()
            held.clear()
    return [_Handle(module.register_forward_hook(post))]


class _Patch:
    """Undo of a class attribute replaced by instrument_*()."""

    def __init__(self, owner: Any, name: str, original: Any) -> None:
        self.owner, self.name, self.original = owner, name, original

    def remove(self) -> None:
        if self.owner is not None:
            setattr(self.owner, self.name, self.original)
            self.owner = None


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


def instrument_dataloader() -> _Patch:
    """Times every DataLoader's `__next__` (the time the loop waits for a batch, in the main
    process, with or without workers) as `dataloader.fetch`, with no change to the loop.
    Returns a handle; `remove()` restores the iterator."""
    from torch.utils.data import dataloader as dl
    owner = dl._BaseDataLoaderIter
    original = owner.__next__
    node = ai.dataloader.fetch

    owner.__next__ = _timed(node, original)
    return _Patch(owner, "__next__", original)


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
