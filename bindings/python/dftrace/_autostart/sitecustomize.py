"""Loaded by Python at start-up when this directory is on PYTHONPATH (`dftrace run --torch`).
With DFTRACE_TORCH_AUTO=1 it instruments PyTorch without the script changing: every
DataLoader's `__next__` (`dataloader.fetch`), the outermost `nn.Module.__call__` (`forward`),
`Tensor.backward` (`backward`), each optimizer class's `step` (`step.optimizer`), and
`torch.save`/`torch.load` (`checkpoint.capture`/`checkpoint.restart`, with the file and bytes).
Any failure is reported once on stderr and the script runs untraced."""
import os
import sys


def _install() -> None:
    import torch
    import dftrace.torch as dt
    from dftrace import ai

    dt.instrument_dataloader()
    dt.instrument_checkpoints()
    depth = [0]
    call = torch.nn.Module.__call__

    def module_call(self, *args, **kwargs):
        if depth[0]:
            return call(self, *args, **kwargs)
        depth[0] += 1
        r = ai.compute.forward._begin()
        try:
            return call(self, *args, **kwargs)
        finally:
            ai.compute.forward._end(r)
            depth[0] -= 1
    torch.nn.Module.__call__ = module_call
    torch.Tensor.backward = dt._timed(ai.compute.backward, torch.Tensor.backward)
    node = dt._optimizer_node()
    for cls in torch.optim.Optimizer.__subclasses__():
        original = cls.__dict__.get("step")
        if original is not None:
            cls.step = dt._timed(node, original)


if os.environ.get("DFTRACE_TORCH_AUTO") == "1":
    try:
        _install()
    except Exception as exc:  # never harm the script: run it untraced
        sys.stderr.write("dftrace: torch auto-instrumentation off: %s\n" % exc)
