"""dftrace.torch.instrument_transfers: tensor copies between devices and dtypes."""
from __future__ import annotations

import torch

from .. import _dftrace, ai
from ._undo import Undo, patch


def instrument_transfers() -> Undo:
    """Records `Tensor.to`, `Tensor.cuda` and `Tensor.cpu` calls that make a new tensor as
    `device.transfer` (category `device`), with `bytes` (the new tensor's size), `src` and
    `dst` (the devices) and, when it changes, `dtype` (the new one). A call that returns the
    tensor itself (already on that device, in that dtype) copies nothing and records nothing;
    a dtype or layout conversion on the same device is a copy and is recorded (that is what
    a CPU-only run moves). A call that raises records nothing. Returns a handle; `remove()`
    restores the three methods.

    Args:
        None.

    Returns:
        An Undo handle; `remove()` puts the three methods back.

    Example:
        >>> handle = dftrace.torch.instrument_transfers()
        >>> y = torch.ones(4).to(torch.float64)   # device.transfer: bytes 32, dtype float64
        >>> handle.remove()
    """
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
    return Undo([patch(torch.Tensor, n, make) for n in ("to", "cuda", "cpu")])
