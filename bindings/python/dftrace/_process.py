"""_process.py: child processes write complete trace files (multiprocessing fork, spawn, workers)."""
from __future__ import annotations

from . import _dftrace

_installed = False


def install() -> None:
    """Makes every multiprocessing child finalize its trace before it exits.

    A forked child (multiprocessing's fork and forkserver starts, PyTorch data-loader workers)
    ends with os._exit(), which skips the atexit handler that would finalize its file: the
    core's fork handler already gives the child its own file, and this closes it. The wrapper
    is also harmless in spawned children, which finalize at exit anyway.
    """
    global _installed
    if _installed:
        return
    _installed = True
    try:
        from multiprocessing import process
    except ImportError:  # pragma: no cover - multiprocessing is part of the standard library
        return
    original = process.BaseProcess._bootstrap

    def _bootstrap(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return original(self, *args, **kwargs)
        finally:
            _dftrace.finalize()

    _bootstrap.__wrapped__ = original  # type: ignore[attr-defined]
    process.BaseProcess._bootstrap = _bootstrap  # type: ignore[method-assign]
