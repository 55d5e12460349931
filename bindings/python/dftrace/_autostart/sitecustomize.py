"""Loaded by Python at start-up when this directory is on PYTHONPATH (`dftrace run`,
`dftrace watch`). With DFTRACE_TORCH_AUTO=1, PyTorch is instrumented without the script
changing (dftrace.torch.auto: steps, the outermost forward, backward, the optimizer's step,
data loading down to each sample in the workers, device copies, checkpoints) as soon as the
script imports torch; a process that never imports torch pays nothing (torch is not imported
for it). DFTRACE_TORCH_DEEP=1 adds every model's layers with their memory. Any failure is
reported once on stderr and the script runs untraced."""
import os
import sys


def _install() -> None:
    try:
        import dftrace.torch

        dftrace.torch.auto(deep=os.environ.get("DFTRACE_TORCH_DEEP") == "1")
    except Exception as exc:  # never harm the script: run it untraced
        sys.stderr.write("dftrace: torch auto-instrumentation off: %s\n" % exc)


class _WhenTorchIsImported:
    """A meta-path finder that finds nothing itself: when `torch` is first imported it lets
    the other finders find it and has its loader call _install() once torch has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _install()

        loader.exec_module = exec_module
        return spec


if os.environ.get("DFTRACE_TORCH_AUTO") == "1":
    if "torch" in sys.modules:
        _install()
    else:
        sys.meta_path.insert(0, _WhenTorchIsImported())
