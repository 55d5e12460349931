"""A run's merged steps, held by the extension (dftrace._analysis) until asked for: the
document's `steps` (Steps) and its `items` (StepItems), and the steps' frame from columns.
dftrace.analyze's result holds them, so that a run of millions of steps makes no dict per step
unless its caller reads r["steps"]["items"]."""
import collections.abc
import operator

__all__ = ["StepItems", "Steps", "STEP_COLUMNS"]

STEP_COLUMNS = ["rank", "group", "index", "step", "epoch", "ts_ns", "dur_ns", "compute_ns",
                "comm_ns", "io_ns", "data_ns", "other_ns"]


class StepItems(collections.abc.Sequence):
    """A run's `steps.items`, read from the merged steps (held by the extension: in memory up to
    the analysis' budget, beyond it in a temporary file) each time they are asked for: an item
    is a new dict of the keys and values that `dftrace analyze --json` writes. A read-only
    sequence equal to the list of those dicts. `r["steps"]["items"]` gives that list itself
    (made on first read, by Steps), so code that reads only the steps' figures or their frame
    never makes a dict per step."""

    __slots__ = ("_held", "_n")
    _CHUNK = 1 << 16  # items made at a time when iterating
    __hash__ = None

    def __init__(self, held):
        from . import _analysis
        self._held = held
        self._n = _analysis.step_count(held)

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        from . import _analysis
        if isinstance(i, slice):
            start, stop, stride = i.indices(self._n)
            if stride == 1:
                return _analysis.step_items(self._held, start, max(0, stop - start))
            return [self[k] for k in range(start, stop, stride)]
        i = operator.index(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("step item index out of range")
        return _analysis.step_items(self._held, i, 1)[0]

    def __iter__(self):
        from . import _analysis
        for first in range(0, self._n, self._CHUNK):
            yield from _analysis.step_items(self._held, first, self._CHUNK)

    def __reversed__(self):
        from . import _analysis
        for end in range(self._n, 0, -self._CHUNK):
            first = max(0, end - self._CHUNK)
            yield from reversed(_analysis.step_items(self._held, first, end - first))

    def __eq__(self, other):
        if isinstance(other, StepItems) and other._held is self._held:
            return True
        if not isinstance(other, (list, StepItems)):
            return NotImplemented  # as a list is never equal to a tuple
        if len(other) != self._n:
            return False
        if isinstance(other, list):
            return all(a == b for a, b in zip(self, other))
        return all(a == b for a, b in zip(self, iter(other)))

    def __add__(self, other):
        return list(self) + other

    def __radd__(self, other):
        return other + list(self)

    def __repr__(self):
        return repr(list(self))

    def __reduce__(self):
        return list, (list(self),)

    def frame(self):
        """Analysis.steps_frame(), from the steps' columns: the values and dtypes of the frame
        pandas makes from the list of item dicts, with no dict made."""
        import numpy as np
        import pandas as pd
        from . import _analysis
        if not self._n:
            return pd.DataFrame([], columns=STEP_COLUMNS)
        c = _analysis.step_columns(self._held)

        def col(name, dtype):
            return np.frombuffer(c[name], dtype=dtype)

        # Columns read from c are read-only views: each goes into a block with others of its
        # dtype (a copy), or is copied here.
        def ints(a):  # as pandas infers Python ints: int64, or uint64 past its range
            return a.view(np.int64) if a.max() < 2 ** 63 else a.copy()

        def optional(values, present):  # ints with None: int64, float64 with NaN, or objects
            if present.all():
                return values
            if not present.any():
                return np.full(len(values), None, dtype=object)
            out = values.astype(np.float64)
            out[~present] = np.nan
            return out

        group = col("group", np.uint32)
        ranks = c["ranks"]
        has_rank = np.array([r is not None for r in ranks], dtype=bool)
        rank_of = np.array([r if r is not None else 0 for r in ranks], dtype=np.int64)
        frame = {
            "rank": optional(rank_of[group], has_rank[group]),
            "group": group.astype(np.int64),
            "index": col("index", np.uint32).astype(np.int64),
            "step": optional(col("step", np.int64), col("has_step", np.uint8).astype(bool)),
            "epoch": optional(col("epoch", np.int64), col("has_epoch", np.uint8).astype(bool)),
        }
        for name in STEP_COLUMNS[5:]:
            frame[name] = ints(col(name, np.uint64))
        return pd.DataFrame(frame, columns=STEP_COLUMNS, copy=False)


class Steps(dict):
    """The document's `steps`, a dict whose `items` (a StepItems until then) becomes the list of
    item dicts when first read through any of a dict's ways (indexing, get, items(), values(),
    a copy, json.dumps, pickle)."""

    def _items(self):
        v = dict.get(self, "items")
        if isinstance(v, StepItems):
            v = v[:]  # every item, made by the extension in one call
            dict.__setitem__(self, "items", v)
        return v

    def __getitem__(self, key):
        if key == "items":
            self._items()
        return dict.__getitem__(self, key)

    def __iter__(self):  # not dict's own: a copy (dict(s), {**s}) reads through __getitem__
        return dict.__iter__(self)

    def get(self, key, default=None):
        if key == "items":
            self._items()
        return dict.get(self, key, default)

    def items(self):
        self._items()
        return dict.items(self)

    def values(self):
        self._items()
        return dict.values(self)

    def pop(self, key, *default):
        if key == "items":
            self._items()
        return dict.pop(self, key, *default)

    def popitem(self):
        self._items()
        return dict.popitem(self)

    def setdefault(self, key, default=None):
        if key == "items":
            self._items()
        return dict.setdefault(self, key, default)

    def copy(self):
        self._items()
        return Steps(dict.items(self))

    def __reduce__(self):
        return dict, (list(self.items()),)
