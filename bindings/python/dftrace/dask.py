"""dftrace.dask: traces as a dask DataFrame, for more than one machine.

    import dftrace.dask
    ddf = dftrace.dask.read_pfw("traces/*.pfw.gz", args=["size"])
    ddf.groupby("cat").dur.sum().compute()

Partitions are planned from the files' DT fields without inflating anything (docs/format.md
section 3). When every file has them (dftrace's traces), each partition is a time window of
about `partition_bytes` of text across all files, read member by member (a member whose time
range misses the window is never inflated); the partitions are sorted by time and indexed by
`ts`, so the divisions are known. If the members' time ranges overlap so much that the windows
would inflate more than 1.5 times the text (members holding run-long events), or some file has
no DT fields (DFTracer's single-member traces), partitions are runs of members of one file and
whole files, grouped to about `partition_bytes`, with unknown divisions.

DT fields are hints, never trusted as they are: time windows are planned only when every
member's time range is ordered (first <= last, in 64-bit nanoseconds), its line count fits its
text, only a file's first member is without times, and the cuts come out strictly increasing;
otherwise partitions are runs of members (unknown divisions), which read every line. While a
window is read, every event is checked to lie in its member's DT range (and a member without
times, to hold no event): one outside means the windows may have missed events elsewhere, and
the partition fails with that error rather than return a partial result.

Hashes are resolved as dftrace.read resolves them, through the HH/FH definitions of each file,
which a first pass (one task per file, metadata lines only) gathers on the workers.
Each task reads with dftrace's C++ reader on `threads` threads (default 1: the dask workers are
the parallelism). Start a cluster as dask documents it (`dask scheduler`, `dask worker
tcp://HOST:8786` on each node, then `distributed.Client("tcp://HOST:8786")` in the notebook)
or `distributed.LocalCluster`; the traces must be readable at the same path on every worker.
"""
import dask
import dask.dataframe as dd

from . import _read

__all__ = ["read_pfw", "plan"]


def _parse_bytes(v):
    if isinstance(v, int):
        return v
    return dask.utils.parse_bytes(v)


def plan(paths, partition_bytes="256MiB"):
    """The partitions read_pfw would read: (divisions or None, [[(file, (first, last part),
    (start_ns, end_ns) or None), ...] per partition]).

    Args:
        paths: a file, directory, glob or a list of them.
        partition_bytes: the text each partition should read about ("256MiB" or a number).

    Returns:
        (divisions or None, partitions), each partition a list of (file, (first, last part),
        (start_ns, end_ns) or None).

    Example:
        >>> divisions, parts = dftrace.dask.plan("traces/*.pfw.gz")
        >>> len(parts)
        12
    """
    from . import _reader
    files = _read.trace_files(paths)
    target = max(1, _parse_bytes(partition_bytes))
    plans = [_reader.plan(f) for f in files]
    if files and all(p["described"] and _plausible(p) for p in plans):
        cuts, parts, reread = _time_windows(files, plans, target)
        if reread <= 1.5:
            return cuts, parts
        # Members spanning long times (a run-long event written last) would be inflated by
        # many windows: groups of members instead, divisions unknown.
    # Runs of members of one file, or whole files without DT fields (a stream's size is its
    # compressed size here: such a file says nothing more without inflating), grouped in order
    # to about target bytes of text.
    parts, cur, size = [], [], 0
    for f, p in zip(files, plans):
        units = []
        if p["described"]:
            first = 0
            acc = 0
            for k, x in enumerate(p["parts"]):
                acc += x[2]
                if acc >= target or k == len(p["parts"]) - 1:
                    units.append(((first, k), acc))
                    first, acc = k + 1, 0
        else:
            units.append((None, sum(x[2] for x in p["parts"])))
        for rng, n in units:
            if cur and size + n > target:
                parts.append(cur)
                cur, size = [], 0
            cur.append((f, rng, None))
            size += n
    if cur:
        parts.append(cur)
    return None, parts


_MAX_US = (2 ** 63 - 1) // 1000 - 1  # a DT time whose nanoseconds fit an int64 index


def _plausible(p):
    """Whether a file's DT fields can plan time windows: each member's range ordered and in
    range, no more lines than bytes of text, only the first member without times."""
    for k, (kind, lines, nbytes, lo, hi) in enumerate(p["parts"]):
        if kind != "member" or lines > nbytes:
            return False
        if lo == 0 and hi == 0:
            if k != 0:
                return False
            continue
        if not (0 < lo <= hi <= _MAX_US):
            return False
    return True


def _time_windows(files, plans, target):
    # Members as (ts_min_ns, ts_end_ns, bytes, file index, part index); windows cut where the
    # members' text, counted at each member's start, passes k * target.
    members = []
    for fi, p in enumerate(plans):
        for pi, (kind, lines, nbytes, lo, hi) in enumerate(p["parts"]):
            if lo == 0 and hi == 0:
                continue  # no line with a ts (a header): metadata only, read by the first pass
            members.append((lo * 1000, hi * 1000 + 1000, nbytes, fi, pi))
    if not members:
        return None, [[(f, None, None) for f in files]], 1.0
    members.sort()
    total = sum(m[2] for m in members)
    n = max(1, -(-total // target))
    cuts, acc, k = [members[0][0]], 0, 1
    for lo, hi, nbytes, fi, pi in members:
        if k < n and acc >= k * total / n and lo > cuts[-1]:
            cuts.append(lo)
            k += 1
        acc += nbytes
    cuts.append(max(m[1] for m in members))
    if any(b <= a for a, b in zip(cuts, cuts[1:])):
        return None, None, float("inf")  # no windows from these fields
    parts, read = [], 0
    for w in range(len(cuts) - 1):
        lo, hi = cuts[w], cuts[w + 1]
        reads = {}
        for mlo, mhi, nbytes, fi, pi in members:
            if mlo < hi and mhi > lo:
                first, last = reads.get(fi, (pi, pi))
                reads[fi] = (min(first, pi), max(last, pi))
        if w == 0:  # a first member without times is read (and checked) by the first window
            for fi, p in enumerate(plans):
                if p["parts"] and p["parts"][0][3] == 0 and p["parts"][0][4] == 0:
                    first, last = reads.get(fi, (0, 0))
                    reads[fi] = (0, last)
        for fi, (first, last) in reads.items():
            read += sum(plans[fi]["parts"][k][2] for k in range(first, last + 1))
        parts.append([(files[fi], rng, (lo, hi)) for fi, rng in sorted(reads.items())])
    return cuts, parts, read / max(1, total)


def _definitions(path):
    from . import _reader
    raw = _reader.read_columns([path], None, None, None, None, [], 1, None, True)
    return _read.definitions(raw)


def _merge_definitions(per_file):
    defs, ranks = {}, {}
    for d, r in per_file:
        for kind, table in d.items():
            defs.setdefault(kind, {}).update(table)
        ranks.update(r)
    return defs, ranks


def _partition(reads, cat, name, start, end, want_args, keys, threads, resolved, columns,
               indexed):
    from . import _reader
    files = [f for f, _, _ in reads]
    parts = [rng for _, rng, _ in reads]
    lo, hi = start, end
    window = reads[0][2] if reads and reads[0][2] else None
    if window:
        lo = window[0] if lo is None else max(lo, window[0])
        hi = window[1] if hi is None else min(hi, window[1])
    if lo is not None and hi is not None and hi < lo:
        hi = lo
    defs, ranks = resolved if resolved is not None else (None, None)
    raw = _reader.read_columns(files, cat, name, lo, hi, keys, threads, parts, False, ranks)
    if window and raw.get("outside_dt"):
        raise ValueError("dftrace.dask: %s" % "; ".join(
            p for p in raw["problems"] if "DT field" in p))
    df = _read.frame(raw, want_args, keys, defs, ranks, columns)
    df.attrs = {}
    if indexed:
        df = df.sort_values("ts", kind="stable")
        df.index = df["ts"].to_numpy()
        df.index.name = "time"
    else:
        df = df.reset_index(drop=True)
    return df


def read_pfw(paths, columns=None, cat=None, name=None, start=None, end=None, args=None,
             resolve=True, partition_bytes="256MiB", threads=1):
    """A dask DataFrame of the traces, with the columns and filters of dftrace.read (ts and dur
    in int64 nanoseconds). With DT fields in every file the index is the event time (`time`,
    epoch ns, sorted) and the divisions are known.

    Args:
        paths: a file, directory, glob or a list of them.
        columns: the columns to return.
        cat: keep only events of these categories.
        name: keep only events of these names.
        start: keep events with ts >= start (epoch nanoseconds).
        end: keep events with ts < end (epoch nanoseconds).
        args: argument keys to add as columns.
        resolve: add host, file and rank.
        partition_bytes: the text each partition reads about.
        threads: reader threads per partition.

    Returns:
        A dask DataFrame.

    Example:
        >>> ddf = dftrace.dask.read_pfw("/lustre/run42/*.pfw.gz", args=["size"])
        >>> ddf.groupby("name").dur.sum().compute()
    """
    from . import _reader  # noqa: F401  (fails here, not on the workers, when it is missing)
    want_args, keys = _read._keys(args, resolve)
    cat, name = _read._as_list(cat), _read._as_list(name)
    start, end = _read._ns(start, "start"), _read._ns(end, "end")
    cuts, parts = plan(paths, partition_bytes)
    resolved = None
    if resolve:
        files = sorted({f for p in parts for f, _, _ in p})
        resolved = dask.delayed(_merge_definitions)([dask.delayed(_definitions)(f) for f in files])
    indexed = cuts is not None
    tasks = [dask.delayed(_partition)(p, cat, name, start, end, want_args, keys, threads,
                                      resolved, columns, indexed) for p in parts]
    # The frame's shape from an empty read (no file), with the dtypes of integer arguments as
    # Int64; a partition whose argument holds text or floats converts on concatenation.
    meta = _read.frame(_reader.read_columns([], None, None, None, None, keys, 1), want_args, keys,
                       {} if resolve else None, {} if resolve else None, columns)
    meta.attrs = {}
    if indexed:
        meta.index = meta["ts"].to_numpy()
        meta.index.name = "time"
        return dd.from_delayed(tasks, meta=meta, divisions=cuts, verify_meta=False)
    return dd.from_delayed(tasks, meta=meta, verify_meta=False)
