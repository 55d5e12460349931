"""The clock offset of this process to rank 0's, measured through the default process group's
store and written as PR lines that `dftrace merge` applies (dftrace.torch_distributed.align_clocks;
init_process_group calls it when traced)."""
from __future__ import annotations

import datetime
import itertools
import os
import sys
from typing import Optional, Tuple

import torch.distributed as dist

from .. import _dftrace

_generation = itertools.count()  # one key space per alignment in this process
_warned: set = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        print("dftrace: " + message, file=sys.stderr)


def _env_int(name: str, default: int, low: int, high: int) -> int:
    v = os.environ.get(name, "")
    try:
        return min(max(int(v), low), high) if v else default
    except ValueError:
        _warn_once("%s=%s is not an integer; %d used" % (name, v, default))
        return default


def align_clocks(rounds: Optional[int] = None,
                 timeout: float = 30.0) -> Optional[Tuple[int, int]]:
    """Measures this process's trace-clock offset to rank 0's through the default process
    group's store, and writes it as PR clock_offset_ns / clock_offset_uncertainty_ns (what
    `dftrace merge` applies). Every rank must call it (init_process_group does, when traced):
    rank 0 answers each other rank's `rounds` pings in turn (DFTRACE_TORCH_CLOCK_ROUNDS,
    default 10); the round with the shortest round trip gives offset = T0 - (t0 + t1) / 2 and
    uncertainty (t1 - t0) / 2. Returns (offset, uncertainty) in ns, or None when it was off
    (DFTRACE_TORCH_CLOCK_SYNC=0 on rank 0 switches it off for all) or failed (said once on
    stderr; a rank that does not answer within `timeout` seconds ends it).

    Args:
        rounds: pings per rank (None: DFTRACE_TORCH_CLOCK_ROUNDS, default 10).
        timeout: seconds to wait for the other ranks.

    Returns:
        (offset, uncertainty) in nanoseconds, or None when it was off or failed.

    Example:
        >>> dftrace.torch_distributed.align_clocks()   # on every rank
        (1532, 41)
    """
    try:
        return _align(rounds, datetime.timedelta(seconds=timeout))
    except Exception as e:  # noqa: BLE001  (the job goes on without alignment)
        _warn_once("clock alignment with rank 0 failed: %s: %s" % (type(e).__name__, e))
        _dftrace.process_property("clock_sync_error", "%s: %s" % (type(e).__name__, e))
        return None


def _align(rounds: Optional[int], timeout: datetime.timedelta) -> Optional[Tuple[int, int]]:
    on = os.environ.get("DFTRACE_TORCH_CLOCK_SYNC", "1") != "0"
    if rounds is None:
        rounds = _env_int("DFTRACE_TORCH_CLOCK_ROUNDS", 10, 1, 1000)
    store = dist.distributed_c10d._get_default_store()
    rank, size = dist.get_rank(), dist.get_world_size()
    key = "dftrace/clock/%d/" % next(_generation)
    clock = _dftrace.trace_time_ns
    if rank == 0:
        store.set(key + "serve", "1" if on else "0")
        if not on:
            return None
        for peer in range(1, size):  # each rank in turn: its pings, answered with our time
            store.wait([key + "rounds/%d" % peer], timeout)
            for i in range(int(store.get(key + "rounds/%d" % peer))):
                ping = key + "%d/%d/" % (peer, i)
                store.wait([ping + "ping"], timeout)
                store.set(ping + "pong", str(clock()))
        best_rtt, offset = 0, 0
    else:
        store.wait([key + "serve"], timeout)
        if store.get(key + "serve") != b"1":
            return None
        rounds = rounds if on else 0
        store.set(key + "rounds/%d" % rank, str(rounds))
        if not on:
            return None
        best_rtt, offset = -1, 0
        for i in range(rounds):
            ping = key + "%d/%d/" % (rank, i)
            t0 = clock()
            store.set(ping + "ping", "1")
            if i == 0:
                store.wait([ping + "pong"], timeout)  # rank 0 may be serving others first
            remote = int(store.get(ping + "pong"))
            t1 = clock()
            if best_rtt < 0 or t1 - t0 < best_rtt:
                best_rtt, offset = t1 - t0, remote - (t0 + t1) // 2
    uncertainty = (best_rtt + 1) // 2
    _dftrace.process_property("clock_offset_ns", offset)
    _dftrace.process_property("clock_offset_uncertainty_ns", uncertainty)
    _dftrace.process_property("clock_sync_rounds", 0 if rank == 0 else rounds)
    return offset, uncertainty
