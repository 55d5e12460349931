"""dftrace.report's sections from `dftrace analyze`: findings, overlap, what bound the steps,
stragglers, collectives, the I/O characterisation and, with --compare, `dftrace diff`.

Every figure comes from the analysis engine (dftrace.analyze, the document of `dftrace analyze
--json`) or from the document of `dftrace diff --json` (made by the same engine in this
process); nothing here computes them again. Times in the tables are the document's
nanoseconds shown in ms with 3 decimals (exact to the microsecond), counts and bytes as
integers. A section whose subject the traces lack says why in one line.
"""
import json
import os

from .report import (_MAX_ROWS, _MAX_SERIES, _MAX_TABLE, _cut_note, _label, _svg, _table,
                     _thin, _ticks)

_PARTS = ("compute", "comm", "io", "data", "other")
_PART_TITLES = {"compute": "compute", "comm": "comm not hidden by compute",
                "io": "io not hidden", "data": "data wait not hidden", "other": "other"}
_BUCKETS = ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M",
            "100M-1G", "1G+")


def _ms(ns):
    """ns (an integer) as ms with 3 decimals, as every table of these sections shows time."""
    return "%.3f" % (ns / 1e6)


def _share(part, whole):
    """part of whole in percent with one decimal ("-" when whole is 0)."""
    return "%.1f%%" % (100.0 * part / whole) if whole else "-"


def _group_label(g):
    """A group's label: its rank, else its root process's pid."""
    return "rank %d" % g["rank"] if g.get("rank") is not None else "pid %d" % g["pids"][0]


def _who(r, item):
    """The label of the group a step, a straggler or a bandwidth row belongs to."""
    return _group_label(r["groups"][item["group"]])


def _findings(r):
    fs = r["findings"]
    if not fs:
        return "<p>No rule fired: nothing these traces hold reaches a rule's threshold " \
               "(docs/analysis.md lists the rules).</p>"
    rows = [(f["severity"], f["rule"], f["metric"], "%.3f" % f["value"], f["suggestion"])
            for f in fs[:_MAX_TABLE]]
    return (_table(["severity", "rule", "metric", "value", "suggestion"], rows) +
            _cut_note(_MAX_TABLE, len(fs), "findings listed (the most severe)"))


def _overlap(r):
    import matplotlib.pyplot as plt
    groups, layers = r["groups"], r["layers"]
    if not groups:
        return "<p>No groups: these traces hold no complete events.</p>"
    others = [l for l in layers if l != "compute"]
    pairs = sorted({k for g in groups for k, v in g["overlap_ns"].items() if v})
    head = (["group", "span ms"] + ["%s ms" % l for l in layers] +
            ["%s not hidden ms" % l for l in others] + ["%s ms" % p for p in pairs])
    rows = []
    for g in groups[:_MAX_TABLE]:
        rows.append([_group_label(g), _ms(g["span_ns"])] +
                    [_ms(g["union_ns"].get(l, 0)) for l in layers] +
                    [_ms(g["unoverlapped_ns"].get(l, 0)) for l in others] +
                    [_ms(g["overlap_ns"].get(p, 0)) for p in pairs])
    span = sum(g["span_ns"] for g in groups)

    def pct(key, l):
        return 100.0 * sum(g[key].get(l, 0) for g in groups) / span if span else 0.0
    own = [pct("union_ns", l) if l == "compute" else pct("unoverlapped_ns", l) for l in layers]
    hid = [0.0 if l == "compute" else pct("union_ns", l) - o for l, o in zip(layers, own)]
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(layers) + 1.5))
    y = list(range(len(layers)))
    colors = ["tab:blue" if l == "compute" else "tab:red" for l in layers]
    ax.barh(y, own, color=colors, label="compute / not hidden by compute")
    ax.barh(y, hid, left=own, color="tab:gray", label="hidden by compute (overlap)")
    _ticks(ax, "y", layers)
    ax.set_xlabel("% of the groups' spans (summed over groups)")
    ax.set_title("Each layer's time (union over threads and processes)")
    ax.legend(fontsize=8)
    return (_svg(fig) + _table(head, rows) +
            _cut_note(_MAX_TABLE, len(groups), "groups in the table (in rank order)"))


def _steps_frame(r):
    """The steps' items as a DataFrame (one row per step: group, index, dur_ns and its parts)."""
    import pandas as pd
    cols = ["group", "index", "step", "ts_ns", "dur_ns"] + [p + "_ns" for p in _PARTS]
    if hasattr(r, "steps_frame"):  # an Analysis: from its steps' columns, no dict per step
        return r.steps_frame()[cols]
    return pd.DataFrame.from_records(r["steps"]["items"], columns=cols)


def _step_means(r):
    """(x, [mean ns of each part], thin): the mean over groups of each part's time per step
    index; past _MAX_POINTS indexes, the mean over each run of `thin` consecutive indexes too,
    x being the run's first index."""
    f = _steps_frame(r)
    thin = _thin(int(f["index"].max()) + 1)
    m = f.groupby(f["index"].to_numpy() // thin)[[p + "_ns" for p in _PARTS]].mean()
    return m.index.to_numpy() * thin, [m[p + "_ns"].to_numpy() for p in _PARTS], thin


def _bound_by(r):
    import matplotlib.pyplot as plt
    st = r["steps"]
    if not st["count"]:
        return "<p>No steps: these traces hold no step events (<code>compute.step</code>) and " \
               "no <code>.iter</code> events, so step time can not be split " \
               "(<code>dftrace analyze --steps NAME</code> names another event).</p>"
    total, bb = st["total_ns"], st["bound_by"]
    rows = [(_PART_TITLES[p], _ms(bb[p + "_ns"]), _share(bb[p + "_ns"], total)) for p in _PARTS]
    rows.append(("all steps", _ms(total), _share(total, total)))
    x, means, thin = _step_means(r)
    fig, ax = plt.subplots(figsize=(12, 4))
    ax.stackplot(x, *[m / 1e6 for m in means], labels=[_PART_TITLES[p] for p in _PARTS],
                 step="mid" if len(x) > 1 else None)
    ax.set_xlabel("step (index in its rank)")
    ax.set_ylabel("ms (mean over ranks%s)" % (" and each %d steps" % thin if thin > 1 else ""))
    ax.set_title("What bound each step: its time split exclusively")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    summary = _table(["steps", "source", "p50 ms", "p99 ms"],
                     [(st["count"], st["source"], _ms(st["p50_ns"]), _ms(st["p99_ns"]))])
    return summary + _svg(fig) + _table(["part", "ms", "share of step time"], rows)


def _straggler_plot(r):
    import matplotlib.pyplot as plt
    import pandas as pd
    f, strag = _steps_frame(r), r["stragglers"]
    slow = {s["group"] for s in strag}
    worst = f.groupby("group").dur_ns.max()
    order = sorted(worst.index, key=lambda g: (g not in slow, -worst[g]))  # a key per rank
    shown = order[:_MAX_SERIES]
    mine = f[f.group.isin(shown)]
    # A rank's steps past _MAX_POINTS: the slowest of each run of `thin` consecutive steps.
    thin = _thin(int(mine["index"].max()) + 1)
    pts = mine.groupby(["group", mine["index"].to_numpy() // thin]).dur_ns.max()
    fig, ax = plt.subplots(figsize=(12, 4))
    for g in shown:
        p = pts.loc[g]
        ax.plot(p.index.to_numpy() * thin, p.to_numpy() / 1e6, linewidth=0.8,
                label=_label(_group_label(r["groups"][g])))
    if strag:  # a straggler's step, found by its time
        marks = pd.DataFrame(strag, columns=["group", "dur_ns"]).merge(
            f[["group", "dur_ns", "index"]], on=["group", "dur_ns"]).drop_duplicates(
                ["group", "dur_ns"])
        if len(marks):
            ax.plot(marks["index"].to_numpy(), marks.dur_ns.to_numpy() / 1e6, "rx",
                    markersize=9, label="straggler")
    ax.set_xlabel("step (index in its rank)")
    ax.set_ylabel("ms" + (" (the slowest of each %d steps)" % thin if thin > 1 else ""))
    ax.set_title("Step time per rank (stragglers marked)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _svg(fig) + _cut_note(_MAX_SERIES, len(order), "ranks drawn (stragglers first, then "
                                                          "the slowest)")


def _stragglers(r):
    imb, strag = r["imbalance"], r["stragglers"]
    if not r["steps"]["count"]:
        return "<p>No steps in these traces: there is nothing to compare across ranks.</p>"
    if not imb["steps_compared"]:
        return "<p>No step was taken by more than one rank: stragglers are steps compared " \
               "across ranks.</p>"
    worst = imb.get("worst") or {}
    head = _table(["steps compared", "slowest / median: max", "mean", "p50", "worst step",
                   "worst rank"],
                  [(imb["steps_compared"], "%.3f" % imb["max_over_median_max"],
                    "%.3f" % imb["max_over_median_mean"], "%.3f" % imb["max_over_median_p50"],
                    worst.get("step", "-"), worst.get("rank", "-"))])
    rule = "a step over %g times its median across ranks and %s ms more" % (
        imb["factor"], _ms(imb["margin_ns"]))
    if not strag:
        return head + "<p>No straggler (%s).</p>" % rule
    rows = [(_who(r, s), s["step"], _ms(s["dur_ns"]), _ms(s["median_ns"]),
             "%.2f" % (s["dur_ns"] / s["median_ns"]) if s["median_ns"] else "-")
            for s in strag[:_MAX_TABLE]]
    return (head + _straggler_plot(r) + "<p>%d straggler step(s): %s.</p>" % (len(strag), rule) +
            _table(["straggler", "step", "ms", "median ms", "over median"], rows) +
            _cut_note(_MAX_TABLE, len(strag), "stragglers listed"))


def _histograms(io):
    import matplotlib.pyplot as plt
    acc = io["access_sizes"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.5))
    for ax, kind in zip(axes, ("read", "write")):
        ax.bar(range(len(_BUCKETS)), [acc[kind].get(b, 0) for b in _BUCKETS],
               color="tab:blue" if kind == "read" else "tab:orange")
        _ticks(ax, "x", _BUCKETS)
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        ax.set_title("%s calls by bytes moved" % kind)
        ax.set_ylabel("calls")
    fig.tight_layout()
    rows = [(b, acc["read"].get(b, 0), acc["write"].get(b, 0)) for b in _BUCKETS]
    nb = acc.get("not_binned", {})
    rows.append(("not binned (size unknown)", nb.get("read", 0), nb.get("write", 0)))
    common = _table(["common access size (bytes)", "calls"],
                    [(c["size"], c["count"]) for c in io["common_access_sizes"]])
    return "<h3>Access sizes</h3>" + _svg(fig) + _table(["bucket", "reads", "writes"], rows) + \
        common


def _heat_map(r, io):
    import matplotlib.pyplot as plt
    import numpy as np
    bw = io["bandwidth"]
    gs = [g for g in bw["groups"] if any(g["read_bytes"]) or any(g["write_bytes"])]
    if not gs:
        return "<h3>I/O over time per rank</h3><p>No read or write moved a byte: no heat map.</p>"
    gs.sort(key=lambda g: -(sum(g["read_bytes"]) + sum(g["write_bytes"])))
    shown = sorted(gs[:_MAX_ROWS], key=lambda g: (g.get("rank") is None, g.get("rank") or 0,
                                                  g["group"]))
    n = max(max(len(g["read_bytes"]), len(g["write_bytes"])) for g in shown)
    grid = np.zeros((len(shown), n))
    for y, g in enumerate(shown):
        grid[y, :len(g["read_bytes"])] += g["read_bytes"]
        grid[y, :len(g["write_bytes"])] += g["write_bytes"]
    width = bw["bin_ns"] / 1e9
    fig, ax = plt.subplots(figsize=(12, 0.35 * len(shown) + 1.8))
    im = ax.imshow(grid / 1e6, aspect="auto", interpolation="nearest", cmap="viridis",
                   extent=(0, n * width, len(shown) - 0.5, -0.5))
    _ticks(ax, "y", [_who(r, g) for g in shown])
    ax.set_xlabel("seconds from the first I/O bin (bins of %s ms)" % _ms(bw["bin_ns"]))
    ax.set_title("Bytes read and written per rank over time")
    fig.colorbar(im, ax=ax, label="MB per bin")
    rows = [(_who(r, g), sum(g["read_bytes"]), sum(g["write_bytes"])) for g in shown]
    return ("<h3>I/O over time per rank</h3>" + _svg(fig) +
            _table(["rank", "bytes read", "bytes written"], rows) +
            _cut_note(_MAX_ROWS, len(gs), "ranks drawn (those that moved the most bytes)"))


def _io_files(io):
    fs = io["files"]
    rows = [(f["file"], f["read_bytes"], f["reads"], f["sequential_reads"], f["write_bytes"],
             f["writes"], f["sequential_writes"], f["metadata_ops"],
             ",".join(str(x) for x in f["ranks"][:16]) + (" ..." if len(f["ranks"]) > 16 else ""),
             "shared" if f["shared"] else "unique") for f in fs[:_MAX_TABLE]]
    return ("<h3>Files (most bytes first)</h3>" +
            _table(["file", "bytes read", "reads", "sequential", "bytes written", "writes",
                    "sequential", "metadata calls", "ranks", "shared"], rows) +
            _cut_note(_MAX_TABLE, len(fs), "files listed"))


def _io(r):
    io = r["io"]
    if not (io["reads"] or io["writes"] or io["metadata_ops"]):
        return "<p>No I/O calls (POSIX, STDIO, MPIIO, H5) in these traces.</p>"
    unk = io["offset_unknown"]
    head = _table(["bytes read", "reads", "read ms", "bytes written", "writes", "write ms",
                   "metadata calls", "metadata ms", "data ms", "offset unknown (r/w)"],
                  [(io["read_bytes"], io["reads"], _ms(io["read_ns"]), io["write_bytes"],
                    io["writes"], _ms(io["write_ns"]), io["metadata_ops"], _ms(io["metadata_ns"]),
                    _ms(io["data_ns"]), "%d/%d" % (unk["read"], unk["write"]))])
    return head + _copies_note(io) + _histograms(io) + _heat_map(r, io) + _io_files(io)


def _copies_note(io):
    """What in-kernel copies moved that no file's figures hold, when anything: the copies whose
    trace names neither end, and the bytes whose other end is not a traced file."""
    c = io.get("copies", {})
    note = ""
    if c.get("unattributed_calls"):
        note += ("<p>%d bytes in %d in-kernel copies are not attributed: their trace names "
                 "neither end, so they count as neither read nor written.</p>"
                 % (c["unattributed_bytes"], c["unattributed_calls"]))
    if c.get("read_to_no_file_bytes") or c.get("written_from_no_file_bytes"):
        note += ("<p>In-kernel copies with one end not a traced file (a pipe, a socket, an "
                 "untraced file): %d bytes read into none, %d bytes written from none.</p>"
                 % (c["read_to_no_file_bytes"], c["written_from_no_file_bytes"]))
    return note


def diff(base, files, partial=None, names=None):
    """The document of `dftrace diff --json --allow-damaged` of the run `base` (a trace, a
    directory, a glob, or a list of them) against `files`, computed in this process by the
    same engine (dftrace._analysis.diff). partial and names: what
    dftrace._read.read_with_partial(files, ..., names=True) gave of the new run, which is then
    not read again; None: `files` are read here."""
    from ._read import trace_files
    try:
        from . import _analysis
    except ImportError as e:
        raise ValueError("--compare needs dftrace's extension _analysis: %s" % e) from None
    what = base
    if isinstance(base, str) and not os.path.exists(base) and "," in base:
        base = base.split(",")  # a comma-separated list, as `dftrace diff` takes one
    base_files = trace_files(base)
    if not base_files:
        raise ValueError("--compare: no trace files in %s" % what)
    if not files:
        raise ValueError("--compare: the report has no trace files to compare")
    if partial is None or names is None:
        partial = names = None
    return json.loads(_analysis.diff(base_files, list(files), partial, names, None, None, 0))


def _num(x):
    if x is None:
        return "-"
    return str(int(x)) if float(x).is_integer() else "%.3f" % x


def _compare(base, files, partial=None, names=None):
    d = diff(base, files, partial, names)
    rows = [(k, _num(m["base"]), _num(m["new"]), _num(m["change"]),
             "-" if m["change_pct"] is None else "%+.2f%%" % m["change_pct"])
            for k, m in d["metrics"].items()]
    names = sorted(d["names"], key=lambda n: -abs(((n["new"] or {}).get("total_ns", 0)) -
                                                  ((n["base"] or {}).get("total_ns", 0))))
    nrows = [(n["name"], (n["base"] or {}).get("calls", "-"), (n["new"] or {}).get("calls", "-"),
              _ms((n["base"] or {}).get("total_ns", 0)), _ms((n["new"] or {}).get("total_ns", 0)))
             for n in names[:_MAX_TABLE]]
    out = "<p>Base: %s (%d events); new: these traces (%d events).</p>" % (
        _html(base), d["base"]["events"], d["new"]["events"])
    out += _table(["metric", "base", "new", "change", "change %"], rows)
    out += "<h3>Names (largest change in total time first)</h3>"
    out += _table(["cat/name", "base calls", "new calls", "base total ms", "new total ms"], nrows)
    out += _cut_note(_MAX_TABLE, len(names), "names listed")
    for key, what in (("total_ns", "The durations of %s reach 2^64-1 ns"),
                      ("calls", "The calls of %s reach 2^64-1")):
        held = [n["name"] for n in d["names"] for side in ("base", "new")
                if (n[side] or {}).get(key) == 2 ** 64 - 1]
        if held:  # as `dftrace diff` lists them
            out += ("<p>" + what + " in a run: held there, not exact.</p>") % _html(
                ", ".join(sorted(set(held))[:_MAX_TABLE]))
    for what in ("appeared", "vanished"):
        if d[what]:
            out += "<p>%s: %s</p>" % (what.capitalize(), _html(", ".join(d[what][:_MAX_TABLE])))
    return out


def _html(text):
    import html
    return html.escape(_label(text, 200))


def _us(ns):
    """Epoch ns as the trace lines and `dftrace stat` show them: integer us (3 decimals when a
    ns trace has them); "-" for None."""
    if ns is None:
        return "-"
    return str(ns // 1000) if ns % 1000 == 0 else "%.3f" % (ns / 1000)


def _split(row):
    """A step's (or steps' summed) parts as ms cells, its bound_by (the largest part) last."""
    parts = [int(row[p + "_ns"]) for p in _PARTS]
    return [_ms(x) for x in parts] + [_PARTS[parts.index(max(parts))] if any(parts) else "-"]


def _window_steps(f, w):
    """(trigger step row or None, the window's step rows) of one window, among its group's
    steps f: the trigger step of a slow-step window is the step that ends nearest the trigger
    (a slow step triggers at its end)."""
    end = w["to_ns"] if w["to_ns"] is not None else f.ts_ns.add(f.dur_ns).max() + 1
    start = w["from_ns"] if w["from_ns"] is not None else w["time_ns"]
    inside = f[(f.ts_ns < end) & (f.ts_ns + f.dur_ns > start)]
    trig = None
    if w["source"] == "slow_step" and len(f):
        trig = f.loc[(f.ts_ns + f.dur_ns - w["time_ns"]).abs().idxmin()]
    return trig, inside


def _windows(r, wins):
    """The flight recorder's captured windows: each trigger and its window, a slow step beside
    its process's median step, and their bound_by."""
    import matplotlib.pyplot as plt
    group_of = {p: i for i, g in enumerate(r["groups"]) for p in g["pids"]}
    import pandas as pd
    f = _steps_frame(r)
    rows, split, bars = [], [], []
    triggers = {}  # group -> index of its trigger steps (not the median's candidates)
    found = []
    for k, w in enumerate(wins):
        g = group_of.get(w["pid"])
        mine = f[f.group == g] if g is not None else f.iloc[:0]
        trig, inside = _window_steps(mine, w)
        found.append((g, mine, trig, inside))
        if trig is not None:
            triggers.setdefault(g, set()).add(trig.name)
        rows.append((k + 1, "rank %d" % r["groups"][g]["rank"] if g is not None and
                     r["groups"][g].get("rank") is not None else "pid %d" % w["pid"],
                     w["source"], w["reason"], _us(w["time_ns"]), _us(w["from_ns"]),
                     _us(w["to_ns"]) if w["to_ns"] is not None else "end of trace",
                     w["after"] or "-", len(inside)))
    for k, (g, mine, trig, inside) in enumerate(found):
        rest = mine.drop(index=list(triggers.get(g, ())))
        med = rest.sort_values(["dur_ns", "ts_ns"], kind="stable").iloc[(len(rest) - 1) // 2] \
            if len(rest) else None
        what = []  # (label, step or None for summed steps, figures)
        if trig is not None:
            what.append(("trigger step", trig, trig))
        if len(inside):  # summed as Python integers, held at 2^64-1 (pandas' int64 wraps)
            what.append(("window's %d step(s)" % len(inside), None,
                         pd.Series({c: min(sum(int(x) for x in inside[c].tolist()), 2 ** 64 - 1)
                                    for c in ["dur_ns"] + [p + "_ns" for p in _PARTS]})))
        if med is not None:
            what.append(("median step", med, med))
        for label, one, row in what:
            step = "-" if one is None else ("#%d" % one["index"] if pd.isna(one["step"])
                                            else _num(one["step"]))
            split.append([k + 1, label, step, _ms(int(row["dur_ns"]))] + _split(row))
        if what[:1] and what[0][0] != "median step":
            bars.append(("window %d: %s" % (k + 1, what[0][0]), what[0][2]))
            if med is not None:
                bars.append(("window %d: median step" % (k + 1), med))
    out = _table(["window", "process", "source", "reason", "trigger at (us)", "from (us)",
                  "to (us)", "full detail after", "steps in the window"], rows[:_MAX_TABLE])
    out += _cut_note(_MAX_TABLE, len(rows), "windows listed (in time order)")
    if not split:
        return out + "<p>No step lies in these windows: no step to compare with the median " \
                     "step (<code>dftrace analyze --steps NAME</code> names another event).</p>"
    bars = bars[:_MAX_ROWS]
    fig, ax = plt.subplots(figsize=(12, 0.4 * len(bars) + 1.5))
    left = [0.0] * len(bars)
    for p in _PARTS:
        share = [100.0 * int(b[p + "_ns"]) / max(1, sum(int(b[q + "_ns"]) for q in _PARTS))
                 for _, b in bars]
        ax.barh(range(len(bars)), share, left=left, label=_PART_TITLES[p])
        left = [a + b for a, b in zip(left, share)]
    _ticks(ax, "y", [b[0] for b in bars])
    ax.invert_yaxis()
    ax.set_xlabel("% of the step's time")
    ax.set_title("What bound each window's steps, beside its process's median step")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return out + _svg(fig) + _table(["window", "steps", "step", "ms"] +
                                    ["%s ms" % _PART_TITLES[p] for p in _PARTS] + ["bound by"],
                                    split[:3 * _MAX_TABLE]) + \
        _cut_note(3 * _MAX_TABLE, len(split), "rows listed")


def _collectives(r):
    """Per operation (and group id): instances, each rank's wait for the last arrival, the rank
    last most often and the arrival spread; per rank, comm overlapped with compute."""
    import matplotlib.pyplot as plt
    c = r.get("collectives") or {"ops": [], "groups": []}
    if not c["ops"]:
        return "<p>No collectives: these traces hold no comm or MPI collective calls.</p>"
    groups = r["groups"]
    ops = c["ops"][:_MAX_TABLE]

    def name(o):
        return o["op"] + (" [%s]" % o["comm_group"] if o.get("comm_group") else "")

    def last(o):
        return "%s (%d)" % (_group_label(groups[o["last"]["group"]]), o["last"]["count"]) \
            if o["last"] else "-"
    per_op = _table(["op", "comm_size", "instances", "unmatched calls", "wait ms",
                     "spread p50 ms", "spread p99 ms", "last most often", "note"],
                    [[name(o), "-" if o["comm_size"] is None else o["comm_size"],
                      o["instances"], o["unmatched_calls"], _ms(o["wait_ns"]),
                      _ms(o["spread_p50_ns"]), _ms(o["spread_p99_ns"]), last(o),
                      o["note"] or ""] for o in ops])
    per_op += _cut_note(_MAX_TABLE, len(c["ops"]), "operations listed")
    rows = [[name(o), _group_label(groups[x["group"]]), x["calls"], _ms(x["wait_ns"]), x["last"],
             _ms(x["caused_ns"])] for o in ops for x in o["ranks"]]
    per_rank = _table(["op", "rank", "calls", "wait for the last rank ms", "times last",
                       "others' wait it caused ms"], rows[:_MAX_TABLE])
    per_rank += _cut_note(_MAX_TABLE, len(rows), "rows listed")
    gs = c["groups"][:_MAX_TABLE]
    overlap = _table(["rank", "collective calls", "wait ms", "comm ms",
                      "comm overlapped with compute ms", "overlapped %"],
                     [[_group_label(groups[g["group"]]), g["calls"], _ms(g["wait_ns"]),
                       _ms(g["comm_ns"]), _ms(g["comm_overlapped_ns"]),
                       "%.1f%%" % g["comm_overlap_pct"]] for g in gs])
    overlap += _cut_note(_MAX_TABLE, len(c["groups"]), "ranks listed")
    head = "<p>%d instance(s) matched; %s ms waiting for the last rank, %s of the matched " \
           "calls' time.</p>" % (c["instances"], _ms(c["wait_ns"]),
                                 _share(c["wait_ns"], c["blocked_ns"]))
    if not gs:
        return head + per_op + per_rank + overlap
    fig, ax = plt.subplots(figsize=(12, 0.4 * min(len(gs), _MAX_ROWS) + 1.5))
    shown = gs[:_MAX_ROWS]
    y = list(range(len(shown)))
    ax.barh(y, [g["wait_ns"] / 1e6 for g in shown], color="tab:red",
            label="waiting for the last rank")
    _ticks(ax, "y", [_group_label(groups[g["group"]]) for g in shown])
    ax.invert_yaxis()
    ax.set_xlabel("ms")
    ax.set_title("Time each rank waited at collectives for the last rank")
    ax.legend(fontsize=8)
    return head + per_op + _svg(fig) + per_rank + overlap


def sections(files, compare=None, windows=(), partial=None, names=None):
    """The analysis sections of the report: [(id, heading, HTML body)], in page order.

    Args:
        files: the trace files of the report (as dftrace._read.trace_files gives them).
        compare: a base run (a trace, a directory or a comma-separated list) for `dftrace diff`.
        windows: the flight recorder's captured windows (dftrace.read's df.attrs["windows"]):
            adds the section `windows` when there are any.
        partial: the files' analysis partial, read with their DataFrame
            (dftrace._read.read_with_partial); None: the files are analysed here.
        names: the files' name figures, read with partial (read_with_partial's names=True),
            for the comparison; None: the comparison reads the files again.

    Returns:
        A list of (section id, heading, body) tuples; a section without a subject in these
        traces holds a line that says why.

    Example:
        >>> [sid for sid, _, _ in sections(["t-1.pfw.gz"])]
        ['findings', 'overlap', 'bound-by', 'stragglers', 'collectives', 'io-characterisation']
    """
    from ._analyze import analyze, from_partial
    try:
        r = analyze(files, allow_damaged=True) if partial is None else \
            from_partial(partial, allow_damaged=True)
    except ImportError as e:
        raise ValueError("the analysis needs dftrace's extension _analysis: %s" % e) from None
    note = ""
    if not r["inputs"]["complete"]:
        lost = r["inputs"]["damaged"]
        note = "<p><b>Part of the input could not be read</b> (%d item(s), e.g. %s): the " \
               "figures are those of what was read.</p>" % (
                   len(lost), _html("%s: %s" % (lost[0]["file"], lost[0]["what"])) if lost
                   else "a process with fewer events than its end event says")
    out = [("findings", "Findings", note + _findings(r)),
           ("overlap", "Overlap of layers per rank", _overlap(r)),
           ("bound-by", "What bound the steps", _bound_by(r)),
           ("stragglers", "Stragglers and imbalance", _stragglers(r)),
           ("collectives", "Collectives: waiting for the last rank", _collectives(r))]
    if windows:
        out.append(("windows", "Flight recorder: captured windows", _windows(r, windows)))
    out.append(("io-characterisation", "I/O characterisation", _io(r)))
    if compare:
        out.append(("compare", "Compared with a base run",
                    _compare(compare, files, partial, names)))
    return out
