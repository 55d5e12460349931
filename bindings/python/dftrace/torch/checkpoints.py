"""dftrace.torch.instrument_checkpoints: torch.save and torch.load as checkpoint events."""
from __future__ import annotations

import os

import torch

import dftrace

from .. import _dftrace, ai
from ._undo import Undo, patch


def instrument_checkpoints() -> Undo:
    """Records torch.save as `checkpoint.capture` and torch.load as `checkpoint.restart`, with
    the file's hash (`fhash`, resolved by the tools and dftrace.read) and its size (`bytes`)
    when the target is a path. Returns a handle; `remove()` restores both.

    Args:
        None.

    Returns:
        An Undo handle; `remove()` puts torch.save and torch.load back.

    Example:
        >>> handle = dftrace.torch.instrument_checkpoints()
        >>> torch.save(model.state_dict(), "ckpt.pt")   # checkpoint.capture, bytes and fhash
        >>> handle.remove()
    """
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
    return Undo([patch(torch, "save", lambda _: traced_save),
                 patch(torch, "load", lambda _: traced_load)])
