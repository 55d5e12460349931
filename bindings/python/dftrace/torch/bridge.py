"""dftrace.torch.bridge_record_function: torch.profiler's record_function ranges as dftrace
events."""
from __future__ import annotations

import torch

import dftrace

from ._undo import Undo, patch


_ranges: dict = {}


def _range_node(name: str):
    node = _ranges.get(name)
    if node is None:
        # a range name as an event name in category compute; dots would make a path
        node = dftrace.region(str(name).replace(".", "_"), "compute")
        _ranges[name] = node
    return node


def bridge_record_function() -> Undo:
    """Ranges opened with torch.profiler.record_function (torch.autograd.profiler's) are also
    recorded as dftrace events of that name (category compute), nested under whatever dftrace
    region is open, whether or not torch.profiler runs. Returns a handle; `remove()` restores
    record_function.

    Args:
        None.

    Returns:
        An Undo handle; `remove()` puts record_function's __enter__ and __exit__ back.

    Example:
        >>> handle = dftrace.torch.bridge_record_function()
        >>> with torch.profiler.record_function("attention"):   # also the dftrace event
        ...     out = layer(x)                                      # `attention` (compute)
        >>> handle.remove()
    """
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

    return Undo([patch(rf, "__enter__", lambda _: bridged_enter),
                 patch(rf, "__exit__", lambda _: bridged_exit)])
