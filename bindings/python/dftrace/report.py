"""dftrace.report: one self-contained HTML file of plots and tables for a set of traces.

    python3 -m dftrace.report TRACES... -o report.html [--title TITLE] [--compare BASE]
    dftrace report TRACES... -o report.html            (the same, from the dftrace command)

The traces are read with dftrace.read (the C++ reader); the plots are drawn with matplotlib
into inline SVG, so the file needs no network and no other file. Sections (each an HTML
<section> with an id): overview, findings, timeline, steps, bound-by, overlap, stragglers,
categories, io (when the traces hold POSIX or STDIO events), io-characterisation, mpi (when they
hold MPI events), telemetry (when they hold the counters of telemetry.interval), names, compare
(with --compare BASE), metadata. The sections findings to io-characterisation and compare are
made by dftrace.report_analysis from `dftrace analyze` and `dftrace diff`.
"""
import argparse
import hashlib
import html
import io
import os
import sys
import time

_IO_CATS = ("POSIX", "STDIO")
_MAX_BARS = 2000  # timeline bars per process (its longest top-level regions)
# Every size a trace decides is bounded: names and categories (any length) are cut to a label of
# _LABEL characters in plots and to _CELL in tables, where the cell's title (its tooltip) holds
# up to _TITLE of the full text; plots draw at most _MAX_ROWS processes and _MAX_SERIES lines or
# stacks (the biggest, the others summed or named in a note), tables at most _MAX_TABLE rows
# (_MAX_LIST for the files and problems).
_LABEL = 80
_CELL = 200
_TITLE = 4096
_MAX_ROWS = 64
_MAX_SERIES = 16
_MAX_TABLE = 40
_MAX_LIST = 500  # files and problems in the metadata section
_MAX_POINTS = 2000  # points drawn per series of a chart over steps
# A total of durations is held at 2^64-1 ns, never wrapped (as `dftrace analyze` holds it).
_HELD_NS = 2 ** 64 - 1


def _label(text, limit=_LABEL):
    """text cut to `limit` characters, ending in an ellipsis and a short hash of the whole text
    (distinct long names keep distinct labels); safe for matplotlib (no mathtext)."""
    text = str(text)
    if len(text) > limit:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        text = text[:limit - 11] + "\u2026 #" + digest
    return text.replace("$", r"\$")


def _ticks(ax, axis, labels):
    """Category labels set as tick labels at 0..n-1 (never through matplotlib's category units,
    which try to parse every label as a number and a date)."""
    pos = list(range(len(labels)))
    if axis == "y":
        ax.set_yticks(pos)
        ax.set_yticklabels([_label(x) for x in labels])
    else:
        ax.set_xticks(pos)
        ax.set_xticklabels([_label(x) for x in labels])


def _svg(fig):
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _table(headers, rows):
    out = ["<table><thead><tr>"]
    out += ["<th>%s</th>" % html.escape(str(h)) for h in headers]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(_cell(v) for v in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _cell(value):
    text = str(value)
    if len(text) <= _CELL:
        return "<td>%s</td>" % html.escape(text)
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    title = text[:_TITLE] + ("\u2026 (%d characters)" % len(text) if len(text) > _TITLE else "")
    return '<td title="%s">%s</td>' % (html.escape(title), html.escape(
        text[:_CELL - 11] + "\u2026 #" + digest))


def _data_calls():
    """The calls that read or write, as `dftrace stat` counts them, from the table of interposed
    calls (dftrace._reader.io_calls()): {category: {event name: where its bytes are}}, the bytes
    "RET" (its `ret`), "ITEMS" (`ret` items of `size` bytes), "FOLDED" (`bytes`), "SIZE", or
    "COPY" (an in-kernel copy: its `ret` read from the file of its `from_hash` and written to
    that of its `to_hash`, each where there)."""
    from . import _reader
    calls = {}
    for cat, _symbol, event, cls, nbytes in _reader.io_calls():
        if cls in ("READ", "WRITE"):
            calls.setdefault(cat, {})[event] = nbytes
        elif cls == "COPY":  # read from its source and written to its target: "COPY"
            calls.setdefault(cat, {})[event] = "COPY"
    return calls


def _cut_note(shown, total, what):
    """A note that `shown` of `total` `what` are drawn or listed; "" when all of them are."""
    return "<p>%d of %d %s.</p>" % (shown, total, what) if total > shown else ""


def _text_test(col, test):
    """test(pandas .str accessor) -> booleans, for each row of a text column, computed once per
    distinct value on Python strings (astype(str) would make a numpy array as wide as the
    longest name for every row or category)."""
    import numpy as np
    import pandas as pd
    if isinstance(col.dtype, pd.CategoricalDtype):
        ok = test(pd.Series(col.cat.categories.astype(object)).str).fillna(False)
        ok = np.asarray(ok, dtype=bool)
        codes = col.cat.codes.to_numpy()
        return pd.Series(np.append(ok, False)[codes], index=col.index)
    ok = test(col.astype(object).str).fillna(False)
    return pd.Series(np.asarray(ok, dtype=bool), index=col.index)


def _text_in(col, names):
    """Whether each row of a text column is exactly one of `names`, decided once per distinct
    value as _text_test does."""
    import numpy as np
    import pandas as pd
    if isinstance(col.dtype, pd.CategoricalDtype):
        ok = np.asarray(pd.Series(col.cat.categories.astype(object)).isin(names), dtype=bool)
        return pd.Series(np.append(ok, False)[col.cat.codes.to_numpy()], index=col.index)
    return col.astype(object).isin(names)


def _dur_sums(ev, by, with_held=False):
    """Each group's total of ev.dur (ns, 0 to 2^63-1 each), as groupby(by).dur.sum() orders
    them, exact and held at 2^64-1 ns (a float Series): pandas' own int64 sum wraps past
    2^63-1. Each duration is summed as its high and low 31 bits, two sums that cannot wrap
    below 2^31 rows a group, added as Python integers. with_held: (Series, whether a total
    reached 2^64-1 ns), which floats cannot tell from one a little below."""
    import pandas as pd
    d = ev.dur.to_numpy()
    parts = ev.assign(_hi=d >> 31, _lo=d & 0x7FFFFFFF).groupby(by, observed=True)[["_hi", "_lo"]]
    parts = parts.sum()
    tot = [min((int(h) << 31) + int(lo), _HELD_NS)
           for h, lo in zip(parts["_hi"].tolist(), parts["_lo"].tolist())]
    s = pd.Series([float(t) for t in tot], index=parts.index, dtype=float)
    return (s, _HELD_NS in tot) if with_held else s


def _held_note(held):
    """The note under a table whose totals of durations include one held at 2^64-1 ns."""
    return ("<p>Totals of 2^64-1 ns are held there: their durations add up to it or past it, "
            "so they are not exact.</p>" if held else "")


def _who(df):
    """The row label of each event: its rank when known, else its pid."""
    import numpy as np
    # one label per distinct rank or pid, not one string conversion per row
    rank, pid = df["rank"].to_numpy(), df["pid"].to_numpy()
    key = np.where(rank >= 0, rank, -1 - pid)  # pids are >= 0: ranks and pids stay apart
    keys, inverse = np.unique(key, return_inverse=True)
    labels = np.array(["rank %d" % k if k >= 0 else "pid %d" % (-1 - k) for k in keys.tolist()],
                      dtype=object)
    return labels[inverse.reshape(-1)]


def _timeline(df, t0):
    import matplotlib.pyplot as plt
    # only the columns drawn: a mask over every column copies all of them
    ev = df.loc[(df.ph == "X") & (df.cat != "dftracer"), ["rank", "pid", "cat", "ts", "dur",
                                                          "level"]]
    if ev.empty:
        return "<p>No regions in these traces.</p>"
    ev = ev.assign(who=_who(ev))
    whos = sorted(ev.who.unique(), key=lambda w: (w.split()[0], int(w.split()[1])))
    note = ""
    if len(whos) > _MAX_ROWS:  # the processes with the most time
        busy = _dur_sums(ev, "who").sort_values(ascending=False)
        keep = set(busy.index[:_MAX_ROWS])
        note = "<p>%d of %d processes shown (those with the most time in regions).</p>" % (
            _MAX_ROWS, len(whos))
        whos = [w for w in whos if w in keep]
    cats = list(_dur_sums(ev, "cat").sort_values(ascending=False).index[:12])
    colors = dict(zip(cats, plt.cm.tab20.colors))
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(whos) + 1.5))
    for y, w in enumerate(whos):
        mine = ev[ev.who == w]
        top = mine[mine.level <= 1] if (mine.level >= 1).any() else mine
        top = top.nlargest(_MAX_BARS, "dur")
        for c in cats:
            part = top[top.cat == c]
            if part.empty:
                continue
            ax.broken_barh(list(zip((part.ts - t0) / 1e9, part.dur / 1e9)), (y - 0.4, 0.8),
                           color=colors[c], label=_label(c), rasterized=True)
    _ticks(ax, "y", whos)
    ax.set_xlabel("seconds since the first event")
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, l in zip(handles, labels):
        seen.setdefault(l, h)
    ax.legend(seen.values(), seen.keys(), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.set_title("Top-level regions per process, by category")
    return _svg(fig) + note


def _thin(n):
    """How many consecutive steps one drawn point stands for, so that a series of n steps is
    drawn with at most _MAX_POINTS points."""
    return max(1, -(-n // _MAX_POINTS))


def _steps(df):
    import matplotlib.pyplot as plt
    import numpy as np
    ev = df[(df.ph == "X") & ((df.name == "step") | _text_test(df.name, lambda s: s.endswith(".block")))]
    if ev.empty:
        return "<p>No <code>compute.step</code> or <code>.block</code> events in these traces.</p>"
    ev = ev[["name", "ts", "dur"]].assign(who=_who(ev))
    sizes = ev.groupby(["who", "name"], observed=True).size()
    sizes = sizes[sizes > 0].sort_values(ascending=False, kind="stable")
    shown = sizes.index[:_MAX_SERIES]  # the series with the most steps
    series = shown.get_indexer(pd_index(ev, ["who", "name"]))  # -1: not drawn
    mine = ev.assign(series=series)[series >= 0].sort_values("ts", kind="stable")
    # Each series' steps numbered in time order; a long series is drawn by the slowest step of
    # each run of _thin(n) consecutive steps (a slow step stays visible).
    mine = mine.assign(k=mine.groupby("series").cumcount())
    per = sizes.loc[shown].to_dict()
    every = np.array([_thin(per[key]) for key in shown], dtype=np.int64)
    mine = mine.assign(bin=mine.k.to_numpy() // every[mine.series.to_numpy()])
    points = mine.groupby(["series", "bin"]).agg(first=("k", "min"), dur=("dur", "max"))
    fig, ax = plt.subplots(figsize=(12, 4))
    thinned = 0
    for i, (w, n) in enumerate(shown):
        pts = points.loc[i]
        thinned = max(thinned, _thin(per[(w, n)]))
        ax.plot(pts["first"].to_numpy() + 1, pts["dur"].to_numpy() / 1e6, marker=".",
                linewidth=0.8, label=_label("%s %s" % (w, n)))
    ax.set_xlabel("step")
    ax.set_ylabel("ms")
    ax.set_title("Step time over steps" + (" (the slowest of each %d steps)" % thinned
                                            if thinned > 1 else ""))
    ax.legend(fontsize=8)
    note = _cut_note(_MAX_SERIES, len(sizes), "series shown (those with the most steps)")
    stats = ev.groupby("name", observed=True).dur.agg(["count", "mean", "median", "max"])
    stats = stats[stats["count"] > 0].sort_values("count", ascending=False, kind="stable")
    rows = [(n, int(r["count"]), "%.3f" % (r["mean"] / 1e6), "%.3f" % (r["median"] / 1e6),
             "%.3f" % (r["max"] / 1e6)) for n, r in stats.head(_MAX_TABLE).iterrows()]
    note += _cut_note(_MAX_TABLE, len(stats), "names in the table (those with the most steps)")
    return (_svg(fig) + note +
            _table(["event", "steps", "mean ms", "median ms", "max ms"], rows))


def pd_index(frame, cols):
    """The MultiIndex of frame's columns cols (to test rows' keys with isin)."""
    import pandas as pd
    return pd.MultiIndex.from_arrays([frame[c].astype(object).to_numpy() for c in cols])


def _categories(df):
    import matplotlib.pyplot as plt
    ev = df[(df.ph == "X") & (df.cat != "dftracer")]
    if ev.empty:
        return "<p>No regions.</p>"
    by_cat = _dur_sums(ev, "cat").sort_values() / 1e9
    by_cat = by_cat.tail(_MAX_ROWS)
    by_name = _dur_sums(ev, ["cat", "name"]).sort_values().tail(20) / 1e9
    rows = max(len(by_name), len(by_cat))
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, max(3, 0.3 * rows + 1)))
    a.barh(range(len(by_cat)), by_cat.values, color="tab:blue")
    _ticks(a, "y", [str(c) for c in by_cat.index])
    a.set_xlabel("seconds (summed over threads)")
    a.set_title("Time per category" + (" (top %d)" % _MAX_ROWS if len(by_cat) == _MAX_ROWS
                                       else ""))
    b.barh(range(len(by_name)), by_name.values, color="tab:orange")
    _ticks(b, "y", ["%s.%s" % k for k in by_name.index])
    b.set_xlabel("seconds")
    b.set_title("Time per name (top 20)")
    fig.tight_layout()
    return _svg(fig)


def _io(df, t0, span):
    import matplotlib.pyplot as plt
    import numpy as np
    ev = df[(df.ph == "X") & df.cat.isin(_IO_CATS)]
    if ev.empty:
        return None
    data_calls = {c: _data_calls().get(c, {}) for c in _IO_CATS}
    cat = ev.cat.astype(object)
    data = np.zeros(len(ev), dtype=bool)
    for c, names in data_calls.items():
        data |= np.asarray((cat == c) & _text_in(ev.name, set(names)), dtype=bool)
    rw = ev[data]
    name = rw.name.astype(object)

    def column(key):
        return (rw[key].astype("float64").fillna(0).clip(lower=0) if key in rw
                else np.zeros(len(rw)))

    def named(kind):
        return name.isin({n for names in data_calls.values() for n, k in names.items()
                          if k == kind})
    nbytes = column("ret")
    if "size" in rw:  # fread/fwrite return items of `size` bytes
        nbytes = np.where(named("ITEMS"), nbytes * rw["size"].astype("float64").fillna(1),
                          nbytes)
    nbytes = np.where(named("FOLDED"), column("bytes"), nbytes)
    nbytes = np.where(named("SIZE"), column("size"), nbytes)
    ends = sum(rw[k].notna().to_numpy(dtype="float64") if k in rw else np.zeros(len(rw))
               for k in ("from_hash", "to_hash"))
    nbytes = np.where(named("COPY"), column("ret") * ends, nbytes)
    rw = rw.assign(bytes=nbytes, who=_who(rw))
    bins = 100
    width = max(span, 1) / bins
    fig, (a, b) = plt.subplots(2, 1, figsize=(12, 7), sharex=True)
    moved = rw.groupby("who").bytes.sum().sort_values(ascending=False, kind="stable")
    shown = set(moved.index[:_MAX_SERIES])  # the processes that moved the most
    for w, g in rw.groupby("who"):
        if w not in shown:
            continue
        k = ((g.ts - t0) // width).clip(0, bins - 1).astype(int)
        per = np.bincount(k, weights=g.bytes, minlength=bins)
        x = (np.arange(bins) + 0.5) * width / 1e9
        a.plot(x, per / (width / 1e9) / 1e6, label=w, linewidth=0.8)
        b.plot(x, np.cumsum(per) / 1e6, label=w, linewidth=0.8)
    a.set_ylabel("MB/s")
    a.set_title("I/O bandwidth (read and write calls' bytes) per process")
    b.set_ylabel("MB, cumulative")
    b.set_xlabel("seconds since the first event")
    a.legend(fontsize=8)
    note = _cut_note(_MAX_SERIES, len(moved), "processes drawn (those that moved the most bytes)")
    calls = ev.groupby(["cat", "name"], observed=True).dur.agg(["count"])
    calls["sum"], held = _dur_sums(ev, ["cat", "name"], True)
    calls = calls[calls["count"] > 0].sort_values("sum", ascending=False, kind="stable")
    rows = [("%s.%s" % k, int(r["count"]), "%.3f" % (r["sum"] / 1e6))
            for k, r in calls.head(_MAX_TABLE).iterrows()]
    note += _cut_note(_MAX_TABLE, len(calls), "calls in the table (those with the most time)")
    note += _held_note(held)
    total = float(np.sum(rw.bytes))
    return (_svg(fig) + "<p>%.1f MB moved by read and write calls.</p>" % (total / 1e6) + note +
            _table(["call", "count", "total ms"], rows))


def _mpi(df):
    import matplotlib.pyplot as plt
    ev = df[(df.ph == "X") & _text_test(df.cat, lambda s: s.upper().isin(["MPI", "COMM"]))]
    if ev.empty:
        return None
    ev = ev.assign(who=_who(ev))
    # The names with the most time, each a stack; the others summed as one.
    top = _dur_sums(ev, "name").sort_values(ascending=False, kind="stable")
    top = [n for n in top.index[:_MAX_SERIES]]
    label = {n: _label(n) for n in top}
    ev = ev.assign(series=ev.name.astype(object).map(label).fillna("other names"))
    busy = _dur_sums(ev, "who").sort_values(ascending=False, kind="stable")
    ev = ev[ev.who.isin(set(busy.index[:_MAX_ROWS]))]
    per = _dur_sums(ev, ["who", "series"]).unstack(fill_value=0) / 1e9
    fig, ax = plt.subplots(figsize=(12, 0.4 * len(per) + 1.5))
    import numpy as np
    left = np.zeros(len(per))
    for col in per.columns:
        ax.barh(range(len(per)), per[col].to_numpy(), left=left, label=col)
        left += per[col].to_numpy()
    _ticks(ax, "y", list(per.index))
    ax.set_xlabel("seconds")
    ax.set_title("MPI and communication time per process")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _svg(fig)


# telemetry.interval's counters charted (docs/telemetry.md): (name, series, scale, axis title).
_TELEMETRY = (("process", "cpu_pct", 1, "process CPU (%, 100 = one core)"),
              ("process", "rss_bytes", 1e-6, "process resident memory (MB)"),
              ("cpu", "busy_pct", 1, "node CPU busy (%)"),
              ("memory", "MemAvailable", 1e-6, "node memory available (GB)"))
_TELEMETRY_SERIES = sorted({s for _, s, _, _ in _TELEMETRY})


def _telemetry(df, t0):
    import matplotlib.pyplot as plt
    df = df[(df.cat == "sys") & (df.ph == "C")] if len(df) else df
    if df.empty:
        return None
    df = df.assign(who=_who(df))
    fig, axes = plt.subplots(2, 2, figsize=(12, 6.5))
    for ax, (name, series, scale, title) in zip(axes.flat, _TELEMETRY):
        part = df[(df.name == name) & df[series].notna()]
        whos = sorted(part.who.unique())[:_MAX_SERIES]
        for w in whos:
            mine = part[part.who == w].sort_values("ts")
            ax.plot((mine.ts - t0) / 1e9, mine[series].astype(float) * scale, label=_label(w))
        ax.set_title("%s: %s" % (_label(title), series), fontsize=9)
        ax.set_xlabel("seconds since the first event", fontsize=8)
        if whos:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return _svg(fig)


def _names(df):
    ev = df.loc[df.ph == "X", ["cat", "name", "dur"]]
    g = ev.groupby(["cat", "name"], observed=True).dur
    t = g.agg(["count", "mean", "median"])
    t.columns = ["count", "mean", "p50"]
    t["sum"], held = _dur_sums(ev, ["cat", "name"], True)
    t = t[t["count"] > 0].sort_values("sum", ascending=False, kind="stable").head(_MAX_TABLE)
    # the 99th percentile of the names shown only (one vectorised pass, not one call per name)
    keep = ev.set_index(["cat", "name"]).index.isin(t.index)
    p99 = ev[keep].groupby(["cat", "name"], observed=True).dur.quantile(0.99)
    t["p99"] = p99.reindex(t.index).to_numpy()
    rows = [(c, n, int(r["count"]), "%.3f" % (r["sum"] / 1e6), "%.2f" % (r["mean"] / 1e3),
             "%.2f" % (r["p50"] / 1e3), "%.2f" % (r["p99"] / 1e3)) for (c, n), r in t.iterrows()]
    return (_table(["cat", "name", "count", "total ms", "mean us", "p50 us", "p99 us"], rows) +
            _held_note(held))


def _hosts(df):
    hosts = sorted(str(h) for h in df.host.dropna().unique())
    text = ", ".join(hosts[:_MAX_TABLE]) or "-"
    if len(hosts) > _MAX_TABLE:
        text += " and %d more" % (len(hosts) - _MAX_TABLE)
    return text


def _metadata(df, files):
    meta_rows = [(os.path.basename(f), df.attrs["time_units"].get(f, ""))
                 for f in files[:_MAX_LIST]]
    problems = df.attrs.get("problems", [])
    meta = _table(["file", "time unit"], meta_rows)
    if len(files) > _MAX_LIST:
        meta += "<p>%d of %d files listed.</p>" % (_MAX_LIST, len(files))
    if problems:
        meta += "<h3>Problems found while reading</h3>" + _table(
            ["problem"], [(p,) for p in problems[:_MAX_LIST]])
        if len(problems) > _MAX_LIST:
            meta += "<p>%d of %d problems listed (all of them are printed by dftrace.read on " \
                    "stderr).</p>" % (_MAX_LIST, len(problems))
    return meta


def _page(title, sections):
    return """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%s</title>
<style>
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1300px; color: #222; }
section { margin-bottom: 2.5em; } h2 { border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
svg { max-width: 100%%; height: auto; }
</style></head><body><h1>%s</h1><p>Made by dftrace on %s.</p>
%s
</body></html>
""" % (html.escape(title), html.escape(title), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
       "\n".join(sections))


def build(paths, title=None, compare=None):
    """The report's HTML text.

    Args:
        paths: trace files, directories or globs.
        title: the page's title (default: the number of traces).
        compare: a base run (a trace, a directory or a comma-separated list): adds the section
            of `dftrace diff BASE TRACES`.

    Returns:
        The HTML document (str).

    Example:
        >>> open("report.html", "w").write(build(["traces/"]))
    """
    try:
        import matplotlib
    except ImportError:
        raise ValueError("the report's plots need matplotlib (Debian: apt-get install "
                         "python3-matplotlib)") from None
    matplotlib.use("Agg")
    from . import _read, report_analysis
    files = _read.trace_files(paths)
    # One pass over the files gives the events, the analysis' partial and, to compare the run
    # with a base run, each name's figures.
    df, partial, *names = _read.read_with_partial(
        files, ["ret", "size", "bytes", "from_hash", "to_hash"]
        + _TELEMETRY_SERIES, names=bool(compare))
    analysis = {sid: (h, body) for sid, h, body in report_analysis.sections(
        files, compare, df.attrs.get("windows", ()), partial, names[0] if names else None)}
    x = df[df.ts > 0]
    t0 = int(x.ts.min()) if len(x) else 0
    t1 = int((x.ts + x.dur).max()) if len(x) else 0
    span = t1 - t0
    sections = []

    def section(sid, heading, body):
        if body is not None:
            sections.append('<section id="%s"><h2>%s</h2>%s</section>' % (sid, heading, body))

    def analysed(*sids):
        for sid in sids:
            if sid in analysis:
                section(sid, *analysis[sid])

    overview = _table(["", ""], [
        ("traces", len(files)), ("events", len(df)),
        ("complete events", int((df.ph == "X").sum())),
        ("time span", "%.6f s" % (span / 1e9)),
        ("processes", df.pid.nunique()), ("ranks", int((df["rank"].unique() >= 0).sum())),
        ("hosts", _hosts(df)),
        ("lines that are not JSON", df.attrs.get("invalid_lines", 0)),
    ])
    section("overview", "Overview", overview)
    analysed("findings")
    section("timeline", "Timeline", _timeline(df, t0))
    section("steps", "Step time", _steps(df))
    analysed("bound-by", "overlap", "stragglers", "collectives", "windows")
    section("categories", "Time per category and name", _categories(df))
    section("io", "I/O", _io(df, t0, span))
    analysed("io-characterisation")
    section("mpi", "MPI", _mpi(df))
    section("telemetry", "System telemetry", _telemetry(df, t0))
    section("names", "Top names", _names(df))
    analysed("compare")
    section("metadata", "Metadata", _metadata(df, files))
    return _page(title or "dftrace report: %d trace(s)" % len(files), sections)


def main(argv=None):
    p = argparse.ArgumentParser(prog="dftrace report",
                                description="one self-contained HTML report of traces")
    p.add_argument("traces", nargs="+", help="trace files, directories or globs")
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p.add_argument("--title")
    p.add_argument("--compare", metavar="BASE",
                   help="a base run (trace, directory or comma-separated list): adds the "
                        "section of `dftrace diff BASE TRACES`")
    a = p.parse_args(argv)
    try:
        text = build(a.traces, a.title, a.compare)
    except (OSError, ValueError) as e:
        print("dftrace report: %s" % e, file=sys.stderr)
        return 1
    try:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        print("dftrace report: %s: %s" % (a.output, e.strerror), file=sys.stderr)
        return 1
    print("report written to %s" % a.output, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
