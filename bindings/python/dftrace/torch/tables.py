"""dftrace.torch.summary: a key_averages()-like table of a trace."""
from __future__ import annotations

import dftrace


def summary(paths=None, top: int = 30, show: bool = True):
    """A key_averages()-like table of a trace, from dftrace.read: per (category, name) the
    calls, total, self (total minus the direct children's, through level and p_idx), mean, p50
    and p99 times in ms. paths: trace files (default: this process's, flushed first). Prints
    the `top` rows by total when `show`; returns the pandas DataFrame (all rows).

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
    if paths is None:
        dftrace.flush()
        paths = dftrace.output_path()
        if not paths:
            raise RuntimeError("dftrace.torch.summary: this process has no trace (tracing off?)")
    df = dftrace.read(paths, resolve=False)
    x = df[(df.ph == "X") & (df.cat != "dftracer")]
    # Self time: an event's duration minus its direct children's (same pid, p_idx = its id).
    kids = x[x.p_idx >= 0].groupby(["pid", "p_idx"]).dur.sum()
    key = list(zip(x.pid.to_numpy(), x.id.to_numpy()))
    child_ns = np.array([kids.get(k, 0) for k in key], dtype=np.int64) if len(kids) else 0
    x = x.assign(self_ns=x.dur.to_numpy() - child_ns)
    g = x.groupby(["cat", "name"], observed=True)
    t = g.dur.agg(["count", "sum", "mean", "median", lambda s: s.quantile(0.99)])
    t.columns = ["calls", "total", "mean", "p50", "p99"]
    t["self"] = g.self_ns.sum()
    for c in ("total", "self", "mean", "p50", "p99"):
        t[c] = t[c] / 1e6
    t = t.rename(columns={c: c + "_ms" for c in ("total", "self", "mean", "p50", "p99")})
    t = t.sort_values("total_ms", ascending=False)
    if show:
        lines = ["%-12s %-28s %8s %11s %11s %10s %10s %10s" % (
            "cat", "name", "calls", "total ms", "self ms", "mean ms", "p50 ms", "p99 ms")]
        for (cat, name), r in t.head(top).iterrows():
            lines.append("%-12s %-28s %8d %11.3f %11.3f %10.4f %10.4f %10.4f" % (
                str(cat)[:12], str(name)[:28], r["calls"], r["total_ms"], r["self_ms"],
                r["mean_ms"], r["p50_ms"], r["p99_ms"]))
        print("\n".join(lines))
    return t
