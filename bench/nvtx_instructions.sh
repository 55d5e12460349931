#!/usr/bin/env bash
# nvtx_instructions.sh BUILD [ROUNDS]: what nvtx.forward adds to a region in instructions, which
# other work on the machine does not change (nvtx_bench.sh measures time, which it does), as
# loop_instructions.sh counts them (writer_prog many: regions with one per-use argument around a
# short spin): forwarding off, on with no NVTX tool, on with the counting tool of
# tests/integration/nvtx.
set -euo pipefail
build=$1 rounds=${2:-2} me=nvtx_instructions
recorder=$build/tests/integration/nvtx/libnvtx_recorder.so
[ -f "$recorder" ] || { echo "$me: build the tests first (nvtx_recorder)" >&2; exit 2; }
source "$(dirname "$0")/loop_instructions.sh"
for r in $(seq "$rounds"); do
  echo "== round $r, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg): instructions per region"
  echo "  off                $(per_region env -u NVTX_RECORD_FILE -u DFTRACE_NVTX_FORWARD)"
  echo "  on, no tool        $(per_region env -u NVTX_RECORD_FILE -u NVTX_INJECTION64_PATH \
    DFTRACE_NVTX_FORWARD=1)"
  echo "  on, counting tool  $(per_region env -u NVTX_RECORD_FILE DFTRACE_NVTX_FORWARD=1 \
    NVTX_INJECTION64_PATH="$recorder")"
done
