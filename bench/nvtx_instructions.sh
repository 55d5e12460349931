#!/usr/bin/env bash
# nvtx_instructions.sh BUILD [ROUNDS]: what nvtx.forward adds to a region in instructions, which
# other work on the machine does not change (nvtx_bench.sh measures time, which it does). Counts
# the instructions of the loop that traces N1 and then N2 regions (valgrind's callgrind, the
# inclusive count of writer_prog many's loop on the calling thread: regions with one per-use
# argument around a short spin; the writer's thread and finalize are left out);
# (I(N2) - I(N1)) / (N2 - N1) is the instructions per region, the first call's start-up
# cancelled: forwarding off, on with no NVTX tool, on with the counting tool of
# tests/integration/nvtx.
set -euo pipefail
build=$1 rounds=${2:-2}
prog=$build/tests/integration/core/writer_prog
recorder=$build/tests/integration/nvtx/libnvtx_recorder.so
[ -f "$recorder" ] && [ -x "$prog" ] || { echo "nvtx_instructions: build the tests first" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "nvtx_instructions: valgrind is missing" >&2; exit 2; }
n1=20000 n2=120000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {  # count N ENV...: instructions of one run
  local n=$1
  shift
  rm -f "$tmp"/t*
  env -u NVTX_RECORD_FILE DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$tmp/t" "$@" valgrind \
    --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg" "$prog" many "$n" \
    >/dev/null 2>&1
  # the inclusive count of writer_prog's loop on the main thread (finalize, which may format
  # what the writer thread has not, is outside it)
  callgrind_annotate --inclusive=yes "$tmp/cg-01" 2>/dev/null |
    awk '/::events\(int/ {gsub(",", "", $1); print $1; exit}'
  rm -f "$tmp"/cg*
}
per_region() {  # per_region ENV...
  local a b
  a=$(count $n1 "$@")
  b=$(count $n2 "$@")
  echo "scale=1; ($b - $a) / ($n2 - $n1)" | bc
}
for r in $(seq "$rounds"); do
  echo "== round $r, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg): instructions per region"
  echo "  off                $(per_region env -u DFTRACE_NVTX_FORWARD)"
  echo "  on, no tool        $(per_region env -u NVTX_INJECTION64_PATH DFTRACE_NVTX_FORWARD=1)"
  echo "  on, counting tool  $(per_region env DFTRACE_NVTX_FORWARD=1 NVTX_INJECTION64_PATH="$recorder")"
done
