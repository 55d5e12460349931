#!/usr/bin/env bash
# dump_write.sh [ROUNDS] [SLEEP_MS] [DIR]: bench/dump_write.c's three ways of appending a 64 MiB
# ring to a new file (buffered writev, the same after fallocate(FALLOC_FL_KEEP_SIZE), O_DIRECT
# through a bounce buffer), taken in turn ROUNDS times, into DIR (default: a temporary directory
# under TMPDIR, whose file system is the one measured); then the median and the largest wall
# and CPU time of each. SLEEP_MS: a wait before each write (dump_write.c says why).
set -euo pipefail
rounds=${1:-10} sleep_ms=${2:-0}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
dir=${3:-$work}
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/dump_write" "$here/dump_write.c"
modes=(buffered reserve direct)
for r in $(seq "$rounds"); do
  for m in "${modes[@]}"; do
    rm -f "$dir/dump_write.out"
    "$work/dump_write" "$m" "$dir/dump_write.out" "$sleep_ms" | tee -a "$work/all"
  done
done
rm -f "$dir/dump_write.out"
echo "$(date -u '+%F %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds:"
for m in "${modes[@]}"; do
  for k in wall cpu; do
    grep "^$m " "$work/all" | sed -n "s/.* $k \([0-9.]*\) ms.*/\1/p" | sort -n |
      awk -v m="$m" -v k="$k" '{v[NR]=$1} END {printf "%-8s %-4s median %7.1f ms, largest %7.1f ms\n", m, k, (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[NR]}'
  done
done
