#!/usr/bin/env bash
# ring_drop.sh BUILD [ROUNDS] [LIBDIR...]: what a burst costs in ring mode
# (output.mode: ring): tests/integration/ring/ring_prog burst makes THREADS x N regions (default
# 4 x 1 M) as fast as the threads can, then a trigger; with ON_FULL=drop (the default here) the
# end line's dropped_events, with ON_FULL=block how long the burst took (the threads waited for
# the writer). QUEUE sets output.queue_bytes (unset: the library's default). With LIBDIRs (each
# holding a libdftrace.so.0, say an older build's), the rounds take them in turn, side by side:
# the machine's load changes the figures of all of them alike.
set -euo pipefail
build=$1 rounds=${2:-5}
shift $(($# > 1 ? 2 : 1))
libs=("$@")
[ ${#libs[@]} -gt 0 ] || libs=("$build")
threads=${THREADS:-4} n=${N:-1000000} on_full=${ON_FULL:-drop}
queue=()
[ -z "${QUEUE:-}" ] || queue=(DFTRACE_OUTPUT_QUEUE_BYTES="$QUEUE")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  for lib in "${libs[@]}"; do
    rm -rf "$out/t"
    said=$(env LD_LIBRARY_PATH="$lib" DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$out/t/t" \
      DFTRACE_OUTPUT_MODE=ring DFTRACE_RING_BYTES=256MiB DFTRACE_RING_SECONDS=3600 \
      DFTRACE_OUTPUT_ON_FULL="$on_full" "${queue[@]}" \
      "$build/tests/integration/ring/ring_prog" burst "$threads" "$n" | head -1)
    end=$(zcat "$out"/t/* | grep "\"name\":\"end\"" | tail -1)
    dropped=$(sed -n 's/.*"dropped_events":\([0-9]*\).*/\1/p' <<<"$end")
    echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg) $lib: ${said#*, }," \
      "dropped $dropped"
  done
done
