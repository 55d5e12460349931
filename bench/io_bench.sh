#!/usr/bin/env bash
# io_bench.sh BUILD [ROUNDS]: the cost libdftrace_io adds to a 4 KiB pread from the page cache,
# side by side, alternated round by round: bare (no interposer); bare with an idle second
# thread (the C library's pread then takes its multi-threaded path, as it does in every traced
# process, which has a writer thread); preloaded and traced; preloaded on a file outside the
# traced directories; preloaded with I/O tracing switched off.
set -euo pipefail
build=$1 rounds=${2:-3}
lib=$build/libdftrace_io.so prog=$build/bench/io_bench
[ -f "$lib" ] && [ -x "$prog" ] || { echo "io_bench: build $build first" >&2; exit 2; }
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
mkdir "$dir/data" "$dir/other" "$dir/traces"
head -c $((16 * 4096)) /dev/urandom > "$dir/data/file.bin"
run() {  # label, env... [-- io_bench's third argument]
  local label=$1 mode=""; shift
  if [ "${*: -1}" = mt ]; then mode=mt; set -- "${@:1:$#-1}"; fi
  rm -f "$dir"/traces/*
  printf "    %-28s %8s ns\n" "$label" \
    "$(env -u DFTRACE_ENABLE "$@" "$prog" "$dir/data/file.bin" 400000 $mode)"
}
for r in $(seq "$rounds"); do
  echo "== round $r, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg)"
  run "bare" env
  run "bare, a second thread" env mt
  run "traced" env DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$dir/traces/t" DFTRACE_IO_DATA_DIR="$dir/data" LD_PRELOAD="$lib"
  run "outside the data dirs" env DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$dir/traces/t" DFTRACE_IO_DATA_DIR="$dir/other" LD_PRELOAD="$lib"
  run "io.enable false" env DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$dir/traces/t" DFTRACE_IO_ENABLE=false LD_PRELOAD="$lib"
done
