#!/usr/bin/env bash
# ring_instructions.sh BUILD [ROUNDS]: what the flight recorder (output.mode: ring) costs the
# calling thread per region, in instructions (valgrind's callgrind, which other work on the
# machine does not change), beside the normal mode, as loop_instructions.sh counts them. The
# ring is in the writer, after compression: the calling thread does the same work in both modes.
set -euo pipefail
build=$1 rounds=${2:-2} me=ring_instructions
source "$(dirname "$0")/loop_instructions.sh"
for r in $(seq "$rounds"); do
  echo "== round $r, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg): instructions per region"
  echo "  output.mode: file  $(per_region env DFTRACE_OUTPUT_MODE=file)"
  echo "  output.mode: ring  $(per_region env DFTRACE_OUTPUT_MODE=ring)"
done
