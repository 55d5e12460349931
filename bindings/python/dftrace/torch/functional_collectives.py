"""torch.distributed._functional_collectives (torch 2.x; the module is missing in 1.13) traced
as the c10d functions are, by distributed.instrument_distributed().

Each function that exists in the running torch is recorded as `comm.<function>` with `bytes`,
`dtype`, `count` (`tensors` for the coalesced ones), `op`, `comm_size` where the group says it
(a ProcessGroup, a list of ranks, a DeviceMesh or (mesh, dim)), `comm_group` where it gives its
ranks (a ProcessGroup, a list of ranks), and `functional: true`. These
calls return a tensor whose wait happens at its first use: the event is the issue only,
`async_op` false, and no `comm.wait` follows. Inside a recorded call (a c10d function that
calls them, or they one) nothing is recorded twice; under torch.compile (while Dynamo traces)
the original runs, so that a compiled graph is never broken by the instrumentation.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Tuple

import torch
import torch.distributed as dist

from . import distributed as _d
from ._undo import patch


def _size(group) -> tuple:
    try:
        if isinstance(group, dist.ProcessGroup):
            return _d._group(group)
        if isinstance(group, (list, tuple)) and group and all(isinstance(r, int) for r in group):
            return (("comm_size", len(group)), ("comm_group", _d._ranks_id(list(group))))
        if isinstance(group, tuple) and len(group) == 2 and hasattr(group[0], "size"):
            return (("comm_size", int(group[0].size(group[1]))),)  # (DeviceMesh, dim)
        if hasattr(group, "size") and callable(group.size):
            return (("comm_size", int(group.size())),)  # a DeviceMesh
    except Exception:  # noqa: BLE001  (a shape this torch gives that is not known here)
        pass
    return ()


_F = (("functional", True),)


def _reduce_op(op) -> tuple:
    return (("op", str(op).upper()),) if isinstance(op, str) else _d._op(op)


def _all_reduce(self, reduceOp="sum", group=None, *_, **__):
    return _d._one(self) + _reduce_op(reduceOp) + _size(group) + _F, False


def _all_gather_tensor(self, gather_dim=0, group=None, *_, **__):
    return _d._one(self) + _size(group) + _F, False


def _reduce_scatter_tensor(self, reduceOp="sum", scatter_dim=0, group=None, *_, **__):
    return _d._one(self) + _reduce_op(reduceOp) + _size(group) + _F, False


def _all_reduce_coalesced(self, reduceOp="sum", group=None, *_, **__):
    return _d._many(self) + (("tensors", len(self)),) + _reduce_op(reduceOp) + _size(group) + \
        _F, False


def _all_gather_coalesced(self, group=None, *_, **__):
    return _d._many(self) + (("tensors", len(self)),) + _size(group) + _F, False


def _reduce_scatter_coalesced(inputs, reduceOp="sum", scatter_dim=None, group=None, *_, **__):
    return _d._many(inputs) + (("tensors", len(inputs)),) + _reduce_op(reduceOp) + \
        _size(group) + _F, False


def _all_to_all_single(self, output_split_sizes=None, input_split_sizes=None, group=None, *_,
                       **__):
    return _d._one(self) + _size(group) + _F, False


def _broadcast(self, src=0, group=None, *_, **__):
    return _d._one(self) + (("root", src),) + _size(group) + _F, False


_CALLS: Dict[str, Tuple[str, Callable]] = {
    "all_reduce": ("all_reduce", _all_reduce),
    "all_gather_tensor": ("all_gather_into_tensor", _all_gather_tensor),
    "reduce_scatter_tensor": ("reduce_scatter_tensor", _reduce_scatter_tensor),
    "all_reduce_coalesced": ("all_reduce_coalesced", _all_reduce_coalesced),
    "all_gather_into_tensor_coalesced": ("all_gather_into_tensor_coalesced",
                                         _all_gather_coalesced),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter_tensor_coalesced",
                                        _reduce_scatter_coalesced),
    "all_to_all_single": ("all_to_all_single", _all_to_all_single),
    "broadcast": ("broadcast", _broadcast),
}


def _compiling() -> Callable[[], bool]:
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling
    try:
        from torch._dynamo import is_compiling
        return is_compiling
    except Exception:  # noqa: BLE001  (no Dynamo: nothing is ever compiled)
        return lambda: False


def _traced(event: str, describe: Callable, original: Callable) -> Callable:
    recorded = _d._recorded(event, describe, original)
    compiling = _compiling()

    def call(*args, **kwargs):
        if compiling():
            return original(*args, **kwargs)
        return recorded(*args, **kwargs)
    call.__name__ = recorded.__name__
    call.__qualname__ = recorded.__qualname__
    call.__doc__ = recorded.__doc__
    call.__wrapped__ = original
    return call


def patches() -> List[Any]:
    """The undo steps of wrapping the module's functions; none where the module is missing."""
    try:
        module = importlib.import_module("torch.distributed._functional_collectives")
    except Exception:  # noqa: BLE001  (torch 1.x, or a build without it)
        return []
    out: List[Any] = []
    for function, (event, describe) in _CALLS.items():
        original = module.__dict__.get(function)
        if callable(original):
            traced = _traced(event, describe, original)
            out.append(patch(module, function, lambda _o, t=traced: t))
    return out
