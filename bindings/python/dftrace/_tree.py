"""_tree.py: the `ai` profiler tree with pydftracer's surface, one Profiler per core node."""
from __future__ import annotations

import functools
from enum import StrEnum
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, Optional, TypeVar,
                    overload)

from . import _dftrace

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# "not passed", as opposed to None, which removes an argument (docs/ai-tree.md section 3)
_UNSET: Any = object()


# The built-in tree comes from its one table (include/dftrace/ai_tree.def), which the extension
# exposes as ((category, enum name, (event, ...)), ...). pydftracer's enums are made from it:
# ProfileCategory.COMPUTE == "compute", and per category an enum of its events
# (ComputeEvent.FORWARD == "forward"), members in the table's order.
_TABLE = _dftrace.AI_TREE

ProfileCategory = StrEnum("ProfileCategory", [(cat.upper(), cat) for cat, _, _ in _TABLE],
                          module=__name__)

# category -> its event enum; each is also a module attribute under its pydftracer name.
EVENT_ENUMS: Dict[str, type] = {
    cat: StrEnum(enum_name, [(event.upper(), event) for event in events], module=__name__)
    for cat, enum_name, events in _TABLE
}
globals().update({e.__name__: e for e in EVENT_ENUMS.values()})


class Profiler(_dftrace.Node):
    """One node of the tree: a decorator, a context manager, start()/stop(), iter().

    The hot methods (__call__ on a function, __enter__/__exit__, start/stop, iter) are in C;
    this class adds the tree's shape (children as attributes), update, derive and init.
    """

    def __init__(self, path: Optional[str] = None, *, cat: Optional[str] = None,
                 name: Optional[str] = None) -> None:
        super().__init__(path, cat=cat, name=name)
        self._children: Dict[str, Profiler] = {}

    def create_children(self, names: Dict[str, str]) -> None:
        """Adds children as attributes: {attribute: event name}.

        Args:
            names: {attribute: event name}.

        Returns:
            None.

        Example:
            >>> node = dftrace.Profiler(cat="app", name="phase")
            >>> node.create_children({"load": "phase.load"})
            >>> with node.load:
            ...     pass
        """
        for attr, name in names.items():
            child = Profiler(self._child_path(str(name)))
            setattr(self, attr, child)
            self._children[attr] = child

    def derive(self, name: str) -> "Profiler":
        """The node `<name of this node>.<name>` in the same category (created once).

        Args:
            name: the last part of the new node's name.

        Returns:
            The derived Profiler.

        Example:
            >>> with ai.compute.forward.derive("encoder"):   # forward.encoder, category compute
            ...     h = encoder(x)
        """
        path = self._derive_path(str(name))
        children = self.__dict__.setdefault("_children", {})  # a use has none of its own
        child = children.get(path)
        if child is None:
            child = Profiler(path)
            children[path] = child
        return child

    @property
    def init(self) -> "Profiler":
        """The node `<name>.init`: a node like any other (decorator, context manager,
        start/stop), created on first use. A property rather than __getattr__, which would
        slow every attribute look-up on the tree.

        Args:
            None.

        Returns:
            The `<name>.init` Profiler.

        Example:
            >>> with ai.data.init():
            ...     dataset = build_dataset()
        """
        return self.derive("init")

    def update(self, epoch: Any = _UNSET, step: Any = _UNSET, image_idx: Any = _UNSET,
               image_size: Any = _UNSET, args: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> "Profiler":
        """Sets arguments on this node and its whole subtree; None removes one.

        Args:
            epoch: the `epoch` argument.
            step: the `step` argument.
            image_idx: the `image_idx` argument.
            image_size: the `image_size` argument.
            args: more arguments, as a dict.
            **kwargs: more arguments by name.

        Returns:
            This node.

        Example:
            >>> ai.update(epoch=2)   # every event of the tree carries epoch 2 from here on
        """
        if epoch is not _UNSET:
            self._update("epoch", epoch)
        if step is not _UNSET:
            self._update("step", step)
        if image_idx is not _UNSET:
            self._update("image_idx", image_idx)
        if image_size is not _UNSET:
            self._update("image_size", image_size)
        if args:
            if isinstance(args, dict):
                for key, value in args.items():
                    self._update(str(key), value)
            else:
                _warn(f"update(args=...) needs a dict, not {type(args).__name__} (ignored)")
        for key, value in kwargs.items():
            self._update(key, value)
        return self

    def reset(self) -> None:
        """pydftracer compatibility: nothing is kept per node, so nothing to reset.

        Args:
            None.

        Returns:
            None.

        Example:
            >>> ai.reset()
        """

    def get_time(self) -> int:
        """The tracer's clock in microseconds.

        Args:
            None.

        Returns:
            Monotonic microseconds.

        Example:
            >>> t0 = ai.get_time()
        """
        return _dftrace.now_ns() // 1000

    # typing of the C methods (the implementations are in _dftrace.Node)
    if TYPE_CHECKING:

        @overload
        def __call__(self, fn: F) -> F: ...

        @overload
        def __call__(self, *, enable: Optional[bool] = None, args: Optional[Dict[str, Any]] = None,
                     epoch: Optional[int] = None, step: Optional[int] = None,
                     image_idx: Optional[int] = None,
                     image_size: Optional[float] = None,
                     capture: Optional[Iterable[str]] = None, result: bool = False,
                     first: Optional[int] = None) -> "Profiler": ...

        def __call__(self, fn: Any = None, **kw: Any) -> Any: ...

        def iter(self, iterator: Iterable[T], *, include_block: bool = True,
                 include_iter: bool = True, iter_name: Optional[str] = None,
                 block_name: Optional[str] = None,
                 enable: Optional[bool] = None) -> Iterator[T]: ...


class DFTracerAI(Profiler):
    """pydftracer's custom tracer: DFTracerAI(cat=..., name=..., epoch=, step=, enable=)."""

    def __init__(self, cat: str, name: Optional[str] = None, epoch: Optional[int] = None,
                 step: Optional[int] = None, image_idx: Optional[int] = None,
                 image_size: Optional[float] = None, enable: bool = True) -> None:
        super().__init__(cat=str(cat), name=str(name) if name else None)
        self.update(**{k: v for k, v in (("epoch", epoch), ("step", step),
                                           ("image_idx", image_idx), ("image_size", image_size))
                       if v is not None})
        if not enable:
            self.disable()


def _warn(message: str) -> None:
    import sys

    print(f"dftrace: {message}", file=sys.stderr)


def _build_root() -> Profiler:
    """The root and the built-in tree: attributes ai.<category>.<event>, in the table's order."""
    root = Profiler("")
    for cat, _, events in _TABLE:
        node = Profiler(cat=cat)
        node.create_children({event: event for event in events})
        setattr(root, cat, node)
        root._children[cat] = node
    return root


def _wrap_async(use: _dftrace.Node, fn: Callable[..., Any]) -> Callable[..., Any]:
    """An `async def` is timed over its awaited execution, not its coroutine creation."""

    @functools.wraps(fn)
    async def traced(*args: Any, **kwargs: Any) -> Any:
        region = use._begin()
        try:
            return await fn(*args, **kwargs)
        finally:
            use._end(region)

    return traced


_dftrace._set_async_wrapper(_wrap_async)

# ---------------------------------------------------------------- capture

CAPTURE_FIRST = 10  # calls captured when a decorator gives capture= or result= without first=
_REPR_MAX = 120     # characters of a value's repr kept in a summary


def _shape(v: Any) -> str:
    return "[" + ", ".join(str(int(d)) for d in v.shape) + "]"


def summarize(v: Any) -> Any:
    """What capture writes for a value: numbers and bools as they are; a tensor (torch, numpy
    or any object with shape and dtype) as its shape, dtype and device; a container by its
    type and length (with its items' summaries when it holds up to 4 tensors, like a batch
    (x, y)); anything else as its repr, cut to 120 characters. Never raises.

    Args:
        v: the value.

    Returns:
        The value as capture writes it (a number, a bool or text).

    Example:
        >>> dftrace.summarize(numpy.zeros((2, 3), dtype="float32"))
        'ndarray float32 (2, 3)'
    """
    try:
        t = type(v)
        if t in (bool, int, float):
            return v
        if v is None:
            return "None"
        if t is str:
            return v if len(v) <= _REPR_MAX else v[:_REPR_MAX - 3] + "..."
        shape, dtype = getattr(v, "shape", None), getattr(v, "dtype", None)
        if shape is not None and dtype is not None and hasattr(shape, "__len__"):
            name = "Tensor" if t.__module__.startswith("torch") else t.__name__
            text = "%s(shape=%s, dtype=%s" % (name, _shape(v), str(dtype).replace("torch.", ""))
            device = getattr(v, "device", None)
            return text + (", device=%s)" % device if device is not None else ")")
        if isinstance(v, (list, tuple, dict, set, frozenset)):
            text = "%s(len=%d)" % (t.__name__, len(v))
            if isinstance(v, (list, tuple)) and 0 < len(v) <= 4 and all(
                    hasattr(x, "shape") and hasattr(x, "dtype") for x in v):
                text = "%s(len=%d: %s)" % (t.__name__, len(v),
                                           ", ".join(str(summarize(x)) for x in v))
            return text
        if hasattr(t, "__len__"):
            try:
                return "%s(len=%d)" % (t.__name__, len(v))
            except Exception:  # noqa: BLE001  (a __len__ that fails: fall back to repr)
                pass
        r = repr(v)
        return r if len(r) <= _REPR_MAX else r[:_REPR_MAX - 3] + "..."
    except Exception:  # noqa: BLE001  (a value whose repr raises)
        return "<%s>" % type(v).__name__


def _capture_settings(names: Any, first: Any, where: str) -> tuple:
    """capture= as a tuple of names and first= as a count, bad values reported (on `where`)."""
    if first is None:
        first = CAPTURE_FIRST
    elif isinstance(first, bool) or not isinstance(first, int) or first < 0:
        _warn(f"capture on {where}: first must be an int >= 0, not {first!r}; using "
              f"{CAPTURE_FIRST}")
        first = CAPTURE_FIRST
    if names is None:
        return (), first
    if isinstance(names, str):
        return (names,), first
    try:
        return tuple(names), first
    except TypeError:
        _warn(f"capture on {where}: capture= needs a list of parameter names, not "
              f"{type(names).__name__} (no argument captured)")
        return (), first


def _capture_factory(fn: Callable[..., Any], settings: tuple) -> Optional[tuple]:
    """Called once when a node used with capture=, result= or first= decorates fn: checks the
    names against fn's signature (bad ones reported in one line, never raised: the function is
    still traced) and returns (before, after, first) for the extension, or None."""
    import inspect

    names, result, first = settings
    where = getattr(fn, "__qualname__", None) or repr(fn)
    names, first = _capture_settings(names, first, where)
    sig = None
    if names:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            _warn(f"capture on {where}: its signature is unknown, so no argument is captured")
            names = ()
    if sig is not None:
        params = sig.parameters
        bad = [n for n in names if not isinstance(n, str) or n not in params]
        if bad:
            _warn("capture on %s: no parameter %s (ignored; its parameters: %s)" % (
                where, ", ".join(repr(n) for n in bad), ", ".join(params) or "none"))
        names = tuple(dict.fromkeys(n for n in names if n not in bad))
    if not names and not result:
        return None
    before = after = None
    if names:
        region_arg, empty, P = _dftrace.region_arg, inspect.Parameter.empty, inspect.Parameter
        order = list(params)
        if all(p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in params.values()):
            # No *args/**kwargs: each name is at a known position or keyword (no bind()).
            where_ = [(n, -1 if params[n].kind == P.KEYWORD_ONLY else order.index(n),
                       params[n].kind != P.POSITIONAL_ONLY, params[n].default) for n in names]

            def before(region: int, *args: Any, **kwargs: Any) -> None:
                for n, i, by_name, default in where_:
                    if by_name and n in kwargs:
                        v = kwargs[n]
                    elif 0 <= i < len(args):
                        v = args[i]
                    elif default is not empty:
                        v = default
                    else:
                        continue  # missing: the call itself raises the TypeError
                    region_arg(region, "arg." + n, summarize(v))
        else:
            def before(region: int, *args: Any, **kwargs: Any) -> None:
                try:
                    given = sig.bind(*args, **kwargs).arguments
                except TypeError:
                    return  # the call itself raises the TypeError
                for n in names:
                    kind = params[n].kind
                    if n in given:
                        v = given[n]
                    elif kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD):
                        v = () if kind == P.VAR_POSITIONAL else {}  # none given
                    elif params[n].default is not empty:
                        v = params[n].default
                    else:
                        continue
                    region_arg(region, "arg." + n, summarize(v))
    if result:
        def after(region: int, value: Any) -> None:
            _dftrace.region_arg(region, "arg.return", summarize(value))
    return (before, after, first)


_dftrace._set_capture_factory(_capture_factory)

ai = _build_root()
