"""dftrace.analyze: what bound a run, exactly: the document of `dftrace analyze --json`.

The figures come from the C++ engine of `dftrace analyze` (src/analysis) through the extension
`dftrace._analysis`, in two phases: `partial` reads a set of files and analyses every group they
hold (a rank's main process with the processes it started), `merge` joins partials into the
document (groups ordered, steps compared across ranks, the I/O summarised, the findings). On one
machine the whole input is one partial. With a Dask client the files are cut into batches that
keep each group's files together (placed by the processes their first MiB names, read by the
workers), one task per worker computes each batch's partial, and the client fetches them from
the workers and merges them: the same code on the same intervals, so the same document. A batch that
split a group (the files' headers, which place them, can mislead) is detected by the merge and
the run is redone as one task (a warning says so): never a partial answer.
"""
import gzip
import json
import os
import re
import warnings
import zlib

from ._read import trace_files
from ._steps import STEP_COLUMNS, StepItems, Steps

__all__ = ["analyze", "Analysis", "DamagedTraceError", "StepItems"]

# Text read from the start of each file to place it (its processes, ranks and parents).
_HEAD_BYTES = 1 << 20
# A line's pid (a number, or a string), and the lines that name a `start` or `PR` event.
_PID = re.compile(rb'"pid":\s*(?:(-?[0-9]+)|"([^"\\]*)")')
_TIE = re.compile(rb'"name":\s*"(?:start|PR)"')


class DamagedTraceError(RuntimeError):
    """Part of the input could not be read; `.result` holds the analysis of what was read, and
    `result["inputs"]["damaged"]` lists what was not."""

    def __init__(self, result):
        self.result = result
        lost = result["inputs"]["damaged"]
        what = "; ".join("%s: %s" % (d["file"] or "process", d["what"]) for d in lost[:3])
        more = " (and %d more)" % (len(lost) - 3) if len(lost) > 3 else ""
        super().__init__("dftrace.analyze: part of the input could not be read: %s%s; "
                         "allow_damaged=True accepts the results of what was read" % (what, more))


class Analysis(dict):
    """The document of `dftrace analyze --json` (a dict; src/analysis/README.md gives its
    schema), with pandas views of its tables."""

    def groups_frame(self):
        """One row per group: rank, host, pids, span_ns, steps, and a column per figure and
        layer (`union_ns.io`, `overlap_ns.compute+io`, ...)."""
        import pandas as pd
        rows = []
        for g in self["groups"]:
            row = {k: g[k] for k in ("rank", "host", "pids", "start_ns", "span_ns", "steps")}
            for k in ("union_ns", "overlap_ns", "unoverlapped_ns", "self_ns"):
                for layer, v in g[k].items():
                    row["%s.%s" % (k, layer)] = v
            rows.append(row)
        return pd.DataFrame(rows)

    def step_items(self):
        """The items of `steps` as a sequence, without making the whole list: a StepItems (each
        item a dict made when indexed; slices and iteration a range at a time) while
        r["steps"]["items"] has not been read, else that list."""
        steps = self["steps"]
        items = dict.get(steps, "items") if isinstance(steps, dict) else None
        return items if items is not None else steps["items"]

    def steps_frame(self):
        """One row per step: rank, group, index, step, epoch, ts_ns, dur_ns and its split
        (compute_ns, comm_ns, io_ns, data_ns, other_ns: they sum to dur_ns). Built from the
        merged steps' columns, with no dict per step, unless steps.items was already asked for
        as a list (then from that list, as it may have been changed)."""
        import pandas as pd
        items = self.step_items()
        if isinstance(items, StepItems):
            return items.frame()
        return pd.DataFrame(items, columns=STEP_COLUMNS)


def analyze(paths, client=None, steps=None, layers=None, allow_damaged=False, rules=None,
            threads=0):
    """Analyses traces as `dftrace analyze --json` does, on this machine or on a Dask cluster.

    Args:
        paths: a trace file, a directory (its *.pfw and *.pfw.gz), a glob, or a list of these.
        client: a `distributed.Client`; None analyses here.
        steps: the step events' name (`--steps NAME`); None: `step` events, else `.iter` ones.
        layers: a YAML file of layers (`--layers FILE`); None: the documented defaults.
        allow_damaged: return the results of what could be read when part of the input could
            not be (listed in `inputs.damaged`); without it that raises DamagedTraceError.
        rules: a YAML file of finding rules added to the built-in ones (`--rules FILE`).
        threads: reader threads per partial (0: the machine's cores).

    Returns:
        An Analysis: the JSON document as a dict, with groups_frame(), steps_frame() and
        step_items().

    Example:
        >>> r = dftrace.analyze("traces/")
        >>> r["steps"]["bound_by"], r.steps_frame().dur_ns.describe()
    """
    from . import _analysis
    return _result(_document(paths, client, steps, layers, rules, threads, _analysis.merge_doc),
                   allow_damaged)


def _result(doc, allow_damaged):
    """The Analysis of merge_doc's (text, steps held): the items stay in the extension's
    store until asked for (StepItems), no text to parse and no dict per step made here."""
    text, held = doc
    result = Analysis(json.loads(text))
    steps = result["steps"] = Steps(result["steps"])
    dict.__setitem__(steps, "items", StepItems(held))  # the text's place for them: `[]`
    if not allow_damaged and not result["inputs"]["complete"]:
        raise DamagedTraceError(result)
    return result


def from_partial(partial, steps=None, layers=None, allow_damaged=False, rules=None):
    """analyze() of the files whose partial dftrace._read.read_with_partial returned with their
    DataFrame (one pass over the files for both): the same document, from the same code.

    Args:
        partial: the bytes of read_with_partial (made with the same steps and layers).
        steps, layers, allow_damaged, rules: as analyze() takes them.

    Returns:
        An Analysis.

    Example:
        >>> df, part = dftrace._read.read_with_partial(files, ["ret"])
        >>> r = from_partial(part)
    """
    from . import _analysis
    layers = os.fspath(layers) if layers is not None else None
    rules = os.fspath(rules) if rules is not None else None
    return _result(_analysis.merge_doc([partial], steps, layers, rules), allow_damaged)


def analyze_text(paths, client=None, steps=None, layers=None, rules=None, threads=0):
    """The JSON text of `dftrace analyze --json`, as the command prints it.

    Args:
        paths, client, steps, layers, rules, threads: as analyze() takes them.

    Returns:
        The document (str); damaged input is listed in its inputs.damaged, never raised.

    Example:
        >>> doc = json.loads(analyze_text(["t-1.pfw.gz"]))
    """
    from . import _analysis
    return _document(paths, client, steps, layers, rules, threads, _analysis.merge)


def _document(paths, client, steps, layers, rules, threads, merge):
    """The partials computed (here or on the cluster) and joined by merge: _analysis.merge (the
    text), _analysis.merge_doc (the text without the step items, and the items) or
    _analysis.merge_text (the text as bytes, and inputs.complete: the command's)."""
    from . import _analysis
    files = trace_files(paths)
    if not files:
        raise FileNotFoundError("dftrace.analyze: no trace files in %r" % (paths,))
    layers = os.fspath(layers) if layers is not None else None
    rules = os.fspath(rules) if rules is not None else None
    if client is None:
        parts = [_analysis.partial(files, steps, layers, threads)]
        return merge(parts, steps, layers, rules)
    return _on_cluster(client, files, steps, layers, rules, threads, merge)


def _partial(files, steps, layers, threads):
    """A task: one batch's partial (bytes), computed on a worker."""
    from . import _analysis
    return _analysis.partial(files, steps, layers, threads)


def _on_cluster(client, files, steps, layers, rules, threads, merge):
    batches = _place(client, files)
    parts = _compute(client, batches, steps, layers, threads)
    return _join(client, files, parts, steps, layers, rules, threads, merge)


def _workers(client):
    return sorted(client.scheduler_info().get("workers", {}))


def _heads(files):
    """A task: _head_processes of each file."""
    return [_head_processes(f) for f in files]


def _place(client, files):
    """files cut into one batch per worker, each group's files together (batches_for). The
    files' heads are read on the workers, a share each, not by this process: reading them is
    the larger part of placing, and the client's part of a run is serial."""
    workers = _workers(client)
    if len(workers) < 2:
        return batches_for(files, 1, [{} for _ in files])  # one batch: no head to read
    shares = [files[i::len(workers)] for i in range(len(workers))]
    futures = [client.submit(_heads, share, pure=False, workers=[w], allow_other_workers=True)
               for w, share in zip(workers, shares) if share]
    heads = dict(zip(sum(shares, []), sum(client.gather(futures), [])))
    return batches_for(files, len(workers), [heads[f] for f in files])


def _compute(client, batches, steps, layers, threads):
    """The batches' partials, one task per batch, each on its own worker."""
    workers = _workers(client)
    futures = [client.submit(_partial, b, steps, layers, threads, pure=False,
                             workers=[workers[i % len(workers)]] if workers else None,
                             allow_other_workers=True)
               for i, b in enumerate(batches)]
    return _Arrivals(client, futures, _direct(client, workers))


class _Arrivals:
    """The partials, fetched one at a time in batch order as the merge decodes them: each
    future let go once fetched, so neither this process nor its worker holds every partial's
    bytes at once (the merge reads __length_hint__ to share its step rows' budget)."""

    def __init__(self, client, futures, direct):
        self._client, self._futures, self._direct = client, futures, direct

    def __length_hint__(self):
        return len(self._futures)

    def __iter__(self):
        for i in range(len(self._futures)):
            future, self._futures[i] = self._futures[i], None
            part = self._client.gather(future, direct=self._direct)
            del future
            yield part
            del part


def _host(address):
    return address.split("://")[-1].rsplit(":", 1)[0]


def _direct(client, workers):
    """Whether to fetch the partials from the workers themselves: Dask's default (through the
    scheduler: one more copy of every partial, and the LocalCluster's scheduler runs in the
    client's process) unless the client chose, or every worker is on the scheduler's host, which
    the client reaches."""
    if client.direct_to_workers is not None:
        return client.direct_to_workers
    return bool(workers) and all(_host(w) == _host(client.scheduler.address) for w in workers)


def _join(client, files, parts, steps, layers, rules, threads, merge):
    """The partials merged; a batch that split a group: the files analysed again as one."""
    from . import _analysis
    try:
        return merge(parts, steps, layers, rules)
    except _analysis.SplitGroups as e:
        warnings.warn("dftrace.analyze: %s; analysed again as one task" % e, RuntimeWarning,
                      stacklevel=5)
    part = client.submit(_partial, files, steps, layers, threads, pure=False).result()
    return merge([part], steps, layers, rules)


def _head_processes(path):
    """(pid, ppid or None, rank or None) of the processes named at the start of a file, as
    far as its first _HEAD_BYTES of text say; only a hint for placing files."""
    procs = {}
    opener = gzip.open if path.endswith(".gz") else open
    chunks, total = [], 0
    try:  # what could be read: a damaged file is placed by its readable start
        with opener(path, "rb") as f:
            while total < _HEAD_BYTES:
                c = f.read1(65536)
                if not c:
                    break
                chunks.append(c)
                total += len(c)
    except (OSError, EOFError, zlib.error):
        pass
    head = b"".join(chunks)
    # Every process named (its pid), then only the lines that tie processes (`start`, `PR`)
    # parsed whole: parsing every line of the head cost the client a second on 48 files.
    # Each distinct pid once, in order of appearance (findall and fromkeys: no match object
    # or decode per line, which was most of the head's CPU).
    for num, text in dict.fromkeys(_PID.findall(head)):
        procs.setdefault((num or text).decode("utf-8", "replace"), [None, None])
    # Each line that names one (found by the name, then taken whole: a pattern anchored at the
    # line's start scanned every line of the head, a third of a second on 48 files).
    end = 0
    for m in _TIE.finditer(head):
        if m.start() < end:
            continue  # a second name in a line already taken
        end = head.find(b"\n", m.end())
        end = len(head) if end < 0 else end
        line = head[head.rfind(b"\n", 0, m.start()) + 1:end].strip().rstrip(b",")
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict) or ev.get("pid") is None:
            continue
        p = procs.setdefault(str(ev["pid"]), [None, None])
        args = ev.get("args") or {}
        if ev.get("name") == "start" and "ppid" in args:
            p[0] = str(args["ppid"])
        elif ev.get("name") == "PR" and args.get("name") == "rank":
            p[1] = args.get("value")
    return procs


def batches_for(files, n, heads=None):
    """files cut into at most n batches of about equal compressed size, each group's files in
    one batch as far as the files' headers tell (a process with the pid of another file's
    process, or whose parent is another file's process of its rank or none, goes with it).
    heads: each file's _head_processes, when already read."""
    if heads is None:
        heads = [_head_processes(f) for f in files]
    parent = list(range(len(files)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    where = {}  # pid -> (file, rank)
    for i, h in enumerate(heads):
        for pid, (_, rank) in h.items():
            if pid in where:
                parent[find(i)] = find(where[pid][0])
            where.setdefault(pid, (i, rank))
    for i, h in enumerate(heads):
        for pid, (ppid, rank) in h.items():
            if ppid in where and ppid != pid:
                j, prank = where[ppid]
                if rank is None or rank == prank:
                    parent[find(i)] = find(j)
    clusters = {}
    for i in range(len(files)):
        clusters.setdefault(find(i), []).append(files[i])

    def size(fs):
        return sum(os.path.getsize(f) if os.path.exists(f) else 0 for f in fs)

    batches = [[] for _ in range(min(n, len(clusters)))]
    loads = [0] * len(batches)
    for c in sorted(clusters.values(), key=lambda c: (-size(c), c)):
        k = loads.index(min(loads))
        batches[k] += c
        loads[k] += size(c)
    return [b for b in batches if b]
