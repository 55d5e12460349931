#!/usr/bin/env bash
# nvtx_bench.sh BUILD [ROUNDS]: what nvtx.forward costs a region on the calling thread, side by side
# in one sitting, alternated round by round: forwarding off (the default); on with no NVTX tool
# attached (NVTX then has nothing to call and dftrace stops forwarding at initialisation); on
# with a tool attached that only counts the calls (the test's recorder without a file), so
# that the figure is dftrace's side plus NVTX's dispatch, not a tool's own work.
set -euo pipefail
build=$1 rounds=${2:-3}
recorder=$build/tests/integration/nvtx/libnvtx_recorder.so
[ -f "$recorder" ] || { echo "nvtx_bench: $recorder is missing (build the tests)" >&2; exit 2; }
filter='BM_region_enabled_no_args/real_time/threads:1$|BM_region_enabled_two_args$'
run() {
  env -u NVTX_RECORD_FILE "$@" "$build/bench/core_bench" --benchmark_min_time=0.5 \
    --benchmark_filter="$filter" 2>/dev/null | awk '/^BM_/ {printf "    %-48s %8s ns cpu\n", $1, $4}'
}
for r in $(seq "$rounds"); do
  echo "== round $r, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg)"
  echo "  off";            run env -u DFTRACE_NVTX_FORWARD
  echo "  on, no tool";    run env -u NVTX_INJECTION64_PATH DFTRACE_NVTX_FORWARD=1
  echo "  on, counting tool"; run env DFTRACE_NVTX_FORWARD=1 NVTX_INJECTION64_PATH="$recorder"
done
