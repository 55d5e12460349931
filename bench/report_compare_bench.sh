#!/usr/bin/env bash
# report_compare_bench.sh: wall and CPU time and peak RSS of `dftrace report NEW --compare BASE`
# for two copies of the Python package side by side, alternated, so that both see the same load.
# Usage: bench/report_compare_bench.sh BEFORE_PYTHONPATH AFTER_PYTHONPATH DFTRACE BASE NEW
#        [ROUNDS=2]
#   (each PYTHONPATH holds a `dftrace` package with its extensions; DFTRACE: the command that
#   an older report runs as `dftrace diff`). Peak RSS is the largest of the report's process
#   and any child's (GNU time), not their sum.
set -euo pipefail
[ -x /usr/bin/time ] || { echo "install time (/usr/bin/time) first" >&2; exit 2; }
before=$1 after=$2 cli=$3 base=$4 new=$5 rounds=${6:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(date -u '+%F %H:%M') UTC, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| build | wall s | user s | sys s | peak RSS MiB | load (1 min) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for _ in $(seq "$rounds"); do
  for who in before after; do
    pp=$before
    [ "$who" = after ] && pp=$after
    PYTHONPATH=$pp DFTRACE_COMMAND=$cli /usr/bin/time -f "%e %U %S %M" -o "$out/time" \
      /usr/bin/python3 -m dftrace.report "$new" -o "$out/r.html" --compare "$base" \
      >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
    read -r wall user sys rss <"$out/time"
    echo "| $who | $wall | $user | $sys | $((rss / 1024)) | $(cut -d' ' -f1 /proc/loadavg) |"
  done
done
