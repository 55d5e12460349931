#!/usr/bin/env bash
# report_bench.sh: wall and CPU time (and peak RSS) of `dftrace report` on one input, for two
# builds side by side, alternated, so that both see the same load.
# Usage: bench/report_bench.sh BASE_DFTRACE NEW_DFTRACE INPUT [ROUNDS=2]
#   (BASE_DFTRACE, NEW_DFTRACE: the `dftrace` command of each build, e.g. build/tools/dftrace)
# Inputs as in bench/RESULTS.md: gen_trace OUT --events N --pid P --rank R --seed S --threads 2
set -euo pipefail
[ -x /usr/bin/time ] || { echo "install time (/usr/bin/time) first" >&2; exit 2; }
base=$1 new=$2 input=$3 rounds=${4:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(date -u '+%F %H:%M') UTC, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| build | wall s | user s | sys s | peak RSS MiB | load (1 min) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for _ in $(seq "$rounds"); do
  for who in base new; do
    cli=$base
    [ "$who" = new ] && cli=$new
    /usr/bin/time -f "%e %U %S %M" -o "$out/time" "$cli" report "$input" -o "$out/r.html" >/dev/null 2>"$out/err" ||
      { cat "$out/err" >&2; exit 1; }
    read -r wall user sys rss <"$out/time"
    echo "| $who | $wall | $user | $sys | $((rss / 1024)) | $(cut -d' ' -f1 /proc/loadavg) |"
  done
done
