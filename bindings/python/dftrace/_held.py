"""Totals held at 2^64-1, as `dftrace analyze`, `diff` and `stat` hold them: exact sums of
int64 columns (numpy's and pandas' own sums wrap past 2^63-1), as Python integers."""

HELD = 2 ** 64 - 1  # a total of durations (ns) or of calls that reaches it is held there
_LO = 0x7FFFFFFF


def exact_sum(a):
    """The exact sum (a Python int) of a numpy int64 array of values >= 0: its high and low
    31 bits summed apart (sums that cannot wrap below 2^31 values), added as Python ints."""
    if not len(a):
        return 0
    return (int((a >> 31).sum()) << 31) + int((a & _LO).sum())


def group_sums(df, by, col):
    """Each group's exact sum of the int64 column col (values >= 0), as df.groupby(by) orders
    the groups: (index, list of Python ints)."""
    v = df[col].to_numpy()
    parts = df.assign(_hi=v >> 31, _lo=v & _LO).groupby(by, observed=True)[["_hi", "_lo"]].sum()
    return parts.index, [(int(h) << 31) + int(lo)
                         for h, lo in zip(parts["_hi"].tolist(), parts["_lo"].tolist())]


def held(total):
    """total held at 2^64-1: (the figure, whether it reached 2^64-1 and so is not exact)."""
    return min(total, HELD), total >= HELD
