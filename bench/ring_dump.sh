#!/usr/bin/env bash
# ring_dump.sh BUILD [ROUNDS] [LIBDIR...]: how long a full 64 MiB ring takes to reach the file
# (the flight recorder's dump): tests/integration/ring/ring_prog latency fills the ring with 5 M
# regions, then times dftrace_trigger + dftrace_flush on the calling thread (everything before
# the trigger, the ring first, is in the file when the flush returns). With LIBDIRs (each
# holding a libdftrace.so.0, say an older build's), the rounds take them in turn, side by side:
# the machine's load changes the figures of all of them alike.
# MODE=signal: the ring is filled and flushed (the writer thread then sleeps), then a SIGUSR2:
# the time until the trace's bytes last grew (the writer thread woken by the signal writes the
# ring), ring_prog signal, and the CPU time dftrace's threads took meanwhile (the writer's copy of
# the ring into the page cache, most of it the kernel's).
# DIRECT=1: with ring.direct (DFTRACE_RING_DIRECT=1, the dump with O_DIRECT); DIRECT=both: each
# round takes both, side by side (the line says which); DIRECT=auto: the library's default (the
# trace directory's file system decides). Without DIRECT the dump goes through the page cache
# (DFTRACE_RING_DIRECT=0), whatever the default.
set -euo pipefail
build=$1 rounds=${2:-5} mode=${MODE:-latency}
shift $(($# > 1 ? 2 : 1))
libs=("$@")
directs=(${DIRECT:-0})
[ "${DIRECT:-0}" != both ] || directs=(0 1)
[ ${#libs[@]} -gt 0 ] || libs=("$build")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  for lib in "${libs[@]}"; do
    for direct in "${directs[@]}"; do
      rm -rf "$out/t"
      said=$(LD_LIBRARY_PATH=$lib DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$out/t/t" \
        DFTRACE_OUTPUT_MODE=ring DFTRACE_RING_BYTES=64MiB DFTRACE_RING_SECONDS=3600 \
        DFTRACE_RING_DIRECT=$direct "$build/tests/integration/ring/ring_prog" "$mode" 5000000)
      ms=$(sed -n 's/.*on disk after \(.*\) ms/\1/p' <<<"$said")
      cpu=$(sed -n 's/^writer cpu \(.*\) ms/, writer CPU \1 ms/p' <<<"$said")
      echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg) $lib direct=$direct: $ms ms$cpu, $(du -b "$out"/t/* | cut -f1) B"
    done
  done
done
