"""dftrace.torch.instrument_dataloader: the wait for each batch, and where batches are made:
each batch, each sample and the collate function, in the main process or each worker."""
from __future__ import annotations

import os
from typing import Any, List

import dftrace

from .. import _dftrace, ai
from ._common import _timed
from ._undo import Undo, patch


def instrument_dataloader(items: bool = True) -> Undo:
    """Times every DataLoader's `__next__` (the time the loop waits for a batch, in the main
    process, with or without workers) as `dataloader.fetch`, with no change to the loop; with
    `items`, where batches are made (each worker process, or the main process without
    workers): `data.batch` per batch (args `worker`: the worker's id, -1 in the main process;
    `items`), inside it `data.item` per sample (arg `index`: the dataset index, or the
    running count of an iterable dataset) and `data.collate`. Every worker records them,
    whatever its start method: a forked one inherits this, a `spawn` or `forkserver` one is
    given it when it starts (its own file `<script>-worker<id>-<pid>`, with a `PR worker_id`
    line and the parent's pid as `ppid`). Returns a handle; `remove()` restores the loader.

    Args:
        items: also record each batch, sample and collate where batches are made.

    Returns:
        An Undo handle; `remove()` restores the DataLoader and its fetchers.

    Example:
        >>> handle = dftrace.torch.instrument_dataloader()
        >>> for x, y in torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=2):
        ...     pass                                 # dataloader.fetch, data.batch, data.item
        >>> handle.remove()
    """
    from torch.utils.data import dataloader as dl
    _loader_on[0] += 1
    patches = [patch(dl._BaseDataLoaderIter, "__next__",
                      lambda original: _timed(ai.dataloader.fetch, original)),
               lambda: _loader_on.__setitem__(0, _loader_on[0] - 1)]
    if items:
        from torch.utils.data._utils import fetch as f
        _items_on[0] = True
        for cls in (f._MapDatasetFetcher, f._IterableDatasetFetcher):
            patches.append(patch(cls, "fetch", _traced_fetch))
        patches.append(lambda: _items_on.__setitem__(0, False))
    return Undo(patches)


_region_arg = _dftrace.region_arg
_items_on = [False]
_loader_on = [0]  # instrument_dataloader() handles not removed (a spawned child gets them)
_worker_written = [0]  # the pid whose `PR worker_id` line is written
_data_nodes: List[Any] = []


def _data():
    """(batch, item, collate) nodes of category `data`, made on first use."""
    if not _data_nodes:
        _data_nodes.extend(dftrace.Profiler(p) for p in ("data.batch", "data.item", "data.collate"))
    return _data_nodes


class _Items:
    """A map-style dataset seen through a fetcher: each `dataset[i]` is a `data.item` event.
    Everything else (len, attributes, a batched `__getitems__`) is the dataset's own."""

    __slots__ = ("dataset", "node", "begin", "end")

    def __init__(self, dataset, node) -> None:
        # the node's methods bound once: each sample calls them (a fifth of the wrapper's cost)
        self.dataset, self.node, self.begin, self.end = dataset, node, node._begin, node._end

    def __getitem__(self, index):
        if not _items_on[0]:
            return self.dataset[index]
        r = self.begin()
        if r and type(index) is int:
            _region_arg(r, "index", index)
        try:
            return self.dataset[index]
        finally:
            self.end(r)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name):
        if name in _Items.__slots__:  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.dataset, name)


class _ItemIter:
    """An iterable dataset's iterator seen through a fetcher: each item is a `data.item`
    event numbered from 0; the call that ends the iteration records nothing."""

    __slots__ = ("it", "node", "count")

    def __init__(self, it, node) -> None:
        self.it, self.node, self.count = it, node, 0

    def __iter__(self):
        return self

    def __next__(self):
        if not _items_on[0]:
            return next(self.it)
        r = self.node._begin()
        if r:
            _dftrace.region_arg(r, "index", self.count)
        try:
            item = next(self.it)
        except BaseException:
            _dftrace.region_cancel(r)
            raise
        self.count += 1
        self.node._end(r)
        return item


def _prepare_fetcher(fetcher) -> None:
    """Wraps a fetcher's dataset (or iterator) and collate function once, where it runs."""
    from torch.utils.data import get_worker_info
    from torch.utils.data._utils import fetch as f
    info = get_worker_info()
    _, item, collate = _data()
    fetcher._dftrace_worker = info.id if info is not None else -1
    if info is not None and _worker_written[0] != os.getpid():
        _worker_written[0] = os.getpid()  # once per worker, forked or spawned
        _dftrace.process_property("worker_id", int(info.id))
    if isinstance(fetcher, f._IterableDatasetFetcher):
        fetcher.dataset_iter = _ItemIter(fetcher.dataset_iter, item)
    else:
        fetcher.dataset = _Items(fetcher.dataset, item)
    fetcher.collate_fn = _timed(collate, fetcher.collate_fn)


def _traced_fetch(original):
    def fetch(self, possibly_batched_index):
        if not _items_on[0]:
            return original(self, possibly_batched_index)
        if "_dftrace_worker" not in self.__dict__:
            _prepare_fetcher(self)
        batch = _data()[0]
        r = batch._begin()
        if r:
            _dftrace.region_arg(r, "worker", self._dftrace_worker)
            if self.auto_collation:
                _dftrace.region_arg(r, "items", len(possibly_batched_index))
        try:
            return original(self, possibly_batched_index)
        finally:
            batch._end(r)
    fetch.__wrapped__ = original
    return fetch
