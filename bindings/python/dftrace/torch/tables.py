"""dftrace.torch.summary: a key_averages()-like table of a trace."""
from __future__ import annotations

import dftrace


def summary(paths=None, top: int = 30, show: bool = True):
    """A key_averages()-like table of a trace, from dftrace.read: per (category, name) the
    calls, total, self (total minus the direct children's, through level and p_idx), mean, p50
    and p99 times in ms. An aggregated record counts as its dft_cnt calls and its total time
    (not in p50 and p99: its single durations are not in the trace). Calls and totals are exact
    sums, held at 2^64-1 (ns or calls) as `dftrace stat` holds them; the names held there are
    in the table's attrs["held"] and, when shown, on a line under it. paths: trace files
    (default: this process's, flushed first). Prints the `top` rows by total when `show`;
    returns the pandas DataFrame (all rows).

    Args:
        paths: trace files, a folder or a glob (default: this process's trace, flushed first).
        top: how many rows to print.
        show: print the table.

    Returns:
        A pandas DataFrame indexed by (cat, name) with the columns calls, total_ms, mean_ms,
        p50_ms, p99_ms and self_ms, sorted by total_ms.

    Example:
        >>> table = dftrace.torch.summary(top=10)
        >>> table.loc[("compute", "step"), "calls"]
        3
    """
    import numpy as np
    import pandas as pd
    from .._held import HELD, held
    if paths is None:
        dftrace.flush()
        paths = dftrace.output_path()
        if not paths:
            raise RuntimeError("dftrace.torch.summary: this process has no trace (tracing off?)")
    df = dftrace.read(paths, resolve=False, args=["dft_cnt"])
    ev = df[df.ph.isin(["X", "A"]) & (df.cat != "dftracer")]
    x = ev[ev.ph == "X"]
    fig = _figures(x, ev[ev.ph == "A"])
    q = x.groupby(["cat", "name"], observed=True).dur.agg(["median", lambda s: s.quantile(0.99)])
    q.columns = ["p50", "p99"]
    keys = sorted(fig, key=lambda k: (str(k[0]), str(k[1])))
    rows, held_names = [], []
    for k in keys:
        calls, total, children = fig[k]
        (calls, h1), (tot, h2), (own, h3) = held(calls), held(total), held(total - children)
        if h1 or h2 or h3:
            held_names.append("%s/%s" % k)
        p50, p99 = (q.loc[k, "p50"], q.loc[k, "p99"]) if k in q.index else (np.nan, np.nan)
        rows.append((calls, tot / 1e6, own / 1e6, tot / calls / 1e6 if calls else np.nan,
                     p50 / 1e6, p99 / 1e6))
    t = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(keys, names=["cat", "name"]),
                     columns=["calls", "total_ms", "self_ms", "mean_ms", "p50_ms", "p99_ms"])
    t["calls"] = t["calls"].astype(np.uint64)
    t = t[["calls", "total_ms", "mean_ms", "p50_ms", "p99_ms", "self_ms"]]
    t = t.sort_values("total_ms", ascending=False, kind="stable")
    t.attrs["held"] = held_names
    if show:
        _show(t, top, held_names, HELD)
    return t


def _held_line(names, limit):
    """The line under the table that lists the names whose figures reached the limit."""
    shown = ", ".join(names[:3]) + (" and %d more" % (len(names) - 3) if len(names) > 3 else "")
    return ("held at %d (2^64-1), not exact: the calls or durations of %s add up to it or "
            "past it" % (limit, shown))


def _figures(x, agg):
    """Per (cat, name): [calls, total ns, children's ns], exact Python ints, from the complete
    events x and the aggregated records agg."""
    import numpy as np
    from .._held import group_sums
    # Self time: an event's duration minus its direct children's (same pid, p_idx = its id),
    # every sum exact (Python ints: pandas' int64 sums wrap past 2^63-1).
    kid = x[x.p_idx >= 0]
    kids = dict(zip(*group_sums(kid, ["pid", "p_idx"], "dur"))) if len(kid) else {}
    per = [kids.get(k, 0) for k in zip(x.pid.tolist(), x.id.tolist())] if kids else [0] * len(x)
    x = x.assign(_kh=np.array([v >> 31 for v in per], dtype=np.int64),
                 _kl=np.array([v & 0x7FFFFFFF for v in per], dtype=np.int64))
    fig = {}  # (cat, name) -> [calls, total ns, children's ns]
    if len(x):
        idx, tot = group_sums(x, ["cat", "name"], "dur")
        _, kh = group_sums(x, ["cat", "name"], "_kh")
        _, kl = group_sums(x, ["cat", "name"], "_kl")
        n = x.groupby(["cat", "name"], observed=True).size().reindex(idx).tolist()
        for k, c, t, h, lo in zip(idx.tolist(), n, tot, kh, kl):
            fig[k] = [c, t, (h << 31) + lo]
    # agg: aggregated records, dft_cnt calls whose durations sum to dur
    for c, nm, d, cnt in zip(agg.cat.tolist(), agg.name.tolist(), agg.dur.tolist(),
                             agg["dft_cnt"].astype(object).tolist()):
        if isinstance(cnt, float) and cnt == cnt and cnt >= 0:
            cnt = int(cnt)  # a count past 2^63-1 is read as a double: held below in any case
        if not isinstance(cnt, int) or cnt < 0:
            continue  # no count of calls: left out, as `dftrace stat` leaves it out
        f = fig.setdefault((c, nm), [0, 0, 0])
        f[0] += cnt
        f[1] += int(d)
    return fig


def _show(t, top, held_names, limit):
    """Prints the table's first `top` rows and, when some are held, the line that names them."""
    lines = ["%-12s %-28s %8s %11s %11s %10s %10s %10s" % (
        "cat", "name", "calls", "total ms", "self ms", "mean ms", "p50 ms", "p99 ms")]
    for (cat, name), calls, total, mean, p50, p99, own in t.head(top).itertuples():
        lines.append("%-12s %-28s %8d %11.3f %11.3f %10.4f %10.4f %10.4f" % (
            str(cat)[:12], str(name)[:28], calls, total, own, mean, p50, p99))
    if held_names:
        lines.append(_held_line(held_names, limit))
    print("\n".join(lines))
