#!/usr/bin/env bash
# ab_builds.sh A B [ROUNDS]: the same benchmarks from two build trees, alternated round by round
# (A B A B ...), so that a change is compared side by side in one sitting on a machine whose speed
# drifts. Prints, per round and build, the event path's CPU ns (core_bench) and the end-to-end
# rate and size (e2e_bench). Needs `cmake --build <dir> --target core_bench e2e_bench` in both.
set -euo pipefail
a=$1 b=$2 rounds=${3:-3}
filter='enabled_no_args/real_time/threads:1$|two_args|inherited|iter_item|update_two|disabled|yardstick'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  for side in A B; do
    dir=$a; [ "$side" = B ] && dir=$b
    echo "== round $r, $side ($dir), $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg)"
    "$dir/bench/core_bench" --benchmark_min_time=0.3 --benchmark_filter="$filter" 2>/dev/null |
      awk '/^BM_/ {printf "  %-52s %10s ns cpu\n", $1, $4}'
    "$dir/bench/e2e_bench" 3000000 1 "$tmp" | sed 's/^/  /'
  done
done
