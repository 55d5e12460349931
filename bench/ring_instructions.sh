#!/usr/bin/env bash
# ring_instructions.sh BUILD [ROUNDS]: what the flight recorder (output.mode: ring) costs the
# calling thread per region, in instructions (valgrind's callgrind, which other work on the
# machine does not change), beside the normal mode: the inclusive count of writer_prog many's
# loop on the main thread for N1 and N2 regions; (I(N2) - I(N1)) / (N2 - N1) per region, as
# nvtx_instructions.sh counts. The ring is in the writer, after compression: the calling thread
# does the same work in both modes.
set -euo pipefail
build=$1 rounds=${2:-2}
prog=$build/tests/integration/core/writer_prog
[ -x "$prog" ] || { echo "ring_instructions: build the tests first (writer_prog)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "ring_instructions: valgrind is missing" >&2; exit 2; }
n1=20000 n2=120000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {  # count N MODE: instructions of one run's loop on the main thread
  rm -f "$tmp"/t*
  env DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$tmp/t" DFTRACE_OUTPUT_MODE="$2" valgrind \
    --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg" "$prog" many "$1" \
    >/dev/null 2>&1
  callgrind_annotate --inclusive=yes "$tmp/cg-01" 2>/dev/null |
    awk '/::events\(int/ {gsub(",", "", $1); print $1; exit}'
  rm -f "$tmp"/cg*
}
per_region() {  # per_region MODE
  local a b
  a=$(count $n1 "$1")
  b=$(count $n2 "$1")
  echo "scale=1; ($b - $a) / ($n2 - $n1)" | bc
}
for r in $(seq "$rounds"); do
  echo "== round $r, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg): instructions per region"
  echo "  output.mode: file  $(per_region file)"
  echo "  output.mode: ring  $(per_region ring)"
done
