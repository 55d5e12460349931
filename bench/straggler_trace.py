#!/usr/bin/env python3
"""straggler_trace.py: writes a run where every step has stragglers, one file per rank, for
`dftrace analyze`'s peak against the number of stragglers (bench/RESULTS.md).

Usage: bench/straggler_trace.py OUT_DIR [--ranks 16] [--steps 200000] [--slow 7] [--shuffle]

Each rank writes `steps` step events (compute.step), one every 3 ms: 1 ms long, or 2.5 ms on the
`slow` ranks whose turn it is at that step (rank - k mod ranks < slow), so each step's median is
1 ms while fewer than half the ranks are slow and every slow step is a straggler: ranks x steps x
slow / ranks stragglers. --shuffle gives each rank's `step` arguments as a permutation of
0..steps-1 of its own (the keys then go through the external sort)."""
import argparse
import gzip
import os

T0 = 1_700_000_000_000_000_000


def write_rank(path, rank, ranks, steps, slow, shuffle):
    pid = 100 + rank
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('[\n'
                f'{{"id":1,"name":"PR","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                '"args":{"name":"time_metric","value":"ns"}}\n'
                f'{{"id":2,"name":"PR","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                f'"args":{{"name":"rank","value":{rank}}}}}\n'
                f'{{"id":3,"name":"start","cat":"dftracer","pid":{pid},"tid":{pid},"ts":{T0},'
                '"dur":0,"ph":"X","args":{"ppid":1}}\n')
        lines = []
        for k in range(steps):
            # 7919 * k + rank mod steps: a permutation when steps is no multiple of 7919
            arg = (7919 * k + 131 * rank) % steps if shuffle else k
            dur = 2_500_000 if (rank - arg) % ranks < slow else 1_000_000
            lines.append(f'{{"id":{k + 4},"name":"step","cat":"compute","pid":{pid},'
                         f'"tid":{pid},"ts":{T0 + 3_000_000 * k},"dur":{dur},"ph":"X",'
                         f'"args":{{"step":{arg}}}}}\n')
            if len(lines) == 10000:
                f.write("".join(lines))
                lines.clear()
        f.write("".join(lines))
        f.write(f'{{"id":{steps + 4},"name":"end","cat":"dftracer","pid":{pid},"tid":{pid},'
                f'"ts":{T0 + 3_000_000 * steps},"dur":0,"ph":"X",'
                f'"args":{{"num_events":{steps}}}}}\n]\n')


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--steps", type=int, default=200000)
    p.add_argument("--slow", type=int, default=7)
    p.add_argument("--shuffle", action="store_true")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for r in range(a.ranks):
        write_rank(os.path.join(a.out, f"r{r}.pfw.gz"), r, a.ranks, a.steps, a.slow, a.shuffle)


if __name__ == "__main__":
    main()
