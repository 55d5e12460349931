"""dftrace.frameworks: step and layer tracing for Hugging Face's Trainer and for PyTorch
Lightning, as callbacks written to each framework's documented callback API. The framework is
imported only when its factory is called (importing dftrace or dftrace.torch imports neither).

    trainer = transformers.Trainer(..., callbacks=[dftrace.torch.huggingface_callback()])
    trainer = lightning.Trainer(..., callbacks=[dftrace.torch.lightning_callback()])

Neither framework can be installed where dftrace is developed: the tests here cover what runs
without them, and scripts/gpu-check.sh trains with each framework and its callback where they
are installed (transformers 5.17 and lightning 2.6.6 on torch 2.11, 2026-11-27).

Events are dftrace.torch's: `step` per micro-batch, inside it `forward`, `backward` and
`step.optimizer` (zero-length with `skipped: true` for a micro-batch that does not step), the
`memory` counter at each step's end, and with `layers` (the default) `forward.<module path>` /
`backward.<module path>` from trace_model; `layers` may be a dict of trace_model's keywords
(include, exclude, leaf_only, forward, backward, memory). Each step's end advances the schedule.
"""
from __future__ import annotations

from typing import Any, Optional

__all__ = ["huggingface_callback", "lightning_callback"]


def _need(what: str, module: str, pip: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError("dftrace.torch.%s needs %s, which is not installed (%s): %s"
                          % (what, module, pip, e)) from None


def _layer_kwargs(layers: Any) -> Optional[dict]:
    if layers is True:
        return {}
    if not layers:
        return None
    return dict(layers)


class _Phases:
    """The step and its parts from a framework's hook calls (all on the training thread)."""

    def __init__(self) -> None:
        from .. import _tree
        ai = _tree.ai
        self.nodes = {"step": ai.compute.step, "forward": ai.compute.forward,
                      "backward": ai.compute.backward,
                      "optimizer": ai.compute.step.derive("optimizer")}
        self.open = {}
        self.stepped = False
        self.layers = None

    def begin(self, part: str) -> None:
        self.end(part)
        self.open[part] = self.nodes[part]._begin()

    def end(self, part: str) -> None:
        r = self.open.pop(part, None)
        if r is not None:
            self.nodes[part]._end(r)

    def begin_step(self) -> None:
        self.end_step()
        self.stepped = False
        self.begin("step")
        self.begin("forward")

    def end_step(self) -> None:
        from ._common import _memory_bytes
        if "step" not in self.open:
            return
        for part in ("forward", "backward", "optimizer"):
            self.end(part)
        if not self.stepped:
            with self.nodes["optimizer"](args={"skipped": True}):
                pass
        self.nodes["step"]._counter("memory", float(_memory_bytes()))
        self.end("step")
        import dftrace
        dftrace.step()

    def trace_layers(self, model: Any, kwargs: Optional[dict]) -> None:
        if kwargs is not None and model is not None and self.layers is None:
            from .. import torch as dt
            self.layers = dt.trace_model(model, **kwargs)

    def untrace_layers(self) -> None:
        if self.layers is not None:
            self.layers.remove()
            self.layers = None


def huggingface_callback(layers: Any = True):
    """A transformers.TrainerCallback. Hooks used (transformers' documented callback events):
    on_train_begin (layers traced on the `model` it is given), on_step_begin (a step begins),
    on_substep_end (a micro-batch of gradient accumulation ends: a step without optimizer),
    on_step_end (the optimizer stepped: the step ends), on_train_end (layers removed). Inside a
    step, forward, backward and the optimizer's `step()` are timed by dftrace.torch.step's
    hooks (the model's forward hooks, Tensor.backward, the optimizer instance's step).
    Raises ImportError (one line) when transformers is not installed.

    Args:
        layers: trace each model's layers (True, False or trace_model's keywords as a dict).

    Returns:
        A transformers.TrainerCallback.

    Example:
        >>> trainer = transformers.Trainer(model=model, args=args, train_dataset=ds,
        ...                                callbacks=[dftrace.torch.huggingface_callback()])
    """
    transformers = _need("huggingface_callback", "transformers", "pip install transformers")
    layer_kwargs = _layer_kwargs(layers)

    class DftraceCallback(transformers.TrainerCallback):
        def __init__(self) -> None:
            self._phases = _Phases()
            self._step = None

        def _open(self, model, optimizer) -> None:
            from .. import torch as dt
            self._step = dt.step(model, optimizer)
            self._step.__enter__()

        def _close(self) -> None:
            if self._step is not None:
                self._step.__exit__(None, None, None)
                self._step = None

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self._phases.trace_layers(model, layer_kwargs)

        def on_step_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
            self._close()
            self._open(model, optimizer)

        def on_substep_end(self, args, state, control, model=None, optimizer=None, **kwargs):
            self._close()  # a micro-batch that did not step: its optimizer event is skipped
            self._open(model, optimizer)

        def on_step_end(self, args, state, control, **kwargs):
            self._close()

        def on_train_end(self, args, state, control, **kwargs):
            self._close()
            self._phases.untrace_layers()

    return DftraceCallback()


def lightning_callback(layers: Any = True):
    """A Lightning Callback (`lightning.pytorch`, else `pytorch_lightning`). Lightning runs the
    forward and backward inside the optimizer's step (its closure), so the parts are marked
    by its documented hooks instead: on_train_batch_start (the step and its forward begin),
    on_before_backward (forward ends, backward begins), on_after_backward (backward ends),
    on_before_optimizer_step (the optimizer's part begins), on_train_batch_end (it and the
    step end; a batch without on_before_optimizer_step gets a skipped optimizer event);
    layers are traced from on_fit_start to on_fit_end on the LightningModule.
    Raises ImportError (one line) when neither package is installed.

    Args:
        layers: trace each model's layers (True, False or trace_model's keywords as a dict).

    Returns:
        A lightning.pytorch.Callback (pytorch_lightning's where only that is installed).

    Example:
        >>> trainer = lightning.Trainer(max_epochs=1,
        ...                             callbacks=[dftrace.torch.lightning_callback()])
    """
    try:
        pl = _need("lightning_callback", "lightning.pytorch", "pip install lightning")
    except ImportError:
        pl = _need("lightning_callback", "pytorch_lightning", "pip install lightning")
    layer_kwargs = _layer_kwargs(layers)

    class DftraceCallback(pl.Callback):
        def __init__(self) -> None:
            super().__init__()
            self._phases = _Phases()

        def on_fit_start(self, trainer, pl_module):
            self._phases.trace_layers(pl_module, layer_kwargs)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *rest):
            self._phases.begin_step()

        def on_before_backward(self, trainer, pl_module, loss):
            self._phases.end("forward")
            self._phases.begin("backward")

        def on_after_backward(self, trainer, pl_module):
            self._phases.end("backward")

        def on_before_optimizer_step(self, trainer, pl_module, optimizer, *rest):
            self._phases.stepped = True
            self._phases.begin("optimizer")

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *rest):
            self._phases.end_step()

        def on_fit_end(self, trainer, pl_module):
            self._phases.end_step()
            self._phases.untrace_layers()

    return DftraceCallback()
