#!/usr/bin/env bash
# io_worker_instructions.sh BUILD [BASE_BUILD]: what tracing adds to a DLIO-like worker, in
# instructions (callgrind; other work on the machine does not change them): a forked child
# loading N files as numpy.load does (io_worker.c: open, fstat, lseek, read, read, close) and
# leaving with exit (EXIT=_exit: with _exit, as a DataLoader worker does). Per build: the
# child's instructions per file beyond the untraced child's, traced (every file in the data
# directory) and preloaded with no file in the data directories, and the first file's (with
# the child's fixed cost: its fork handlers, header and finalize). With EXIT=_exit, a build without the _exit interposer (before 2026-11-26) loses the
# child's buffered events instead of writing them, and looks cheaper than it is.
set -euo pipefail
n=200
command -v valgrind >/dev/null || { echo "io_worker_instructions: valgrind is missing" >&2; exit 2; }
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
mkdir "$dir/data" "$dir/none" "$dir/traces"
# child BUILD N ENV...: the instructions of the forked child (every thread)
child() {
  local build=$1 k=$2
  shift 2
  rm -rf "$dir"/cg* "$dir"/traces/*
  env -u DFTRACE_ENABLE "$@" valgrind --tool=callgrind --trace-children=yes --separate-threads=yes \
    --callgrind-out-file="$dir/cg.%p" "$build/bench/io_worker" "$dir/data" "$k" "${EXIT:-exit}" \
    >/dev/null 2>&1
  local pid total=0 f t
  pid=$(ls "$dir" | sed -n 's/^cg\.\([0-9]*\).*/\1/p' | sort -n | uniq | tail -1)
  for f in "$dir"/cg."$pid"-*; do
    t=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
    total=$((total + ${t:-0}))
  done
  echo "$total"
}
echo "== $(date -u +%Y-%m-%d\ %H:%M) UTC: a forked child loading $n files (callgrind)"
for build in "$@"; do
  [ -x "$build/bench/io_worker" ] && [ -f "$build/libdftrace_io.so" ] ||
    { echo "io_worker_instructions: build $build first" >&2; exit 2; }
  lib=$build/libdftrace_io.so
  on=(DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$dir/traces/t" LD_PRELOAD="$lib")
  # N files and 1 file: the difference is per file; 1 file's cost beyond the untraced child's
  # is the fixed cost (fork handlers, the header, finalize at _exit) plus one file's
  plain=$(child "$build" $n) plain1=$(child "$build" 1)
  traced=$(child "$build" $n "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/data")
  traced1=$(child "$build" 1 "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/data")
  none=$(child "$build" $n "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/none")
  none1=$(child "$build" 1 "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/none")
  per() { echo $(((($1 - $2) - (plain - plain1)) / (n - 1))); }
  echo "  $build: untraced $(((plain - plain1) / (n - 1))) per file; added per file: traced $(per "$traced" "$traced1"), no file traced $(per "$none" "$none1"); added for the first file (the child's fixed cost): traced $((traced1 - plain1)), no file traced $((none1 - plain1))"
done
