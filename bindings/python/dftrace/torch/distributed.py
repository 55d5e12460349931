"""dftrace.torch.distributed (documented as dftrace.torch_distributed): torch.distributed traced
without annotations.

    import dftrace.torch as dt
    handle = dt.instrument_distributed()    # also done by dt.auto() and `dftrace run --torch`
    ...                                     # init_process_group, DDP, collectives as usual
    handle.remove()

- Collectives and point-to-point calls of `torch.distributed` (the functions of the module,
  however the script reaches them) are recorded as `comm.<function>` (category `comm`) with
  `bytes`, `dtype`, `count` (elements), `op` (the reduce op), `comm_size` and `comm_rank` (the
  group's size and this process's rank in it), `comm_group` (the group's id, the same in all
  its processes: its global ranks, "0-3", "0,2"), `root` or `peer`, `tag` (point-to-point) and
  `async_op`. An asynchronous call (async_op=True, isend, irecv, batch_isend_irecv) gets a
  `comm_id`; the time its `Work.wait()` blocks is a `comm.wait` event with the same `comm_id`.
  A call made inside a recorded one (torch's own helpers, a DDP hook) is not recorded again.
- DistributedDataParallel: each gradient bucket's reduction is one `comm.all_reduce` event
  (`bucket`, `bytes`, `params`, `dtype`, `count`, `comm_size`, `comm_rank`, `comm_group`,
  `hook`), from the bucket being ready to its reduction ending, through a communication hook
  that this module installs when the model is built; a hook the script registers is kept and
  called inside it.
- `init_process_group`: the rank and world size go into the trace (PR lines, the rank in the
  file name), with `local_rank`/`local_size` where the launcher sets them, and the clock offset
  to rank 0 (`clock_offset_ns`, applied by `dftrace merge`), measured through the process
  group's store.

Everything is undone by the handle's `remove()`. A failure of the instrumentation never reaches
the script: torch's own exceptions pass through unchanged.
"""
from __future__ import annotations

import atexit
import hashlib
import itertools
import os
import sys
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from .. import _dftrace, ai
from .._tree import Profiler
from ._undo import Undo, patch
from .clocks import _warn_once, align_clocks

__all__ = ["instrument_distributed", "instrument_ddp", "align_clocks"]

class _Local(threading.local):
    inside = 0  # a recorded call (or a DDP bucket hook) is running on this thread


_tls = _Local()  # (a class default: reading a missing attribute of a local costs an exception)
_ids = itertools.count(1)  # comm_id of asynchronous calls
_pending: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Work -> (comm_id, op)
_groups: Dict[Any, tuple] = {}  # group (None: the default) -> comm_size, comm_rank, comm_group
_dtypes: Dict[Any, str] = {}
_nodes: Dict[str, Profiler] = {}
_on = [False]


def _node(op: str) -> Profiler:
    node = _nodes.get(op)
    if node is None:
        node = _nodes[op] = Profiler(ai.comm._child_path(op))
    return node


# ------------------------------------------------------------------ what a call moves


def _dtype(t) -> str:
    d = t.dtype
    s = _dtypes.get(d)
    if s is None:
        s = _dtypes[d] = str(d).replace("torch.", "")
    return s


def _one(t) -> tuple:
    n = t.numel()
    return (("bytes", n * t.element_size()), ("dtype", _dtype(t)), ("count", n))


def _many(ts) -> tuple:
    ts = list(ts)
    n = sum(t.numel() for t in ts)
    b = sum(t.numel() * t.element_size() for t in ts)
    return (("bytes", b), ("dtype", _dtype(ts[0]) if ts else None), ("count", n))


def _op_name(op) -> str:
    # torch 1.13: a ReduceOp object whose .op is a RedOpType; 2.x: the RedOpType itself
    return getattr(getattr(op, "op", op), "name", None) or str(op)


# The ReduceOp constants by identity (a pybind enum's name costs 1.5 us; ReduceOp hashes to 0)
_OPS = {id(getattr(dist.ReduceOp, n)): (("op", _op_name(getattr(dist.ReduceOp, n))),)
        for n in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM")
        if hasattr(dist.ReduceOp, n)}


def _op(op) -> tuple:
    return _OPS.get(id(op)) or (("op", _op_name(op)),)


def _group(group) -> tuple:
    pairs = _groups.get(group)
    if pairs is None:
        g = None if group is None or group is dist.GroupMember.WORLD else group
        pairs = _groups.get(g)
        if pairs is None:
            pairs = (("comm_size", dist.get_world_size(g)), ("comm_rank", dist.get_rank(g)))
            gid = _group_id(g)
            if gid is not None:
                pairs += (("comm_group", gid),)
            _groups[g] = pairs
        _groups[group] = pairs
    return pairs


def _group_id(g) -> Optional[str]:
    """The group's comm_group id (_ranks_id of its global ranks); None when torch does not
    say."""
    try:
        pg = dist.group.WORLD if g is None else g
        if hasattr(dist, "get_process_group_ranks"):
            ranks = list(dist.get_process_group_ranks(pg))
        else:  # older torch: global rank -> group rank
            m = dist.distributed_c10d._pg_group_ranks[pg]
            ranks = sorted(m, key=m.__getitem__)
        return _ranks_id(ranks)
    except Exception:  # noqa: BLE001
        return None


def _ranks_id(ranks: List[int]) -> str:
    """A group's id, the same in every process of the group: its members' global ranks in the
    group's rank order, runs of consecutive ranks written first-last ("0-3", "0,2",
    "4-7,12"), or "h" and 16 hex digits of the SHA-1 of that text when it is over 64
    characters."""
    runs: List[str] = []
    i = 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        runs.append(str(ranks[i]) if i == j else "%d-%d" % (ranks[i], ranks[j]))
        i = j + 1
    text = ",".join(runs)
    if len(text) > 64:
        text = "h" + hashlib.sha1(text.encode()).hexdigest()[:16]
    return text


_SUM = dist.ReduceOp.SUM


# Each describer takes the call's arguments as torch's function does (2.x's added keywords are
# ignored) and returns (argument pairs, async_op).
def _all_reduce(tensor, op=_SUM, group=None, async_op=False, *_, **__):
    return _one(tensor) + _op(op) + _group(group), async_op


def _all_gather(tensor_list, tensor, group=None, async_op=False, *_, **__):
    return _one(tensor) + _group(group), async_op  # what this rank contributes


def _into_tensor(output_tensor, input_tensor, group=None, async_op=False, *_, **__):
    return _one(input_tensor) + _group(group), async_op


def _reduce_scatter(output, input_list, op=_SUM, group=None, async_op=False, *_, **__):
    return _many(input_list) + _op(op) + _group(group), async_op  # the input vector


def _reduce_scatter_tensor(output, input, op=_SUM, group=None, async_op=False, *_, **__):
    return _one(input) + _op(op) + _group(group), async_op


def _broadcast(tensor, src=None, group=None, async_op=False, *_, group_src=None, **__):
    return _one(tensor) + (("root", src if src is not None else group_src),) + _group(group), \
        async_op


def _reduce(tensor, dst=None, op=_SUM, group=None, async_op=False, *_, group_dst=None, **__):
    return _one(tensor) + _op(op) + (("root", dst if dst is not None else group_dst),) + \
        _group(group), async_op


def _all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False, *_, **__):
    return _many(input_tensor_list) + _group(group), async_op  # what this rank sends


def _all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                       group=None, async_op=False, *_, **__):
    return _one(input) + _group(group), async_op


def _gather(tensor, gather_list=None, dst=None, group=None, async_op=False, *_, group_dst=None,
            **__):
    root = dst if dst is not None else (group_dst if group_dst is not None else 0)
    return _one(tensor) + (("root", root),) + _group(group), async_op


def _scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, *_,
             group_src=None, **__):
    root = src if src is not None else (group_src if group_src is not None else 0)
    return _one(tensor) + (("root", root),) + _group(group), async_op  # what this rank receives


def _all_reduce_coalesced(tensors, op=_SUM, group=None, async_op=False, *_, **__):
    return _many(tensors) + (("tensors", len(tensors)),) + _op(op) + _group(group), async_op


def _all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None, async_op=False,
                          *_, **__):
    return _many(input_tensor_list) + (("tensors", len(input_tensor_list)),) + _group(group), \
        async_op  # what this rank contributes


def _into_tensor_coalesced(outputs, inputs, group=None, async_op=False, *_, **__):
    return _many(inputs) + (("tensors", len(inputs)),) + _group(group), async_op


def _reduce_scatter_tensor_coalesced(outputs, inputs, op=_SUM, group=None, async_op=False, *_,
                                     **__):
    return _many(inputs) + (("tensors", len(inputs)),) + _op(op) + _group(group), async_op


def _barrier(group=None, async_op=False, *_, **__):
    return _group(group), async_op


def _p2p(async_op):
    def describe(tensor, peer=None, group=None, tag=0, *_, src=None, dst=None, group_src=None,
                 group_dst=None, **__):
        for p in (src, dst, group_src, group_dst):  # peer given by keyword
            if peer is None:
                peer = p
        return _one(tensor) + (("peer", -1 if peer is None else peer), ("tag", tag)) + \
            _group(group), async_op
    return describe


def _batch(p2p_op_list, *_, **__):
    ops = list(p2p_op_list)
    sent = sum(o.tensor.numel() * o.tensor.element_size() for o in ops if _is_send(o))
    got = sum(o.tensor.numel() * o.tensor.element_size() for o in ops if not _is_send(o))
    group = getattr(ops[0], "group", None) if ops else None
    return (("bytes", sent), ("recv_bytes", got), ("ops", len(ops))) + _group(group), True


def _is_send(p2p_op) -> bool:
    return getattr(p2p_op.op, "__name__", "") in ("isend", "send")


# torch.distributed function -> (event name, describer); the deprecated underscored forms are
# recorded under the name of the function that replaced them.
_CALLS: Dict[str, Tuple[str, Callable]] = {
    "all_reduce": ("all_reduce", _all_reduce),
    "all_gather": ("all_gather", _all_gather),
    "all_gather_into_tensor": ("all_gather_into_tensor", _into_tensor),
    "_all_gather_base": ("all_gather_into_tensor", _into_tensor),
    "reduce_scatter": ("reduce_scatter", _reduce_scatter),
    "reduce_scatter_tensor": ("reduce_scatter_tensor", _reduce_scatter_tensor),
    "_reduce_scatter_base": ("reduce_scatter_tensor", _reduce_scatter_tensor),
    "broadcast": ("broadcast", _broadcast),
    "reduce": ("reduce", _reduce),
    "all_to_all": ("all_to_all", _all_to_all),
    "all_to_all_single": ("all_to_all_single", _all_to_all_single),
    "gather": ("gather", _gather),
    "scatter": ("scatter", _scatter),
    "all_reduce_coalesced": ("all_reduce_coalesced", _all_reduce_coalesced),
    "all_gather_coalesced": ("all_gather_coalesced", _all_gather_coalesced),
    # c10d functions of these names, where a torch has them (the ProcessGroup methods of the
    # same purpose are reached only through the functions above or _coalescing_manager)
    "all_gather_into_tensor_coalesced": ("all_gather_into_tensor_coalesced",
                                         _into_tensor_coalesced),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter_tensor_coalesced",
                                        _reduce_scatter_tensor_coalesced),
    "barrier": ("barrier", _barrier),
    "send": ("send", _p2p(False)),
    "recv": ("recv", _p2p(False)),
    "isend": ("isend", _p2p(True)),
    "irecv": ("irecv", _p2p(True)),
    "batch_isend_irecv": ("batch_isend_irecv", _batch),
}


# ------------------------------------------------------------------ the wrappers


def _inside() -> int:
    return _tls.inside


def _recorded(name: str, describe: Callable, original: Callable) -> Callable:
    """original, each call recorded as comm.<name> (unless inside another recorded call)."""
    node = _node(name)
    arg = _dftrace.region_arg

    def call(*args, **kwargs):
        if _tls.inside:
            return original(*args, **kwargs)
        r = node._begin()
        if not r:
            return original(*args, **kwargs)
        try:
            if not _rank[0]:
                _rank_seen()
            pairs, async_op = describe(*args, **kwargs)
        except Exception:  # noqa: BLE001  (arguments torch will reject itself: let it say so)
            pairs, async_op = (), False
        out = None
        _tls.inside = 1
        try:
            out = original(*args, **kwargs)
            return out
        except BaseException as e:
            arg(r, "error", type(e).__name__)
            raise
        finally:
            _tls.inside = 0
            try:
                _finish(r, name, pairs, async_op, out)
            except Exception:  # noqa: BLE001  (never in the way of the call's own outcome)
                pass
            node._end(r)
    call.__name__ = getattr(original, "__name__", name)
    call.__qualname__ = getattr(original, "__qualname__", name)
    call.__doc__ = getattr(original, "__doc__", None)
    call.__wrapped__ = original
    return call


def _finish(r: int, name: str, pairs: tuple, async_op: bool, out: Any) -> None:
    """The arguments of a call's event, once it returned: a Work it returned is remembered
    for its wait(); recv says the peer it actually received from."""
    if name == "recv" and isinstance(out, int):
        pairs = tuple(p for p in pairs if p[0] != "peer") + (("peer", out),)
    if async_op and out is not None:
        cid = next(_ids)
        for w in (out if isinstance(out, (list, tuple)) else (out,)):
            try:
                _pending[w] = (cid, name)
            except TypeError:  # not weakly referenceable: its wait is not recorded
                pass
        pairs += (("async_op", True), ("comm_id", cid))
    else:
        pairs += (("async_op", bool(async_op)),)
    _dftrace.region_args(r, pairs)


def _traced_wait(original: Callable) -> Callable:
    """Work.wait: the time it blocks for a recorded asynchronous call, as comm.wait."""
    node = _node("wait")
    arg = _dftrace.region_arg

    def wait(self, *args, **kwargs):
        entry = _pending.pop(self, None) if _pending else None
        if entry is None:
            return original(self, *args, **kwargs)
        r = node._begin()
        try:
            return original(self, *args, **kwargs)
        finally:
            if r:
                arg(r, "comm_id", entry[0])
                arg(r, "op", entry[1])
                node._end(r)
    wait.__name__, wait.__doc__, wait.__wrapped__ = "wait", original.__doc__, original
    return wait


# ------------------------------------------------------------------ DistributedDataParallel


class _HookState:
    """The state of the communication hook installed on a DDP model: its process group, and
    the hook the script registered (with the script's state), if any."""

    def __init__(self, process_group: Any) -> None:
        self.process_group = process_group
        self.user: Optional[Tuple[Callable, Any]] = None
        self.name = "allreduce"


def _bucket_hook(state: _HookState, bucket):
    """DDP's communication hook: the script's hook (or DDP's own average), timed from the
    bucket being ready (now) to its reduction ending (the returned future completing), and
    recorded once as comm.all_reduce; the collectives the hook calls are not recorded again."""
    start = _dftrace.now_ns()
    outer = _tls.inside
    _tls.inside = 1
    average = state.user is None
    try:
        if average:
            fut = _average(state.process_group, bucket)
        else:
            fut = state.user[0](state.user[1], bucket)
    finally:
        _tls.inside = outer
    try:
        node = _node("all_reduce")
        record = node.enabled
        if record:
            args = _bucket_args(state, bucket)
            track = threading.get_native_id()
    except Exception:  # noqa: BLE001  (never in the way of the reduction)
        record = False
    if not record and not average:
        return fut

    def done(f):
        if record:
            try:
                node._complete(start, _dftrace.now_ns(), track, args)
            except Exception:  # noqa: BLE001
                pass
        return f.value()[0] if average else f.value()
    return fut.then(_held(done))


def _average(process_group, bucket):
    """What DDP does without a hook (torch's default_hooks.allreduce_hook): the bucket divided
    by the group's size, then all-reduced; the future's value is [bucket]. Its own callback,
    torch's, is left out: done() takes the bucket from the list."""
    group = process_group if process_group is not None else dist.group.WORLD
    tensor = bucket.buffer()
    tensor.div_(group.size())
    return dist.all_reduce(tensor, group=group, async_op=True).get_future()


# The bucket callbacks torch still holds. The thread that completes a future (gloo's, NCCL's)
# takes the GIL to run a callback and again to let it go; once the interpreter is finalizing, a
# thread taking the GIL is ended by pthread_exit, which unwinds into torch's noexcept code and
# ends the process ("terminate called without an active exception"). At exit, before that, the
# callbacks of the last step are waited for (a bounded wait: a collective that never ends does
# not hold the exit).
_holding: set = set()


def _held(callback):
    _holding.add(weakref.ref(callback, _holding.discard))
    return callback


def _let_callbacks_go(limit_s: float = 2.0) -> None:
    deadline = time.monotonic() + limit_s
    while _holding and time.monotonic() < deadline:
        time.sleep(0.001)


atexit.register(_let_callbacks_go)


def _bucket_args(state: _HookState, bucket) -> Dict[str, Any]:
    buf = bucket.buffer()
    n = buf.numel()
    args = {"bucket": bucket.index(), "bytes": n * buf.element_size(), "dtype": _dtype(buf),
            "count": n, "params": len(bucket.parameters())}
    args.update(_group(state.process_group))  # comm_size, comm_rank, comm_group (cached)
    args.update(hook=state.name, async_op=True)
    return args


# DDP model -> the state of its hook (kept out of the model, which pickles its attributes)
_ddp_hooked: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def instrument_ddp(model) -> bool:
    """Installs the bucket-recording hook on a DistributedDataParallel model built before
    instrument_distributed() (models built after it get it when they are built). False when
    the model has a communication hook already (its buckets are then not recorded).

    Args:
        model: a DistributedDataParallel model.

    Returns:
        True when its buckets are recorded, False when it has a communication hook already.

    Example:
        >>> ddp = torch.nn.parallel.DistributedDataParallel(model)
        >>> dftrace.torch_distributed.instrument_ddp(ddp)   # its buckets as `ddp` events
        True
    """
    if model in _ddp_hooked:
        return True
    state = _HookState(getattr(model, "process_group", None) or
                       dist.distributed_c10d._get_default_group())
    register = type(model).register_comm_hook
    register = getattr(register, "__wrapped__", register)  # torch's own, not the wrapper
    try:
        register(model, state, _bucket_hook)
    except RuntimeError:  # a hook is there already (registered only once): leave it alone
        return False
    _ddp_hooked[model] = state
    return True


def _ddp_patches() -> List[Any]:
    from torch.nn.parallel import DistributedDataParallel as DDP

    def make_init(original):
        def __init__(self, *args, **kwargs):
            original(self, *args, **kwargs)
            try:
                instrument_ddp(self)
            except Exception as e:  # noqa: BLE001
                _warn_once("DDP gradient buckets not recorded: %s: %s" % (type(e).__name__, e))
        __init__.__wrapped__ = original
        return __init__

    def make_register(original):
        def register_comm_hook(self, state, hook):
            mine = _ddp_hooked.get(self)
            if mine is None:
                return original(self, state, hook)
            if mine.user is not None:  # as torch says on a second registration
                raise RuntimeError(
                    "register_comm_hook or register_builtin_comm_hook can only be called once.")
            check = getattr(self, "_check_comm_hook", None)
            if check is not None:
                check(hook)
            mine.user = (hook, state)
            mine.name = getattr(hook, "__qualname__", None) or type(hook).__name__
        register_comm_hook.__wrapped__ = original
        register_comm_hook.__doc__ = original.__doc__
        return register_comm_hook

    def make_builtin(original):
        def _register_builtin_comm_hook(self, comm_hook_type):
            mine = _ddp_hooked.get(self)
            if mine is None:
                return original(self, comm_hook_type)
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            hook = {"ALLREDUCE": default_hooks.allreduce_hook,
                    "FP16_COMPRESS": default_hooks.fp16_compress_hook}.get(
                        getattr(comm_hook_type, "name", str(comm_hook_type)).split(".")[-1])
            if hook is None:
                raise RuntimeError("unknown built-in communication hook %s" % comm_hook_type)
            make_register(None)(self, mine.process_group, hook)
        _register_builtin_comm_hook.__wrapped__ = original
        return _register_builtin_comm_hook

    patches = [patch(DDP, "__init__", make_init), patch(DDP, "register_comm_hook", make_register)]
    if hasattr(DDP, "_register_builtin_comm_hook"):
        patches.append(patch(DDP, "_register_builtin_comm_hook", make_builtin))
    return patches


# ------------------------------------------------------------------ ranks and clocks

_rank = [False]  # the rank is in the trace
def _rank_seen() -> None:
    """The rank into the trace at the first recorded call, where init_process_group was not
    seen (called before the instrumentation, or through a name bound before it)."""
    if not _rank[0] and dist.is_initialized():
        _set_rank()


def _set_rank() -> None:
    _rank[0] = True
    _dftrace.set_rank(dist.get_rank(), dist.get_world_size())
    for key, env in (("local_rank", "LOCAL_RANK"), ("local_size", "LOCAL_WORLD_SIZE")):
        v = os.environ.get(env, "")
        if v.isdigit():
            _dftrace.process_property(key, int(v))
    _dftrace.process_property("backend", str(dist.get_backend()))


def _after_init() -> None:
    _groups.clear()
    _set_rank()
    if _dftrace.is_enabled():
        align_clocks()


# ------------------------------------------------------------------ installing it all


def instrument_distributed(ddp: bool = True) -> Undo:
    """Records torch.distributed's collectives and point-to-point calls, the waits of the
    asynchronous ones, DDP's gradient buckets (`ddp`), and the rank and clock offset at
    init_process_group (see the module's documentation). Returns a handle; `remove()` undoes
    it all. A second call while it is on does nothing (said on stderr).

    Args:
        ddp: also record DistributedDataParallel's gradient buckets.

    Returns:
        An Undo handle; `remove()` puts every function back.

    Example:
        >>> handle = dftrace.torch_distributed.instrument_distributed()
        >>> torch.distributed.init_process_group("gloo")
        >>> torch.distributed.all_reduce(torch.ones(4))   # comm.all_reduce, bytes 16
        >>> handle.remove()
    """
    if _on[0]:
        print("dftrace: instrument_distributed() is on already; this call does nothing",
              file=sys.stderr)
        return Undo()
    if not dist.is_available():
        return Undo()
    return Undo([_lifecycle_patches(ddp), _call_patches()])


def _call_patches() -> Undo:
    """The collectives, point-to-point calls and waits: what writes an event per call (what
    auto() installs for an attach window only, docs/attach.md)."""
    import torch.distributed.distributed_c10d as c10d
    patches: List[Any] = []
    for function, (event, describe) in _CALLS.items():
        original = getattr(c10d, function, None)
        if original is None:  # not in this torch
            continue
        traced = _recorded(event, describe, original)
        for module in (dist, c10d):
            if module.__dict__.get(function) is original:
                patches.append(patch(module, function, lambda _o, t=traced: t))
    patches.append(patch(dist.Work, "wait", _traced_wait))
    from . import functional_collectives  # torch 2.x's functional collectives, where present
    patches.extend(functional_collectives.patches())
    return Undo(patches)


def _lifecycle_patches(ddp: bool) -> Undo:
    """init_process_group (the rank, the clocks' alignment, which every rank must take part in
    when the group is made), destroy_process_group and, with `ddp`, DDP's construction (its
    bucket hook, which torch never lets go): called once or a few times per run."""
    import torch.distributed.distributed_c10d as c10d
    _on[0] = True
    patches: List[Any] = []

    def make_init(original):
        def init_process_group(*args, **kwargs):
            out = original(*args, **kwargs)
            try:
                _after_init()
            except Exception as e:  # noqa: BLE001
                _warn_once("rank not recorded: %s: %s" % (type(e).__name__, e))
            return out
        init_process_group.__wrapped__ = original
        init_process_group.__doc__ = original.__doc__
        return init_process_group

    def make_destroy(original):
        def destroy_process_group(*args, **kwargs):
            _groups.clear()
            return original(*args, **kwargs)
        destroy_process_group.__wrapped__ = original
        destroy_process_group.__doc__ = original.__doc__
        return destroy_process_group

    for function, make in (("init_process_group", make_init),
                           ("destroy_process_group", make_destroy)):
        original = c10d.__dict__[function]
        traced = make(original)
        for module in (dist, c10d):
            if module.__dict__.get(function) is original:
                patches.append(patch(module, function, lambda _o, t=traced: t))
    if ddp:
        patches.extend(_ddp_patches())
    patches.append(lambda: _on.__setitem__(0, False))
    return Undo(patches)
