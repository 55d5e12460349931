"""Loaded by Python at start-up when this directory is on PYTHONPATH (`dftrace run`,
`dftrace watch`). With DFTRACE_TORCH_AUTO=1 it instruments PyTorch without the script changing
(dftrace.torch.auto: steps, the outermost forward, backward, the optimizer's step, data loading
down to each sample in the workers, device copies, checkpoints); DFTRACE_TORCH_DEEP=1 adds every
model's layers with their memory. Any failure is reported once on stderr and the script runs
untraced."""
import os
import sys

if os.environ.get("DFTRACE_TORCH_AUTO") == "1":
    try:
        import dftrace.torch

        dftrace.torch.auto(deep=os.environ.get("DFTRACE_TORCH_DEEP") == "1")
    except Exception as exc:  # never harm the script: run it untraced
        sys.stderr.write("dftrace: torch auto-instrumentation off: %s\n" % exc)
