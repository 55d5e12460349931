"""dftrace.torch.step: one training step, annotated by the script."""
from __future__ import annotations

from typing import Any, List, Optional

import torch

from .. import ai
from . import _common
from ._common import _memory_bytes, _optimizer_node, _timed
from ._undo import Undo


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
        self._undo = Undo()
        self._stepped = False

    def __enter__(self) -> "step":
        _common._explicit[0] += 1  # auto() leaves what this block times to it
        if torch.cuda.is_initialized():
            _common._cuda_reset_peak()
        self._region = ai.compute.step._begin()
        if self.model is not None:
            pending: List[int] = []
            self._undo.add(self.model.register_forward_pre_hook(
                lambda m, i: pending.append(ai.compute.forward._begin())))
            self._undo.add(self.model.register_forward_hook(
                lambda m, i, o: ai.compute.forward._end(pending.pop()) if pending else None))
        original_backward = torch.Tensor.backward
        torch.Tensor.backward = _timed(ai.compute.backward, original_backward)
        self._undo.add(lambda: setattr(torch.Tensor, "backward", original_backward))
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
            self._undo.add(lambda: opt.__dict__.pop("step", None))
        return self

    def __exit__(self, *exc: Any) -> bool:
        self._undo.remove()
        if self.optimizer is not None and not self._stepped:
            with _optimizer_node()(args={"skipped": True}):
                pass  # this micro-batch did not step
        ai.compute.step._counter("memory", float(_memory_bytes()))
        step._count += 1
        ai.compute.step._end(self._region)
        _common._explicit[0] -= 1
        # The end of a step advances the schedule (dftrace.schedule / schedule.* keys).
        import dftrace
        dftrace.step()
        return False
