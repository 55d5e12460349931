"""_spawned.py: what a child started by `spawn` or `forkserver` (a fresh interpreter, which
inherits nothing of the parent's memory) takes of the parent's tracing.

The parent's multiprocessing start() attaches a ChildSpec to the Process object it starts; the
start method pickles that object for the child, so the spec travels with it and nothing is set
in the environment. Unpickling it imports dftrace in the child (which wraps the child's
bootstrap, _process.install); the bootstrap then starts tracing with the parent's init options
(what initialize() was given: prefix, configuration file, compression, I/O directories; what the
environment and the configuration file say the child reads itself), the parent's pid as its
`ppid` (a forkserver's child is the forkserver's in the OS's eyes) and the parent's PyTorch
instrumentation (auto(), or instrument_dataloader()). A DataLoader worker's file is named
`<script>-worker<id>`.
"""
from __future__ import annotations

import inspect
import os
import sys
from typing import Any, Dict, Optional

from . import _dftrace

_init_options: Dict[str, Any] = {}  # what initialize() gave the core, for the children


class ChildSpec(dict):
    """The parent's tracing as a spawned child takes it: `init` (keyword arguments of the
    core's init), `torch` (the PyTorch instrumentation on, or None)."""


def remember_init(options: Dict[str, Any]) -> None:
    """Keeps the options initialize() passed to the core (those set), for spawned children."""
    _init_options.clear()
    _init_options.update({k: v for k, v in options.items() if v is not None})


def _env_flag(name: str) -> bool:
    value = os.environ.get("DFTRACE_" + name) or os.environ.get("DFTRACER_" + name) or ""
    return value.strip().lower() in ("1", "true", "yes", "on")


def _env_enabled() -> bool:
    return _env_flag("ENABLE")


def _window_only() -> bool:
    """Whether this process records only in a `dftrace attach` window (attach on, tracing not
    enabled by the environment or initialize()): its spawned children then follow the window
    through the channel's page (docs/attach.md) rather than being switched on for good."""
    return _env_flag("ATTACH") and not _env_enabled() and not _init_options.get("enable")


def _worker_id(process) -> Optional[int]:
    """The `worker_id` argument of a PyTorch worker's target (DataLoader's _worker_loop)."""
    target = getattr(process, "_target", None)
    if not str(getattr(target, "__module__", "")).startswith("torch."):
        return None
    try:
        bound = inspect.signature(target).bind(*process._args, **process._kwargs)
    except (TypeError, ValueError):
        return None
    wid = bound.arguments.get("worker_id")
    return wid if isinstance(wid, int) and not isinstance(wid, bool) else None


def _torch_state() -> Optional[Dict[str, Any]]:
    """The PyTorch instrumentation on in this process, or None (dftrace.torch not imported)."""
    if "dftrace.torch" not in sys.modules:
        return None
    from .torch import automatic, data
    return {"auto": bool(automatic._auto_on[0]), "deep": bool(automatic._auto_deep[0]),
            "loader": data._loader_on[0] > 0, "items": bool(data._items_on[0])}


def spec_for(process, main_script: Optional[str]) -> Optional[ChildSpec]:
    """The spec for a child about to start, or None: this process does not trace, or the
    child is forked (it inherits all of this by the fork)."""
    try:
        if not (_dftrace.is_enabled() or _env_enabled()):
            return None
        method = getattr(process, "_start_method", None)
        if method is None:  # the default context: read without fixing it
            import multiprocessing
            method = multiprocessing.get_start_method(allow_none=True)
        if method == "fork":
            return None
        init = dict(_init_options)
        out = init.pop("output_file", None)
        if out and "output_prefix" not in init:  # one exact file is the parent's alone
            init["output_prefix"] = out[: -len(".gz")] if out.endswith(".gz") else out
            if init["output_prefix"].endswith(".pfw"):
                init["output_prefix"] = init["output_prefix"][: -len(".pfw")]
        name = init.get("exec_name") or main_script
        wid = _worker_id(process)
        if name and wid is not None:
            name = "%s-worker%d" % (name, wid)
        if name:
            init["exec_name"] = name
        if not _window_only():
            init["enable"] = True
        init["parent_pid"] = os.getpid()
        return ChildSpec(init=init, torch=_torch_state())
    except Exception:  # noqa: BLE001  (the child then starts as it would without dftrace)
        return None


def start_child(spec: ChildSpec) -> None:
    """In the child, before its target runs: tracing as the parent's, never raising."""
    try:
        init = spec["init"]
        _dftrace.init(**init)
        # Initialised already (libdftrace_io under `dftrace run`, from the environment, before
        # Python ran; a forkserver's fork): the name and the parent are the spec's all the same.
        if _dftrace.is_enabled():
            _dftrace.set_process_identity(init.get("exec_name"), init.get("parent_pid", 0))
        torch = spec.get("torch")
        # Only where the child has torch already (a DataLoader worker, whose target is
        # torch's): a child that never uses torch is not made to import it.
        if torch and "torch" in sys.modules:
            _instrument_torch(torch)
    except Exception as e:  # noqa: BLE001  (the child runs untraced rather than fail)
        print("dftrace: spawned child not traced: %s" % e, file=sys.stderr)


def _instrument_torch(state: Dict[str, Any]) -> None:
    from .torch import automatic, data
    if state["auto"]:
        if not automatic._auto_on[0]:  # dftrace run's start-up hook may have done it already
            automatic.auto(deep=state["deep"])
    elif state["loader"] and not data._loader_on[0]:
        data.instrument_dataloader(items=state["items"])
