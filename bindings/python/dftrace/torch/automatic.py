"""dftrace.torch.auto: PyTorch traced with no change to the script (`dftrace run --torch`)."""
from __future__ import annotations

import sys
import threading
import weakref
from typing import Callable, List, Optional

import torch

import dftrace

from .. import _dftrace, ai
from . import _common
from ._common import _memory_bytes, _optimizer_node
from ._undo import Undo, patch
from .checkpoints import instrument_checkpoints
from .data import instrument_dataloader
from .model import ModelHandle, trace_model
from .transfers import instrument_transfers


_get_ident = threading.get_ident
_grad_enabled = torch.is_grad_enabled


def _all_subclasses(cls) -> list:
    out, todo = [], list(cls.__subclasses__())
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


class _AutoSteps:
    """The steps of a loop nobody annotated (auto()), on the main thread: a step begins at
    the outermost module call made with gradients enabled while no step is open, and ends
    when the optimizer's `step()` returns; a forward that begins after a backward while the
    step is still open starts a new micro-batch (gradient accumulation: the step ends with a
    zero-length `step.optimizer`, `skipped: true`). A step still open at exit ends there.
    Each end advances the schedule (dftrace.step()) and samples the `memory` counter."""

    def __init__(self) -> None:
        self.main = threading.main_thread().ident
        self.node = ai.compute.step  # looked up once: each step uses it three times
        self.open = False
        self.region = 0
        self.backward = False
        # Between attach windows (_Switch): no forward wrapper, the optimizer's step alone ends
        # a step (it counts steps, records nothing); after_step: the switch's look at windows.
        self.bare = False
        self.counted = False
        self.after_step: Callable[[], None] = lambda: None

    def forward(self) -> None:
        if _get_ident() != self.main or not _grad_enabled():
            return
        if self.open and self.backward:
            self.close(skipped=True)
        if not self.open:
            if torch.cuda.is_initialized():
                _common._cuda_reset_peak()
            self.open, self.backward = True, False
            self.region = self.node._begin()

    def close(self, skipped: bool = False) -> None:
        if _get_ident() != self.main:
            return
        if not self.open:
            if self.bare:
                self.counted = True
                dftrace.step()
                self.after_step()
            return
        if skipped:
            with _optimizer_node()(args={"skipped": True}):
                pass
        self.node._counter("memory", float(_memory_bytes()))
        self.node._end(self.region)
        self.open, self.region = False, 0
        self.counted = True
        dftrace.step()
        self.after_step()

    def at_exit(self) -> None:
        if self.open:
            self.close(skipped=self.backward)


def _module_call(steps: _AutoSteps, deep: bool, layers: List[ModelHandle]):
    """The wrapper maker for torch.nn.Module.__call__ under auto(): the outermost call (no
    `with step(...)` open) opens the automatic step and is recorded as `forward`; with `deep`,
    each module first called that way gets trace_model(..., memory=True) (kept in `layers`)."""
    depth = [0]
    traced: "weakref.WeakSet" = weakref.WeakSet()
    forward = ai.compute.forward
    explicit = _common._explicit  # the list itself: read at each call, never rebound

    def make_call(call):
        def module_call(self, *args, **kwargs):
            if depth[0] or explicit[0]:  # an inner module (most calls): the original at once
                return call(self, *args, **kwargs)
            depth[0] += 1
            try:
                steps.forward()
                if deep and self not in traced:
                    traced.add(self)
                    layers.append(trace_model(self, memory=True))
                r = forward._begin()
                try:
                    return call(self, *args, **kwargs)
                finally:
                    forward._end(r)
            finally:
                depth[0] -= 1
        module_call.__wrapped__ = call
        return module_call
    return make_call


def _timed_method(node, name, before=None, after=None):
    """A wrapper maker for the methods auto() times (backward, each optimizer's step)."""
    def make(original):
        def method(self, *args, **kwargs):
            if _common._explicit[0]:
                return original(self, *args, **kwargs)
            if before is not None:
                before()
            r = node._begin()
            try:
                return original(self, *args, **kwargs)
            finally:
                node._end(r)
                if after is not None:
                    after()
        method.__name__, method.__doc__, method.__wrapped__ = name, original.__doc__, original
        if getattr(original, "hooked", None):  # torch's profiler hook is inside: keep it once
            method.hooked = True
        return method
    return make


def auto(deep: bool = False) -> Undo:
    """PyTorch traced with no change to the script (what `dftrace run` and `dftrace watch` do
    through the start-up hook): steps (see _AutoSteps), the outermost module call as
    `forward`, every `Tensor.backward` as `backward`, every optimizer class's `step` as
    `step.optimizer`, data loading (instrument_dataloader: fetch, batch, item, collate),
    device copies (instrument_transfers), checkpoints (instrument_checkpoints) and
    torch.distributed (instrument_distributed: collectives, DDP's buckets, ranks). `deep`:
    also every model's layers with their memory (trace_model(..., memory=True) on each
    outermost module when it is first called). Inside `with step(...)` blocks the automatic
    step, forward, backward and optimizer events stand aside. In a process that waits for
    dftrace attach and records nothing (`dftrace run --attach`), only the optimizers' `step`
    stays wrapped between windows (it counts the steps); the rest is installed while a window
    that writes the AI tree's events is open (_Switch, docs/attach.md).

    Args:
        deep: also trace every model's layers with their memory.

    Returns:
        An Undo handle; `remove()` undoes every part (a second call while one is on returns an
        empty one).

    Example:
        >>> handle = dftrace.torch.auto()
        >>> for x, y in loader:                      # step, forward, backward, step.optimizer
        ...     loss_fn(model(x), y).backward(); optimizer.step(); optimizer.zero_grad()
        >>> handle.remove()
    """
    import atexit
    if _auto_on[0]:  # dftrace run installed it already: a second one would double every event
        print("dftrace: dftrace.torch.auto() is on already (dftrace run?); this call does "
              "nothing", file=sys.stderr)
        return Undo()
    _auto_on[0], _auto_deep[0] = True, deep
    steps = _AutoSteps()
    make_step = _timed_method(_optimizer_node(), "step", after=steps.close)
    patches: list = []
    try:
        from .distributed import _lifecycle_patches
        if torch.distributed.is_available():
            patches.append(_lifecycle_patches(ddp=True))
    except Exception as e:  # noqa: BLE001  (the rest of auto() still works)
        print("dftrace: torch.distributed not instrumented: %s" % e, file=sys.stderr)
    for cls in _all_subclasses(torch.optim.Optimizer):
        if "step" in cls.__dict__:
            patches.append(patch(cls, "step", make_step))
    switch = _Switch(lambda: _events_part(steps, deep), steps)
    patches.append(switch)
    atexit.register(steps.at_exit)
    patches.append(lambda: atexit.unregister(steps.at_exit))
    patches.append(lambda: _auto_on.__setitem__(0, False))
    undo = Undo(patches)
    switch.start()
    return undo


def _events_part(steps: _AutoSteps, deep: bool) -> Undo:
    """What auto() installs that only writes events: the outermost forward (which opens the
    automatic step), backward, data loading, device copies, checkpoints, torch.distributed's
    calls and, with `deep`, every model's layers. Installed anew each time (a fresh record of
    the models traced)."""
    layers: List[ModelHandle] = []
    make_call = _module_call(steps, deep, layers)
    make_backward = _timed_method(ai.compute.backward, "backward",
                                  before=lambda: setattr(steps, "backward", True))
    patches = [instrument_dataloader(), instrument_checkpoints(), instrument_transfers(),
               patch(torch.nn.Module, "__call__", make_call),
               patch(torch.Tensor, "backward", make_backward)]
    try:
        if torch.distributed.is_available():
            from .distributed import _call_patches
            patches.append(_call_patches())
    except Exception as e:  # noqa: BLE001  (the rest of auto() still works)
        print("dftrace: torch.distributed's calls not instrumented: %s" % e, file=sys.stderr)
    patches.append(lambda: [h.remove() for h in layers])
    return Undo(patches)


class _Switch:
    """auto()'s events part (_events_part) on while events of the AI tree may be written, off
    while the process waits for dftrace attach with them off (docs/attach.md): a process under
    `dftrace run --attach` then runs between windows with only the optimizers' step wrapped,
    which counts the automatic steps that a window of `--steps` counts. The core says when a
    window opens or closes (_watch_windows); the change is made at the next automatic step's
    end, so that a window has whole steps, or, in a process that has had no automatic step, at
    once (on the main thread, between two bytecodes). A forked DataLoader worker follows its
    parent's window (the core follows it): the batch fetching alone is wrapped in it, at once,
    while the parent's window is open."""

    def __init__(self, install: Callable[[], Undo], steps: _AutoSteps) -> None:
        self.install, self.steps = install, steps
        self.on: Optional[Undo] = None
        self.seen = -1  # window_changes() when last looked at
        self.live = False

    def start(self) -> None:
        self.live = True
        self.steps.after_step = self.at_step
        _dftrace._watch_windows(self.pending)
        import atexit
        atexit.register(self.unwatch)  # before the interpreter ends, no change may reach it
        self.apply()

    def apply(self) -> None:
        if not self.live:
            return
        self.seen = _dftrace.window_changes()
        worker = _in_worker()
        want = _dftrace.attach_wants("data" if worker else "compute")
        if want and self.on is None:
            # A DataLoader worker makes batches, nothing else: the batches, items and collates.
            self.on = instrument_dataloader() if worker else self.install()
        elif not want and self.on is not None:
            on, self.on = self.on, None
            on.remove()
        self.steps.bare = self.on is None

    def at_step(self) -> None:
        if _dftrace.window_changes() != self.seen:
            self.apply()

    def pending(self) -> None:
        # A DataLoader worker has no step of its own: its parent's window (followed by the
        # core) is applied at once, before the worker's next batch.
        if not self.steps.counted or _in_worker():
            self.apply()

    def unwatch(self) -> None:
        import atexit
        atexit.unregister(self.unwatch)
        _dftrace._watch_windows(None)

    def remove(self) -> None:
        self.unwatch()
        self.live = False
        self.steps.after_step, self.steps.bare = (lambda: None), False
        on, self.on = self.on, None
        if on is not None:
            on.remove()


def _in_worker() -> bool:
    """Whether this process is a DataLoader worker (its batches made here)."""
    return torch.utils.data.get_worker_info() is not None


_auto_on = [False]
_auto_deep = [False]  # what a spawned child is given (dftrace._spawned)


def instrument_distributed(ddp: bool = True) -> Undo:
    """torch.distributed traced: each collective and point-to-point call as `comm.<function>`
    (bytes, dtype, count, reduce op, group size and rank, root or peer, async_op; the wait of
    an asynchronous one as `comm.wait`, linked by `comm_id`), DDP's gradient buckets (`ddp`),
    and the rank and clock offset at init_process_group (dftrace.torch_distributed). Returns a
    handle; `remove()` undoes it.

    Args:
        ddp: also record DistributedDataParallel's gradient buckets.

    Returns:
        An Undo handle (empty where torch has no torch.distributed); `remove()` undoes it.

    Example:
        >>> handle = dftrace.torch.instrument_distributed()
        >>> torch.distributed.init_process_group("gloo")
        >>> torch.distributed.all_reduce(torch.ones(4))   # comm.all_reduce, bytes 16
        >>> handle.remove()
    """
    if not torch.distributed.is_available():  # a torch built without it: nothing to trace
        return Undo()
    from .distributed import instrument_distributed as instrument
    return instrument(ddp=ddp)
