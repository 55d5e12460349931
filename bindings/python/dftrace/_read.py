"""dftrace.read: traces into a pandas DataFrame through the C++ reader (bindings/python/ext/reader).

Every trace dftrace's tools read (dftrace and DFTracer traces, compressed or not) is read by
the extension `dftrace._reader` on a pool of threads; this module only wraps its columns (byte
buffers, no copy) as numpy arrays and pandas columns.
"""
import glob as _glob
import os
import sys

__all__ = ["read", "trace_files"]

_BASE = ("name", "cat", "pid", "tid", "ts", "dur", "ph", "level", "p_idx", "id")
_INTS = ("pid", "tid", "ts", "dur", "level", "p_idx", "id")


def trace_files(paths):
    """The trace files named by paths: a file, a directory (its *.pfw and *.pfw.gz, sorted), a
    glob pattern, or a list of these."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p)
                          if f.endswith(".pfw") or f.endswith(".pfw.gz"))
        elif os.path.exists(p):
            out.append(p)
        else:
            found = sorted(_glob.glob(p))
            if not found:
                raise FileNotFoundError("dftrace.read: no trace matches %r" % p)
            out += found
    return out


def _as_list(v):
    if v is None:
        return None
    return [v] if isinstance(v, str) else list(v)


def _ns(v, what):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise TypeError("dftrace.read: %s must be epoch nanoseconds (an int >= 0)" % what)
    return v


def _categorical(pd, np, codes, strings):
    # the reader's dictionaries hold distinct strings: the codes index them directly
    return pd.Categorical.from_codes(np.frombuffer(codes, dtype=np.int32), categories=strings)


def int_columns(raw):
    """The integer columns of a read_columns result as one (8, rows) int64 array over the
    reader's buffer (no copy): pid, tid, ts, dur, level, p_idx, id, rank."""
    import numpy as np
    rows, stride = raw["rows"], raw["ints_stride"]
    if not stride:
        return np.zeros((8, rows), dtype=np.int64)
    return np.ndarray((8, rows), dtype=np.int64, buffer=raw["ints"], strides=(stride * 8, 8))


def arg_floats(c):
    """A read argument that is no hash, as float64: NaN where a row has no number."""
    import numpy as np
    kind = np.frombuffer(c["kind"], dtype=np.uint8)
    v = np.frombuffer(c["v"], dtype=np.int64)
    out = np.where(kind == 1, v.astype(np.float64), v.view(np.float64))
    out[(kind != 1) & (kind != 2)] = np.nan
    return out


def _arg_column(pd, np, c, rows):
    if c["hash"]:  # hashes are text (as written), also where a read found none
        codes = np.frombuffer(c["s"], dtype=np.int32)
        return pd.Series(pd.Categorical.from_codes(codes, categories=c["strings"]))
    # kinds per row: 0 missing, 1 int64, 2 double (its bits), 3 text (its code)
    kind = np.frombuffer(c["kind"], dtype=np.uint8)
    v = np.frombuffer(c["v"], dtype=np.int64)
    present = kind != 0
    kinds = set((np.flatnonzero(np.bincount(kind, minlength=4)[1:]) + 1).tolist())
    if not kinds:
        return pd.Series(pd.arrays.IntegerArray(np.zeros(rows, dtype=np.int64),
                                                np.ones(rows, dtype=bool)))
    if kinds == {1}:  # integers: exact, missing values as <NA>
        return pd.Series(pd.arrays.IntegerArray(v, ~present))
    if kinds <= {1, 2}:
        return pd.Series(arg_floats(c))
    if kinds == {3}:
        codes = np.where(present, v, -1).astype(np.int32)
        return pd.Series(pd.Categorical.from_codes(codes, categories=c["strings"]))
    # mixed numbers and text: objects, each value as the trace wrote it
    out = np.empty(rows, dtype=object)
    d = v.view(np.float64)
    for r in range(rows):
        k = kind[r]
        out[r] = None if k == 0 else int(v[r]) if k == 1 else float(d[r]) if k == 2 \
            else c["strings"][v[r]]
    return pd.Series(out)


def read(paths, columns=None, cat=None, name=None, start=None, end=None, args=None,
         resolve=True, threads=0):
    """Reads traces into a pandas DataFrame, one row per event (metadata lines are not rows:
    they resolve hashes and ranks).

    paths: a file, directory, glob or a list of them. cat, name: a string or a list: keep only
    events of these categories or names. start, end: epoch nanoseconds: keep events with
    start <= ts < end (members outside the window are skipped by their DT fields without being
    inflated). args: argument keys to add as columns (integers exactly, as nullable Int64;
    hashes as text; strings with their JSON escapes decoded), or True: every argument key the
    events carry, in the order first seen (level and p_idx are columns already). An aggregated record (ph "A", or DFTracer 2.0.2's
    counter form of it) is one row of ph "A" whose dur is the total time of the calls it folds;
    the argument dft_cnt holds how many (derived for DFTracer 2.0.2, docs/format.md section 4). resolve: add `host` (from hhash) and `file` (from fhash) resolved through
    the traces' HH/FH lines, and `rank` from their PR lines (-1 when unknown). columns: the
    columns to return (default: name, cat, pid, tid, ts, dur, ph, level, p_idx, id, the args,
    and with resolve rank, host, file).

    ts and dur are int64 nanoseconds for every trace (a microsecond trace's values times 1000),
    exact whatever the trace's time_metric; one past 2^63-1 ns (an aggregated record whose
    calls add up past it, say) is held at 2^63-1 and counted in the problems. df.attrs holds the per-file units, the flight
    recorder's captured windows (`windows`: each trigger with its window, see windows()), the count of
    lines that were not valid JSON (`invalid_lines`, never fatal) and the problems found
    (damaged members, unreadable files), which are also printed, one line each, on stderr.
    """
    from . import _reader

    files = trace_files(paths)
    if args is True:  # every argument: a first pass over the files finds their keys
        args = _reader.read_columns(files, _as_list(cat), _as_list(name), _ns(start, "start"),
                                    _ns(end, "end"), [], int(threads), None, False, None,
                                    True)["arg_keys"]
        args = [k for k in args if k not in _BASE]  # level and p_idx are columns already
    elif args is False:
        args = None
    want_args, keys = _keys(args, resolve)
    raw = _reader.read_columns(files, _as_list(cat), _as_list(name), _ns(start, "start"),
                               _ns(end, "end"), keys, int(threads))
    return _dataframe(raw, files, want_args, keys, resolve, columns)


def _dataframe(raw, files, want_args, keys, resolve, columns):
    """read()'s DataFrame of a read_columns result, with its attrs."""
    defs, ranks = definitions(raw) if resolve else (None, None)
    df = frame(raw, want_args, keys, defs, ranks, columns)
    df.attrs["files"] = files
    df.attrs["time_units"] = dict(zip(files, raw["units"]))
    df.attrs["windows"] = windows(raw)
    return df


def read_with_partial(files, args, threads=0, steps=None, layers=None, names=False):
    """read(files, args=args, threads=threads) and dftrace._analysis.partial(files, steps,
    layers, threads) from one pass over the files (each inflated and parsed once, for both):
    (DataFrame, partial bytes for dftrace._analyze.merge_one). files: trace files (as
    trace_files gives them); args: a list of argument keys. names: also each (cat, name)'s
    figures, collected in the same pass, for dftrace._analysis.diff (`dftrace report --compare`):
    (DataFrame, partial, names bytes)."""
    from . import _reader

    want_args, keys = _keys(list(args), True)
    layers = os.fspath(layers) if layers is not None else None
    raw, partial, figures = _reader.read_with_analysis(files, keys, int(threads), steps, layers,
                                                       bool(names))
    df = _dataframe(raw, files, want_args, keys, True, None)
    return (df, partial, figures) if names else (df, partial)


def windows(raw):
    """The flight recorder's captured windows (docs/flight-recorder.md) of a read_columns
    result: one dict per trigger line, in time order, with pid, source, reason, time_ns,
    from_ns, to_ns (its trigger_end line's time, or an attach window's `to`; None for a window
    that ends with the trace) and after."""
    ends = {(pid, frm): t for kind, pid, _, _, t, frm, _, _ in raw.get("windows", ())
            if kind == "trigger_end"}
    out = []
    for kind, pid, source, reason, t, frm, to, after in raw.get("windows", ()):
        if kind != "trigger":
            continue
        end = to if to >= 0 else ends.get((pid, t))
        out.append(dict(pid=pid, source=source, reason=reason, time_ns=t,
                        from_ns=frm if frm >= 0 else None, to_ns=end, after=after))
    return sorted(out, key=lambda w: (w["time_ns"], w["pid"]))


def _keys(args, resolve):
    """The requested argument keys, and those read (with the hashes that resolve needs)."""
    want = list(dict.fromkeys(_as_list(args) or []))
    hidden = [k for k in ("hhash", "fhash") if k not in want] if resolve else []
    return want, want + hidden


def definitions(raw):
    """({"HH": {hash text: host}, "FH": {...}, "SH": {...}}, {pid: rank}) from a read's
    metadata lines."""
    import numpy as np
    defs = {}
    for t, v, s in zip(raw["hash_types"], raw["hash_values"], raw["hash_strings"]):
        defs.setdefault(t, {})[v] = s
    ranks = dict(zip(np.frombuffer(raw["rank_pid"], dtype=np.int64).tolist(),
                     np.frombuffer(raw["rank"], dtype=np.int64).tolist()))
    return defs, ranks


def frame(raw, want_args, keys, defs, ranks, columns):
    """The DataFrame of a read_columns result; hashes resolved through defs (None: neither
    hashes nor ranks resolved). The ranks are the reader's (read_columns' ranks argument)."""
    import numpy as np
    import pandas as pd
    rows = raw["rows"]
    for p in raw["problems"]:
        print("dftrace.read: " + p, file=sys.stderr)
    # The integer columns arrive as one (8, rows) block (the rank last, filled in by the reader
    # from the ranks it was given or found): one pandas block, no copy.
    resolve = defs is not None
    ints = int_columns(raw)
    df = pd.DataFrame((ints if resolve else ints[:7]).T,
                      columns=list(_INTS) + (["rank"] if resolve else []), copy=False)
    df.insert(0, "name", _categorical(pd, np, raw["name"], raw["names"]))
    df.insert(1, "cat", _categorical(pd, np, raw["cat"], raw["cats"]))
    df.insert(6, "ph", _categorical(pd, np, raw["ph"], raw["phs"]))
    raw_args = dict(zip(keys, raw["args"]))
    for k, key in enumerate(want_args):  # before rank: the columns stay in their order
        df.insert(len(_BASE) + k, key, _arg_column(pd, np, raw_args[key], rows).values)
    if resolve:
        for col, key, kind in (("host", "hhash", "HH"), ("file", "fhash", "FH")):
            # hash text -> its string, through the codes: no Python object per row
            c = raw_args[key]
            table = defs.get(kind, {})
            names = sorted({table[v] for v in c["strings"] if v in table})
            at = {n: k for k, n in enumerate(names)}
            # (the last entry is for code -1, no hash; small codes as int8, as pandas keeps them)
            remap = np.array([at.get(table.get(v), -1) for v in c["strings"]] + [-1],
                             dtype=np.int8 if len(names) < 127 else np.int32)
            codes = np.frombuffer(c["s"], dtype=np.int32)
            # take with wrap-around reads code -1 as the last entry, as indexing would, at
            # about 0.7 of its time (one of the few steps here that runs once per row)
            df[col] = pd.Categorical.from_codes(np.take(remap, codes, mode="wrap"),
                                                categories=names)
    if columns is None:
        columns = list(_BASE) + want_args + (["rank", "host", "file"] if resolve else [])
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError("dftrace.read: no column %s (add it to args=)" % ", ".join(missing))
    if list(columns) != list(df.columns):
        df = df[list(columns)]
    df.attrs["invalid_lines"] = raw["invalid"]
    df.attrs["problems"] = list(raw["problems"])
    return df
