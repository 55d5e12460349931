#!/usr/bin/env bash
# nvtx_bench.sh BUILD [ROUNDS]: what nvtx.forward costs a region on the calling thread, side by side
# in one sitting, alternated round by round: forwarding off (the default); on with no NVTX tool
# attached (NVTX then has nothing to call and dftrace stops forwarding at initialisation); on
# with a tool attached that only counts the calls (the test's recorder without a file), so
# that the figure is dftrace's side plus NVTX's dispatch, not a tool's own work. Prints each
# round, then per benchmark the median and the minimum of each setting (the minimum is the
# figure least disturbed by other work on the machine) and their differences to "off".
set -euo pipefail
build=$1 rounds=${2:-3}
recorder=$build/tests/integration/nvtx/libnvtx_recorder.so
[ -f "$recorder" ] || { echo "nvtx_bench: $recorder is missing (build the tests)" >&2; exit 2; }
filter='BM_region_enabled_no_args/real_time/threads:1$|BM_region_enabled_two_args$'
all=$(mktemp)
trap 'rm -f "$all"' EXIT
run() {  # run SETTING ENV...: one core_bench run; "SETTING NAME NS" lines into $all
  local setting=$1
  shift
  env -u NVTX_RECORD_FILE "$@" "$build/bench/core_bench" --benchmark_min_time=0.5 \
    --benchmark_filter="$filter" 2>/dev/null |
    awk -v s="$setting" '/^BM_/ {printf "    %-48s %8s ns cpu\n", $1, $4; print s, $1, $4 >> "'"$all"'"}'
}
for r in $(seq "$rounds"); do
  echo "== round $r, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg)"
  echo "  off";               run off env -u DFTRACE_NVTX_FORWARD
  echo "  on, no tool";       run on-no-tool env -u NVTX_INJECTION64_PATH DFTRACE_NVTX_FORWARD=1
  echo "  on, counting tool"; run on-tool env DFTRACE_NVTX_FORWARD=1 NVTX_INJECTION64_PATH="$recorder"
done
echo "== $rounds rounds, ns per region: median and minimum of each setting (difference to off)"
python3 - "$all" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    s, name, ns = line.split()
    rows.setdefault(name, {}).setdefault(s, []).append(float(ns))
for name, by in rows.items():
    print("  " + name)
    for what, f in (("median", statistics.median), ("minimum", min)):
        off = f(by["off"])
        print("    %-8s " % what + ", ".join(
            "%s %.1f" % (s, f(v)) + ("" if s == "off" else " (%+.1f)" % (f(v) - off))
            for s, v in by.items()))
PY
