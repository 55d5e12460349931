"""_process.py: child processes (multiprocessing fork/spawn, workers) write complete files."""
from __future__ import annotations

import os
import sys
from typing import Optional

from . import _dftrace, _spawned
from ._spawned import _env_enabled

_installed = False


def _main_script() -> Optional[str]:
    """The base name of the main script (the parent's, in a spawned child), without .py."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv else "")
    if not path or path in ("-c", "-m", "-"):
        return None
    base = os.path.basename(path)
    if base == "__main__.py":
        base = os.path.basename(os.path.dirname(os.path.abspath(path))) or base
    return base[:-3] if base.endswith(".py") else base


_real_exit = os._exit


def _exit_finalizing(status: int) -> None:
    try:
        _dftrace.finalize()
    finally:
        _real_exit(status)


def _after_fork_in_child() -> None:
    _dftrace._after_fork_child()
    # A forked child often leaves with os._exit() (multiprocessing does, so do servers and
    # hand-written fork code): in the child only, make that finalize the child's file first.
    os._exit = _exit_finalizing


def install() -> None:
    """Makes every multiprocessing child finalize its trace before it exits.

    A forked child (multiprocessing's fork and forkserver starts, PyTorch data-loader workers)
    ends with os._exit(), which skips the atexit handler that would finalize its file: the
    core's fork handler already gives the child its own file, and this closes it (both when
    the child's Process._bootstrap returns and when a forked child calls os._exit). Spawned
    and forkserver children start tracing here as the parent traces (_spawned), named after
    the script.
    """
    global _installed
    if _installed:
        return
    _installed = True
    os.register_at_fork(after_in_child=_after_fork_in_child)
    try:
        from multiprocessing import process
    except ImportError:  # pragma: no cover - multiprocessing is part of the standard library
        return
    original = process.BaseProcess._bootstrap

    def _bootstrap(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        # A spawned child: the parent's spec came with this object (_spawned). Without one, a
        # child that the environment enables would initialise on its first event, named after
        # the interpreter ("python3 -c ..."): name it after the parent's script.
        spec = self.__dict__.pop("_dftrace_child", None)
        if spec is not None:
            _spawned.start_child(spec)
        elif _env_enabled():
            _dftrace.init(exec_name=_main_script())
        try:
            return original(self, *args, **kwargs)
        finally:
            _dftrace.finalize()

    _bootstrap.__wrapped__ = original  # type: ignore[attr-defined]
    process.BaseProcess._bootstrap = _bootstrap  # type: ignore[method-assign]
    _wrap_start(process.BaseProcess)


def _wrap_start(cls) -> None:
    """start() attaches the child's spec while the start method pickles the object (spawn,
    forkserver), and takes it off again: the parent's object is left as it was."""
    original = cls.start

    def start(self):  # type: ignore[no-untyped-def]
        spec = _spawned.spec_for(self, _main_script())
        if spec is None:
            return original(self)
        try:
            self._dftrace_child = spec
        except Exception:  # noqa: BLE001  (a class that refuses attributes: start it as is)
            return original(self)
        try:
            return original(self)
        finally:
            self.__dict__.pop("_dftrace_child", None)

    start.__wrapped__ = original  # type: ignore[attr-defined]
    start.__doc__ = original.__doc__
    cls.start = start  # type: ignore[method-assign]
