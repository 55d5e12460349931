"""What the parts of dftrace.torch share: the memory sampled at a step's end, the timed
wrapper, the count of `with step(...)` blocks open and the optimizer's event node."""
from __future__ import annotations

import os

import torch

from .. import ai

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


def _cuda_peak_bytes() -> int:
    """torch.cuda.max_memory_allocated() of the current device, read from the allocator's nested
    statistics: max_memory_allocated() flattens and sorts all of them (some 120) in Python
    first, tens of microseconds per call. The device is named: torch finds the current one
    for device=None through torch.cuda.is_available() and a chain of helpers."""
    try:
        stats = torch.cuda.memory_stats_as_nested_dict(torch.cuda.current_device())
        return int(stats["allocated_bytes"]["all"]["peak"])
    except (KeyError, TypeError, AttributeError):  # another layout: torch's own reading
        return int(torch.cuda.max_memory_allocated())


def _cuda_reset_peak() -> None:
    """torch.cuda.reset_peak_memory_stats() of the current device (named, as above)."""
    torch.cuda.reset_peak_memory_stats(torch.cuda.current_device())


def _memory_bytes() -> int:
    if torch.cuda.is_initialized():  # CUDA in use (a flag; is_available() costs microseconds)
        return _cuda_peak_bytes()
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


_optimizer = None


def _optimizer_node():
    global _optimizer
    if _optimizer is None:
        _optimizer = ai.compute.step.derive("optimizer")
    return _optimizer
