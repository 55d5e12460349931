"""dftrace: DFTracer-compatible tracing for Python; `from dftrace import ai` is pydftracer's API.

Tracing is switched on by the environment (DFTRACE_ENABLE=1, or DFTRACER_ENABLE=1) or by
initialize(enable=True). Switched off, every decorator is a near-free passthrough.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, Union, overload

from . import _dftrace, _process, _spawned
from ._dftrace import (
    Node,
    config_describe,
    events_dropped,
    events_written,
    flush,
    is_enabled,
    metadata,
    now_ns,
    output_path,
    process_property,
    set_enabled,
    status,
    thread_name,
)
from ._tree import (
    CheckpointEvent,
    CommunicationEvent,
    ComputeEvent,
    DataEvent,
    DataLoaderEvent,
    DeviceEvent,
    DFTracerAI,
    PipelineEvent,
    ProfileCategory,
    Profiler,
    ai,
    summarize,
)

__all__ = [
    "ai", "initialize", "finalize", "region", "trace", "instant", "counter", "metadata",
    "process_property", "thread_name", "flush", "is_enabled", "set_enabled", "status",
    "output_path", "config_describe", "events_written", "events_dropped", "now_ns", "version",
    "Node", "Profiler", "DFTracerAI", "ProfileCategory", "ComputeEvent", "DataEvent",
    "DataLoaderEvent", "CommunicationEvent", "DeviceEvent", "CheckpointEvent", "PipelineEvent",
    "dftracer", "Session", "read", "schedule", "step", "trigger", "file_hash", "read_calls", "summarize", "analyze",
]


def file_hash(path) -> int:
    """The hash of a file name as DFTracer computes it, its FH line written once: pass it as
    the `fhash` argument of an event so that the tools resolve it to the path (an unsigned
    64-bit integer, kept exact).

    Args:
        path: the file's path (text or os.PathLike).

    Returns:
        The hash, an unsigned 64-bit integer.

    Example:
        >>> with dftrace.region("load", "io", args={"fhash": dftrace.file_hash("data.bin")}):
        ...     data = open("data.bin", "rb").read()
    """
    return _dftrace.file_hash(os.fspath(path))

_on_trace_ready = []
_windows = [0]  # active windows closed since schedule()


def schedule(*, skip_first: int = 0, wait: int = 0, warmup: int = 0, active: int = 1,
             repeat: int = 0, on_trace_ready: Optional[Callable[[str, int], None]] = None) -> int:
    """Records only some steps, as torch.profiler's schedule: the first `skip_first` steps are
    skipped, then cycles of `wait`, `warmup` and `active` steps, `repeat` cycles (0: no end);
    only active steps are recorded. `step()` ends each step; when an active window closes its
    events are flushed to the file and `on_trace_ready(path, window)` is called. The schedule
    lives in the core (C ABI dftrace_schedule_set, configuration keys schedule.*), shared with
    C, C++ and Fortran; this replaces it and restarts counting at step 0. Returns the status
    (0, or DFTRACE_ERR_INVALID_ARGUMENT -1 for counts that make no schedule).

    Args:
        skip_first: steps skipped before the first cycle.
        wait: steps not recorded at the start of each cycle.
        warmup: steps not recorded after those (torch.profiler's warm-up).
        active: steps recorded in each cycle.
        repeat: cycles (0: no end).
        on_trace_ready: called as on_trace_ready(path, window) when an active window closes.

    Returns:
        0, or -1 (DFTRACE_ERR_INVALID_ARGUMENT) for counts that make no schedule.

    Example:
        >>> dftrace.schedule(wait=1, warmup=1, active=2, repeat=1)
        0
        >>> for batch in loader:
        ...     train(batch)
        ...     dftrace.step()
    """
    del _on_trace_ready[:]
    _windows[0] = 0
    if on_trace_ready is not None:
        _on_trace_ready.append(on_trace_ready)
    return _dftrace.schedule_set(skip_first, wait, warmup, active, repeat)


def trigger(reason: str = "") -> bool:
    """A trigger of the flight recorder (`output.mode: ring`, docs/flight-recorder.md): the
    last `ring.seconds` of events are written to the trace with a trigger line naming `reason`,
    then full detail follows for `ring.after`. False when not taken (not in ring mode, not
    tracing, within `trigger.min_gap` of the last trigger).

    Args:
        reason: what the trigger line names.

    Returns:
        True when the trigger was taken.

    Example:
        >>> if loss != loss:   # NaN: keep the last seconds before it
        ...     dftrace.trigger("loss is NaN")
    """
    return _dftrace.trigger(str(reason)) == 1


def step() -> bool:
    """The end of a training step: advances the schedule (dftrace_step). True when the step
    closed an active window; its events are then in the file, and the on_trace_ready callback
    of `schedule()` has run (an exception it raises is reported on stderr, never raised).

    Args:
        None.

    Returns:
        True when this step closed an active window of the schedule.

    Example:
        >>> for batch in loader:
        ...     train(batch)
        ...     dftrace.step()
    """
    rc = _dftrace.step()
    if rc != 1:
        return False
    path = _dftrace.output_path() or ""
    window = _windows[0]
    _windows[0] += 1
    for fn in list(_on_trace_ready):
        try:
            fn(path, window)
        except Exception as e:  # noqa: BLE001  (the training loop must not die of it)
            print("dftrace: on_trace_ready raised %s: %s" % (type(e).__name__, e), file=sys.stderr)
    return True


def read_calls(paths):
    """The arguments and return values recorded by decorators with capture=/result=, by
    stage: read_calls("traces/")["dataloader.fetch"] prints as a table (dftrace._calls).

    Args:
        paths: a trace file, a directory, a glob, or a list of these.

    Returns:
        A Calls dict: stage name -> its calls (a Stage, printable as a table).

    Example:
        >>> calls = dftrace.read_calls("traces/")
        >>> print(calls["dataloader.fetch"])
    """
    from ._calls import read_calls as _read_calls
    return _read_calls(paths)


from ._analyze import analyze  # noqa: E402  (light: json, gzip and os; the engine loads on call)


def read(paths, columns=None, cat=None, name=None, start=None, end=None, args=None,
         resolve=True, threads=0):
    """Traces into a pandas DataFrame through the C++ reader (dftrace._read.read documents it;
    pandas is imported only when this is called).

    Args:
        paths: a file, directory, glob or a list of them.
        columns: the columns to return (default: all of them).
        cat: keep only events of these categories (a string or a list).
        name: keep only events of these names (a string or a list).
        start: keep events with ts >= start (epoch nanoseconds).
        end: keep events with ts < end (epoch nanoseconds).
        args: argument keys to add as columns, or True for every key.
        resolve: add host, file and rank resolved through the traces' metadata lines.
        threads: reader threads (0: every core).

    Returns:
        A pandas DataFrame, one row per event; ts and dur in int64 nanoseconds.

    Example:
        >>> df = dftrace.read("traces/", cat="POSIX", args=["size"])
        >>> df.groupby("name").dur.sum()
    """
    from ._read import read as _read
    return _read(paths, columns=columns, cat=cat, name=name, start=start, end=end, args=args,
                 resolve=resolve, threads=threads)

__version__: str = _dftrace.version()
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_CATEGORY = "python"

_process.install()


def version() -> str:
    """The version of the dftrace library this module uses.

    Args:
        None.

    Returns:
        The version as text.

    Example:
        >>> dftrace.version()
        '0.9.0'
    """
    return _dftrace.version()


class Session:
    """What initialize() returns: the status, whether events are recorded and why, the file,
    and finalize(). `repr(session)` says it in one line."""

    def __init__(self, status: int) -> None:
        self.status = status

    @property
    def enabled(self) -> bool:
        """True while events are recorded (False: disabled, e.g. without enable=True or
        DFTRACE_ENABLE=1; `state` says why)."""
        return _dftrace.is_enabled()

    @property
    def state(self) -> str:
        """One line: "recording; file ..." or "not recording: <why>"."""
        return _dftrace.status()

    @property
    def output_path(self) -> Optional[str]:
        return _dftrace.output_path()

    def finalize(self) -> int:
        """Writes everything and closes the trace file, as dftrace.finalize().

        Args:
            None.

        Returns:
            0, or the C ABI's negative status (see dftrace.finalize).

        Example:
            >>> session = dftrace.initialize("traces/run", enable=True)
            >>> session.finalize()
            0
        """
        return finalize()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        finalize()

    def __repr__(self) -> str:
        return f"<dftrace session: {_dftrace.status()}>"


def initialize(log_file: Optional[str] = None, *, output_file: Optional[str] = None,
               enable: Optional[bool] = None, config_file: Optional[str] = None,
               exec_name: Optional[str] = None, metadata: Optional[bool] = None,
               compression: Optional[bool] = None, level: Optional[int] = None,
               data_dir: Optional[str] = None, export_environment: bool = True) -> Session:
    """Starts tracing for this process.

    log_file: file-name prefix (files are <prefix>-<script>-<pid>-app.pfw.gz); output_file: an
    exact file. data_dir: directories (':'-separated, or "all") whose files' I/O is traced in
    this process, added to io.data_dir's (pydftracer's data_dir). Options left None come from
    the configuration and the environment. Tracing is off unless enable=True, DFTRACE_ENABLE=1
    (or DFTRACER_ENABLE=1) or `enable: true` in the configuration file turns it on: data_dir
    alone records nothing (the session's `enabled` and `state` say so, and so does a line on
    stderr at log_level info). When this
    call enables tracing and the environment does not, it exports DFTRACE_ENABLE=1 (and the
    prefix) so that spawned children trace too (export_environment=False keeps it unchanged).
    Calling it again while initialised changes nothing.

    Args:
        log_file: file-name prefix of the trace.
        output_file: an exact trace file name instead.
        enable: turn tracing on (None: the configuration and the environment decide).
        config_file: a YAML configuration file.
        exec_name: the name of the program in file names (default: the script's).
        metadata: metadata mode (pydftracer's).
        compression: gzip the trace (None: the configuration's).
        level: the compression level.
        data_dir: directories whose files' I/O is traced (':'-separated, or "all").
        export_environment: export DFTRACE_ENABLE (and the prefix) for spawned children.

    Returns:
        A Session: status, enabled, state, output_path and finalize().

    Example:
        >>> session = dftrace.initialize("traces/run", enable=True)
        >>> session.enabled
        True
    """
    if log_file is not None:
        log_file = os.fspath(log_file)
        for suffix in (".pfw.gz", ".pfw"):
            if log_file.endswith(suffix):
                log_file = log_file[: -len(suffix)]
                break
    options = dict(
        enable=enable, output_prefix=log_file,
        output_file=os.fspath(output_file) if output_file is not None else None,
        config_file=os.fspath(config_file) if config_file is not None else None,
        exec_name=exec_name or _process._main_script(), metadata=metadata, compression=compression,
        level=-1 if level is None else int(level),
        io_data_dir=os.fspath(data_dir) if data_dir is not None else None)
    rc = _dftrace.init(**options)
    if rc == _dftrace.OK:  # spawned children start as this process (_spawned)
        for key in ("output_prefix", "output_file", "config_file"):
            if options[key] is not None:  # the child's working directory may be another
                options[key] = os.path.abspath(options[key])
        _spawned.remember_init(options)
    if rc == _dftrace.OK and export_environment:
        if not os.environ.get("DFTRACE_ENABLE") and not os.environ.get("DFTRACER_ENABLE"):
            os.environ["DFTRACE_ENABLE"] = "1"
        if log_file and not os.environ.get("DFTRACE_LOG_FILE") \
                and not os.environ.get("DFTRACER_LOG_FILE"):
            os.environ["DFTRACE_LOG_FILE"] = os.path.abspath(log_file)
    elif rc not in (_dftrace.OK, _dftrace.ERR_DISABLED):
        print(f"dftrace: initialize: {_dftrace.status_string(rc)}", file=sys.stderr)
    return Session(rc)


def finalize() -> int:
    """Writes everything and closes the trace file (also done at exit). Returns 0, or the C
    ABI's negative status: -3 (DFTRACE_ERR_IO) when the file could not be written (a full file
    system, the file-size limit) and events were lost.

    Args:
        None.

    Returns:
        0, or a negative status (-3: the file could not be written).

    Example:
        >>> dftrace.finalize()
        0
    """
    return _dftrace.finalize()


_nodes: Dict[Tuple[str, str], Profiler] = {}


import atexit as _atexit  # noqa: E402

# The interpreter's end (ext/core/exit_hooks.c, in C so that a second SIGINT can not land in
# them): the trace finalized after an uncaught KeyboardInterrupt, and in ring mode a trigger that
# names an unhandled exception before Python's own report.
_atexit.register(_dftrace._finalize_after_keyboard_interrupt)
_dftrace._set_previous_excepthook(sys.excepthook)
sys.excepthook = _dftrace._excepthook


def _node(name: str, cat: str) -> Profiler:
    key = (cat, name)
    node = _nodes.get(key)
    if node is None:
        node = Profiler(cat=str(cat), name=str(name))
        _nodes[key] = node
    return node


def region(name: str, cat: str = DEFAULT_CATEGORY, *, args: Optional[Dict[str, Any]] = None,
           enable: Optional[bool] = None) -> Profiler:
    """A context manager: one complete event `name` in category `cat` around the block.

    Args:
        name: the event's name.
        cat: its category.
        args: arguments of the event.
        enable: force recording on or off (None: the node's state).

    Returns:
        A Profiler usable as `with` (and as a decorator).

    Example:
        >>> with dftrace.region("load", "io", args={"shard": 3}):
        ...     data = load_shard(3)
    """
    node = _node(name, cat)
    if args is None and enable is None:
        return node
    return node(args=args, enable=enable)


@overload
def trace(fn: F) -> F: ...
@overload
def trace(name: Optional[str] = None, cat: str = DEFAULT_CATEGORY, *,
          args: Optional[Dict[str, Any]] = None,
          enable: Optional[bool] = None) -> Callable[[F], F]: ...


def trace(name: Union[str, Callable[..., Any], None] = None, cat: str = DEFAULT_CATEGORY, *,
          args: Optional[Dict[str, Any]] = None, enable: Optional[bool] = None) -> Any:
    """A decorator: one complete event per call, named `name` (default: the function's
    qualified name) in category `cat`. Usable bare (@trace) or called (@trace(cat="io")).

    Args:
        name: the event's name, or the function itself when used bare.
        cat: its category.
        args: arguments of every event.
        enable: force recording on or off (None: the node's state).

    Returns:
        The traced function (bare use), or a decorator.

    Example:
        >>> @dftrace.trace(cat="io")
        ... def load(path):
        ...     return open(path, "rb").read()
    """
    if callable(name):
        fn = name
        return _node(fn.__qualname__, cat)(fn)

    def decorate(fn: F) -> F:
        node = _node(name or getattr(fn, "__qualname__", repr(fn)), cat)
        use = node if args is None and enable is None else node(args=args, enable=enable)
        return use(fn)  # type: ignore[return-value]

    return decorate


def instant(name: str, cat: str = DEFAULT_CATEGORY, args: Optional[Dict[str, Any]] = None) -> None:
    """An instant event.

    Args:
        name: the event's name.
        cat: its category.
        args: arguments of the event.

    Returns:
        None.

    Example:
        >>> dftrace.instant("checkpoint_saved", "train", args={"epoch": 3})
    """
    _node(name, cat)._instant(args)


def counter(name: str, value: Union[int, float], series: Optional[str] = None,
            cat: str = DEFAULT_CATEGORY) -> None:
    """A counter sample: event `name`, args {series (default: name): value}.

    Args:
        name: the event's name.
        value: the sample.
        series: the argument's name (default: name).
        cat: the event's category.

    Returns:
        None.

    Example:
        >>> dftrace.counter("loss", 0.42, cat="train")
    """
    _node(name, cat)._counter(series or name, value)


class _Logger:
    def finalize(self) -> None:
        finalize()


class _DFTracerCompat:
    """pydftracer's `dftracer` object: dftracer.initialize_log(logfile, data_dir, process_id)."""

    @staticmethod
    def initialize_log(logfile: Optional[str] = None, data_dir: Optional[str] = None,
                       process_id: int = -1) -> _Logger:
        """Starts tracing as pydftracer's dftracer.initialize_log does (see initialize).

        Args:
            logfile: file-name prefix of the trace.
            data_dir: directories whose files' I/O is traced.
            process_id: accepted for pydftracer's signature; the process's own id is used.

        Returns:
            A logger whose finalize() closes the trace.

        Example:
            >>> from dftrace import dftracer
            >>> log = dftracer.initialize_log(logfile="traces/run", data_dir=None, process_id=-1)
            >>> log.finalize()
        """
        initialize(log_file=logfile, data_dir=data_dir)
        return _Logger()

    @staticmethod
    def get_instance() -> "_DFTracerCompat":
        """pydftracer's singleton access.

        Args:
            None.

        Returns:
            The `dftracer` object itself.

        Example:
            >>> dftracer.get_instance().finalize()
        """
        return dftracer

    @staticmethod
    def get_time() -> int:
        """pydftracer's dftracer.get_time(): the tracer's clock in microseconds, the unit of
        pydftracer's timestamps.

        Args:
            None.

        Returns:
            Monotonic microseconds (dftrace.now_ns() // 1000).

        Example:
            >>> start = dftracer.get_time()
            >>> elapsed_us = dftracer.get_time() - start
        """
        return _dftrace.now_ns() // 1000

    @staticmethod
    def finalize() -> None:
        """Writes everything and closes the trace file (dftrace.finalize).

        Args:
            None.

        Returns:
            None.

        Example:
            >>> dftracer.finalize()
        """
        finalize()


dftracer = _DFTracerCompat()
