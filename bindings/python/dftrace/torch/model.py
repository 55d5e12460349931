"""dftrace.torch.trace_model: each module's forward and backward as events of its own."""
from __future__ import annotations

import fnmatch
from typing import Callable, Iterable, List, Optional

import torch

from .. import ai
from ._common import _memory_bytes
from ._undo import Undo


class ModelHandle(Undo):
    """What trace_model returns: `paths`, the module paths traced; `remove()` takes every
    wrapper and hook off again."""

    def __init__(self, handles: list, paths: List[str]) -> None:
        super().__init__(handles)
        self.paths = paths


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
    scripting (torch.jit.script) does not see through the wrapper: remove() first.

    Args:
        model: the model whose modules are traced.
        include: glob patterns on module paths to trace (None: all).
        exclude: glob patterns on module paths not to trace.
        leaf_only: only modules without children.
        forward: record each module's forward.
        backward: record each module's backward.
        memory: a `memory` counter after each forward.

    Returns:
        A ModelHandle: `paths` lists the modules traced; `remove()` restores them.

    Example:
        >>> handle = dftrace.torch.trace_model(model, include=["encoder.*"])
        >>> loss_fn(model(x), y).backward()   # forward.encoder.0, backward.encoder.0, ...
        >>> handle.remove()
    """
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


def _wrap_forward(module: torch.nn.Module, node, arm, memory: bool) -> Callable[[], None]:
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
    return undo


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
    return arm, undo
