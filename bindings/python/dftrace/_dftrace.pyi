# _dftrace.pyi: types and documentation of the compiled extension (bindings/python/ext/core/).
# The public functions' docstrings live here (tests/python/test_docstrings.py reads them).
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Tuple, TypeVar, overload

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")

OK: int
ERR_DISABLED: int
# The built-in AI tree (dftrace/ai_tree.def): ((category, enum name, (event, ...)), ...).
AI_TREE: Tuple[Tuple[str, str, Tuple[str, ...]], ...]

class Node:
    def __init__(self, path: Optional[str] = ..., *, cat: Optional[str] = ...,
                 name: Optional[str] = ...) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def cat(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def enabled(self) -> bool: ...
    @property
    def use_args(self) -> Dict[str, Any]: ...
    @property
    def use_enable(self) -> Optional[bool]: ...
    @overload
    def __call__(self, fn: _F) -> _F: ...
    @overload
    def __call__(self, *, enable: Optional[bool] = ..., args: Optional[Dict[str, Any]] = ...,
                 epoch: Optional[int] = ..., step: Optional[int] = ...,
                 image_idx: Optional[int] = ..., image_size: Optional[float] = ...,
                 capture: Optional[Iterable[str]] = ..., result: bool = ...,
                 first: Optional[int] = ...) -> Any: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: Any) -> bool: ...
    def start(self, metadata: bool = ...) -> None:
        """Opens a region of this node on the calling thread (stop() ends it); with `metadata`,
        writes a start mark instead.

        Args:
            metadata: a mark (metadata line) instead of a region.

        Returns:
            None.

        Example:
            >>> ai.compute.forward.start()
            >>> out = model(x)
            >>> ai.compute.forward.stop()
        """
    def stop(self, metadata: bool = ...) -> None:
        """Ends the innermost region of this node open on the calling thread (nothing when none
        is); with `metadata`, writes an end mark instead.

        Args:
            metadata: a mark (metadata line) instead of ending a region.

        Returns:
            None.

        Example:
            >>> ai.data.preprocess.start(); batch = prepare(raw); ai.data.preprocess.stop()
        """
    def iter(self, iterator: Iterable[_T], *, include_block: bool = ..., include_iter: bool = ...,
             iter_name: Optional[str] = ..., block_name: Optional[str] = ...,
             enable: Optional[bool] = ...) -> Iterator[_T]:
        """Wraps an iterable: each item's fetch is an event (`iter_name`, default `<name>.iter`)
        and, with `include_block`, the whole loop one more (`block_name`, default `<name>.block`).

        Args:
            iterator: the iterable.
            include_block: an event for the whole loop.
            include_iter: an event for each item's fetch.
            iter_name: the name of each fetch's event.
            block_name: the name of the loop's event.
            enable: force recording on or off (None: the node's state).

        Returns:
            An iterator over the same items.

        Example:
            >>> for batch in ai.dataloader.fetch.iter(loader):
            ...     train(batch)
        """
    def enable(self) -> None:
        """Records this node (and its children that follow it) again.

        Args:
            None.

        Returns:
            None.

        Example:
            >>> ai.compute.enable()
        """
    def disable(self) -> None:
        """Stops recording this node (and its children that follow it).

        Args:
            None.

        Returns:
            None.

        Example:
            >>> ai.data.disable()   # no data.* events from here on
        """
    def _update(self, key: str, value: Any) -> None: ...
    def _derive_path(self, name: str) -> str: ...
    def _child_path(self, name: str) -> str: ...
    def _begin(self) -> int: ...
    def _end(self, region: int) -> None: ...
    def _instant(self, args: Optional[Dict[str, Any]] = ...) -> None: ...
    def _counter(self, series: str, value: float) -> None: ...
    def _complete(self, start_ns: int, end_ns: int, track: int,
                  args: Optional[Dict[str, Any]] = ...) -> None: ...

class Traced:
    __wrapped__: Callable[..., Any]
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

class Iter(Iterator[_T]):
    def __next__(self) -> _T: ...
    def close(self) -> None: ...

def init(*, enable: Optional[bool] = ..., output_prefix: Optional[str] = ...,
         output_file: Optional[str] = ..., config_file: Optional[str] = ...,
         exec_name: Optional[str] = ..., metadata: Optional[bool] = ...,
         compression: Optional[bool] = ..., level: int = ...,
         bind_atexit: Optional[bool] = ..., io_data_dir: Optional[str] = ...,
         parent_pid: int = ...) -> int: ...
def finalize() -> int: ...
def flush() -> int:
    """Writes what is buffered to the trace file.

    Args:
        None.

    Returns:
        A status code (0 on success).

    Example:
        >>> dftrace.flush()
        0
    """
def is_enabled() -> bool:
    """Whether events are recorded now.

    Args:
        None.

    Returns:
        True while tracing is on for the process.

    Example:
        >>> dftrace.is_enabled()
        True
    """
def set_enabled(on: bool) -> None:
    """Switches recording on or off for the whole process.

    Args:
        on: record events (True) or not.

    Returns:
        None.

    Example:
        >>> dftrace.set_enabled(False)   # a warm-up phase, not recorded
        >>> dftrace.set_enabled(True)
    """
def status() -> str:
    """One line describing the tracer's state.

    Args:
        None.

    Returns:
        The line.

    Example:
        >>> print(dftrace.status())
    """
def output_path() -> Optional[str]:
    """This process's trace file.

    Args:
        None.

    Returns:
        Its path, or None when there is no trace.

    Example:
        >>> dftrace.output_path()
        '/tmp/run/trace-app-4242.pfw.gz'
    """
def config_describe() -> str:
    """The effective configuration, one `key: value` line each.

    Args:
        None.

    Returns:
        The text.

    Example:
        >>> print(dftrace.config_describe())
    """
def version() -> str: ...
def status_string(code: int) -> str: ...
def now_ns() -> int:
    """The tracer's clock.

    Args:
        None.

    Returns:
        Monotonic nanoseconds, the clock events are timed with.

    Example:
        >>> t0 = dftrace.now_ns(); work(); elapsed_ns = dftrace.now_ns() - t0
    """
def trace_time_ns() -> int: ...
def events_written() -> int:
    """Events written so far by this process.

    Args:
        None.

    Returns:
        The count.

    Example:
        >>> dftrace.events_written()
        1234
    """
def events_dropped() -> int:
    """Events dropped so far by this process (a full buffer, a failed write).

    Args:
        None.

    Returns:
        The count.

    Example:
        >>> dftrace.events_dropped()
        0
    """
def metadata(key: str, value: str) -> None:
    """Writes a custom metadata line (`CM`) into the trace.

    Args:
        key: the metadata's name.
        value: its value, as text.

    Returns:
        None.

    Example:
        >>> dftrace.metadata("dataset", "imagenet-1k")
    """
def process_property(key: str, value: Any) -> None:
    """Writes a property of this process (a `PR` line) into the trace.

    Args:
        key: the property's name.
        value: its value (a number or text).

    Returns:
        None.

    Example:
        >>> dftrace.process_property("world_size", 8)
    """
def thread_name(name: str) -> None:
    """Names the calling thread in the trace.

    Args:
        name: the thread's name.

    Returns:
        None.

    Example:
        >>> dftrace.thread_name("loader-0")
    """
def set_rank(rank: int, size: int) -> int: ...
def set_process_identity(exec_name: Optional[str], parent_pid: int) -> int: ...
def file_hash(path: str) -> int: ...
def region_arg(region: int, key: str, value: Any) -> None: ...
def region_arg_int(region: int, key: str, value: int) -> None: ...
def region_args(region: int, pairs: Tuple[Tuple[str, Any], ...]) -> None: ...
def region_cancel(region: int) -> None: ...
def attach_wants(category: str) -> bool: ...
def window_changes() -> int: ...
def _watch_windows(fn: Optional[Callable[[], Any]]) -> int: ...
def _set_async_wrapper(fn: Optional[Callable[..., Any]]) -> None: ...
def _set_capture_factory(fn: Optional[Callable[..., Any]]) -> None: ...
def _open_depth() -> int: ...
def _after_fork_child() -> None: ...
